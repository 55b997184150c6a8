"""Count the fault drills: scenarios run and passed, checkpoints lost, releases before a verified upload.

Two sources, both the real agent against local servers (moto S3, the OSS/COS stand-ins, metadata and
cloud API stand-ins):
- the agent's fault scenarios (tests/agent: lifecycle, faults, integrity, identity, full disk, pools),
  run under pytest; each scenario asserts its own outcome (e.g. no release while a checkpoint does not
  verify, the newest good snapshot restored), so "passed" counts scenarios whose data rules held;
- the preemption rehearsal of one stack per provider (scripts/rehearse.py --json): steps lost to the
  preemption, the final snapshot verified in the bucket, and each node's release requests compared
  with what it should have asked (a preempted node: none; a finished node: one, after its upload).

    .venv/bin/python bench/fault_drills.py                 # both (about 4 minutes on 2 cores)
    .venv/bin/python bench/fault_drills.py --no-rehearse   # the scenarios only
    .venv/bin/python bench/fault_drills.py --quick         # faults and integrity only (make bench)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REHEARSED = ("entry-t4", "medium-a100", "large-h20", "tc-medium-a100")


class Outcomes:
    """A pytest plugin: the outcome of each test's call phase (or its setup, when that failed or skipped)."""

    def __init__(self):
        self.by_test: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.by_test[report.nodeid] = report.outcome


# --quick (make bench): the scenarios whose data rules the counts are about (no release before a verified
# upload, the newest good snapshot restored, damaged bytes caught), not the whole agent suite.
QUICK = ("test_faults.py", "test_integrity.py")


def scenarios(quick: bool = False) -> int:
    import pytest

    outcomes = Outcomes()
    where = [str(REPO / "tests" / "agent" / name) for name in QUICK] if quick else [str(REPO / "tests" / "agent")]
    pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", *where], plugins=[outcomes])
    per_file: dict[str, Counter] = defaultdict(Counter)
    for nodeid, outcome in outcomes.by_test.items():
        per_file[nodeid.split("::")[0].rsplit("/", 1)[-1]][outcome] += 1
    total = Counter(outcomes.by_test.values())
    print("\nfault scenarios (tests/agent):")
    for name, counts in sorted(per_file.items()):
        print(f"  {name:24s} run {sum(counts.values()):3d}  passed {counts['passed']:3d}  failed {counts['failed']:2d}"
              f"  skipped {counts['skipped']:2d}")
    print(f"  {'all':24s} run {sum(total.values()):3d}  passed {total['passed']:3d}  failed {total['failed']:2d}"
          f"  skipped {total['skipped']:2d}")
    return total["failed"]


def rehearsals() -> int:
    print("\npreemption rehearsals (scripts/rehearse.py):")
    failed = 0
    for stack in REHEARSED:
        done = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), stack, "--json"],
                              capture_output=True, text=True, timeout=600, cwd=REPO)
        try:
            document = json.loads(done.stdout)
        except json.JSONDecodeError:
            print(f"  {stack:15s} no report (exit {done.returncode}): {done.stderr.strip()[-300:]}")
            failed += 1
            continue
        checks = {c["name"]: c for c in document["checks"]}
        final = checks.get("final checkpoint in the bucket", {}).get("ok")
        releases = checks.get("release once per finished node", {})
        failed += done.returncode != 0
        print(f"  {stack:15s} exit {done.returncode}  nodes {document['nodes']}  steps lost {document['stepsLost']}"
              f"  final snapshot verified {final}  releases as expected {releases.get('ok')}"
              f" ({releases.get('detail', '')})")
    return failed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-rehearse", action="store_true", help="skip the rehearsals (about 2 minutes)")
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK)}, no rehearsals (make bench)")
    args = parser.parse_args(argv)
    failed = scenarios(args.quick)
    if not (args.no_rehearse or args.quick):
        failed += rehearsals()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
