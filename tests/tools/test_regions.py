"""scripts/regions.py refresh against local stand-ins of the clouds' region APIs (HTTP on 127.0.0.1).

The stand-ins answer DescribeRegions and DescribeZones in each cloud's wire format and record every
request, so the tests check what the official SDKs sent (action, region, the key id but never the
secret), that the written regions.yaml reads back as the spec's table, and that a failing API leaves
the file as it was. Stub below is the stand-in server the region stand-ins answer through.
"""
from __future__ import annotations

import json
import subprocess
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from components.providers import regions as region_tables
from tests.localcloud.http_standin import RecordingStandIn
from tests.localcloud.price_standins import SIGNATURE_ERRORS, check_signature
from tests.tools.script_process import run_script
from test_prices import CREDENTIALS, KEY_ID, SECRET, environment

CLOUD = {
    "alicloud": {"cn-hangzhou": ["cn-hangzhou-h", "cn-hangzhou-i"], "cn-wulanchabu": ["cn-wulanchabu-a"]},
    "tencentcloud": {"ap-guangzhou": ["ap-guangzhou-3", "ap-guangzhou-8"], "ap-jakarta": ["ap-jakarta-1"]},
}


class Stub(RecordingStandIn):
    """A region API stand-in answering through answer_<kind>(path, headers, body)."""

    def __init__(self, kind: str, deny: bool = False):
        super().__init__()
        self.kind, self.deny = kind, deny
        self.refusals: list[tuple[str, str]] = []

    def respond(self, method, path, headers, body):
        # The region APIs are ECS's and CVM's: the same signatures as the price calls (tests/localcloud/price_standins.py).
        refused = check_signature(self.kind, method, path, headers, body.encode(), {KEY_ID: SECRET})
        if refused:
            kind, why = refused
            status, code, message = SIGNATURE_ERRORS[self.kind][kind]
            self.refusals.append((code, why))
            error = {"Code": code, "Message": f"{message} ({why})", "RequestId": "r"}
            return status, "application/json", json.dumps(error if self.kind == "alicloud" else
                                                          {"Response": {"Error": error, "RequestId": "r"}}).encode()
        status, content_type, payload = getattr(self, f"answer_{self.kind}")(path, headers, body)
        return status, content_type, payload.encode()

    @staticmethod
    def params(path: str, body: str) -> dict:
        merged = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        if body and not body.lstrip().startswith("{"):
            merged.update({k: v[0] for k, v in parse_qs(body).items()})
        return merged


class RegionStub(Stub):
    def answer_alicloud(self, path, headers, body):
        params = self.params(path, body)
        action = params.get("Action") or headers.get("x-acs-action")
        if self.deny:
            return 403, "application/json", json.dumps({"Code": "Forbidden.RAM", "Message": "no", "RequestId": "r"})
        if action == "DescribeRegions":
            regions = [{"RegionId": r, "LocalName": r, "RegionEndpoint": f"ecs.{r}.aliyuncs.com", "Status": "available"}
                       for r in CLOUD["alicloud"]]
            return 200, "application/json", json.dumps({"RequestId": "r", "Regions": {"Region": regions}})
        if action == "DescribeZones":
            zones = [{"ZoneId": z, "LocalName": z} for z in CLOUD["alicloud"][params["RegionId"]]]
            return 200, "application/json", json.dumps({"RequestId": "r", "Zones": {"Zone": zones}})
        return 400, "application/json", json.dumps({"Code": "InvalidAction", "Message": "?", "RequestId": "r"})

    def answer_tencentcloud(self, path, headers, body):
        action, region = headers.get("x-tc-action"), headers.get("x-tc-region")
        if self.deny:
            return 200, "application/json", json.dumps({"Response": {"Error": {
                "Code": "AuthFailure.SecretIdNotFound", "Message": "no"}, "RequestId": "r"}})
        if action == "DescribeRegions":
            regions = [{"Region": r, "RegionName": r, "RegionState": "AVAILABLE"} for r in CLOUD["tencentcloud"]]
            regions.append({"Region": "ap-closed", "RegionName": "closed", "RegionState": "UNAVAILABLE"})
            return 200, "application/json", json.dumps({"Response": {"TotalCount": len(regions),
                                                                     "RegionSet": regions, "RequestId": "r"}})
        if action == "DescribeZones":
            zones = [{"Zone": z, "ZoneName": z, "ZoneId": "1", "ZoneState": "AVAILABLE"}
                     for z in CLOUD["tencentcloud"][region]]
            zones.append({"Zone": f"{region}-99", "ZoneName": "x", "ZoneId": "9", "ZoneState": "UNAVAILABLE"})
            return 200, "application/json", json.dumps({"Response": {"TotalCount": len(zones), "ZoneSet": zones,
                                                                     "RequestId": "r"}})
        return 200, "application/json", json.dumps({"Response": {"Error": {"Code": "InvalidAction", "Message": "?"},
                                                                 "RequestId": "r"}})


