"""`gpu-training status` with no stack: every stack of the project, one row each, looked at in parallel.

The buckets are a real S3 server (moto) holding markers and a snapshot in the documented formats
(docs/node-config.md); the stack outputs are those a deployed stack has (the Pulumi CLI cannot run here).
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import boto3
from click.testing import CliRunner

from tools.cli import paths
from tools.cli.main import cli
from tools.runlib.bucket import StackBucket
from tools.runlib.overview import NOT_DEPLOYED, gather_all

PREFIX = "gpu-training"


def put_marker(s3, bucket, stack, node, state, **fields):
    body = {"state": state, "node": node, "stack": stack, "exitCode": None, "reason": None,
            "durationSeconds": 60.0, "gpuHours": 0.0167, "estimatedCost": 0.5, "currency": "CNY",
            "utilisation": {"samples": 3, "gpuUtilMean": 80.0}, "lastCheckpoint": None,
            "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/{stack}/markers/{node}.json", Body=json.dumps(body).encode())


def outputs(moto_url, bucket, stack, nodes=1):
    return {"stack": stack, "provider": "alicloud", "region": "cn-hangzhou", "nodeCount": nodes,
            "costPerHour": {"currency": "CNY", "onDemandPerHour": 10.0, "effectivePerHour": 10.0},
            "keepsBilling": [{"what": "checkpoints, markers and reports the nodes wrote"}],
            "checkpoint": {"bucket": bucket, "prefix": PREFIX, "endpoint": moto_url, "region": "us-east-1",
                           "addressingStyle": "path", "signatureVersion": "s3v4"}}


def test_every_stack_is_listed_with_its_state_nodes_utilisation_step_and_cost(moto_url, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    bucket = f"ckpt-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    put_marker(s3, bucket, "entry-t4", "i-1", "RUNNING", gpuUtil=91.0)
    put_marker(s3, bucket, "medium-a100", "i-2", "PREEMPTED")
    put_marker(s3, bucket, "medium-a100", "i-3", "RUNNING")
    put_marker(s3, bucket, "entry-a10", "i-4", "DONE", exitCode=0)
    put_marker(s3, bucket, "medium-a10", "i-5", "FAILED", exitCode=1, reason="trainer exit code 1")
    put_marker(s3, bucket, "tc-entry-t4", "i-6", "PREEMPTED")
    manifest = {"id": "20261206T010000.000000000Z-i-1", "node": "i-1", "files": {"ckpt-000300.pt": {}}}
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/entry-t4/checkpoints/manifests/20261206T010000.000000000Z-i-1.json",
                  Body=json.dumps(manifest).encode())
    deployed = {"entry-t4", "medium-a100", "entry-a10", "medium-a10", "tc-entry-t4", "large-h20"}

    def outputs_of(stack):
        if stack == "large-a100":
            raise RuntimeError("backend answered garbage")
        return (outputs(moto_url, bucket, stack), "") if stack in deployed else (None, NOT_DEPLOYED)

    session = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test")
    stacks = paths.stack_names()
    rows = gather_all(stacks, outputs_of, lambda stack, out: StackBucket(out["checkpoint"], stack, session=session),
                      lambda stack: (None, None))
    by = {r["stack"]: r for r in rows}
    assert [r["stack"] for r in rows] == stacks and len(stacks) >= 15
    assert by["entry-t4"]["state"] == "running" and by["entry-t4"]["gpuUtil"] is not None
    assert by["entry-t4"]["step"] == 300 and by["entry-t4"]["nodes"] == {"planned": 1, "running": 1, "reported": 1}
    assert by["medium-a100"]["state"] == "preempted and replacing"
    assert by["entry-a10"]["state"] == "finished" and by["entry-a10"]["costSoFar"]["amount"] == 0.5
    assert by["medium-a10"]["state"] == "failed"
    assert by["tc-entry-t4"]["state"] == "preempted, no successor"
    assert by["large-h20"]["state"] == "starting"
    assert by["large-a100"]["state"] == "unknown" and "garbage" in by["large-a100"]["why"]
    assert by["hw-medium-v100"]["state"] == NOT_DEPLOYED and by["hw-medium-v100"]["target"] == "vm"
    assert by["large-a100-k8s"]["target"] == "kubernetes" and by["large-a100-dlc"]["target"] == "platform:pai-dlc"
    assert by["entry-t4"]["keepsBilling"] == ["checkpoints, markers and reports the nodes wrote"]


def test_the_command_lists_every_shipped_stack_and_says_once_why_none_can_be_read():
    result = CliRunner().invoke(cli, ["status", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [r["stack"] for r in doc["stacks"]] == paths.stack_names()
    assert all(r["state"] == "unknown" and r["why"] is None for r in doc["stacks"])
    assert len(doc["notes"]) == 1 and "Pulumi CLI is not installed" in doc["notes"][0]
    table = CliRunner().invoke(cli, ["status"])
    assert table.exit_code == 0 and "entry-t4" in table.output and "alicloud/cn-hangzhou" in table.output
    refused = CliRunner().invoke(cli, ["status", "--all"])
    assert refused.exit_code == 2 and "need a STACK" in refused.output


def test_the_last_ups_failover_is_shown_in_the_stacks_row():
    from tools.runlib.overview import moved_on

    attempts = [{"number": 1, "zone": "cn-hangzhou-i", "instanceType": "ecs.gn6i-c8g1.2xlarge", "region": "cn-hangzhou",
                 "outcome": "stock: OperationDenied.NoStock"},
                {"number": 2, "zone": "cn-hangzhou-k", "instanceType": "ecs.gn6i-c8g1.2xlarge", "region": "cn-hangzhou",
                 "outcome": "deployed"}]
    assert moved_on(attempts) == "; up moved on from ecs.gn6i-c8g1.2xlarge in cn-hangzhou-i (OperationDenied.NoStock)"
    assert moved_on(attempts[1:]) == ""
