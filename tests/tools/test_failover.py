"""`gpu-training up` on a stock-out: the real command (scripts/run.py's main, the Driver) on a stack whose
first zone answers the cloud's documented stock-out, ending in the second zone with nothing left from the
first attempt.

Only the Pulumi engine is local (tools/localstack.py: the real program under the mock engine, its node
launched with the cloud's SDK against the cloud's API stand-in, which answers OperationDenied.NoStock as
ECS documents it, components/providers/alicloud/capacity.yaml). The checkpoint bucket is a moto S3 server;
the node's part (its DONE marker) is written the way the agent writes it (docs/node-config.md).
"""
from __future__ import annotations

import io
import json
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path

import boto3
import pytest
import yaml
from rich.console import Console

from localcloud.standins import CloudApi
from tests.tools.run_harness import run_cli
from tools import stackfiles
from tools.localstack import LocalStack
from tools.runlib import exitcodes

REPO = Path(__file__).resolve().parents[2]

STACK = "fo-t4"
FIRST, SECOND, THIRD = "cn-hangzhou-i", "cn-hangzhou-k", "cn-hangzhou-j"


@pytest.fixture
def project(tmp_path, monkeypatch, moto_url):
    """A project holding one stack: entry-t4 pinned to FIRST, with SECOND and THIRD as failover zones."""
    for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(key, value)
    bucket = f"ckpt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1").create_bucket(Bucket=bucket)
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.entry-t4.yaml").read_text())
    config["config"].update({"gpu-training:zone": FIRST, "gpu-training:failover": {"zones": [SECOND, THIRD]},
                             "gpu-training:checkpoint": {"bucket": bucket}})
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setattr(run_cli, "REPO", root)
    monkeypatch.setattr(stackfiles, "STACKS_DIR", root / "stacks")
    return {"root": root, "bucket": bucket}


