"""Upload a packed data set to its stack's place in the bucket: shards first, the manifest last.

``<prefix>/<stack>/data/`` (node_agent.layout.DATA): inside the stack's root, so the node role's
existing least-privilege grant (read/write below the stack root) covers it and no cloud needs a
wider policy. A shard already in the bucket with the same size and sha256 (object metadata, which
we set on upload) is not sent again, so an interrupted upload resumes. The manifest goes last and
only after every shard is in place: a node that finds it can stage the whole set. A manifest left
from an older data set is deleted first, so no node stages new shards against an old list.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from botocore.exceptions import ClientError

from components.dataset import read_manifest
from node_agent import layout


def _present(s3, bucket: str, key: str, shard: dict) -> bool:
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return head["ContentLength"] == shard["size"] and head.get("Metadata", {}).get("sha256") == shard["sha256"]


def upload(folder: Path, s3, bucket: str, root: str,
           progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    """Put folder's shards and manifest under <root>data/; {'sent': n, 'kept': n, 'bytes': n, 'prefix': ...}."""
    manifest = read_manifest(folder)
    base = root + layout.DATA
    remote = _remote_manifest(s3, bucket, base)
    if remote is not None and remote != manifest:
        s3.delete_object(Bucket=bucket, Key=base + layout.DATA_MANIFEST)
    sent = kept = done = 0
    total = manifest["bytes"]
    for shard in manifest["shards"]:
        key = base + shard["name"]
        if _present(s3, bucket, key, shard):
            kept += 1
        else:
            path = folder / shard["name"]
            if not path.is_file() or path.stat().st_size != shard["size"]:
                raise ValueError(f"{path}: missing or not the size the manifest records ({shard['size']} bytes): "
                                 "pack the folder again (scripts/pack.py resumes)")
            s3.upload_file(str(path), bucket, key, ExtraArgs={"Metadata": {"sha256": shard["sha256"]}})
            if not _present(s3, bucket, key, shard):
                raise OSError(f"s3://{bucket}/{key}: the uploaded shard is not in the bucket as sent")
            sent += 1
        done += shard["size"]
        progress(done, total)
    s3.put_object(Bucket=bucket, Key=base + layout.DATA_MANIFEST,
                  Body=(folder / layout.DATA_MANIFEST).read_bytes(), ContentType="application/json")
    return {"sent": sent, "kept": kept, "bytes": total, "prefix": f"s3://{bucket}/{base}"}


def _remote_manifest(s3, bucket: str, base: str):
    try:
        return json.loads(s3.get_object(Bucket=bucket, Key=base + layout.DATA_MANIFEST)["Body"].read())
    except ClientError as error:
        if error.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return None
        raise
    except ValueError:
        return {}  # unreadable: replaced like any other
