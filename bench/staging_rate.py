"""Staging throughput: the agent's verified staging vs a plain boto3 download of the same objects.

A packed-set manifest and its shards (random bytes) go into a local S3 server (moto, in its own
process on 127.0.0.1). Each round then downloads the whole set three ways into a fresh folder:
  - the agent's Stager (node_agent/staging.py): 8 threads, each shard hashed (sha256) while it
    streams, checked against the manifest and renamed, the record and progress written every 2 s;
  - boto3 download_file of every object with the same 8 threads, nothing verified;
  - boto3 download_file one object after another (the simplest script a user would write).
Prints each way's median MB/s over the rounds and the ratio of staging to the parallel download
(the goal: at least 0.9x while verifying). Loopback S3 is not a cloud's: the absolute figures are
moto's (a Python server), the ratio is what carries over.

Run: .venv/bin/python bench/staging_rate.py [--shards 16] [--shard-mb 8] [--rounds 5]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3

from node_agent import layout
from node_agent.staging import THREADS, Stager
from node_agent.store import Store

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
BUCKET, STACK = "bench-staging", "bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("moto server did not start")


def node_config(url: str) -> dict:
    return {"stack": STACK, "checkpoint": {"bucket": BUCKET, "prefix": "gpu-training", "endpoint": url,
                                           "region": "us-east-1", "addressingStyle": "path",
                                           "signatureVersion": "s3v4", "verify": {"method": "read-back"}},
            "agent": {"uploadAttempts": 3, "retryBaseSeconds": 0.1}}


def seed(s3, root: str, shards: int, size: int) -> int:
    s3.create_bucket(Bucket=BUCKET)
    entries = []
    for i in range(shards):
        body = os.urandom(size)
        name = f"shard-{i:06d}.tar"
        s3.put_object(Bucket=BUCKET, Key=root + layout.DATA + name, Body=body)
        entries.append({"name": name, "sha256": hashlib.sha256(body).hexdigest(), "size": size})
    manifest = {"format": layout.DATA_FORMAT, "shards": entries, "bytes": shards * size}
    s3.put_object(Bucket=BUCKET, Key=root + layout.DATA + layout.DATA_MANIFEST, Body=json.dumps(manifest).encode())
    return shards * size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--shard-mb", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    os.environ.update(CREDENTIALS)
    server, url = start_moto()
    try:
        cfg = node_config(url)
        store = Store(cfg, "bench-node", None)
        total = seed(store.s3, store.root, args.shards, int(args.shard_mb * 2**20))
        plain = boto3.client("s3", endpoint_url=url, region_name="us-east-1")
        keys = [store.root + layout.DATA + f"shard-{i:06d}.tar" for i in range(args.shards)]
        results: dict[str, list[float]] = {"agent staging (verified)": [], "boto3, 8 threads": [],
                                           "boto3, one at a time": []}
        with tempfile.TemporaryDirectory() as tmp:
            def fresh(name: str) -> Path:
                folder = Path(tmp) / name
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                return folder

            def staged():
                folder = fresh("staged")
                Stager(store, str(folder), str(Path(tmp) / "staging.json")).run()

            def parallel():
                folder = fresh("parallel")
                with ThreadPoolExecutor(THREADS) as pool:
                    list(pool.map(lambda k: plain.download_file(BUCKET, k, str(folder / k.rsplit("/", 1)[1])), keys))

            def sequential():
                folder = fresh("sequential")
                for k in keys:
                    plain.download_file(BUCKET, k, str(folder / k.rsplit("/", 1)[1]))

            ways = dict(zip(results, (staged, parallel, sequential), strict=True))
            for _ in range(args.rounds):
                for name, way in ways.items():  # interleaved, so drift hits every way alike
                    began = time.perf_counter()
                    way()
                    results[name].append(total / 1e6 / (time.perf_counter() - began))
    finally:
        server.terminate()
        server.wait()
    medians = {name: statistics.median(r) for name, r in results.items()}
    print(f"{args.shards} shards x {args.shard_mb:g} MiB = {total / 1e6:.0f} MB from moto on 127.0.0.1, "
          f"{args.rounds} rounds")
    for name, median in medians.items():
        print(f"  {name:26s} median {median:7.1f} MB/s  (rounds: {', '.join(f'{r:.1f}' for r in results[name])})")
    ratio = medians["agent staging (verified)"] / medians["boto3, 8 threads"]
    print(f"  staging / boto3 8 threads: {ratio:.2f}x  (goal >= 0.9x)")
    print(f"  staging / boto3 one at a time: {medians['agent staging (verified)'] / medians['boto3, one at a time']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