def nodes_finish(moto_url: str, bucket: str):
    """After a successful up: the node's DONE marker in the bucket, and the checkpoint output pointed at moto
    (path style: the stand-in is an IP address)."""
    def on_up(outputs: dict) -> dict:
        s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
        body = {"state": "DONE", "node": "i-1", "stack": STACK, "exitCode": 0, "reason": None,
                "durationSeconds": 60.0, "gpuHours": 0.0167, "estimatedCost": 0.05, "currency": "CNY",
                "utilisation": {"samples": 3, "gpuUtilMean": 80.0}, "lastCheckpoint": None,
                "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        s3.put_object(Bucket=bucket, Key=f"gpu-training/{STACK}/markers/i-1.json", Body=json.dumps(body).encode())
        checkpoint = {**outputs["checkpoint"], "endpoint": moto_url, "region": "us-east-1", "addressingStyle": "path",
                      "signatureVersion": "s3v4"}
        return {**outputs, "checkpoint": checkpoint}
    return on_up


def run(project, api, moto_url, *args):
    stack = LocalStack(STACK, stackfiles.load_stack_config(STACK), api.url,
                       on_up=nodes_finish(moto_url, project["bucket"]))
    out = io.StringIO()
    code = run_cli.main([STACK, "--yes", "--poll", "0.1", "--out", str(project["root"] / "out"), *args],
                        stack_factory=stack.factory, console=Console(file=out, width=250, force_terminal=False))
    return code, out.getvalue(), stack


def test_up_moves_on_from_a_stock_out_to_the_second_zone_leaving_nothing_of_the_first(project, moto_url):
    api = CloudApi("alicloud")
    api.sold_out_zones = {FIRST}
    try:
        code, out, stack = run(project, api, moto_url)
    finally:
        api.stop()
    assert code == exitcodes.DONE, out
    runs = [r["params"] for r in api.calls("RunInstances")]
    assert [r["ZoneId"] for r in runs] == [FIRST, SECOND], "tried the first zone, then the second"
    assert "found no stock: OperationDenied.NoStock" in out and "sold out in the specified zone" in out
    assert "removing what attempt 1 created" in out and f"moving on to attempt 2: ecs.gn6i-c8g1.2xlarge in {SECOND}" in out
    assert stack.log[:4] == ["up", "destroy", f"set_config gpu-training:zone={SECOND}", "up"], stack.log
    assert stack.config["gpu-training:zone"] == SECOND
    # Nothing of the first attempt was left: its destroy emptied the state before the second up, and the
    # second attempt's node, released at the end, was the only one the stand-in ever ran.
    assert api.launched == {} and len(api.calls("DeleteInstance")) == 1 and stack.state == []
    # Every resource of the first attempt was deleted, then made anew by the second.
    assert out.count(f"alicloud:vpc/network:Network {STACK}-vpc created") == 2
    assert out.count(f"alicloud:vpc/network:Network {STACK}-vpc deleted") == 2


def test_the_run_record_keeps_each_attempt_for_status(project, moto_url):
    api = CloudApi("alicloud")
    api.sold_out_zones = {FIRST}
    try:
        code, out, stack = run(project, api, moto_url, "--keep")
    finally:
        api.stop()
    assert code == exitcodes.DONE, out
    record = json.loads((project["root"] / "out" / "run.json").read_text())
    assert [(a["zone"], a["outcome"]) for a in record["attempts"]] == [
        (FIRST, "stock: OperationDenied.NoStock"), (SECOND, "deployed")]
    assert list(api.launched.values())[0]["zone"] == SECOND, "--keep: the second attempt's node runs on"


def test_a_stock_out_with_no_alternative_left_stops_and_says_how_to_clean_up(project, moto_url):
    api = CloudApi("alicloud")
    api.sold_out_zones = {FIRST, SECOND, THIRD}
    try:
        code, out, stack = run(project, api, moto_url)
    finally:
        api.stop()
    assert code == exitcodes.UP_FAILED, out
    assert [r["params"]["ZoneId"] for r in api.calls("RunInstances")] == [FIRST, SECOND, THIRD]
    assert "No alternative left to try" in out and "pulumi destroy" in out


def test_a_stack_deployed_before_is_not_torn_down_to_move_on(project, moto_url):
    api = CloudApi("alicloud")
    api.sold_out_zones = {FIRST}
    stack = LocalStack(STACK, stackfiles.load_stack_config(STACK), api.url)
    stack.outputs_now = {"stack": STACK}  # a deployed stack's outputs
    out = io.StringIO()
    try:
        code = run_cli.main([STACK, "--yes", "--out", str(project["root"] / "out")], stack_factory=stack.factory,
                            console=Console(file=out, width=250, force_terminal=False))
    finally:
        api.stop()
    assert code == exitcodes.UP_FAILED and "destroy" not in stack.log, out.getvalue()
    assert "was deployed before this up" in out.getvalue()


# ---------------------------------------------------------------- the failover key and the attempts it allows

def spec_with(stack: str, *overrides: str):
    from tools.stackfiles import stack_spec
    return stack_spec(stack, overrides)[1]


@pytest.mark.parametrize("overrides, key, words", [
    (("zone=cn-hangzhou-i", 'failover.zones=["cn-hangzhou-zz"]'), "failover.zones[0]", "is not a zone of cn-hangzhou"),
    (('failover.zones=["cn-hangzhou-k"]',), "failover.zones", "set zone too"),
    (('failover.instanceTypes=["ecs.gn7i-c8g1.2xlarge"]',), "failover.instanceTypes[0]", "keeps the stack's 1x T4"),
    (('failover.instanceTypes=["ecs.nope"]',), "failover.instanceTypes[0]", "not in the Alibaba Cloud catalog"),
    (('failover.regions=["cn-nowhere"]',), "failover.regions[0]", "not among Alibaba Cloud's regions"),
    (("zone=cn-hangzhou-i", 'failover.zones=["cn-hangzhou-k","cn-hangzhou-k"]'), "failover.zones", "more than once"),
])
def test_the_failover_key_refuses_what_could_not_be_tried_naming_the_key(overrides, key, words):
    from components.spec import SpecError
    with pytest.raises(SpecError) as caught:
        spec_with("entry-t4", *overrides)
    messages = {f.key: f.message for f in caught.value.findings if f.level == "error"}
    assert key in messages and words in messages[key], messages


def test_failover_is_for_vm_nodes_only():
    from components.spec import SpecError
    with pytest.raises(SpecError, match="failover re-plans VM nodes"):
        spec_with("large-a100-k8s", 'failover.regions=["cn-shanghai"]')


def test_the_attempts_go_zone_by_zone_then_type_by_type_then_region_and_a_quota_skips_the_region():
    from components.capacity import Answer
    from tools.runlib.failover import plan_for

    overrides = ("zone=cn-hangzhou-i", 'failover.zones=["cn-hangzhou-k"]',
                 'failover.instanceTypes=["ecs.gn6i-c16g1.4xlarge"]', 'failover.regions=["cn-shanghai"]')
    spec = spec_with("entry-t4", *overrides)
    plan = plan_for(spec)
    assert [(a.zone, a.instance_type, a.region) for a in plan.attempts] == [
        ("cn-hangzhou-i", "ecs.gn6i-c8g1.2xlarge", "cn-hangzhou"), ("cn-hangzhou-k", "ecs.gn6i-c8g1.2xlarge", "cn-hangzhou"),
        ("cn-hangzhou-i", "ecs.gn6i-c16g1.4xlarge", "cn-hangzhou"), ("cn-hangzhou-k", "ecs.gn6i-c16g1.4xlarge", "cn-hangzhou"),
        (None, "ecs.gn6i-c8g1.2xlarge", "cn-shanghai"), (None, "ecs.gn6i-c16g1.4xlarge", "cn-shanghai")]
    moved = plan.attempts[4].changes
    assert moved["alicloud:region"] == "cn-shanghai" and moved["gpu-training:zone"] is None
    assert moved["gpu-training:checkpoint.region"] == "cn-hangzhou", "the bucket stays where it is"
    stock = Answer("stock", "sold out", "s", code="OperationDenied.NoStock")
    quota = Answer("quota", "vCPU quota", "s", code="QuotaExceed.ElasticQuota")
    assert plan.next_after(plan.attempts[0], stock) is plan.attempts[1]
    assert plan.next_after(plan.attempts[0], quota) is plan.attempts[4], "a quota is the region's: skip to the next"
    cost = plan.region_change_cost(plan.attempts[4])
    assert "stay in cn-hangzhou" in cost and "across regions" in cost


def test_a_spot_pool_keeps_its_spread_when_its_zone_moves():
    from tools.runlib.failover import plan_for

    overrides = ("billing=spot", "zone=cn-hangzhou-i", 'spotZones=["cn-hangzhou-k","cn-hangzhou-j"]',
                 'failover.zones=["cn-hangzhou-k"]')
    spec = spec_with("entry-t4", *overrides)
    plan = plan_for(spec)
    changes = plan.attempts[1].changes
    assert changes["gpu-training:zone"] == "cn-hangzhou-k"
    assert changes["gpu-training:spotZones"] == ["cn-hangzhou-j", "cn-hangzhou-i"]


@pytest.mark.parametrize("stack, code", [("entry-t4", "OperationDenied.NoStock"),
                                         ("tc-entry-t4", "ResourceInsufficient.SpecifiedInstanceType"),
                                         ("hw-entry-t4", "'is sold out'")])
def test_the_rehearsal_drill_shows_the_failover_end_to_end(stack, code):
    """`gpu-training rehearse STACK --stock-out`: the Driver's own failover against the cloud's stand-in."""
    from tools.localstack import failover_drill

    out = io.StringIO()
    ok, detail = failover_drill(stack, Console(file=out, width=250), REPO)
    assert ok, (detail, out.getvalue())
    assert f"found no stock: {code}" in out.getvalue() and "removing what attempt 1 created" in out.getvalue()
    assert "nothing left at the end" in detail


def test_the_rehearsal_drill_says_why_it_cannot_run_where_it_cannot():
    from tools.localstack import failover_drill

    ok, detail = failover_drill("bd-large-a100", Console(file=io.StringIO()), REPO)
    assert not ok and "capacity.yaml" in detail
    ok, detail = failover_drill("large-a100-k8s", Console(file=io.StringIO()), REPO)
    assert not ok and "VM nodes" in detail
