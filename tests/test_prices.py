"""scripts/prices.py against local stand-ins of the providers' price APIs (HTTP on 127.0.0.1).

Each stub answers in the provider's wire format with a price derived from the instance type it was
asked about, and records every request, so the tests check both what the official SDKs sent (action,
region, parameters, the key id but never the secret) and that each answer landed in the right row.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from components import providers
from tools import catalog_prices

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "prices.py"
KEY_ID, SECRET = "test-key-id-4711", "test-secret-do-not-send"
NOT_SOLD = {"ecs.gn8is.2xlarge", "GT4.4XLARGE96"}  # the stubs refuse to price these


def price_of(name: str) -> float:
    """The stubs' price for a type: any function of the name works, as long as rows differ."""
    return round(sum(map(ord, name)) % 89 / 3 + 1.5, 4)


class Stub:
    def __init__(self, kind: str, deny: bool = False):
        self.kind, self.deny, self.requests = kind, deny, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.do_POST()

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                stub.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                      "body": body})
                status, content_type, payload = getattr(stub, f"answer_{stub.kind}")(self.path, self.headers, body)
                data = payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def params(path: str, body: str) -> dict:
        merged = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        if body and not body.lstrip().startswith("{"):
            merged.update({k: v[0] for k, v in parse_qs(body).items()})
        return merged

    def answer_alicloud(self, path, headers, body):
        params = self.params(path, body)
        # ACS3-signed calls name the action in a header; older RPC signing puts it in the query.
        params.setdefault("Action", headers.get("x-acs-action"))
        name = params.get("InstanceType")
        if self.deny:
            return 403, "application/json", json.dumps({"Code": "InvalidAccessKeyId.NotFound",
                                                        "Message": "Specified access key is not found.", "RequestId": "r"})
        if params.get("Action") == "DescribePrice":
            if name in NOT_SOLD:
                return 400, "application/json", json.dumps({"Code": "InvalidInstanceType.ValueNotSupported",
                                                            "Message": "not sold in this region", "RequestId": "r"})
            price = price_of(name)
            return 200, "application/json", json.dumps({"RequestId": "r", "PriceInfo": {
                "Price": {"OriginalPrice": price, "DiscountPrice": 0.0, "TradePrice": price, "Currency": "CNY"},
                "Rules": {"Rule": []}}})
        if params.get("Action") == "DescribeSpotPriceHistory":
            price = price_of(name)
            history = [{"ZoneId": zone, "InstanceType": name, "NetworkType": "vpc", "IoOptimized": "optimized",
                        "SpotPrice": round(price * factor, 4), "OriginPrice": price, "Timestamp": stamp}
                       for zone, factor, stamp in (("cn-hangzhou-a", 0.5, "2026-12-02T08:00:00Z"),
                                                   ("cn-hangzhou-a", 0.25, "2026-12-02T09:00:00Z"),
                                                   ("cn-hangzhou-b", 0.3, "2026-12-02T09:00:00Z"))]
            return 200, "application/json", json.dumps({"RequestId": "r", "Currency": "CNY", "NextOffset": 0,
                                                        "SpotPrices": {"SpotPriceType": history}})
        return 400, "application/json", json.dumps({"Code": "InvalidAction", "Message": "?", "RequestId": "r"})

    def answer_tencentcloud(self, path, headers, body):
        params = json.loads(body or "{}")
        name = params.get("InstanceType")
        if self.deny or name in NOT_SOLD:
            code = "AuthFailure.SecretIdNotFound" if self.deny else "InvalidParameterValue.InstanceTypeNotSupported"
            return 200, "application/json", json.dumps({"Response": {"Error": {"Code": code, "Message": "no"},
                                                                     "RequestId": "r"}})
        factor = 0.15 if params.get("InstanceChargeType") == "SPOTPAID" else 1.0
        price = round(price_of(name) * factor, 4)
        return 200, "application/json", json.dumps({"Response": {"Price": {"InstancePrice": {
            "UnitPrice": price, "UnitPriceDiscount": price, "ChargeUnit": "HOUR", "Discount": 100}}, "RequestId": "r"}})


def environment(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(providers.credential_env_prefixes())}
    # boto3 must find no credentials of this machine, and never ask an instance metadata service.
    env.update(AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
               AWS_EC2_METADATA_DISABLED="true", GPU_TRAINING_NOW="2026-12-02T10:00:00Z")
    env.update(extra)
    return env


