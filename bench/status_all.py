"""Measure `gpu-training status` with no stack: every stack's row (tools/runlib/overview.py) for 15
deployed stacks whose buckets are one moto S3 server on 127.0.0.1, each with a running node's marker and a
snapshot, and each stack's outputs answered after --outputs-delay seconds (what asking the Pulumi backend
costs, a guess: set it to your own `pulumi stack output` time). Prints the median wall time of a whole
table over --repeats runs, in parallel (the command's way) and one stack after another, and the ratio.

Run: .venv/bin/python bench/status_all.py [--repeats 5] [--outputs-delay 0.3] [--workers 16]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from datetime import datetime, timezone

import boto3

from localcloud import LocalS3
from tools.cli import paths
from tools.runlib.bucket import StackBucket
from tools.runlib.overview import gather_all

PREFIX = "gpu-training"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--outputs-delay", type=float, default=0.3)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    server = LocalS3()
    try:
        s3 = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1")
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket)
        stacks = paths.stack_names()[:15]
        for stack in stacks:
            marker = {"state": "RUNNING", "node": "i-1", "stack": stack, "gpuUtil": 80.0,
                      "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            s3.put_object(Bucket=bucket, Key=f"{PREFIX}/{stack}/markers/i-1.json", Body=json.dumps(marker).encode())
            s3.put_object(Bucket=bucket, Key=f"{PREFIX}/{stack}/checkpoints/manifests/20261206T010000Z-i-1.json",
                          Body=json.dumps({"id": "20261206T010000Z-i-1", "files": {"ckpt-000100.pt": {}}}).encode())
        checkpoint = {"bucket": bucket, "prefix": PREFIX, "endpoint": server.url, "region": "us-east-1",
                      "addressingStyle": "path", "signatureVersion": "s3v4"}
        session = boto3.Session()

        def outputs_of(stack):
            time.sleep(args.outputs_delay)
            return {"stack": stack, "provider": "alicloud", "nodeCount": 1, "checkpoint": checkpoint}, ""

        def bucket_of(stack, outputs):
            return StackBucket(outputs["checkpoint"], stack, session=session)

        def table(workers: int) -> float:
            started = time.perf_counter()
            rows = gather_all(stacks, outputs_of, bucket_of, lambda s: (None, None), workers=workers)
            assert all(r["state"] == "running" for r in rows), rows
            return time.perf_counter() - started

        table(args.workers)  # warm: imports and the stack files' first parse
        parallel = [table(args.workers) for _ in range(args.repeats)]
        serial = [table(1) for _ in range(args.repeats)]
        p, s = statistics.median(parallel), statistics.median(serial)
        print(f"{len(stacks)} stacks, outputs delay {args.outputs_delay:g} s, {args.repeats} repeats")
        print(f"parallel ({args.workers} workers): median {p:.2f} s")
        print(f"one after another:        median {s:.2f} s")
        print(f"ratio: {s / p:.1f}x")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
