"""scripts/prices.py against local stand-ins of the four clouds' price APIs (tests/localcloud/price_standins.py:
HTTP on 127.0.0.1, each cloud's wire format, refusing a request that breaks the cloud's rules).

The stand-ins answer with a price derived from the instance type asked about and record every
request, so the tests check what the official SDKs (or, for Huawei BSS, huaweicloudsdkcore's signer)
sent - action, region, parameters, the key id but never the secret - that the stand-in refused
nothing, and that each answer landed in the right row. The stand-ins recompute each request's
signature from the test secret, so a refresh signed with another secret, or a signed request changed
afterwards, is refused with the cloud's own error.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from components import providers
from tests.localcloud.price_standins import KEY_ID, NOT_SOLD, SECRET, SPOT_FACTOR, PriceStandIn, disk_price_of, price_of
from tests.tools.script_process import preview_json, run_script, without_cloud_credentials
from tools import catalog_prices, price_rules



def environment(**extra) -> dict:
    # boto3 must find no credentials of this machine, and never ask an instance metadata service.
    return without_cloud_credentials(**{"AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                                        "AWS_EC2_METADATA_DISABLED": "true", "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z",
                                        **extra})


CREDENTIALS = {
    "alicloud": {"ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET},
    "tencentcloud": {"TENCENTCLOUD_SECRET_ID": KEY_ID, "TENCENTCLOUD_SECRET_KEY": SECRET},
    "huaweicloud": {"HW_ACCESS_KEY": KEY_ID, "HW_SECRET_KEY": SECRET},
    "baiducloud": {"BAIDUCLOUD_ACCESS_KEY": KEY_ID, "BAIDUCLOUD_SECRET_KEY": SECRET},
}


def prices(*args: str, env: dict) -> subprocess.CompletedProcess:
    return run_script("prices.py", *args, env=env)


def catalog_copy(tmp_path: Path, provider: str) -> Path:
    path = tmp_path / f"{provider}.yaml"
    shutil.copy(providers.catalog_path(provider), path)
    return path


def rows(path: Path) -> dict:
    return {row["type"]: row for row in yaml.safe_load(path.read_text())["instances"]}


CASES = {
    "alicloud": (["--region", "cn-hangzhou"], "DescribePrice"),
    "tencentcloud": (["--region", "ap-shanghai", "--zone", "ap-shanghai-2", "--image", "img-487zeit5"],
                     "InquiryPriceRunInstances"),
    "huaweicloud": (["--region", "cn-north-4", "--project-id", "0a1b2c3d4e5f"], "ListOnDemandResourceRatings"),
    "baiducloud": (["--region", "bj", "--zone", "cn-bj-d"], "getPriceBySpec"),
}


def test_every_cloud_with_a_catalog_has_a_price_client_and_rules_with_sources():
    assert sorted(providers.with_module("pricing")) == sorted(CASES)
    for cloud in CASES:
        rules = price_rules.load(cloud)
        assert rules.calls, cloud
        for rule in rules.calls.values():
            assert rule.source.strip() and ("http" in rule.source or "@" in rule.source), (cloud, rule.call)


@pytest.mark.parametrize("provider", sorted(CASES))
def test_refresh_writes_each_api_price_into_its_row_and_nothing_else(tmp_path, provider):
    args, api = CASES[provider]
    path = catalog_copy(tmp_path, provider)
    before_text, before = path.read_text(), rows(path)
    with PriceStandIn(provider) as stand_in:
        run = prices("refresh", "--provider", provider, *args, "--spot", "--endpoint", stand_in.url,
                     "--catalog", str(path), env=environment(**CREDENTIALS[provider]))
    assert run.returncode == 0, run.stderr
    assert stand_in.refusals == [], stand_in.refusals  # every request met the cloud's rules
    assert stand_in.requests, "the SDK never reached the stand-in"
    after = rows(path)
    assert list(after) == list(before)
    region = args[1]
    for name, row in after.items():
        unchanged = {k: v for k, v in row.items() if k != "price"}
        assert unchanged == {k: v for k, v in before[name].items() if k != "price"}
        if name in NOT_SOLD:
            assert row["price"] == before[name]["price"], name
            assert f"no price for {name}" in run.stderr
            continue
        price = row["price"]
        assert price["onDemandPerHour"] == pytest.approx(price_of(name)), name
        if provider in SPOT_FACTOR:
            assert price["spotPerHour"] == pytest.approx(price_of(name) * SPOT_FACTOR[provider], rel=1e-3), name
        else:  # no spot price API: nothing invented, and the run says so
            assert "spotPerHour" not in price and f"no spot price for {name}" in run.stderr
        assert (price["region"], price["date"], price["status"], price["currency"]) == \
            (region, "2026-12-02", "refreshed", "CNY")
        assert api in price["source"] and "127.0.0.1" in price["source"]
    # Comments and the layout survive: only price values changed.
    assert [line for line in before_text.splitlines() if line.startswith("#")] == \
           [line for line in path.read_text().splitlines() if line.startswith("#")]
    # What went over the wire: signed with the key id, never the secret.
    wire = json.dumps(stand_in.requests)
    assert KEY_ID in wire and SECRET not in wire


def _send(url: str, path: str, headers: dict, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# One wrong request per cloud: a required parameter left out, and a call the API does not have.
WRONG = {
    "alicloud": [("/?Action=DescribePrice&RegionId=cn-hangzhou", {}, {}, "InstanceType"),
                 ("/?Action=DescribePrice&RegionId=cn-hangzhou&ResourceType=disk&DataDisk.1.Category=cloud_essd", {}, {},
                  "DataDisk.1.Size"),
                 ("/?Action=DescribePrices&RegionId=cn-hangzhou&InstanceType=x", {}, {}, "DescribePrices")],
    "tencentcloud": [("/", {"X-TC-Action": "InquiryPriceRunInstances"}, {"Placement": {"Zone": "ap-shanghai-2"},
                                                                         "InstanceType": "GN7.2XLARGE32"}, "ImageId"),
                     ("/", {"X-TC-Action": "InquiryPriceRunInstance"}, {}, "InquiryPriceRunInstance")],
    "huaweicloud": [("/v2/bills/ratings/on-demand-resources", {}, {"project_id": "p", "product_infos": [
                        {"id": "1", "cloud_service_type": "hws.service.type.ec2", "resource_type": "hws.resource.type.vm",
                         "resource_spec": "pi2.2xlarge.4.linux", "usage_factor": "Duration", "usage_value": 1,
                         "usage_measure_id": 4, "subscription_num": 1}]}, "region"),
                    ("/v2/bills/ratings/period-resources", {}, {}, "period-resources")],
    "baiducloud": [("/v2/instance/price", {}, {"spec": "bcc.g5.c2m8", "paymentTiming": "Postpaid", "purchaseLength": 1},
                    "zoneName"),
                   ("/v2/instance/bidPrices", {}, {}, "bidPrices")],
}


@pytest.mark.parametrize("provider", sorted(WRONG))
def test_each_stand_in_refuses_a_request_that_breaks_its_cloud_rules(provider):
    with PriceStandIn(provider, signed=False) as stand_in:  # hand-written, unsigned: the rules alone
        for path, headers, body, named in WRONG[provider]:
            status, answer = _send(stand_in.url, path, headers, body)
            text = json.dumps(answer)
            assert named in text, (provider, path, answer)
            if provider == "tencentcloud":
                assert status == 200 and "Error" in answer["Response"]
            else:
                assert status == 400
    codes = [code for code, _ in stand_in.refusals]
    assert codes == [price_rules.MISSING] * (len(WRONG[provider]) - 1) + [price_rules.UNKNOWN_CALL]


# What each cloud answers a request signed with another secret: its error code and the HTTP status.
BAD_SIGNATURE = {"alicloud": ("SignatureDoesNotMatch", 400), "tencentcloud": ("AuthFailure.SignatureFailure", 200),
                 "huaweicloud": ("APIGW.0301", 401), "baiducloud": ("SignatureDoesNotMatch", 403)}


def secret_variable(provider: str) -> str:
    (name,) = [name for name, value in CREDENTIALS[provider].items() if value == SECRET]
    return name


def first_sold(path: Path) -> str:
    return next(name for name in rows(path) if name not in NOT_SOLD)


@pytest.mark.parametrize("provider", sorted(CASES))
def test_a_refresh_signed_with_a_wrong_secret_is_refused_with_the_cloud_error(tmp_path, provider):
    """The stand-in recomputes the signature from the test secret: a refresh whose SDK signs with another
    one is refused as the cloud refuses it, and prices.py says so per type, exits 1, writes nothing."""
    args, _ = CASES[provider]
    code, _ = BAD_SIGNATURE[provider]
    path = catalog_copy(tmp_path, provider)
    before, name = path.read_text(), first_sold(path)
    env = environment(**{**CREDENTIALS[provider], secret_variable(provider): "another-secret"})
    with PriceStandIn(provider) as stand_in:
        run = prices("refresh", "--provider", provider, *args, "--types", name, "--endpoint", stand_in.url,
                     "--catalog", str(path), env=env)
    assert run.returncode == 1, run.stderr
    assert stand_in.requests and [c for c, _ in stand_in.refusals] == [code] * len(stand_in.requests)
    (line,) = [line for line in run.stderr.splitlines() if line.startswith(f"no price for {name}: ")]
    assert code in line, run.stderr
    assert "priced none" in run.stderr and "Traceback" not in run.stderr
    assert path.read_text() == before


def _replay(url: str, request: dict, headers: dict | None = None, body: str | None = None) -> tuple[int, dict]:
    """Send a recorded request again, its headers (Host included) and body as recorded unless replaced:
    http.client, which adds no header of its own (urllib would add a Content-Type)."""
    sent = {k: v for k, v in request["headers"].items() if k != "content-length"}
    sent.update(headers or {})
    data = (request["body"] if body is None else body).encode()
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
    try:
        connection.putrequest(request["method"], request["path"], skip_host=True, skip_accept_encoding=True)
        for name, value in {**sent, "content-length": str(len(data))}.items():
            connection.putheader(name, value)
        connection.endheaders(data)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def _unsign(request: dict, header: str) -> dict:
    """The request with `header` taken out of the SignedHeaders of its authorization (signature kept)."""
    auth = request["headers"]["authorization"]
    if auth.startswith("bce-auth-v1/"):
        parts = auth.split("/")
        parts[4] = ";".join(n for n in (parts[4].split(";") if parts[4] else ["host", "x-bce-date"]) if n != header)
        return {"authorization": "/".join(parts)}
    return {"authorization": auth.replace(f";{header}", "").replace(f"{header};", "")}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_a_signed_request_changed_in_transit_or_signed_without_a_required_header_is_refused(tmp_path, provider):
    """A request the SDK signed right passes again as it was, and is refused once its Host (what a wrong
    host in the canonical request amounts to) or its body (where the scheme hashes it) changed, or with a
    header the scheme must sign left out of the signed set."""
    args, _ = CASES[provider]
    code, status = BAD_SIGNATURE[provider]
    path = catalog_copy(tmp_path, provider)
    with PriceStandIn(provider) as recorder:
        run = prices("refresh", "--provider", provider, *args, "--types", first_sold(path), "--endpoint", recorder.url,
                     "--catalog", str(path), env=environment(**CREDENTIALS[provider]))
    assert run.returncode == 0 and recorder.refusals == [], (run.stderr, recorder.refusals)
    signed = recorder.requests[0]
    must_sign = {"alicloud": "x-acs-action", "tencentcloud": "host", "huaweicloud": "x-sdk-date",
                 "baiducloud": "host"}[provider]
    with PriceStandIn(provider) as stand_in:
        again = _replay(stand_in.url, signed)
        assert stand_in.refusals == [] and again[0] == 200, again
        host = signed["headers"]["host"]
        tampered = [_replay(stand_in.url, signed, {"host": host.replace("127.0.0.1", "localhost")}),
                    _replay(stand_in.url, signed, _unsign(signed, must_sign))]
        if signed["body"] and provider != "baiducloud":  # bce-auth-v1 signs no body (without x-bce-content-sha256)
            tampered.append(_replay(stand_in.url, signed, body=signed["body"] + " "))
    for answer_status, answer in tampered:
        assert answer_status == status and code in json.dumps(answer), (provider, answer)
    assert [c for c, _ in stand_in.refusals] == [code] * len(tampered)
    if provider != "baiducloud":  # refused for the rule, before any hash (bce-auth-v1 names no header to sign)
        assert stand_in.refusals[1][1] == f"header(s) {must_sign} not in SignedHeaders", stand_in.refusals


def test_alicloud_requests_carry_the_describe_price_parameters(tmp_path):
    path = catalog_copy(tmp_path, "alicloud")
    with PriceStandIn("alicloud") as stub:
        run = prices("refresh", "--provider", "alicloud", "--region", "cn-beijing", "--types",
                     "ecs.gn7i-c8g1.2xlarge,ecs.gn7e-c16g1.32xlarge", "--endpoint", stub.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS["alicloud"]))
    assert run.returncode == 0, run.stderr
    sent = [{**{k: v[0] for k, v in parse_qs(urlsplit(r["path"]).query).items()},
             **({k: v[0] for k, v in parse_qs(r["body"]).items()} if r["body"] else {}),
             "Action": r["headers"].get("x-acs-action")} for r in stub.requests]
    assert [(p["Action"], p["InstanceType"], p["RegionId"], p["PriceUnit"], p["ResourceType"]) for p in sent] == [
        ("DescribePrice", "ecs.gn7i-c8g1.2xlarge", "cn-beijing", "Hour", "instance"),
        ("DescribePrice", "ecs.gn7e-c16g1.32xlarge", "cn-beijing", "Hour", "instance")]
    refreshed = {name for name, row in rows(path).items() if row["price"].get("status") == "refreshed"}
    assert refreshed == {"ecs.gn7i-c8g1.2xlarge", "ecs.gn7e-c16g1.32xlarge"}


def test_tencent_requests_price_a_pay_as_you_go_launch_in_the_zone(tmp_path):
    path = catalog_copy(tmp_path, "tencentcloud")
    with PriceStandIn("tencentcloud") as stub:
        run = prices("refresh", "--provider", "tencentcloud", "--region", "ap-guangzhou", "--zone", "ap-guangzhou-3",
                     "--image", "img-487zeit5", "--types", "GN7.2XLARGE32", "--endpoint", stub.url,
                     "--catalog", str(path), env=environment(**CREDENTIALS["tencentcloud"]))
    assert run.returncode == 0, run.stderr
    (request,) = stub.requests
    assert request["headers"]["x-tc-action"] == "InquiryPriceRunInstances"
    assert request["headers"]["x-tc-region"] == "ap-guangzhou"
    assert json.loads(request["body"]) == {"Placement": {"Zone": "ap-guangzhou-3"}, "ImageId": "img-487zeit5",
                                           "InstanceType": "GN7.2XLARGE32", "InstanceChargeType": "POSTPAID_BY_HOUR"}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_missing_credentials_exit_2_naming_the_variables_and_touch_nothing(tmp_path, provider):
    args, _ = CASES[provider]
    path = catalog_copy(tmp_path, provider)
    before = path.read_text()
    with PriceStandIn(provider) as stub:  # --signed: without it a cloud with a public feed reads that instead
        run = prices("refresh", "--provider", provider, *args, "--signed", "--endpoint", stub.url, "--catalog",
                     str(path), env=environment())
    assert run.returncode == 2
    for name in list(CREDENTIALS[provider])[:2]:
        assert name in run.stderr
    assert "Traceback" not in run.stderr
    assert stub.requests == [] and path.read_text() == before


def test_the_convention_s_credential_names_work_when_the_script_is_run_directly(tmp_path):
    """`scripts/prices.py refresh` (the preview's and the advisor's hint) with ALICLOUD_ACCESS_KEY / _SECRET_KEY,
    the names every gpu-training command reads, not only Alibaba's Tea SDK's own ALIBABA_CLOUD_* names."""
    args, call = CASES["alicloud"]
    path = catalog_copy(tmp_path, "alicloud")
    with PriceStandIn("alicloud") as stub:
        run = prices("refresh", "--provider", "alicloud", *args, "--endpoint", stub.url, "--catalog", str(path),
                     env=environment(ALICLOUD_ACCESS_KEY=KEY_ID, ALICLOUD_SECRET_KEY=SECRET))
    assert run.returncode == 0, run.stderr[-1500:]
    assert stub.requests and {r["headers"].get("x-acs-action") for r in stub.requests} == {call}


def test_an_api_that_prices_nothing_leaves_the_catalog_unchanged(tmp_path):
    path = catalog_copy(tmp_path, "alicloud")
    before = path.read_text()
    with PriceStandIn("alicloud", deny=True) as stub:
        run = prices("refresh", "--provider", "alicloud", "--region", "cn-hangzhou", "--types",
                     "ecs.gn7i-c8g1.2xlarge", "--endpoint", stub.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS["alicloud"]))
    assert run.returncode == 1
    assert "InvalidAccessKeyId.NotFound" in run.stderr and "unchanged" in run.stderr
    assert path.read_text() == before


@pytest.mark.parametrize("args,words", [
    (["refresh", "--provider", "azure", "--region", "x"], "allowed: " + ", ".join(providers.with_module("pricing"))),
    (["refresh", "--provider", "tencentcloud", "--region", "ap-shanghai", "--signed"], "--zone is required"),
    (["refresh", "--provider", "baiducloud", "--public"], "publishes no price feed"),
    (["refresh", "--provider", "alicloud", "--region", "cn-hangzhou", "--catalog", "/nonexistent/alicloud.yaml"],
     "no catalog for alicloud"),
    (["refresh", "--provider", "alicloud", "--region", "cn-hangzhou", "--types", "ecs.nope"], "ecs.nope not in"),
    (["refresh", "--provider", "alicloud", "--region", "cn-hangzhou", "--endpoint", "ecs.aliyuncs.com"],
     "not an http(s) URL"),
    (["refresh", "--provider", "alicloud"], "--region"),
])
def test_bad_arguments_exit_2(args, words):
    run = prices(*args, env=environment(**CREDENTIALS["alicloud"]))
    assert run.returncode == 2, run.stdout
    assert words in run.stderr and "Traceback" not in run.stderr


def test_a_row_that_is_not_one_line_is_refused_and_nothing_changes():
    text = "provider: x\ncurrency: CNY\ninstances:\n  - type: a\n    gpu: T4\n    price: null\n"
    quote = catalog_prices.Quote("a", 1.0, "CNY", "r", "s")
    with pytest.raises(catalog_prices.CatalogEditError, match="no one-line row"):
        catalog_prices.edit(text, {"a": quote}, "2026-12-02")


def show_rows(run) -> dict:
    """The catalog table's rows by instance type (rich's box characters as separators)."""
    rows = {}
    for line in run.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 8 and cells[7]:
            rows[cells[7]] = cells
    return rows


def test_show_lists_each_type_with_gpu_memory_cpu_ram_region_price_date_and_source_or_unknown(tmp_path):
    path = catalog_copy(tmp_path, "tencentcloud")
    quote = catalog_prices.Quote("GN7.2XLARGE32", 8.68, "CNY", "ap-guangzhou", "a test quote")
    path.write_text(catalog_prices.edit(path.read_text(), {"GN7.2XLARGE32": quote}, "2026-11-01"))
    run = prices("show", "--provider", "tencentcloud", "--catalog", str(path), env=environment())
    assert run.returncode == 0, run.stderr
    rows = show_rows(run)
    # cloud, GPU, GPUs, GPU mem, vCPU, RAM, type, region, on-demand, spot, currency, date, source
    assert rows["GN7.2XLARGE32"][1:14] == ["tencentcloud", "T4", "1", "16 GB", "8", "32", "GN7.2XLARGE32",
                                           "ap-guangzhou", "8.68", "0.26-1.74 (range)", "CNY", "2026-11-01 old", "[1]"]
    assert rows["PNV4.7XLARGE116"][9] == "unknown"  # no citable list price for Tencent's A10 types
    assert "[1] a test quote" in run.stdout
    # The shipped list price of another type keeps its own source, date and currency.
    assert rows["GN7.5XLARGE80"][9:12] == ["2.01", "0.06-0.40 (range)", "USD"]
    # GT4 (A100): the China site's list price in CNY, dated and marked old, never converted or hidden.
    assert rows["GT4.20XLARGE474"][9:13] == ["118.75", "3.56-23.75 (range)", "CNY", "2021-09-27 old"]
    assert "gpu-training prices refresh --provider tencentcloud --region REGION fills them" in run.stdout


def test_show_marks_an_old_price_old_and_still_shows_it(tmp_path):
    path = catalog_copy(tmp_path, "tencentcloud")
    fresh = catalog_prices.Quote("GN7.2XLARGE32", 8.68, "CNY", "ap-guangzhou", "a test quote")
    old = catalog_prices.Quote("GN7.5XLARGE80", 20.1, "CNY", "ap-guangzhou", "a test quote")
    text = catalog_prices.edit(path.read_text(), {"GN7.2XLARGE32": fresh}, "2026-11-20")
    path.write_text(catalog_prices.edit(text, {"GN7.5XLARGE80": old}, "2026-09-01"))
    rows = show_rows(prices("show", "--provider", "tencentcloud", "--catalog", str(path), env=environment()))
    assert rows["GN7.5XLARGE80"][9] == "20.10" and rows["GN7.5XLARGE80"][12] == "2026-09-01 old"
    assert rows["GN7.2XLARGE32"][12] == "2026-11-20"
    tighter = show_rows(prices("show", "--provider", "tencentcloud", "--catalog", str(path), "--max-age-days", "5",
                               env=environment()))
    assert tighter["GN7.2XLARGE32"][12] == "2026-11-20 old"


def test_show_filters_by_gpu_cloud_and_region_and_says_why_a_type_has_no_price_there():
    run = prices("show", "--gpu", "a100-40g", "--region", "cn-hangzhou", "--provider", "alicloud", env=environment())
    assert run.returncode == 0, run.stderr
    rows = show_rows(run)
    assert set(rows) == {"ecs.gn7-c12g1.3xlarge", "ecs.gn7-c13g1.13xlarge", "ecs.gn7-c13g1.26xlarge"}
    assert all(cells[8] == "cn-hangzhou" and cells[9] == "unknown" for cells in rows.values())
    assert "has no list price in cn-hangzhou" in run.stdout
    listed = json.loads(prices("show", "--gpu", "A100-40G", "--provider", "alicloud", "--all-regions", "--json",
                               env=environment()).stdout)
    assert {(r["instanceType"], r["region"]) for r in listed if r["instanceType"] == "ecs.gn7-c13g1.13xlarge"} == \
        {("ecs.gn7-c13g1.13xlarge", region) for region in ("cn-beijing", "cn-shanghai", "cn-wulanchabu")}
    assert all(r["currency"] == "CNY" and r["date"] == "2024-12-31" and r["old"] for r in listed)
    for args, words in ((["--gpu", "B200"], "allowed: "), (["--region", "mars-1"], "not a region of"),
                        (["--provider", "azure"], "allowed: ")):
        bad = prices("show", *args, env=environment())
        assert bad.returncode == 2 and words in bad.stderr and "Traceback" not in bad.stderr


PREVIEWED = {"alicloud": "entry-t4", "tencentcloud": "tc-medium-a100", "huaweicloud": "hw-entry-t4",
             "baiducloud": "bd-large-a100-spot"}


STACK_REGION_ARGS = {"alicloud": ["--region", "cn-hangzhou"],
                     "tencentcloud": ["--region", "ap-guangzhou", "--zone", "ap-guangzhou-3", "--image", "img-487zeit5"],
                     "huaweicloud": ["--region", "cn-north-4", "--project-id", "0a1b2c3d4e5f"],
                     "baiducloud": ["--region", "bj", "--zone", "cn-bj-a"]}


# The previewed stack's shipped list price before any refresh: per hour, date, and where it came from.
SHIPPED_BEFORE = {"alicloud": (14, "2024-12-31", "karpenter-provider-alibabacloud@5d2e077"),
                  "tencentcloud": (118.75, "2021-09-27", "tencentyun/qcloud-documents@8ec072968c")}


@pytest.mark.parametrize("provider", sorted(PREVIEWED))
def test_the_preview_shows_the_refreshed_price_with_its_source_and_date_else_the_command(tmp_path, provider):
    _, api = CASES[provider]
    stack = PREVIEWED[provider]
    before = preview_json(stack, environment())["cost"]
    if provider in SHIPPED_BEFORE:  # a shipped list price: dated, sourced, and old
        per_hour, date, source = SHIPPED_BEFORE[provider]
        assert before["onDemandPerHour"] == per_hour and before["priceDate"] == date and before["stale"]
        assert source in before["priceSource"]
    else:
        assert before["onDemandPerHour"] is None and before["effectivePerMaxHours"] is None
    assert f"gpu-training prices refresh --provider {provider}" in before["basis"]

    path = tmp_path / f"{provider}.yaml"
    shutil.copy(providers.catalog_path(provider), path)
    with PriceStandIn(provider) as stand_in:
        run = prices("refresh", "--provider", provider, *STACK_REGION_ARGS[provider], "--spot", "--endpoint",
                     stand_in.url, "--catalog", str(path), env=environment(**CREDENTIALS[provider]))
    assert run.returncode == 0, run.stderr
    document = preview_json(stack, environment(GPU_TRAINING_CATALOGS=str(tmp_path)))
    section, outputs = document["cost"], document["outputs"]
    assert api in section["priceSource"] and section["priceDate"] == "2026-12-02" and not section["stale"]
    nodes = outputs["nodeCount"]
    assert section["onDemandPerHour"] == pytest.approx(nodes * price_of(outputs["instanceType"]), rel=1e-4)
    assert section["effectivePerHour"] == pytest.approx(nodes * section["perNodeHour"])
    assert section["effectivePerMaxHours"] == pytest.approx(section["effectivePerHour"] * section["maxHours"], rel=1e-6)
    assert section["spotSource"] == ("cloud" if provider in SPOT_FACTOR else "estimate")


@pytest.mark.parametrize("provider", ["alicloud", "tencentcloud"])
def test_a_refresh_of_another_region_is_not_shown_as_the_stack_s_price(tmp_path, provider):
    """The catalog row holds one region's refreshed price: a stack in another region must not show it."""
    args, _ = CASES[provider]  # cn-hangzhou / ap-shanghai
    stack, region = {"alicloud": ("large-a100", "cn-beijing"), "tencentcloud": ("tc-entry-t4", "ap-guangzhou")}[provider]
    path = tmp_path / f"{provider}.yaml"
    shutil.copy(providers.catalog_path(provider), path)
    with PriceStandIn(provider) as stand_in:
        run = prices("refresh", "--provider", provider, *args, "--endpoint", stand_in.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS[provider]))
    assert run.returncode == 0, run.stderr
    section = preview_json(stack, environment(GPU_TRAINING_CATALOGS=str(tmp_path)))["cost"]
    assert section["onDemandPerHour"] is None or "127.0.0.1" not in (section["priceSource"] or "")
    assert f"({region}, " in section["basis"] or f" in {region}" in section["basis"]


