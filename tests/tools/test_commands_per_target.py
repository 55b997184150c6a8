"""preview, status, logs, report, up and down for one stack of each target (VM nodes, Kubernetes, a platform job),
each command the real one (the CLI, scripts/run.py), each run on that target's outputs: the outputs the real
program exports on the mock engine, with what `pulumi up` would add (a platform's job id, from a real submit to
its job API's stand-in). Only the Pulumi Automation layer is a recording fake (tools/runlib/automation.py says
tests replace it so); the bucket is a moto S3 server on 127.0.0.1.

What each target must get right: a Kubernetes stack's status and logs read its pods' markers and logs (they
once took the platform path), its preview promises no cloud-side release and its teardown runs the program;
a platform stack's preview shows only what the platform does, status and logs ask its job API, report says it
has none, and up watches the job to its end instead of waiting for markers a job never writes.
"""
from __future__ import annotations

import gc
import json
import threading
import time

import boto3
import pytest
from click.testing import CliRunner

from localcloud import standins
from tests.tools.run_harness import FakeStack, run_main


@pytest.fixture(autouse=True)
def collector_given_back():
    """`gpu-training preview` ends its process with the collector off and the heap frozen (scripts/preview.py
    process_main); run in-process here, both are given back, or every later test of the process (CI runs them
    all in one) runs without a collector and tests/tools/test_plan_scale.py fails."""
    was = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


STACKS = {"vm": "entry-t4", "kubernetes": "large-a100-k8s", "platform": "large-a100-dlc"}
CREDS = {"ALICLOUD_ACCESS_KEY": "test", "ALICLOUD_SECRET_KEY": "test", "AWS_ACCESS_KEY_ID": "test",
         "AWS_SECRET_ACCESS_KEY": "test"}


