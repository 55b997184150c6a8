"""Local stand-ins of the four clouds' price APIs: real HTTP servers on 127.0.0.1 that speak each API's
wire format, check each request against the cloud's rules (components/providers/<cloud>/price_api.yaml,
via tools/price_rules.py) and refuse a wrong one the way the cloud does, and otherwise answer with a
price derived from the instance type asked about. Every request and every refusal is recorded.

Wire formats (what the official SDKs send and parse):
- Alibaba ECS (RPC, ACS3 signature): the action in the x-acs-action header, parameters in the query or
  a form body; errors HTTP 400 {Code, Message, RequestId}.
- Tencent CVM (API 3.0, TC3 signature): X-TC-Action header, a JSON body; errors HTTP 200 {Response: {Error}}.
- Huawei BSS (REST, SDK-HMAC-SHA256): POST /v2/bills/ratings/on-demand-resources, a JSON body;
  errors HTTP 400 {error_code, error_msg}.
- Baidu BCC (REST, bce-auth-v1): POST /v2/instance/price and /v2/instance/bidPrice, a JSON body and a
  clientToken query parameter; errors HTTP 400 {code, message, requestId}.
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from http_standin import RecordingStandIn
from tools import price_rules

NOT_SOLD = {"ecs.gn8is.2xlarge", "GT4.4XLARGE96", "p2s.2xlarge.8"}  # the stand-ins price none of these
SPOT_FACTOR = {"alicloud": 0.25, "tencentcloud": 0.15, "baiducloud": 0.2}  # huaweicloud: no spot price API


def price_of(name: str) -> float:
    """The stand-ins' on-demand price for a type: any function of the name works, as long as rows differ
    (and stay above the shipped stacks' spot caps of 60, which the spec refuses above on-demand)."""
    return round(sum(map(ord, name)) % 89 + 61.5, 4)


def disk_price_of(category: str, level: str | None) -> float:
    """The stand-ins' disk price per GiB-hour for a kind."""
    return round(0.0005 * (len(category) + len(level or "")), 6)


class PriceStandIn(RecordingStandIn):
    def __init__(self, cloud: str, deny: bool = False):
        super().__init__()
        self.cloud, self.deny = cloud, deny
        self.rules = price_rules.load(cloud)
        self.refusals: list[tuple[str, str]] = []

    def respond(self, method, path, headers, body):
        status, payload = self.answer(method, path, headers, body)
        return status, "application/json", json.dumps(payload).encode()

    # ------------------------------------------------------------ parsing: the call and its parameters

    def parse(self, method: str, path: str, headers: dict, body: str) -> tuple[str | None, dict]:
        parts = urlsplit(path)
        if self.cloud == "alicloud":
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if body and not body.lstrip().startswith("{"):
                params.update({k: v[0] for k, v in parse_qs(body).items()})
            return headers.get("x-acs-action") or params.get("Action"), params
        params = json.loads(body) if body.strip() else {}
        if self.cloud == "tencentcloud":
            return headers.get("x-tc-action"), params
        return f"{method} {parts.path}", params

    # ------------------------------------------------------------ answers in each cloud's format

    def error(self, code: str, message: str) -> tuple[int, dict]:
        if self.cloud == "alicloud":
            return 400, {"Code": code, "Message": message, "RequestId": "r"}
        if self.cloud == "tencentcloud":
            return 200, {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": "r"}}
        if self.cloud == "huaweicloud":
            return 400, {"error_code": "CBC.0100", "error_msg": f"{code}: {message}"}
        return 400, {"code": code, "message": message, "requestId": "r"}

    def answer(self, method, path, headers, body):
        if self.deny:
            code = {"alicloud": "InvalidAccessKeyId.NotFound", "tencentcloud": "AuthFailure.SecretIdNotFound",
                    "huaweicloud": "APIGW.0301", "baiducloud": "AccessDenied"}[self.cloud]
            return self.error(code, "the access key is not valid")
        call, params = self.parse(method, path, headers, body)
        problems = self.rules.problems(call, params)
        if problems:
            self.refusals.extend(problems)
            return self.error(*problems[0])
        return getattr(self, f"answer_{self.cloud}")(call, params)

    def answer_alicloud(self, call, params):
        if params.get("ResourceType") == "disk":
            size = int(params["DataDisk.1.Size"])
            price = round(disk_price_of(params["DataDisk.1.Category"], params.get("DataDisk.1.PerformanceLevel")) * size, 6)
            return 200, {"RequestId": "r", "PriceInfo": {"Price": {"OriginalPrice": price, "DiscountPrice": 0.0,
                                                                    "TradePrice": price, "Currency": "CNY"},
                                                          "Rules": {"Rule": []}}}
        name = params["InstanceType"]
        if name in NOT_SOLD:
            return self.error("InvalidInstanceType.ValueNotSupported", "not sold in this region")
        price = price_of(name)
        if call == "DescribePrice":
            return 200, {"RequestId": "r", "PriceInfo": {
                "Price": {"OriginalPrice": price, "DiscountPrice": 0.0, "TradePrice": price, "Currency": "CNY"},
                "Rules": {"Rule": []}}}
        # The latest price per zone is the one to take; an older, lower one must not win.
        history = [{"ZoneId": zone, "InstanceType": name, "NetworkType": "vpc", "IoOptimized": "optimized",
                    "SpotPrice": round(price * factor, 4), "OriginPrice": price, "Timestamp": stamp}
                   for zone, factor, stamp in (("cn-hangzhou-a", 0.1, "2026-12-02T08:00:00Z"),
                                               ("cn-hangzhou-a", 0.25, "2026-12-02T09:00:00Z"),
                                               ("cn-hangzhou-b", 0.3, "2026-12-02T09:00:00Z"))]
        return 200, {"RequestId": "r", "Currency": "CNY", "NextOffset": 0, "SpotPrices": {"SpotPriceType": history}}

    def answer_tencentcloud(self, call, params):
        name = params.get("InstanceType")
        if name in NOT_SOLD:
            return self.error("InvalidParameterValue.InstanceTypeNotSupported", "not sold in this zone")
        factor = SPOT_FACTOR["tencentcloud"] if params.get("InstanceChargeType") == "SPOTPAID" else 1.0
        price = round(price_of(name) * factor, 4)
        return 200, {"Response": {"Price": {"InstancePrice": {
            "UnitPrice": price, "UnitPriceDiscount": price, "ChargeUnit": "HOUR", "Discount": 100}}, "RequestId": "r"}}

    def answer_huaweicloud(self, call, params):
        results = []
        for info in params["product_infos"]:
            flavor = info["resource_spec"].removesuffix(".linux")
            if flavor in NOT_SOLD:
                continue
            price = price_of(flavor)
            results.append({"id": info["id"], "product_id": f"OFFI{info['id']}", "amount": price,
                            "discount_amount": 0, "official_website_amount": price, "measure_id": 1})
        total = round(sum(r["amount"] for r in results), 4)
        return 200, {"amount": total, "discount_amount": 0, "official_website_amount": total, "measure_id": 1,
                     "currency": "CNY", "product_rating_results": results}

    def answer_baiducloud(self, call, params):
        spec = params["spec"]
        if spec in NOT_SOLD:
            return self.error("Instance.NotSupportInstanceTypeException", "not support the instance type.")
        price = price_of(spec)
        if call.endswith("/bidPrice"):
            per = round(price * SPOT_FACTOR["baiducloud"], 4)
            return 200, {"money": str(per), "count": "1", "perMoney": str(per)}
        family = spec.split(".")[1]
        return 200, {"price": [{"specId": family, "specPrices": [
            {"spec": spec, "status": "available", "specPrice": price, "tradePrice": price}]}]}
