"""A kept rehearsal's bucket, read offline: a folder of objects behind the few S3 calls the readers make.

`gpu-training rehearse --keep` (scripts/rehearse.py) copies every object of the rehearsed stack out of
its local S3 server into out/<stack>/rehearsal/bucket/<bucket>/<key> before the server stops, and
writes rehearsal.json beside it (the checkpoint settings, node count, cost, keeps-billing: what a real
stack's outputs say). `status`, `logs` and `report --rehearsal` read it through StackBucket with this
client in place of boto3's, so the same code reads a real bucket and a kept rehearsal.
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

from botocore.exceptions import ClientError

RECORD = "rehearsal.json"


def rehearsal_dir(out_root: Path, stack: str) -> Path:
    return Path(out_root) / stack / "rehearsal"


class FolderClient:
    """list_objects_v2 (paginated), get_object and download_file over <folder>/<bucket>/<key>."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _path(self, bucket: str, key: str) -> Path:
        path = (self.folder / bucket / key).resolve()
        if not str(path).startswith(str((self.folder / bucket).resolve()) + "/") or not path.is_file():
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": f"{key}: no such object"}}, "GetObject")
        return path

    def _etag(self, path: Path) -> str:
        return '"' + hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest() + '"'

    def list_objects(self, bucket: str, prefix: str) -> list[dict]:
        base = self.folder / bucket
        found = []
        for path in sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []:
            key = path.relative_to(base).as_posix()
            if key.startswith(prefix):
                stat = path.stat()
                found.append({"Key": key, "ETag": self._etag(path), "Size": stat.st_size,
                              "LastModified": datetime.fromtimestamp(stat.st_mtime, timezone.utc)})
        return found

    def get_paginator(self, operation: str):
        assert operation == "list_objects_v2", operation
        client = self

        class Paginator:
            def paginate(self, Bucket: str, Prefix: str = ""):
                return [{"Contents": client.list_objects(Bucket, Prefix)}]

        return Paginator()

    def get_object(self, Bucket: str, Key: str, **_):
        path = self._path(Bucket, Key)
        return {"Body": io.BytesIO(path.read_bytes()), "ETag": self._etag(path)}

    def download_file(self, bucket: str, key: str, filename: str, **_):
        shutil.copyfile(self._path(bucket, key), filename)


def export(client, bucket: str, prefix: str, dest: Path) -> int:
    """Copy every object under prefix from an S3 client into dest/<bucket>/<key>; the number copied."""
    count, token = 0, None
    while True:
        kwargs = {"Bucket": bucket, "Prefix": prefix, **({"ContinuationToken": token} if token else {})}
        page = client.list_objects_v2(**kwargs)
        for item in page.get("Contents", []):
            target = Path(dest) / bucket / item["Key"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
            count += 1
        token = page.get("NextContinuationToken")
        if not token:
            return count


def write_record(folder: Path, record: dict) -> Path:
    path = Path(folder) / RECORD
    path.write_text(json.dumps(record, indent=1))
    return path


def read_record(folder: Path) -> dict:
    """The kept rehearsal's record; FileNotFoundError when there is none."""
    return json.loads((Path(folder) / RECORD).read_text())