def regions_cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return run_script("regions.py", *args, env=env)


@pytest.mark.parametrize("provider", sorted(CLOUD))
def test_refresh_writes_what_the_api_lists(provider, tmp_path):
    target = tmp_path / provider / "regions.yaml"
    target.parent.mkdir()
    with RegionStub(provider) as stub:
        result = regions_cli("refresh", "--provider", provider, "--endpoint", stub.url, "--file", str(target),
                             env=environment(**CREDENTIALS[provider]))
    assert result.returncode == 0, result.stderr
    table = region_tables.load.__wrapped__(provider, tmp_path)
    assert dict(table.regions) == {r: tuple(sorted(z)) for r, z in CLOUD[provider].items()}
    assert table.date == "2026-12-02" and "DescribeRegions + DescribeZones" in table.sources[0]
    sent = json.dumps(stub.requests)
    assert KEY_ID in sent and SECRET not in sent
    assert len(stub.requests) == 1 + len(CLOUD[provider])  # one DescribeRegions, one DescribeZones per region
    assert stub.refusals == [], stub.refusals  # every request was signed as the cloud checks it


@pytest.mark.parametrize("provider", sorted(CLOUD))
def test_a_refresh_signed_with_the_wrong_secret_is_refused_and_writes_nothing(provider, tmp_path):
    target = tmp_path / "regions.yaml"
    target.write_text("unchanged\n")
    secret_var = next(k for k, v in CREDENTIALS[provider].items() if v == SECRET)
    with RegionStub(provider) as stub:
        result = regions_cli("refresh", "--provider", provider, "--endpoint", stub.url, "--file", str(target),
                             env=environment(**{**CREDENTIALS[provider], secret_var: SECRET[::-1]}))
    assert stub.refusals and result.returncode == 1, result.stderr
    assert stub.refusals[0][0] in {"SignatureDoesNotMatch", "AuthFailure.SignatureFailure"}, stub.refusals
    assert "Traceback" not in result.stderr and target.read_text() == "unchanged\n"


@pytest.mark.parametrize("provider", sorted(CLOUD))
def test_a_refused_call_leaves_the_file_unchanged(provider, tmp_path):
    target = tmp_path / "regions.yaml"
    target.write_text("unchanged\n")
    with RegionStub(provider, deny=True) as stub:
        result = regions_cli("refresh", "--provider", provider, "--endpoint", stub.url, "--file", str(target),
                             env=environment(**CREDENTIALS[provider]))
    assert result.returncode == 1 and "DescribeRegions failed" in result.stderr, result.stderr
    assert target.read_text() == "unchanged\n"


def test_the_convention_s_credential_names_work_when_the_script_is_run_directly(tmp_path):
    """ALICLOUD_ACCESS_KEY / _SECRET_KEY, the names every gpu-training command reads, reach Alibaba's Tea SDK
    (which reads ALIBABA_CLOUD_*) when regions.py is run itself, not only through `gpu-training regions`."""
    target = tmp_path / "alicloud" / "regions.yaml"
    target.parent.mkdir()
    with RegionStub("alicloud") as stub:
        result = regions_cli("refresh", "--provider", "alicloud", "--endpoint", stub.url, "--file", str(target),
                             env=environment(ALICLOUD_ACCESS_KEY=KEY_ID, ALICLOUD_SECRET_KEY=SECRET))
    assert result.returncode == 0, result.stderr
    assert target.is_file()


def test_refresh_without_credentials_exits_2():
    result = regions_cli("refresh", "--provider", "alicloud", env=environment())
    assert result.returncode == 2 and "ALIBABA_CLOUD_ACCESS_KEY_ID" in result.stderr
    assert "ALICLOUD_ACCESS_KEY" in result.stderr  # the convention's names too


@pytest.mark.parametrize("provider", sorted(CLOUD))
def test_declared_tables_carry_sources_and_a_date(provider):
    data = yaml.safe_load(region_tables.table_path(provider).read_text())
    assert data["date"] and data["sources"] and all(s.get("url") for s in data["sources"])
    table = region_tables.load(provider)
    for region, zones in table.regions.items():
        assert all(zone.startswith(region + "-") for zone in zones or ()), region
