"""Fetch the node agent's bundle from object storage with the node role, verify it, unpack it.

Used when the agent does not fit in user-data (16 KB on Tencent and AWS): cloud-init writes this
file and the provider's cloud runtime, the Pulumi program uploads the bundle to
<prefix>/<stack>/agent/node-agent-<sha>.tar.gz, and the bootstrap runs
    python fetch_agent.py --config node.json --key KEY --sha256 HEX --dest <paths.agent>
Self-contained: it imports only the standard library, boto3 and the cloud runtime file, because the
agent package it installs is not on the node yet. Exit 0 on success, 1 on a failed fetch or a hash
mismatch (nothing is unpacked then), 2 on bad arguments.
"""
import argparse
import hashlib
import importlib.util
import io
import json
import os
import sys
import tarfile
import time
import urllib.error
import urllib.request

# The metadata service is link-local: never send it through a proxy from the environment.
_open = urllib.request.build_opener(urllib.request.ProxyHandler({})).open


def http(method, url, headers=None):
    try:
        with _open(urllib.request.Request(url, method=method, headers=headers or {}), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def s3_client(cfg, runtime_file):
    import boto3
    from botocore.config import Config
    from botocore.credentials import RefreshableCredentials

    spec = importlib.util.spec_from_file_location("cloud_runtime", runtime_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runtime = module.Runtime(cfg, http)
    session = boto3.Session()
    session._session._credentials = RefreshableCredentials.create_from_metadata(
        runtime.credentials(), runtime.credentials, "node-role")
    k = cfg["checkpoint"]
    extra = {}
    if cfg["provider"] != "aws" or k.get("endpoint"):
        # Non-AWS stores reject the CRC32 checksums botocore >= 1.36 sends by default (REFERENCE.md).
        extra = {"request_checksum_calculation": "when_required", "response_checksum_validation": "when_required"}
    return session.client("s3", endpoint_url=k.get("endpoint"), region_name=k.get("region") or cfg["region"],
                          config=Config(signature_version=k.get("signatureVersion", "s3v4"), connect_timeout=5,
                                        read_timeout=60, retries={"mode": "standard", "max_attempts": 5},
                                        s3={"addressing_style": k.get("addressingStyle", "virtual")}, **extra))


def unpack(data, dest):
    """Extract only regular files under node_agent/ (a hostile archive cannot write elsewhere)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            parts = m.name.split("/")
            if not m.isfile() or parts[0] != "node_agent" or ".." in parts or m.name.startswith("/"):
                raise ValueError(f"unexpected archive member {m.name!r}")
        for m in members:
            path = os.path.join(dest, m.name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + ".tmp", "wb") as f:
                f.write(tar.extractfile(m).read())
            os.chmod(path + ".tmp", 0o644)
            os.replace(path + ".tmp", path)
    return len(members)


def main(argv=None):
    p = argparse.ArgumentParser(description="fetch and unpack the node agent bundle")
    p.add_argument("--config", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--sha256", required=True)
    p.add_argument("--dest", required=True)
    p.add_argument("--runtime", help="cloud runtime file (default: DEST/node_agent/cloud_runtime.py)")
    p.add_argument("--attempts", type=int, default=10)
    a = p.parse_args(argv)
    with open(a.config) as f:
        cfg = json.load(f)
    bucket = cfg["checkpoint"]["bucket"]
    runtime_file = a.runtime or os.path.join(a.dest, "node_agent", "cloud_runtime.py")
    error = None
    for attempt in range(a.attempts):
        try:
            data = s3_client(cfg, runtime_file).get_object(Bucket=bucket, Key=a.key)["Body"].read()
            break
        except Exception as e:  # role credentials can lag a fresh instance by seconds: retry everything
            error = e
            time.sleep(min(2 ** attempt, 20))
    else:
        print(f"fetch_agent: s3://{bucket}/{a.key}: {error}", file=sys.stderr)
        return 1
    got = hashlib.sha256(data).hexdigest()
    if got != a.sha256:
        print(f"fetch_agent: s3://{bucket}/{a.key}: sha256 {got} != expected {a.sha256}; not unpacked",
              file=sys.stderr)
        return 1
    n = unpack(data, a.dest)
    with open(os.path.join(a.dest, ".bundle-sha256"), "w") as f:
        f.write(a.sha256)
    print(f"fetch_agent: {n} files from s3://{bucket}/{a.key} into {a.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