def test_node_hours_cost_prices_a_stack_s_hours_with_the_source_and_date_and_flags_a_stale_price(tmp_path, monkeypatch):
    from components import cost
    from tools.stackfiles import stack_spec

    monkeypatch.setenv("GPU_TRAINING_NOW", "2026-12-02T10:00:00Z")
    _, spec = stack_spec("entry-t4", [])
    listed = cost.node_hours_cost(spec, 3.0)  # the shipped list price, old and said to be
    assert (listed.total, listed.per_node_hour, listed.date, listed.stale) == (42.0, 14.0, "2024-12-31", True)
    assert "STALE: dated 2024-12-31" in listed.basis and "gpu-training prices refresh --provider alicloud" in listed.basis

    path = tmp_path / "alicloud.yaml"
    shutil.copy(providers.catalog_path("alicloud"), path)
    quote = catalog_prices.Quote(spec.instance.name, 7.5, "CNY", "cn-hangzhou", "Alibaba Cloud ECS API DescribePrice",
                                 spot_per_hour=2.0)
    path.write_text(catalog_prices.edit(path.read_text(), {spec.instance.name: quote}, "2026-11-30"))
    monkeypatch.setenv(providers.CATALOGS_ENV, str(tmp_path))
    _, spec = stack_spec("entry-t4", [])
    used = cost.node_hours_cost(spec, 3.0)
    assert (used.total, used.per_node_hour, used.currency) == (22.5, 7.5, "CNY")
    assert (used.source, used.date, used.stale) == ("Alibaba Cloud ECS API DescribePrice", "2026-11-30", False)
    _, spot_spec = stack_spec("entry-t4", ["billing=spot"])
    assert cost.node_hours_cost(spot_spec, 3.0).total == 6.0  # the cloud's spot price, not the estimate
    monkeypatch.setenv("GPU_TRAINING_NOW", "2027-02-01T10:00:00Z")
    late = cost.node_hours_cost(spec, 3.0)
    assert late.stale and "STALE: dated 2026-11-30, 63 days ago" in late.basis and late.total == 22.5


