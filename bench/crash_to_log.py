#!/usr/bin/env python3
"""Seconds from a trainer's crash to its last line being readable with `gpu-training logs` (issue 23).

The real node agent runs a trainer that prints a line and exits 3, against a local S3 server (the
agent-test fixtures of tests/agent/conftest.py, the same servers the agent tests use); this polls the
bucket every 0.1 s with the code `gpu-training logs` reads it with (tools/runlib/logs.py) until the
crash line is there. The crash time is the trainer's own clock just before it exits. The median of N.

usage: bench/crash_to_log.py [--runs N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "node"), str(REPO / "tests" / "agent")]
os.environ["PYTHONPATH"] = os.pathsep.join((str(REPO), str(REPO / "node")))


def one_run(url: str, s3) -> float:
    from conftest import Node  # tests/agent/conftest.py: a simulated node running the real agent

    from localcloud.standins import CloudApi
    from tools.runlib.bucket import StackBucket
    from tools.runlib.logs import LogReader

    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    api = CloudApi("alicloud")
    with tempfile.TemporaryDirectory() as tmp:
        node = Node(Path(tmp) / "n0", "alicloud", bucket, url, s3, api=api)
        stamp = Path(tmp) / "crashed-at"
        node.cfg["train"]["command"] = (f"{sys.executable} -c \"import sys, time; print('boom: CUDA out of memory',"
                                        f" flush=True); open('{stamp}', 'w').write(repr(time.time())); sys.exit(3)\"")
        process = node.start()
        view = StackBucket({"bucket": bucket, "prefix": "gpu-training", "endpoint": url, "region": "us-east-1",
                            "addressingStyle": "path"}, node.cfg["stack"], session=None)
        reader = LogReader(view, [node.id], ("trainer.log",))
        seen = ""
        try:
            while "boom" not in seen:
                seen += "".join(text for _, _, text in reader.new_text())
                time.sleep(0.1)
            readable = time.time()
            return readable - float(stamp.read_text())
        finally:
            process.wait(60)
            node.stop()
            api.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import boto3

    from localcloud import LocalS3

    os.environ.update({"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    server = LocalS3()
    s3 = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1")
    try:
        delays = [one_run(server.url, s3) for _ in range(args.runs)]
    finally:
        server.stop()
    print(f"trainer crash -> its log readable with `logs`: median {statistics.median(delays):.2f} s of {args.runs} "
          f"runs (min {min(delays):.2f}, max {max(delays):.2f}; the final ship, not the periodic one: it does not depend on syncIntervalSeconds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
