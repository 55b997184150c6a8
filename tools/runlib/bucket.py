"""Read-only access to a stack's objects in S3-compatible storage: markers and the report.

The endpoint, addressing style and signature come from the stack's ``checkpoint`` output (the same
settings the nodes use); credentials are the cloud's own (tools/runlib/credentials.py: ALICLOUD_*,
TENCENTCLOUD_*, HW_*, BAIDUCLOUD_*): OSS, COS, OBS and BOS all accept their own keys through the S3
API. A kept rehearsal's bucket is a folder (localbucket.py) read through the same methods.
"""
from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Mapping, Optional

from botocore.exceptions import ClientError, NoCredentialsError

from node_agent import layout

from .markers import Marker, parse_marker

# Errors that another poll will not fix: stop watching and say why.
FATAL_CODES = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoSuchBucket",
                         "AllAccessDisabled", "InvalidBucketName", "403", "404"})


class BucketError(Exception):
    """Object storage refused us for a reason that retrying will not fix."""


def from_stack_file(stack: str, endpoint: Optional[str] = None) -> "StackBucket":
    """The stack's bucket as its stack file names it, offline (no Pulumi): for pack.py --upload and report.py.

    Raises the stack file's StackFileError or SpecError (render() says what is wrong), MissingCredentials
    (credentials.py) when the cloud's variables are not set, and BucketError when there is no bucket.
    `endpoint` replaces the stack's (a local server).
    """
    from tools.stackfiles import stack_spec

    from .credentials import from_env

    _, spec = stack_spec(stack)
    checkpoint = spec.checkpoint.output()
    if endpoint:
        checkpoint["endpoint"] = endpoint
    return StackBucket(checkpoint, stack, session=from_env(spec.provider).boto3_session())