def test_disks_are_priced_per_gib_hour_and_the_preview_adds_the_data_disks(tmp_path):
    path = tmp_path / "alicloud.yaml"
    shutil.copy(providers.catalog_path("alicloud"), path)
    with PriceStandIn("alicloud") as stand_in:
        run = prices("refresh", "--provider", "alicloud", "--region", "cn-beijing", "--types", "ecs.gn7e-c16g1.32xlarge",
                     "--disks", "--endpoint", stand_in.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS["alicloud"]))
    assert run.returncode == 0, run.stderr
    assert stand_in.refusals == []
    disk_calls = [r for r in stand_in.requests if "ResourceType=disk" in r["path"] + r["body"]]
    assert len(disk_calls) == 3  # PL1, PL2, PL3: the entry, medium and large tiers' ESSD levels
    disks = {(row["category"], row["performanceLevel"]): row
             for row in yaml.safe_load((tmp_path / "alicloud.disks.yaml").read_text())["disks"]}
    assert disks[("cloud_essd", "PL3")]["perGiBHour"] == pytest.approx(disk_price_of("cloud_essd", "PL3"))
    assert disks[("cloud_essd", "PL3")]["date"] == "2026-12-02" and "DescribePrice" in disks[("cloud_essd", "PL3")]["source"]

    section = preview_json("large-a100", environment(GPU_TRAINING_CATALOGS=str(tmp_path)))["cost"]["dataDisks"]
    assert section["kind"] == "cloud_essd PL3" and section["priceDate"] == "2026-12-02"
    assert section["perHour"] == pytest.approx(disk_price_of("cloud_essd", "PL3") * section["sizeGb"] * section["nodes"],
                                               rel=1e-3)
    assert section["perMaxHours"] == pytest.approx(section["perHour"] * 72, rel=1e-6)
    # The account's disk price is for cn-beijing: a cn-hangzhou stack keeps the shipped list price of its own region.
    shipped = preview_json("entry-t4", environment(GPU_TRAINING_CATALOGS=str(tmp_path)))["cost"]["dataDisks"]
    assert shipped["priceDate"] == "2020-12-01" and shipped["perHour"] == pytest.approx(0.0021 * 200)
    none_yet = preview_json("medium-a10", environment())["cost"]["dataDisks"]  # ESSD PL2 in cn-shanghai: no list price
    assert none_yet["perHour"] is None and "refresh --signed --provider alicloud --region cn-shanghai" in none_yet["basis"]
    assert "--disks" in none_yet["basis"] and "aliyun.com/price" in none_yet["basis"]


