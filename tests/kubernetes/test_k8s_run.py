"""scripts/run.py on the Kubernetes stack: it watches the pods' markers (an evicted pod's replacement
writes under the same name) and destroys the cluster only once every pod's marker says its data is
saved; a pod whose final upload failed keeps the cluster up, with the pod's own advice.

The stack's outputs are the program's own (the mock engine's plan of large-a100-k8s), pointed at a
local moto S3; the markers are written in the documented format (docs/node-config.md), as the agent in
a pod writes them (tests/kubernetes/test_pod_agent.py rehearses the real agent).
"""
from __future__ import annotations

import importlib.util
import io
import json
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import boto3
import pytest
from rich.console import Console

from localcloud import LocalS3
from test_run_watch import FakeStack  # the recorded Automation layer of run.py's own tests
from tools.runlib import exitcodes

REPO = Path(__file__).resolve().parents[2]
STACK = "large-a100-k8s"
_spec = importlib.util.spec_from_file_location("run_cli_k8s", REPO / "scripts" / "run.py")
run_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_cli)


@pytest.fixture(scope="module")
def s3_server():
    server = LocalS3()
    yield server
    server.stop()


@pytest.fixture
def store(s3_server, monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(key, value)
    client = boto3.client("s3", endpoint_url=s3_server.url, region_name="us-east-1", aws_access_key_id="test",
                          aws_secret_access_key="test")
    bucket = f"ckpt-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return client, bucket


def program_outputs(plan_for, endpoint: str, bucket: str) -> dict:
    outputs = json.loads(json.dumps(plan_for(STACK).outputs, default=str))
    outputs["checkpoint"].update({"bucket": bucket, "endpoint": endpoint, "region": "us-east-1",
                                  "addressingStyle": "path", "signatureVersion": "s3v4"})
    return outputs


def marker(client, bucket, pod, state, **fields):
    body = {"state": state, "node": pod, "stack": STACK, "exitCode": None, "reason": None, "durationSeconds": 60.0,
            "gpuHours": 0.1, "estimatedCost": None, "currency": "CNY", "utilisation": {"gpuUtilMean": 90.0},
            "lastCheckpoint": None, "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
    client.put_object(Bucket=bucket, Key=f"gpu-training/{STACK}/markers/{pod}.json", Body=json.dumps(body).encode())


def states(client, bucket) -> dict:
    found = client.list_objects_v2(Bucket=bucket, Prefix=f"gpu-training/{STACK}/markers/").get("Contents", [])
    return {o["Key"].rsplit("/", 1)[-1]: json.loads(client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())[
        "state"] for o in found}


def run(tmp_path, stack, *args):
    out = io.StringIO()
    code = run_cli.main([STACK, "--poll", "0.1", "--out", str(tmp_path / "out"), *args],
                        stack_factory=stack.factory, console=Console(file=out, width=220, force_terminal=False))
    return code, out.getvalue()


def test_the_cluster_is_destroyed_only_after_every_pod_saved_its_data(tmp_path, plan_for, store, s3_server):
    client, bucket = store

    def pods():
        time.sleep(1.1)  # markers written after `up` started
        marker(client, bucket, "train-0", "RUNNING")
        marker(client, bucket, "train-1", "RUNNING")
        time.sleep(0.5)
        marker(client, bucket, "train-0", "PREEMPTED", reason="agent got SIGTERM: node stopping")
        time.sleep(0.5)
        marker(client, bucket, "train-0", "RUNNING")  # the Job's new pod, same index, same name
        time.sleep(0.5)
        marker(client, bucket, "train-1", "DONE")
        time.sleep(0.5)
        marker(client, bucket, "train-0", "DONE")

    at_destroy = {}
    stack = FakeStack(program_outputs(plan_for, s3_server.url, bucket), stack=STACK,
                      on_up=lambda: threading.Thread(target=pods, daemon=True).start(),
                      on_destroy=lambda: at_destroy.update(states(client, bucket)))
    code, out = run(tmp_path, stack, "--yes", "--timeout", "0.01")
    assert code == exitcodes.DONE, out
    assert stack.calls == ["up", "refresh", "destroy"]
    assert at_destroy == {"train-0.json": "DONE", "train-1.json": "DONE"}
    # What bills until the destroy is said right after `up`: the control plane and the system pool.
    assert "ACK control plane" in out and "ACK system node pool" in out


def test_a_pod_whose_upload_failed_keeps_the_cluster_with_the_pods_advice(tmp_path, plan_for, store, s3_server):
    client, bucket = store

    def pods():
        time.sleep(1.1)
        marker(client, bucket, "train-0", "DONE")
        marker(client, bucket, "train-1", "SYNC_FAILED", reason="AccessDenied")

    stack = FakeStack(program_outputs(plan_for, s3_server.url, bucket), stack=STACK,
                      on_up=lambda: threading.Thread(target=pods, daemon=True).start())
    code, out = run(tmp_path, stack, "--yes", "--timeout", "0.01")
    assert code == exitcodes.NOT_SAVED, out
    assert stack.calls == ["up"], "nothing may be destroyed while a pod's data is only on its volume"
    assert "kubectl -n gpu-training logs -l job-name=train" in out and "systemctl" not in out