CREDENTIALS = {
    "alicloud": {"ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET},
    "tencentcloud": {"TENCENTCLOUD_SECRET_ID": KEY_ID, "TENCENTCLOUD_SECRET_KEY": SECRET},
}


def prices(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=120)


def catalog_copy(tmp_path: Path, provider: str) -> Path:
    path = tmp_path / f"{provider}.yaml"
    shutil.copy(providers.catalog_path(provider), path)
    return path


def rows(path: Path) -> dict:
    return {row["type"]: row for row in yaml.safe_load(path.read_text())["instances"]}


CASES = {
    "alicloud": (["--region", "cn-hangzhou"], 0.25, "DescribePrice"),
    "tencentcloud": (["--region", "ap-shanghai", "--zone", "ap-shanghai-2", "--image", "img-487zeit5"], 0.15,
                     "InquiryPriceRunInstances"),
}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_refresh_writes_each_api_price_into_its_row_and_nothing_else(tmp_path, provider):
    args, spot_factor, api = CASES[provider]
    path = catalog_copy(tmp_path, provider)
    before_text, before = path.read_text(), rows(path)
    with Stub(provider) as stub:
        run = prices("refresh", "--provider", provider, *args, "--spot", "--endpoint", stub.url,
                     "--catalog", str(path), env=environment(**CREDENTIALS[provider]))
    assert run.returncode == 0, run.stderr
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
        assert price["spotPerHour"] == pytest.approx(price_of(name) * spot_factor, rel=1e-3), name
        assert (price["region"], price["date"], price["status"]) == (region, "2026-12-02", "refreshed")
        assert api in price["source"] and "127.0.0.1" in price["source"]
    # Comments and the layout survive: only price values changed.
    assert [l for l in before_text.splitlines() if l.startswith("#")] == \
           [l for l in path.read_text().splitlines() if l.startswith("#")]
    # What went over the wire: signed with the key id, never the secret.
    wire = json.dumps(stub.requests)
    assert KEY_ID in wire and SECRET not in wire
    assert stub.requests, "the SDK never reached the stub"


def test_alicloud_requests_carry_the_describe_price_parameters(tmp_path):
    path = catalog_copy(tmp_path, "alicloud")
    with Stub("alicloud") as stub:
        run = prices("refresh", "--provider", "alicloud", "--region", "cn-beijing", "--types",
                     "ecs.gn7i-c8g1.2xlarge,ecs.gn7e-c16g1.32xlarge", "--endpoint", stub.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS["alicloud"]))
    assert run.returncode == 0, run.stderr
    sent = [{**Stub.params(r["path"], r["body"]), "Action": r["headers"].get("x-acs-action")} for r in stub.requests]
    assert [(p["Action"], p["InstanceType"], p["RegionId"], p["PriceUnit"], p["ResourceType"]) for p in sent] == [
        ("DescribePrice", "ecs.gn7i-c8g1.2xlarge", "cn-beijing", "Hour", "instance"),
        ("DescribePrice", "ecs.gn7e-c16g1.32xlarge", "cn-beijing", "Hour", "instance")]
    refreshed = {name for name, row in rows(path).items() if row["price"].get("status") == "refreshed"}
    assert refreshed == {"ecs.gn7i-c8g1.2xlarge", "ecs.gn7e-c16g1.32xlarge"}


def test_tencent_requests_price_a_pay_as_you_go_launch_in_the_zone(tmp_path):
    path = catalog_copy(tmp_path, "tencentcloud")
    with Stub("tencentcloud") as stub:
        run = prices("refresh", "--provider", "tencentcloud", "--region", "ap-guangzhou", "--zone", "ap-guangzhou-3",
                     "--image", "img-487zeit5", "--types", "GN7.2XLARGE32", "--endpoint", stub.url,
                     "--catalog", str(path), env=environment(**CREDENTIALS["tencentcloud"]))
    assert run.returncode == 0, run.stderr
    (request,) = stub.requests
    assert request["headers"]["X-TC-Action"] == "InquiryPriceRunInstances"
    assert request["headers"]["X-TC-Region"] == "ap-guangzhou"
    assert json.loads(request["body"]) == {"Placement": {"Zone": "ap-guangzhou-3"}, "ImageId": "img-487zeit5",
                                           "InstanceType": "GN7.2XLARGE32", "InstanceChargeType": "POSTPAID_BY_HOUR"}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_missing_credentials_exit_2_naming_the_variables_and_touch_nothing(tmp_path, provider):
    args, _, _ = CASES[provider]
    path = catalog_copy(tmp_path, provider)
    before = path.read_text()
    with Stub(provider) as stub:
        run = prices("refresh", "--provider", provider, *args, "--endpoint", stub.url, "--catalog", str(path),
                     env=environment())
    assert run.returncode == 2
    for name in list(CREDENTIALS[provider])[:2]:
        assert name in run.stderr
    assert "Traceback" not in run.stderr
    assert stub.requests == [] and path.read_text() == before


def test_an_api_that_prices_nothing_leaves_the_catalog_unchanged(tmp_path):
    path = catalog_copy(tmp_path, "alicloud")
    before = path.read_text()
    with Stub("alicloud", deny=True) as stub:
        run = prices("refresh", "--provider", "alicloud", "--region", "cn-hangzhou", "--types",
                     "ecs.gn7i-c8g1.2xlarge", "--endpoint", stub.url, "--catalog", str(path),
                     env=environment(**CREDENTIALS["alicloud"]))
    assert run.returncode == 1
    assert "InvalidAccessKeyId.NotFound" in run.stderr and "unchanged" in run.stderr
    assert path.read_text() == before


@pytest.mark.parametrize("args,words", [
    (["refresh", "--provider", "azure", "--region", "x"], "allowed: " + ", ".join(providers.with_module("pricing"))),
    (["refresh", "--provider", "tencentcloud", "--region", "ap-shanghai"], "--zone is required"),
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


def test_show_lists_each_row_with_its_price_or_unknown(tmp_path):
    path = catalog_copy(tmp_path, "tencentcloud")
    quote = catalog_prices.Quote("GN7.2XLARGE32", 8.68, "CNY", "ap-guangzhou", "a test quote")
    path.write_text(catalog_prices.edit(path.read_text(), {"GN7.2XLARGE32": quote}, "2026-11-01"))
    run = prices("show", "--provider", "tencentcloud", "--catalog", str(path), env=environment())
    assert run.returncode == 0, run.stderr
    lines = {line.split()[0]: line for line in run.stdout.splitlines()[1:]}
    assert "unknown" in lines["GT4.4XLARGE96"]
    assert "8.68 CNY/h" in lines["GN7.2XLARGE32"] and "2026-11-01" in lines["GN7.2XLARGE32"]