def test_huawei_rates_every_flavor_in_one_signed_bss_request(tmp_path):
    path = catalog_copy(tmp_path, "huaweicloud")
    with PriceStandIn("huaweicloud") as stub:
        run = prices("refresh", "--provider", "huaweicloud", "--region", "cn-north-4", "--project-id", "0a1b2c3d4e5f",
                     "--types", "pi2.2xlarge.4,p3.16xlarge.8", "--endpoint", stub.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS["huaweicloud"], HW_DOMAIN_ID="d0m41n"))
    assert run.returncode == 0, run.stderr
    (request,) = stub.requests
    assert (request["method"], request["path"]) == ("POST", "/v2/bills/ratings/on-demand-resources")
    assert request["headers"]["authorization"].startswith(f"SDK-HMAC-SHA256 Access={KEY_ID}, SignedHeaders=")
    assert request["headers"]["x-domain-id"] == "d0m41n" and "x-sdk-date" in request["headers"]
    body = json.loads(request["body"])
    assert body["project_id"] == "0a1b2c3d4e5f"
    assert [(p["id"], p["resource_spec"], p["region"], p["usage_measure_id"], p["usage_value"])
            for p in body["product_infos"]] == [("1", "pi2.2xlarge.4.linux", "cn-north-4", 4, 1),
                                                ("2", "p3.16xlarge.8.linux", "cn-north-4", 4, 1)]


