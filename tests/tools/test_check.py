"""`gpu-training check`: each cloud's read-only capacity calls, made by its own SDK, against a stand-in
that checks the signature and the required parameters and answers in the cloud's wire format
(tests/localcloud/capacity_standins.py): with and without credentials, and for a stack whose type is sold
out in one zone."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.localcloud.capacity_standins import KEY_ID, SECRET, CapacityStandIn
from tools.cli.main import cli
from tools.runlib import check
from tools.runlib.credentials import variables
from tools.stackfiles import stack_spec

CLOUDS = {  # cloud -> (stack, its zone and the zone to fail over to)
    "alicloud": ("entry-t4", "cn-hangzhou-i", "cn-hangzhou-k"),
    "tencentcloud": ("tc-entry-t4", "ap-guangzhou-3", "ap-guangzhou-6"),
    "huaweicloud": ("hw-entry-t4", "cn-north-4a", "cn-north-4b"),
    "baiducloud": ("bd-large-a100", "cn-bj-a", "cn-bj-d"),
}


@pytest.fixture
def keys(monkeypatch):
    from components import providers

    for cloud in providers.names():
        key, secret, token = variables(cloud)
        monkeypatch.setenv(key, KEY_ID)
        monkeypatch.setenv(secret, SECRET)
        monkeypatch.delenv(token, raising=False)
    monkeypatch.setenv("HW_PROJECT_ID", "0" * 32)


def standin(cloud, spec, monkeypatch, zones):
    server = CapacityStandIn(cloud, zones, [spec.instance.name])
    server.__enter__()
    if cloud == "baiducloud":
        monkeypatch.setenv("BAIDUCLOUD_ENDPOINT", server.url)
    return server


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_a_stack_whose_type_is_sold_out_in_its_zone_is_a_problem_naming_the_zone_that_sells_it(cloud, keys, monkeypatch):
    stack, first, second = CLOUDS[cloud]
    _, spec = stack_spec(stack, (f"zone={first}", f'failover.zones=["{second}"]'))
    server = standin(cloud, spec, monkeypatch, [first, second])
    server.sold_out.add((first, spec.instance.name))
    try:
        rows = check.stack_rows(spec, check.environment(), server.url)
    finally:
        server.__exit__(None, None, None)
    assert server.refusals == [], server.refusals
    by = {r.what.split(" (")[0]: r for r in rows}
    sold_out = "not on sale" if cloud == "baiducloud" else "sold out"  # flavorZones only lists where it sells
    assert by[f"{spec.instance.name} in {first}"].ok is False and by[f"{spec.instance.name} in {first}"].detail == sold_out
    assert by[f"{spec.instance.name} in {second}"].detail == "on sale"
    code, line = check.verdict(rows)
    assert code == 1 and first in line and sold_out in line
    if cloud != "baiducloud":  # Baidu's SDK has no quota call: said so, not guessed
        quotas = [r for r in rows if r.what.startswith("quota:")]
        assert quotas and all(r.ok for r in quotas if r.ok is not None), quotas
        assert any("left of" in r.detail for r in quotas)
    else:
        assert any(r.what == "quotas" and r.ok is None for r in rows)


@pytest.mark.parametrize("cloud", ["alicloud", "huaweicloud"])
def test_a_quota_too_small_for_the_plan_is_a_problem_with_the_numbers(cloud, keys, monkeypatch):
    stack, first, second = CLOUDS[cloud]
    _, spec = stack_spec(stack, (f"zone={first}",))
    server = standin(cloud, spec, monkeypatch, [first])
    server.quota["vcpus"] = (16, 12)
    try:
        rows = check.stack_rows(spec, check.environment(), server.url)
    finally:
        server.__exit__(None, None, None)
    (vcpus,) = [r for r in rows if r.what == "quota: vcpus"]
    assert vcpus.ok is False and f"needs {spec.instance.vcpus}; 4 left of 16" in vcpus.detail


def test_the_credentials_are_tried_per_cloud_and_a_refusal_is_the_reason(keys, monkeypatch):
    servers = {cloud: CapacityStandIn(cloud, ["z"], ["t"], deny=cloud == "tencentcloud") for cloud in CLOUDS}
    for server in servers.values():
        server.__enter__()
    monkeypatch.setenv("BAIDUCLOUD_ENDPOINT", servers["baiducloud"].url)
    try:
        rows = {r.what: r for r in check.cloud_rows(check.environment(), {c: s.url for c, s in servers.items()})}
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    assert rows["Alibaba Cloud VMs"].ok and rows["Huawei Cloud VMs"].ok and rows["Baidu AI Cloud VMs"].ok
    assert rows["Tencent Cloud VMs"].ok is False and "AuthFailure.SecretIdNotFound" in rows["Tencent Cloud VMs"].detail
    assert rows["Kubernetes (ACK)"].ok and rows["ModelArts"].ok


def test_without_credentials_every_clouds_variables_are_named_in_one_pass(monkeypatch):
    from components import providers

    for cloud in providers.names():
        for name in variables(cloud):
            monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, ["check", "--json"])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.output)
    assert len(doc["missing"]) == len(providers.names())
    assert any("ALICLOUD_ACCESS_KEY" in m for m in doc["missing"]) and any("HW_ACCESS_KEY" in m for m in doc["missing"])
    stack = CliRunner().invoke(cli, ["check", "entry-t4"])
    assert stack.exit_code == 2 and "TENCENTCLOUD_SECRET_ID" in stack.output and "ALICLOUD_ACCESS_KEY" in stack.output


def test_the_command_on_a_stack_against_its_stand_in(keys, monkeypatch):
    _, spec = stack_spec("tc-entry-t4", ())
    from components.providers import regions

    zones = list(regions.load("tencentcloud").regions[spec.region])
    server = CapacityStandIn("tencentcloud", zones, [spec.instance.name])
    with server:
        ok = CliRunner().invoke(cli, ["check", "tc-entry-t4", "--endpoint", f"tencentcloud={server.url}"])
        server.sold_out |= {(z, spec.instance.name) for z in zones}
        bad = CliRunner().invoke(cli, ["check", "tc-entry-t4", "--endpoint", f"tencentcloud={server.url}"])
    assert ok.exit_code == 0, ok.output
    assert "somewhere in ap-guangzhou" in ok.output and "ok: all well" in ok.output
    assert bad.exit_code == 1 and "on sale in no zone of the region" in bad.output
    refused = CliRunner().invoke(cli, ["check", "--endpoint", "nocloud=http://x"])
    assert refused.exit_code == 2 and "CLOUD=URL" in refused.output


def test_tencents_sale_filters_are_the_ones_its_request_model_documents(keys):
    """DescribeZoneInstanceConfigInfos' Filters: the names the SDK's request model lists (models.py), so the
    stand-in's reading of them is the API's, not our own invention."""
    import re

    import tencentcloud.cvm.v20170312.models as models_module

    source = open(models_module.__file__, encoding="utf-8").read()
    start = source.index("class DescribeZoneInstanceConfigInfosRequest")
    documented = set(re.findall(r"<strong>([a-z\-]+)</strong>", source[start:start + 6000]))
    server = CapacityStandIn("tencentcloud", ["ap-guangzhou-3"], ["GN7.2XLARGE32"])
    with server:
        _, spec = stack_spec("tc-entry-t4", ("zone=ap-guangzhou-3",))
        check.stack_rows(spec, check.environment(), server.url)
    (sent,) = [json.loads(r["body"]) for r in server.requests if '"Filters"' in r["body"]]
    names = {f["Name"] for f in sent["Filters"]}
    assert names and names <= documented, (names, documented)


def test_a_platform_stacks_flavor_is_not_judged_by_the_vm_stock_calls(keys):
    _, spec = stack_spec("large-a100-dlc", ())
    (row,) = check.stack_rows(spec, check.environment(), None)
    assert row.ok is None and "platform" in row.detail
    assert check.verdict([row])[0] == 0


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_an_api_that_cannot_be_reached_is_said_in_one_short_line(cloud, keys, monkeypatch, capfd):
    """Each SDK wraps the connection error in its own, hundreds of characters long (Alibaba's RetryError was cut
    off mid-string at 300): the row names the host and the reason, and nothing else reaches stderr."""
    stack = CLOUDS[cloud][0]
    monkeypatch.setenv("BAIDUCLOUD_ENDPOINT", "http://127.0.0.1:1")
    result = CliRunner().invoke(cli, ["check", stack, "--json", "--endpoint", f"{cloud}=http://127.0.0.1:1"])
    rows = json.loads(result.output)["rows"]
    first = next(r for r in rows if r["ok"] is False)
    assert first["detail"].endswith(": connection refused"), first["detail"]
    assert "cannot reach 127.0.0.1:1" in first["detail"] or cloud == "baiducloud", first["detail"]
    assert "ConnectionException" not in capfd.readouterr().err


def test_a_name_that_does_not_resolve_is_said_so():
    text = ("RetryError({'message': 'HTTPSConnectionPool(host=\\'ecs-cn-hangzhou.aliyuncs.com\\', port=443): Max retries"
            " exceeded with url: /?A=1 (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object>:"
            " Failed to resolve \\'ecs-cn-hangzhou.aliyuncs.com\\' ([Errno -2] Name or service not known)\"))'})")
    assert check.network_reason(text) == ("cannot reach ecs-cn-hangzhou.aliyuncs.com:443: its name does not resolve"
                                          " (DNS): no network here, or a proxy is needed (HTTPS_PROXY)")
    assert check.network_reason("InvalidAccessKeyId.NotFound: Specified access key is not found.") is None
