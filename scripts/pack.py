#!/usr/bin/env python3
"""Pack an image data set into verified tar shards, and optionally upload it to a stack's bucket.

SOURCE is an image folder with one subfolder per class (<folder>/<class>/<image>), or a list file
of '<path> <class>' lines. OUT receives shard-NNNNNN.tar files (WebDataset layout) and
manifest.json (every shard's sha256 and size, every sample's offset and label): docs/data.md.
Every image is decoded in full while packing; an unreadable one is reported by its path and fails
the run (--on-bad fail, the default; the shards done so far are kept) or is left out and listed
in the manifest (--on-bad skip). An interrupted pack resumes where it stopped when run again.

examples:
  gpu-training pack --example-images build/images                # a small generated folder to try it on
  gpu-training pack build/images build/packed                    # pack
  gpu-training pack build/images build/packed --upload entry-t4  # pack, then upload to the stack's bucket
then set `data: {localDir: build/packed}` in the stack file (docs/data.md): `gpu-training up` uploads it
before `pulumi up`, and each node stages it onto its SSD before training starts.

exit status: 0 packed (and uploaded), 1 bad images (--on-bad fail) or an upload error, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tools.cliargs import FAILED as EXIT_FAILED, OK as EXIT_OK, USAGE as EXIT_USAGE
from tools.datapack import example, packer, source, upload


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="?", type=Path, help="image folder (one subfolder per class) or list file")
    p.add_argument("out", nargs="?", type=Path, help="output folder for the shards and manifest.json")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--shard-mb", type=float, default=packer.DEFAULT_SHARD_MB,
                      help=f"target shard size in MiB (default {packer.DEFAULT_SHARD_MB}): big enough to stream, "
                           "small enough that a failed download costs little")
    size.add_argument("--samples-per-shard", type=int, help="images per shard (instead of --shard-mb)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="shards packed at once, one process each (default: the CPU count)")
    p.add_argument("--on-bad", choices=("fail", "skip"), default="fail",
                   help="an unreadable image fails the run (default) or is left out and listed in the manifest")
    p.add_argument("--no-check", action="store_true", help="do not decode the images (faster, and unsafe: a "
                   "broken image then fails in the DataLoader mid-run)")
    p.add_argument("--restart", action="store_true", help="discard a previous, different pack in OUT")
    p.add_argument("--upload", metavar="STACK", help="then upload OUT to STACK's bucket (<prefix>/<stack>/data/); "
                   "with the stack's cloud credentials (ALICLOUD_*, TENCENTCLOUD_*, HW_*, BAIDUCLOUD_*: docs/cli.md)")
    p.add_argument("--endpoint", help="S3 endpoint for --upload instead of the stack's (a local test server)")
    p.add_argument("--example-images", type=Path, metavar="DIR",
                   help="write a small generated class-per-subfolder JPEG folder to DIR and exit")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    args = p.parse_args(argv)
    if args.example_images is None and (args.source is None or args.out is None):
        p.error("SOURCE and OUT are required (or --example-images DIR)")
    for name in ("workers", "samples_per_shard"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} {value}: must be at least 1")
    if not args.shard_mb > 0:
        p.error(f"--shard-mb {args.shard_mb}: must be more than 0")
    if args.endpoint and not args.upload:
        p.error("--endpoint is for --upload")
    return args


def progress_bar(description: str, quiet: bool):
    """A rich progress bar on stderr; returns (update(done, total), close())."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress("[bold]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   disable=quiet, transient=False)
    task = bar.add_task(description, total=None)
    bar.start()
    return (lambda done, total: bar.update(task, completed=done, total=total)), bar.stop


def do_upload(args, folder: Path) -> dict:
    from components.spec import SpecError
    from tools.runlib.bucket import BucketError, from_stack_file
    from tools.runlib.credentials import MissingCredentials
    from tools.stackfiles import StackFileError

    try:
        bucket = from_stack_file(args.upload, args.endpoint)
    except (StackFileError, SpecError) as error:
        raise UsageError(error.render()) from None
    except (BucketError, MissingCredentials) as error:
        raise UsageError(f"--upload {args.upload}: {error}") from None
    update, close = progress_bar(f"upload to {bucket.url}{'data/'}", args.json)
    try:
        return upload.upload(folder, bucket.s3, bucket.bucket, bucket.root,
                             lambda done, total: update(done >> 20, total >> 20))
    finally:
        close()


class UsageError(Exception):
    pass


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    if args.example_images:
        count = example.make_folder(args.example_images)
        say(f"wrote {count} images in 4 class folders under {args.example_images}")
        if args.json:
            print(json.dumps({"images": count, "folder": str(args.example_images)}))
        return EXIT_OK
    try:
        data = source.read(args.source)
        per_shard = args.samples_per_shard or packer.per_shard_for(data, args.shard_mb)
        say(f"{len(data.samples)} images in {len(data.classes)} classes ({data.bytes / 1e6:.1f} MB) from "
            f"{args.source}" + (f"; {data.ignored} files that are not images left out" if data.ignored else "")
            + f"; at most {per_shard} images per shard"
            + ("" if args.samples_per_shard else f" (about {args.shard_mb:g} MB when full, --shard-mb)"))
        update, close = progress_bar("pack", args.json)
        try:
            result = packer.pack(data, args.out, per_shard=per_shard, workers=args.workers,
                                 check=not args.no_check, on_bad=args.on_bad, restart=args.restart,
                                 progress=update)
        finally:
            close()
    except (source.SourceError, UsageError) as error:
        print(f"pack.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except packer.PackFailed as failed:
        print(f"pack.py: {len(failed.bad)} image(s) cannot be read, so nothing was left out silently:",
              file=sys.stderr)
        for item in failed.bad[:50]:
            print(f"  {item['path']}: {item['error']}", file=sys.stderr)
        if len(failed.bad) > 50:
            print(f"  ... and {len(failed.bad) - 50} more", file=sys.stderr)
        print("Fix or remove them and run again (then with --restart: the input changed), or run again with "
              "--on-bad skip to leave them out (listed in the manifest). Finished shards are kept.",
              file=sys.stderr)
        return EXIT_FAILED
    m = result.manifest
    say(f"packed {m['samples']} images into {len(m['shards'])} shard{'s' * (len(m['shards']) != 1)}, {m['bytes'] / 1e6:.1f} MB, in {args.out} "
        f"({result.written} written, {result.kept} kept from an earlier run)")
    for item in result.bad:
        say(f"  left out {item['path']}: {item['error']}")
    out = {"out": str(args.out), "samples": m["samples"], "shards": len(m["shards"]), "bytes": m["bytes"],
           "written": result.written, "kept": result.kept, "skipped": result.bad}
    if args.upload:
        try:
            sent = do_upload(args, args.out)
        except UsageError as error:
            print(f"pack.py: error: {error}", file=sys.stderr)
            return EXIT_USAGE
        except Exception as error:  # boto3/botocore errors: say which and keep what was sent
            print(f"pack.py: upload failed: {type(error).__name__}: {error} (run again: shards already in "
                  "the bucket are not sent twice)", file=sys.stderr)
            return EXIT_FAILED
        say(f"uploaded to {sent['prefix']}: {sent['sent']} shards sent, {sent['kept']} already there")
        out["upload"] = sent
    if args.json:
        print(json.dumps(out))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
