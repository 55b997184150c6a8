"""Print the bootstrap's own overhead on the fast path (driver present) for every stack, in the sandbox.

For each stack the rendered bootstrap runs in a fresh sandbox (localcloud/sandbox.py):
the first run on a GPU image, then the idempotent re-run. Package installs, downloads, mkfs and
mounts are recording stand-ins, so the figures are the bootstrap's own work (bash, file writes,
checks) plus the stand-ins' process starts, which are measured separately and printed so they can
be discounted. Also prints the encoded user-data size of each stack. Median of --runs runs.

    .venv/bin/python bench/bootstrap_overhead.py [--runs 5] [--stack entry-t4 ...]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from components.bootstrap import render_user_data
from localcloud.sandbox import SHIM, Sandbox, Scenario
from tools.stackfiles import node_config_for_stack

# Stack configs carry a placeholder FS address; a node gets a real one (see tests/bootstrap).
SAMPLE_FS = {"cpfs": "cpfs-0123456789abcdef-000001.cn-hangzhou.cpfs.aliyuncs.com:/share",
             "nas": "0a1b2c3d4e-abc12.cn-hangzhou.nas.aliyuncs.com", "cfsturbo": "10.0.3.7:/a1b2c3d4"}
EFFECTS = {"cfsturbo": {"cfs_turbo_client_setup": 'mkdir -p "$GPU_TRAINING_ROOT/sys/module/ptlrpc"'}}


def shim_cost(n: int = 40) -> float:
    """Seconds per stand-in call: the shim's own process start and bookkeeping (median of n)."""
    with tempfile.TemporaryDirectory() as d:
        state, link = Path(d) / "state", Path(d) / "nproc"
        state.mkdir()
        (state / "nproc").write_text("8")
        link.symlink_to(SHIM)
        env = {"PATH": "/usr/bin:/bin", "SANDBOX_STATE": str(state), "SANDBOX_CALLS": f"{d}/calls"}
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run([str(link)], env=env, capture_output=True, check=True)
            times.append(time.perf_counter() - t0)
        return statistics.median(times)


def bench_stack(stack: str, runs: int, shim_s: float) -> dict:
    cfg = node_config_for_stack(stack)
    fs = cfg["bootstrap"]["sharedFs"]
    if str(fs.get("address") or "").startswith("<"):
        fs["address"] = SAMPLE_FS[fs["type"]]
    rendered = render_user_data(cfg)
    first, rerun, calls = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            scenario = Scenario(gpus=cfg["accelerator"]["count"], effects=EFFECTS.get(fs["type"]))
            # The agent fetch is a download: the sandbox's default copies the files instead.
            sb = Sandbox(Path(d), rendered, cfg, scenario)
            a = sb.run()
            b = sb.run()
            if a.rc or b.rc:
                raise SystemExit(f"{stack}: bootstrap failed in the sandbox:\n{a.log}\n{b.log}")
            first.append(a.seconds)
            rerun.append(b.seconds)
            calls.append((len(a.calls), len(b.calls)))
    c1, c2 = calls[0]
    return {"stack": stack, "encoded": rendered.encoded_size,
            "first_s": statistics.median(first), "rerun_s": statistics.median(rerun),
            "first_calls": c1, "rerun_calls": c2,
            "first_net_s": statistics.median(first) - c1 * shim_s, "rerun_net_s": statistics.median(rerun) - c2 * shim_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--stack", action="append", help="stack name (default: every stacks/Pulumi.*.yaml)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    stacks = a.stack or sorted(f.name[len("Pulumi."):-len(".yaml")] for f in (REPO / "stacks").glob("Pulumi.*.yaml"))
    shim_s = shim_cost()
    rows = [bench_stack(s, a.runs, shim_s) for s in stacks]
    if a.json:
        print(json.dumps({"shim_call_s": shim_s, "runs": a.runs, "stacks": rows}, indent=1))
        return 0
    print(f"bootstrap overhead on the fast path (driver present), sandbox, median of {a.runs} runs;"
          f" one stand-in call costs {shim_s * 1000:.1f} ms (net = wall - calls x that)")
    print(f"{'stack':<16} {'first run':>10} {'net':>8} {'calls':>6} {'re-run':>8} {'net':>8} {'calls':>6}"
          f" {'user-data':>10}")
    for r in rows:
        print(f"{r['stack']:<16} {r['first_s'] * 1000:>8.0f}ms {r['first_net_s'] * 1000:>6.0f}ms {r['first_calls']:>6}"
              f" {r['rerun_s'] * 1000:>6.0f}ms {r['rerun_net_s'] * 1000:>6.0f}ms {r['rerun_calls']:>6}"
              f" {r['encoded']:>9}B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
