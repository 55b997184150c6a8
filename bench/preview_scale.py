#!/usr/bin/env python3
"""How the offline preview's time grows with the node count: `gpu-training preview STACK --set nodes=N`.

Each run is a fresh interpreter, as a user's (imports, the program under the mock engine, the
rendering). The node counts are run in turn, round after round, so a busy machine slows each of
them alike; the medians of wall-clock and of CPU time (user + system of the child, less sensitive
to other load on the machine) are printed, with each count's ratio to the first, the CPU time a node
adds (the slope from the first count), and the load average before and after. The goal (issue
25): 64 nodes at most 1.3x the time of 2 nodes, 256 nodes under 2x. --baseline times another
checkout (e.g. `git worktree add /tmp/base main`) in the same rounds, so a change is compared
with what it changed under the same load.

usage: bench/preview_scale.py [--runs N] [--stack STACK] [--nodes 2,64,256] [--json] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(stack: str, nodes: int, as_json: bool, repo: Path = REPO) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(repo), str(repo / "node")))}
    argv = [sys.executable, "-m", "tools.cli", "preview", stack, "--set", f"nodes={nodes}",
            *(["--json"] if as_json else [])]
    cpu, began = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"preview {stack} nodes={nodes}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    return wall, children_cpu() - cpu


def _load(averages: tuple[float, float, float]) -> str:
    return ", ".join(f"{value:.1f}" for value in averages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds (at least 3; default 5)")
    parser.add_argument("--stack", default="large-a100")
    parser.add_argument("--nodes", default="2,64,256", help="comma-separated node counts (default 2,64,256)")
    parser.add_argument("--json", action="store_true", help="time `preview --json` instead of the human view")
    parser.add_argument("--baseline", type=Path, help="another checkout to time in the same rounds")
    args = parser.parse_args()
    counts = [int(word) for word in args.nodes.split(",")]
    runs = max(args.runs, 3)
    checkouts = {"this checkout": REPO, **({f"baseline {args.baseline}": args.baseline} if args.baseline else {})}
    load_before = os.getloadavg()
    walls = {(name, n): [] for name in checkouts for n in counts}
    cpus = {(name, n): [] for name in checkouts for n in counts}
    for _ in range(runs):
        for name, repo in checkouts.items():
            for n in counts:
                wall, cpu = one_run(args.stack, n, args.json, repo)
                walls[(name, n)].append(wall)
                cpus[(name, n)].append(cpu)
    view = "--json" if args.json else "human view"
    print(f"gpu-training preview {args.stack} --set nodes=N ({view}), median of {runs} runs each, on {os.cpu_count()} "
          f"CPUs, load average (1, 5, 15 min) {_load(load_before)} before, {_load(os.getloadavg())} after")
    for name in checkouts:
        base_wall = statistics.median(walls[(name, counts[0])])
        base_cpu = statistics.median(cpus[(name, counts[0])])
        print(f"{name}:")
        print(f"{'nodes':>6} {'wall s':>8} {'ratio':>6} {'cpu s':>8} {'ratio':>6} {'cpu ms/node':>12}  runs (wall s)")
        for n in counts:
            wall, cpu = statistics.median(walls[(name, n)]), statistics.median(cpus[(name, n)])
            slope = f"{(cpu - base_cpu) / (n - counts[0]) * 1000:.2f}" if n != counts[0] else "-"
            print(f"{n:>6} {wall:>8.2f} {wall / base_wall:>6.2f} {cpu:>8.2f} {cpu / base_cpu:>6.2f} {slope:>12}  "
                  + ", ".join(f"{w:.2f}" for w in walls[(name, n)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
