#!/usr/bin/env python3
"""How the offline preview's time grows with the node count: `gpu-training preview STACK --set nodes=N`.

Each run is a fresh interpreter, as a user's (imports, the program under the mock engine, the
rendering). The node counts are run in turn, round after round, so a busy machine slows each of
them alike; the medians of wall-clock and of CPU time (user + system of the child, less sensitive
to other load on the machine) are printed, with each count's ratio to the first, the CPU time a node
adds (the slope from the first count), and the load average before and after. The goal (issue
25): 64 nodes at most 1.3x the time of 2 nodes, 256 nodes under 2x.

usage: bench/preview_scale.py [--runs N] [--stack STACK] [--nodes 2,64,256] [--json]
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


def one_run(stack: str, nodes: int, as_json: bool) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), str(REPO / "node")))}
    argv = [sys.executable, "-m", "tools.cli", "preview", stack, "--set", f"nodes={nodes}",
            *(["--json"] if as_json else [])]
    cpu, began = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
    args = parser.parse_args()
    counts = [int(word) for word in args.nodes.split(",")]
    runs = max(args.runs, 3)
    load_before = os.getloadavg()
    walls: dict[int, list[float]] = {n: [] for n in counts}
    cpus: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(runs):
        for n in counts:
            wall, cpu = one_run(args.stack, n, args.json)
            walls[n].append(wall)
            cpus[n].append(cpu)
    base_wall, base_cpu = statistics.median(walls[counts[0]]), statistics.median(cpus[counts[0]])
    view = "--json" if args.json else "human view"
    print(f"gpu-training preview {args.stack} --set nodes=N ({view}), median of {runs} runs each, on {os.cpu_count()} "
          f"CPUs, load average (1, 5, 15 min) {_load(load_before)} before, {_load(os.getloadavg())} after")
    print(f"{'nodes':>6} {'wall s':>8} {'ratio':>6} {'cpu s':>8} {'ratio':>6} {'cpu ms/node':>12}  runs (wall s)")
    for n in counts:
        wall, cpu = statistics.median(walls[n]), statistics.median(cpus[n])
        slope = f"{(cpu - base_cpu) / (n - counts[0]) * 1000:.2f}" if n != counts[0] else "-"
        print(f"{n:>6} {wall:>8.2f} {wall / base_wall:>6.2f} {cpu:>8.2f} {cpu / base_cpu:>6.2f} {slope:>12}  "
              + ", ".join(f"{w:.2f}" for w in walls[n]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
