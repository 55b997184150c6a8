"""Where a command reads a stack from: a real bucket (with the Pulumi outputs, or the stack file's
offline equivalent), a local S3 endpoint, or a kept rehearsal's folder (--rehearsal).

Returns a StackBucket and an outputs dict with the stack outputs' keys (checkpoint, nodeCount,
costPerHour, keepsBilling, expiresAt, instanceIds, provider), so status, logs and report never care
which one it was.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import paths


class SourceError(Exception):
    """The stack cannot be read: `code` is the exit status (2: usage or credentials, 1: otherwise)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass
class StackSource:
    bucket: object
    outputs: dict
    notes: list[str] = field(default_factory=list)
    rehearsal: Optional[Path] = None
    baseline: Optional[dict] = None
    since: object = None


def offline_outputs(stack: str) -> dict:
    """What the stack file says of the outputs status needs, without Pulumi (no TTL, no instance ids)."""
    from components import cost, targets
    from components.spec import SpecError
    from tools.stackfiles import StackFileError, stack_spec

    try:
        _, spec = stack_spec(stack)
    except (StackFileError, SpecError) as error:
        raise SourceError(error.render()) from None
    target = targets.of(spec)
    outputs = {targets.OUTPUT_KEY: target.kind, "stack": stack, "provider": spec.provider, "region": spec.region,
               "nodeCount": spec.nodes, "billing": spec.billing, "checkpoint": spec.checkpoint.output(),
               "costPerHour": cost.cost_output(spec, target.data_disks),
               "keepsBilling": [item.as_dict() for item in target.keeps_billing(spec)]}
    if spec.platform is not None:  # which platform the job API is asked on; the job id only Pulumi knows
        outputs["platform"] = spec.platform.offer.kind
    return outputs


def pulumi_outputs(stack: str) -> tuple[Optional[dict], Optional[str]]:
    """(the deployed stack's outputs, None) or (None, why not) through the Automation API."""
    from tools.runlib.automation import AutomationError, PulumiStack

    try:
        return PulumiStack(stack, paths.REPO, create=False).outputs(), None
    except AutomationError as error:
        return None, str(error)
    except Exception as error:  # a backend that answers something unexpected: fall back, say why
        return None, f"{type(error).__name__}: {error}"


def run_record(stack: str) -> tuple[Optional[dict], object]:
    """The baseline `up` recorded (out/<stack>/run.json): which markers are this run's."""
    from tools.runlib.markers import parse_time

    try:
        record = json.loads((paths.OUT / stack / "run.json").read_text())
    except (OSError, ValueError):
        return None, None
    if record.get("stack") != stack or not isinstance(record.get("baseline"), dict):
        return None, None
    started = record.get("upStartedAt")
    since = None
    if isinstance(started, (int, float)):
        from datetime import datetime, timezone
        since = datetime.fromtimestamp(started, timezone.utc)
    return record["baseline"], since or parse_time(None)


def open_stack(stack: str, rehearsal: bool = False, endpoint: Optional[str] = None) -> StackSource:
    from tools.runlib.bucket import BucketError, StackBucket

    if rehearsal:
        from tools.runlib import localbucket

        folder = localbucket.rehearsal_dir(paths.OUT, stack)
        try:
            record = localbucket.read_record(folder)
        except (OSError, ValueError):
            raise SourceError(f"no kept rehearsal of {stack} in {folder}: run `gpu-training rehearse {stack} --keep` "
                              "first") from None
        bucket = StackBucket(record["checkpoint"], stack, client=localbucket.FolderClient(folder / "bucket"))
        return StackSource(bucket, record, [f"kept rehearsal in {folder} (simulated accelerator)"], folder)

    from tools.runlib.credentials import MissingCredentials, from_env

    notes = []
    outputs, why = pulumi_outputs(stack) if not endpoint else (None, "a local endpoint was given")
    if outputs is None or not isinstance(outputs.get("checkpoint"), dict):
        fallback = offline_outputs(stack)
        if outputs:  # deployed, but an older program without a checkpoint output
            fallback.update({k: v for k, v in outputs.items() if k != "checkpoint"})
        outputs = fallback
        notes.append(f"no Pulumi stack outputs ({why or 'no checkpoint output'}): read the stack file; "
                     "TTL and instance ids unknown")
    checkpoint = dict(outputs["checkpoint"])
    if endpoint:
        checkpoint["endpoint"] = endpoint
    provider = outputs.get("provider") or offline_outputs(stack)["provider"]
    try:
        session = from_env(provider).boto3_session()
    except MissingCredentials as error:
        raise SourceError(str(error)) from None
    try:
        bucket = StackBucket(checkpoint, stack, session=session)
    except BucketError as error:
        raise SourceError(str(error)) from None
    baseline, since = run_record(stack)
    return StackSource(bucket, outputs, notes, None, baseline, since)


def deployed_outputs(stack: str) -> tuple[Optional[dict], str]:
    """(outputs, "") of a deployed stack; (None, "not deployed") when the backend has no such stack or it
    has no outputs; (None, why) when the backend cannot be asked."""
    from tools.runlib.automation import AutomationError, PulumiStack

    try:
        outputs = PulumiStack(stack, paths.REPO, create=False).outputs()
    except AutomationError as error:
        return None, "not deployed" if "does not exist" in str(error) else str(error)
    return (outputs, "") if outputs else (None, "not deployed")


def stack_bucket(stack: str, outputs: dict):
    """The deployed stack's bucket, read with its cloud's credentials from the environment."""
    from tools.runlib.bucket import StackBucket
    from tools.runlib.credentials import from_env

    provider = outputs.get("provider") or offline_outputs(stack)["provider"]
    return StackBucket(dict(outputs["checkpoint"]), stack, session=from_env(provider).boto3_session())


def every_stack(stacks: list[str], outputs_of=deployed_outputs, bucket_of=stack_bucket) -> tuple[list[dict], list[str]]:
    """`gpu-training status` with no stack: (one row per stack, notes) (tools/runlib/overview.py). Without a
    Pulumi CLI that is said once, in a note, rather than asked of the backend and repeated in every row."""
    import shutil

    from tools.runlib.overview import UNKNOWN, gather_all

    notes = []
    if outputs_of is deployed_outputs and shutil.which("pulumi") is None:
        notes.append("the Pulumi CLI is not installed (`pulumi` is not on PATH): no stack's deployment can be read;"
                     " https://www.pulumi.com/docs/install/")

        def outputs_of(stack):  # noqa: F811  (one answer for all: the CLI is not there)
            return None, UNKNOWN
    rows = gather_all(stacks, outputs_of, bucket_of, run_record)
    for row in rows:
        row["attempts"] = up_attempts(row["stack"])
    return rows, notes


def up_attempts(stack: str) -> list[dict]:
    """The last `up`'s attempts (run.json, written by scripts/run.py): where it moved on from and why."""
    try:
        record = json.loads((paths.OUT / stack / "run.json").read_text())
    except (OSError, ValueError):
        return []
    attempts = record.get("attempts") if isinstance(record, dict) else None
    return [a for a in attempts if isinstance(a, dict)] if isinstance(attempts, list) else []
