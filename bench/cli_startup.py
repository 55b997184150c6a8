#!/usr/bin/env python3
"""Start-up time of the `gpu-training` command line: the median of N runs of `--help` and of `status`.

`status STACK --rehearsal` reads a kept rehearsal (run `gpu-training rehearse STACK --keep` first;
without one, `status --help` is timed instead and the line says so). The goal (issue 23): under 0.5 s,
which the CLI's lazy imports (tools/cli/main.py) are for. Each run is a fresh interpreter, as a user's.

usage: bench/cli_startup.py [--runs N] [--stack STACK]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def median_seconds(args: list[str], runs: int) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), str(REPO / "node")))}
    times, code = [], 0
    for _ in range(runs):
        began = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - began)
    return statistics.median(times), code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--stack", default="entry-t4")
    args = parser.parse_args()
    sys.path[:0] = [str(REPO)]
    from tools.cli import paths

    kept = (paths.OUT / args.stack / "rehearsal" / "rehearsal.json").exists()
    cases = [("--help", ["--help"]),
             (f"status {args.stack} --rehearsal" if kept else "status --help (no kept rehearsal)",
              ["status", args.stack, "--rehearsal"] if kept else ["status", "--help"])]
    for label, argv in cases:
        seconds, code = median_seconds(argv, args.runs)
        print(f"gpu-training {label}: median {seconds:.3f} s of {args.runs} runs (exit {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
