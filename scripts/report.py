#!/usr/bin/env python3
"""Show a stack's training report: every node's utilisation in one table, the run's diagnosis and advice,
and one combined plot.

Each node's agent uploads report/<node>/ (summary.json, utilisation.csv, loader.csv, utilisation.png)
to <bucket>/<prefix>/<stack>/ when it ends. This downloads them all (the bucket, prefix and endpoint
from the stack file, credentials from the environment like run.py), or reads a folder that run.py
already downloaded (--dir), and prints one row per node plus the whole run: GPU utilisation against
the guide's 70% line, GPU memory, CPU busy, I/O wait, the trainer's data-loader wait and throughput,
what held the GPUs back and what to change (docs/data.md, "The report"), and what the run cost: each node's hours
(from its marker, else its samples) times the stack's prices, its data disk and the shared file system, with the
prices' sources and dates (on spot: the cloud's spot figure a refresh read, else its documented range).

examples:
  report.py medium-a100                         download out/medium-a100/report/ and show it
  report.py medium-a100 --dir out/medium-a100/report   what run.py downloaded, offline
  report.py medium-a100 --json                  one JSON document (nodes, run, plot)
  report.py medium-a100 --all                   every node that ever reported, not only the newest run's

exit status: 0 shown, 1 no report found, or object storage refused or did not answer, 2 bad arguments
or no credentials of the stack's cloud (ALICLOUD_*, TENCENTCLOUD_*, HW_*, BAIDUCLOUD_*: docs/cli.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tools import project
from tools.cliargs import FAILED as EXIT_FAILED, OK as EXIT_OK, USAGE as EXIT_USAGE



class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = Parser(description=__doc__.split("\n\n", 1)[0],
               epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    p.add_argument("--dir", type=Path, metavar="DIR", help="read this downloaded report folder (<DIR>/<node>/...) "
                   "instead of the bucket")
    p.add_argument("--out", type=Path, metavar="DIR", help="where to download to (default out/<stack>/report/)")
    p.add_argument("--endpoint", help="S3 endpoint instead of the stack's (a local test server)")
    p.add_argument("--all", action="store_true", help="every report in the folder; default: the newest run's "
                   "(reports of a stack's earlier runs stay in the bucket)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    args = p.parse_args(argv)
    from tools.stackfiles import missing_stack, stack_names

    if args.stack not in stack_names():
        p.error(missing_stack(args.stack, stack_names(), f"stacks/Pulumi.{args.stack}.yaml does not exist"))
    if args.dir is not None and (args.out is not None or args.endpoint):
        p.error("--dir reads a folder: --out and --endpoint are for downloading from the bucket")
    if args.dir is not None and not args.dir.is_dir():
        p.error(f"--dir {str(args.dir)!r}: not a folder")
    return args


def download(args) -> Path:
    """Every node's report/<node>/ from the stack's bucket into --out; the folder."""
    from components.spec import SpecError
    from tools.runlib.bucket import from_stack_file
    from tools.runlib.credentials import MissingCredentials
    from tools.stackfiles import StackFileError

    try:
        bucket = from_stack_file(args.stack, args.endpoint)
    except (StackFileError, SpecError) as error:
        raise UsageError(error.render()) from None
    except MissingCredentials as error:
        raise UsageError(f"{error}; a rehearsal kept with `gpu-training rehearse {args.stack} --keep` needs none:"
                         f" `gpu-training report {args.stack} --rehearsal`") from None
    out = args.out or project.out_dir() / args.stack / "report"
    bucket.download_report(bucket.report_nodes(), out)
    from tools.runlib.runcost import save_markers

    save_markers(bucket.markers(), out)  # each node's hours, for the run's cost (offline with --dir too)
    return out


def run_cost(stack: str, result, folder: Path) -> dict:
    """The run's cost (tools/runlib/runcost.py), or {"error": why} when the stack file cannot be priced."""
    import time

    from components.spec import SpecError
    from tools.runlib.runcost import load_markers, run_cost as priced
    from tools.stackfiles import StackFileError, stack_spec

    try:
        _, spec = stack_spec(stack)
    except (StackFileError, SpecError) as error:
        return {"error": f"not priced: the stack file does not validate ({error.render()})"}
    spans = {n.node: n.span for n in result.nodes}
    return priced(spec, [n.node for n in result.nodes], load_markers(folder), spans, time.time())


def main(argv=None) -> int:
    from botocore.exceptions import BotoCoreError, ClientError
    from rich.console import Console

    from tools.runlib.bucket import BucketError
    from tools.runlib.report import ReportError, render, report_folder

    try:
        args = parse_args(argv)
        folder = args.dir if args.dir is not None else download(args)
        result = report_folder(folder, args.stack, every_run=args.all)
    except UsageError as error:
        print(f"report.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (BucketError, ReportError) as error:
        print(f"report.py: {error}", file=sys.stderr)
        return EXIT_FAILED
    except (BotoCoreError, ClientError) as error:  # an endpoint that does not answer, a refused request
        print(f"report.py: object storage: {error}", file=sys.stderr)
        return EXIT_FAILED
    spent = run_cost(args.stack, result, folder)
    if args.json:
        print(json.dumps({"stack": args.stack, "folder": str(folder), "plot": str(result.plot) if result.plot else None,
                          "run": result.run, "nodes": {n.node: n.summary for n in result.nodes},
                          "earlierRuns": [n.node for n in result.earlier], "cost": spent}, indent=1))
        return EXIT_OK
    console = Console()
    render(console, result, args.stack)
    from tools.runlib.runcost import lines

    for line in ([f"cost of the run: {spent['error']}"] if "error" in spent else lines(spent)):
        console.print(line, highlight=False, markup=False)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