@pytest.fixture
def deployed(request, moto_url, tmp_path, monkeypatch, plan_for):
    """(kind, stack, outputs as `pulumi up` leaves them, the bucket's client, a stand-in or None)."""
    kind, command = request.param if isinstance(request.param, tuple) else (request.param, RUNNING_JOB)
    stack = STACKS[kind]
    for key, value in CREDS.items():
        monkeypatch.setenv(key, value)
    outputs = json.loads(json.dumps(plan_for(stack).outputs))
    assert outputs["target"] == kind
    outputs.pop("kubeconfig", None)  # a mock value: nothing here talks to a cluster
    outputs["checkpoint"].update(endpoint=moto_url, region="us-east-1", addressingStyle="path", signatureVersion="s3v4")
    client = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    bucket = outputs["checkpoint"]["bucket"]
    client.create_bucket(Bucket=bucket)
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=item["Key"])
    standin = server = None
    if kind == "platform":
        from components.platforms.training import JobProvider
        from components.providers.alicloud.dlc import job
        from components.validation import build_spec
        from tools.stackfiles import load_stack_config

        standin = standins.job_api(job.OFFER, tmp_path / "bucket", tmp_path)
        server = standin.serve()
        monkeypatch.setenv("GPU_TRAINING_PLATFORM_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        (tmp_path / "bucket" / "code").mkdir(parents=True)
        config = {**load_stack_config(stack), "gpu-training:train": {"command": command, "launcher": "direct"}}
        spec = build_spec(config, stack=stack)
        outputs["jobId"] = JobProvider(job.OFFER.package, spec.region).create({"request": job.request(spec)}).id
    from tools.cli import paths

    monkeypatch.setattr(paths, "OUT", tmp_path / "out")  # run records of this test only
    yield kind, stack, outputs, client, standin
    if server is not None:
        standin.close(server)


def _put(client, outputs, rel, body):
    checkpoint = outputs["checkpoint"]
    client.put_object(Bucket=checkpoint["bucket"], Key=f"{checkpoint['prefix']}/{outputs['stack']}/{rel}",
                      Body=body.encode())


def _marker(stack, state, node):
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    return json.dumps({"state": state, "node": node, "stack": stack, "startedAt": now, "updatedAt": now,
                       "currency": "CNY"})


def _cli(monkeypatch, outputs, *args):
    """The gpu-training command in this process, its Pulumi stack outputs those of `outputs`."""
    from tools.cli.main import cli
    from tools.runlib import automation

    monkeypatch.setattr(automation, "PulumiStack", lambda name, *a, **k: FakeStack(outputs, stack=name))
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _run(stack, outputs, *args, on_up=None, tmp_path):
    fake = FakeStack(outputs, on_up=on_up, stack=stack)
    code, text = run_main(tmp_path / "run", fake, *args, confirm=lambda question: True)
    return code, text, fake


EVERY = pytest.mark.parametrize("deployed", sorted(STACKS), indirect=True)
RUNNING_JOB = "echo trainer says hello; sleep 60"


def test_preview_shows_what_each_target_does():
    from tools.cli.main import cli

    runner = CliRunner()
    texts = {kind: runner.invoke(cli, ["preview", stack], catch_exceptions=False).output for kind, stack in
             STACKS.items()}
    assert "cloud-side release after" not in texts["kubernetes"] and "no cloud-side release" in texts["kubernetes"]
    assert "the cloud releases the nodes then" in texts["vm"]
    platform = texts["platform"]
    # The VM plan's endpoint table heading, not the platform's own sentence that it has none (a wide
    # console keeps that sentence on one line).
    for absent in ("None", "node endpoints (bootstrap", "Ubuntu", "KMS", "data disks"):
        assert absent not in platform, absent
    for flagged in ("placeholder checkpoint.bucket", "placeholder platform.workspaceId", "time limit:"):
        assert flagged in platform, flagged
    doc = json.loads(runner.invoke(cli, ["preview", STACKS["platform"], "--json"], catch_exceptions=False).output)
    assert doc["target"] == "platform" and doc["egress"] is None and doc["unclassifiedResourceTypes"] == []
    user_data = runner.invoke(cli, ["preview", STACKS["kubernetes"], "--user-data"])
    assert user_data.exit_code == 2 and "boots no VM of its own" in user_data.output


@EVERY
def test_status_finds_the_run_where_the_target_keeps_it(deployed, monkeypatch):
    kind, stack, outputs, client, standin = deployed
    _put(client, outputs, "markers/node-a.json", _marker(stack, "RUNNING", "node-a"))
    done = _cli(monkeypatch, outputs, "status", stack, "--json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert doc["target"] == kind
    if kind == "platform":  # the job API's state; a job writes no markers (one in the bucket is not its)
        assert doc["job"]["state"] == "running" and doc["job"]["jobId"] == outputs["jobId"] and doc["nodes"] == []
        assert doc["state"] == "RUNNING"
    else:
        assert doc["job"] is None and doc["state"] == "RUNNING"
        assert doc["nodes"][0]["node"] == "node-a" and doc["nodes"][0]["state"] == "RUNNING"
    table = _cli(monkeypatch, outputs, "status", stack)
    assert ("platform job" in table.output) == (kind == "platform"), table.output


@EVERY
def test_logs_come_from_where_the_target_keeps_them(deployed, monkeypatch):
    kind, stack, outputs, client, standin = deployed
    _put(client, outputs, "markers/node-a.json", _marker(stack, "RUNNING", "node-a"))
    _put(client, outputs, "logs/node-a/trainer.log.0000", "from the bucket\n")
    if kind == "platform":
        end = time.monotonic() + 20
        while "trainer says hello" not in _cli(monkeypatch, outputs, "logs", stack).output and time.monotonic() < end:
            time.sleep(0.2)
    done = _cli(monkeypatch, outputs, "logs", stack, "--trainer")
    assert done.exit_code == 0, done.output
    expected = "trainer says hello" if kind == "platform" else "from the bucket"
    assert expected in done.output, done.output


@EVERY
def test_report_reads_the_agents_report_or_says_a_job_has_none(deployed, monkeypatch):
    kind, stack, outputs, client, standin = deployed
    done = _cli(monkeypatch, outputs, "report", stack, "--endpoint", outputs["checkpoint"]["endpoint"])
    if kind == "platform":
        assert done.exit_code == 1 and "no utilisation report" in done.output, done.output
    else:  # an empty bucket: report.py's own answer, about the nodes' report folders
        assert "no utilisation report" not in done.output and "report" in done.output.lower(), done.output


@pytest.mark.parametrize("deployed", [(kind, "echo trained; sleep 1") for kind in sorted(STACKS)], indirect=True)
def test_up_waits_for_the_end_the_target_reports_then_destroys(deployed, tmp_path):
    kind, stack, outputs, client, standin = deployed

    def nodes_finish():  # the node agents' part: a DONE marker once the watch has its baseline
        def later():
            time.sleep(1.0)
            for n in range(outputs["nodeCount"]):
                _put(client, outputs, f"markers/node-{n}.json", _marker(stack, "DONE", f"node-{n}"))
        threading.Thread(target=later, daemon=True).start()

    # A platform stack's example workspace id is refused by `up` like the example bucket: name one.
    own = ("--set", "platform.workspaceId=998877") if kind == "platform" else ()
    code, text, fake = _run(stack, outputs, "--yes", "--timeout", "0.05", *own, on_up=None if kind == "platform"
                            else nodes_finish, tmp_path=tmp_path)
    assert code == 0 and fake.calls == ["up", "refresh", "destroy"], text
    if kind == "platform":
        assert f"job {outputs['jobId']} on pai-dlc: succeeded (Succeeded)" in text and "markers/" not in text, text
    else:
        assert "training DONE on every node" in text, text
    assert fake.run_program == [kind == "kubernetes"] * 2  # a cluster's teardown runs the program


@EVERY
def test_down_refuses_while_the_run_is_unsaved_and_force_destroys(deployed, tmp_path):
    kind, stack, outputs, client, standin = deployed
    if kind != "platform":
        _put(client, outputs, "markers/node-a.json", _marker(stack, "RUNNING", "node-a"))
    code, text, fake = _run(stack, outputs, "--destroy-only", "--yes", tmp_path=tmp_path)
    assert code == 4 and "destroy" not in fake.calls, text
    if kind == "platform":
        assert "is still running" not in text and "running (Running): destroying stops it" in text, text
    code, text, fake = _run(stack, outputs, "--destroy-only", "--yes", "--force", tmp_path=tmp_path)
    assert code == 3 and fake.calls == ["outputs", "refresh", "destroy"], text