def test_baidu_prices_a_postpaid_spec_in_the_zone_and_asks_the_bid_market_price(tmp_path):
    path = catalog_copy(tmp_path, "baiducloud")
    with PriceStandIn("baiducloud") as stub:
        run = prices("refresh", "--provider", "baiducloud", "--region", "bj", "--zone", "cn-bj-d", "--spot",
                     "--endpoint", stub.url, "--catalog", str(path), env=environment(**CREDENTIALS["baiducloud"]))
    assert run.returncode == 0, run.stderr
    calls = [(r["method"], urlsplit(r["path"]).path, json.loads(r["body"])) for r in stub.requests]
    spec = "bcc.hgn5IB.c116m978.8A100-80g"
    # Postpaid asked for 1 and 2 months (purchaseLength is required and in months): the same answer is a rate.
    assert calls == [("POST", "/v2/instance/price", {"spec": spec, "paymentTiming": "Postpaid", "zoneName": "cn-bj-d",
                                                      "purchaseCount": 1, "purchaseLength": months})
                     for months in (1, 2)] + \
        [("POST", "/v2/instance/bidPrice", {"spec": spec, "zoneName": "cn-bj-d", "purchaseCount": 1})]
    for r in stub.requests:
        assert r["headers"]["authorization"].startswith(f"bce-auth-v1/{KEY_ID}/")
        assert "clientToken" in urlsplit(r["path"]).query
    price = rows(path)[spec]["price"]
    assert "hourly unit assumed" in price["caveat"]