class StackBucket:
    def __init__(self, checkpoint: Mapping, stack: str, session=None, client=None):
        from botocore.config import Config

        missing = [k for k in ("bucket",) if not checkpoint.get(k)]
        if missing:
            raise BucketError(f"the stack's checkpoint output has no {', '.join(missing)}: "
                              "set checkpoint.bucket in the stack file")
        self.bucket = checkpoint["bucket"]
        self.root = layout.stack_root(checkpoint.get("prefix"), stack)
        extra = {}
        if not (checkpoint.get("verify") or {}).get("flexibleChecksums"):
            # Declared by the store (profile, checkpoint.verify): OSS and COS reject the CRC32 checksums
            # botocore >= 1.36 sends by default.
            extra = {"request_checksum_calculation": "when_required",
                     "response_checksum_validation": "when_required"}
        config = Config(signature_version=checkpoint.get("signatureVersion") or "s3v4",
                        s3={"addressing_style": checkpoint.get("addressingStyle") or "virtual"},
                        connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 3},
                        **extra)
        # client: another object with the same S3 methods (a kept rehearsal's folder, localbucket.py).
        if client is None and session is None:
            import boto3  # here: a kept rehearsal's folder (client=) needs no boto3

            session = boto3.Session()
        self.s3 = client or session.client(
            "s3", endpoint_url=checkpoint.get("endpoint") or None,
            region_name=checkpoint.get("region") or None, config=config)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.root}"

    def _translate(self, what: str, exc: Exception) -> Exception:
        """A BucketError for failures another poll will not fix; other errors unchanged."""
        if isinstance(exc, NoCredentialsError):
            return BucketError("no credentials for object storage: set the cloud's access key variables "
                               "(docs/cli.md, \"Credentials\") to a key that can read " + self.url)
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            if error.get("Code", "") in FATAL_CODES:
                return BucketError(f"{what} {self.url}: {error.get('Code')} {error.get('Message') or ''}".rstrip())
        return exc

    def _list(self, prefix: str) -> list[dict]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        try:
            return [obj for page in pages for obj in page.get("Contents", [])]
        except (ClientError, NoCredentialsError) as exc:
            raise self._translate("listing", exc) from None

    def marker_etags(self) -> dict[str, str]:
        """key -> ETag of every marker object (cheap: a listing, no downloads)."""
        return {o["Key"]: o["ETag"] for o in self._list(self.root + layout.MARKERS) if o["Key"].endswith(".json")}

    def markers(self, known: Optional[Mapping[str, Marker]] = None) -> list[Marker]:
        """Every marker, downloading only those whose ETag changed since ``known``."""
        known = known or {}
        result = []
        for key, etag in self.marker_etags().items():
            cached = known.get(key)
            if cached is not None and cached.etag == etag:
                result.append(cached)
                continue
            try:
                obj = self.s3.get_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "NoSuchKey":
                    continue  # deleted between listing and reading
                raise self._translate("reading", exc) from None
            result.append(parse_marker(key, obj.get("ETag", etag), obj["Body"].read()))
        return result

    def quarantined(self) -> list[dict]:
        """The snapshots a node found damaged and set aside (checkpoints/quarantine/<id>.json, written by
        the agent): {snapshot, reason, node, at} each, oldest first; nodes skip them when they restore."""
        notes = []
        for obj in sorted(self._list(self.root + layout.QUARANTINE), key=lambda o: o["Key"]):
            snapshot = obj["Key"].rsplit("/", 1)[-1].removesuffix(".json")
            try:
                body = json.loads(self.s3.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"].read())
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "NoSuchKey":
                    continue  # deleted between listing and reading (a user released it)
                raise self._translate("reading", exc) from None
            except ValueError:
                body = {}
            body = body if isinstance(body, dict) else {}
            notes.append({"snapshot": snapshot, "reason": str(body.get("reason") or "unreadable note"),
                          "node": body.get("node"), "at": body.get("at")})
        return notes

    def report_nodes(self) -> list[str]:
        """The nodes that uploaded a report (report/<node>/...), by name."""
        base = self.root + layout.REPORT
        return sorted({o["Key"][len(base):].split("/", 1)[0] for o in self._list(base)} - {""})

    def download_report(self, nodes: list[str], dest: Path) -> list[Path]:
        """Copy report/<node>/* of the given nodes into dest/<node>/; the files written."""
        written = []
        for node in nodes:
            for obj in self._list(self.root + layout.report(node)):
                key = obj["Key"]
                rel = PurePosixPath(key[len(self.root + layout.REPORT):])
                if key.endswith("/") or ".." in rel.parts or rel.is_absolute():
                    continue  # folder placeholders, and names that would escape dest
                target = Path(dest).joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.part")
                try:
                    self.s3.download_file(self.bucket, key, str(tmp))
                except (ClientError, NoCredentialsError) as exc:
                    tmp.unlink(missing_ok=True)
                    raise self._translate("downloading", exc) from None
                tmp.replace(target)
                written.append(target)
        return written

    # --- what `gpu-training status` and `logs` read ---------------------------------------------------
    def get_bytes(self, key: str) -> Optional[bytes]:
        """One object's bytes; None when it does not exist."""
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise self._translate("reading", exc) from None
        except NoCredentialsError as exc:
            raise self._translate("reading", exc) from None

    def newest_snapshot(self) -> Optional[dict]:
        """The newest checkpoint manifest ({id, node, files}), or None (ids start with the UTC time)."""
        keys = sorted(o["Key"] for o in self._list(self.root + layout.MANIFESTS) if o["Key"].endswith(".json"))
        for key in reversed(keys):
            raw = self.get_bytes(key)
            try:
                body = json.loads(raw) if raw is not None else None
            except ValueError:
                continue
            if isinstance(body, dict):
                return body
        return None

    def log_segments(self, node: Optional[str] = None) -> dict[tuple[str, str], list[dict]]:
        """{(node, log file name): [segment objects, in order]} under logs/ (node_agent/logship.py)."""
        base = self.root + layout.LOGS
        found: dict[tuple[str, str], list[dict]] = {}
        for obj in self._list(base + (f"{node}/" if node else "")):
            rel = obj["Key"][len(base):]
            name, _, seq = rel.rpartition(".")
            if "/" not in name or not seq.isdigit():
                continue
            who, _, log_name = name.partition("/")
            found.setdefault((who, log_name), []).append(obj)
        return {k: sorted(v, key=lambda o: o["Key"]) for k, v in sorted(found.items())}