def test_baidu_postpaid_answer_that_grows_with_the_months_asked_is_not_recorded_as_hourly(tmp_path):
    """U4: purchaseLength is required and in months; an answer that doubles from 1 to 2 months is a total for
    the length, not a rate per hour: nothing is written, and the run says why."""
    path = catalog_copy(tmp_path, "baiducloud")
    before = path.read_text()
    with PriceStandIn("baiducloud", postpaid_total=True) as stub:
        run = prices("refresh", "--provider", "baiducloud", "--region", "bj", "--zone", "cn-bj-d",
                     "--endpoint", stub.url, "--catalog", str(path), env=environment(**CREDENTIALS["baiducloud"]))
    assert run.returncode == 1, run.stdout
    assert "a total for the length asked, not an hourly rate" in run.stderr and "unchanged" in run.stderr
    assert path.read_text() == before


def test_tencent_and_baidu_answers_name_no_currency_so_the_account_s_site_is_recorded(tmp_path):
    """U5: the currency recorded is the one of the site the account is on (--site), never silently CNY."""
    path = catalog_copy(tmp_path, "baiducloud")
    with PriceStandIn("baiducloud") as stub:
        run = prices("refresh", "--provider", "baiducloud", "--region", "bj", "--zone", "cn-bj-d", "--site", "intl",
                     "--endpoint", stub.url, "--catalog", str(path), env=environment(**CREDENTIALS["baiducloud"]))
    assert run.returncode == 0, run.stderr
    price = rows(path)["bcc.hgn5IB.c116m978.8A100-80g"]["price"]
    assert price["currency"] == "USD" and "--site intl" in price["caveat"] and "names no currency" in price["caveat"]


@pytest.mark.parametrize("provider,sdk", [("alicloud", "alibabacloud_ecs20140526"), ("tencentcloud", "tencentcloud"),
                                          ("huaweicloud", "huaweicloudsdkcore")])
def test_a_refresh_without_the_price_sdks_says_which_extra_to_install(tmp_path, provider, sdk):
    """The SDKs that sign price requests are the `prices` extra, not the runtime: without one, exit 2 and the
    pip line, no traceback. The SDK is hidden by a package of its name first on the path that is not there."""
    shadow = tmp_path / "shadow" / sdk
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f"raise ModuleNotFoundError('No module named ' + {sdk!r}, name={sdk!r})\n")
    args, _ = CASES[provider]
    env = environment(**CREDENTIALS[provider])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "shadow"), env.get("PYTHONPATH")]))
    run = prices("refresh", "--provider", provider, *args, "--endpoint", "http://127.0.0.1:9",
                 "--catalog", str(catalog_copy(tmp_path, provider)), env=env)
    assert run.returncode == 2, run.stderr
    assert f"{sdk}, which is not installed: pip install -e '.[prices]'" in run.stderr
    assert "Traceback" not in run.stderr
