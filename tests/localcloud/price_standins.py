"""Local stand-ins of the four clouds' price APIs: real HTTP servers on 127.0.0.1 that speak each API's
wire format, check each request against the cloud's rules (components/providers/<cloud>/price_api.yaml,
via tools/price_rules.py) and refuse a wrong one the way the cloud does, and otherwise answer with a
price derived from the instance type asked about. Every request and every refusal is recorded.

Before the rules, each stand-in checks the request's signature the way the cloud's gateway does,
recomputed from the test credentials (KEY_ID, SECRET): a wrong secret, a required header left out of
the signed set, a changed signed header or (where the scheme hashes it) body is refused with the cloud's
error and recorded in `refusals` (ACS3, TC3 and SDK-HMAC-SHA256: localcloud/signatures.py; Baidu's
bce-auth-v1: the Baidu API stand-in's `verify`, localcloud/standins/baiducloud.py):
- Alibaba: HTTP 400 SignatureDoesNotMatch "Specified signature is not matched with our calculation."
  (IncompleteSignature, InvalidAccessKeyId.NotFound: Alibaba Cloud OpenAPI error center,
  https://api.aliyun.com/troubleshoot; the 404 of an unknown key is unconfirmed);
- Tencent: HTTP 200 {Response: {Error: {Code: AuthFailure.SignatureFailure}}} (AuthFailure.SecretIdNotFound,
  AuthFailure.InvalidAuthorization; "Signature v3", its signature failure codes,
  https://www.tencentcloud.com/document/api/213/33224);
- Huawei: HTTP 401 {error_code: APIGW.0301, error_msg: "Incorrect IAM authentication information: verify
  aksk signature fail"} (https://support.huaweicloud.com/intl/en-us/devg-apisign/api-sign-0001.html);
- Baidu: SignatureDoesNotMatch, InvalidAccessKeyId 403 and InvalidHTTPAuthHeader 400 (BCE authentication
  error codes, https://cloud.baidu.com/doc/Reference/s/Bjz3uz3qj-en). The status of SignatureDoesNotMatch
  is taken as 403 as for InvalidAccessKeyId (unconfirmed; the Baidu API stand-in answers 401).

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
from urllib.parse import parse_qs, parse_qsl, urlsplit

from localcloud.standins import baiducloud as baidu_standins
from tests.localcloud.http_standin import RecordingStandIn
from localcloud import signatures
from tools import price_rules

KEY_ID, SECRET = "test-key-id-4711", "test-secret-do-not-send"  # the credentials the tests refresh with

NOT_SOLD = {"ecs.gn8is.2xlarge", "GT4.4XLARGE96", "p2s.2xlarge.8"}  # the stand-ins price none of these
SPOT_FACTOR = {"alicloud": 0.25, "tencentcloud": 0.15, "baiducloud": 0.2}  # huaweicloud: no spot price API


def price_of(name: str) -> float:
    """The stand-ins' on-demand price for a type: any function of the name works, as long as rows differ
    (and stay above the shipped stacks' spot caps of 60, which the spec refuses above on-demand)."""
    return round(sum(map(ord, name)) % 89 + 61.5, 4)


def disk_price_of(category: str, level: str | None) -> float:
    """The stand-ins' disk price per GiB-hour for a kind."""
    return round(0.0005 * (len(category) + len(level or "")), 6)


# Each cloud's answer to a bad signature, by the kind of refusal: (HTTP status, error code, message).
SIGNATURE_ERRORS = {
    "alicloud": {signatures.MALFORMED: (400, "IncompleteSignature", "The request signature does not conform to"
                                                                    " Aliyun standards."),
                 signatures.UNKNOWN_KEY: (404, "InvalidAccessKeyId.NotFound", "Specified access key is not found."),
                 signatures.MISMATCH: (400, "SignatureDoesNotMatch",
                                       "Specified signature is not matched with our calculation.")},
    "tencentcloud": {signatures.MALFORMED: (200, "AuthFailure.InvalidAuthorization",
                                            "The Authorization header does not conform to the standard."),
                     signatures.UNKNOWN_KEY: (200, "AuthFailure.SecretIdNotFound", "The SecretId is not found."),
                     signatures.MISMATCH: (200, "AuthFailure.SignatureFailure", "The provided credentials could not"
                                           " be validated. Please check your signature is correct.")},
    "huaweicloud": {kind: (401, "APIGW.0301", "Incorrect IAM authentication information")
                    for kind in (signatures.MALFORMED, signatures.UNKNOWN_KEY, signatures.MISMATCH)},
    "baiducloud": {signatures.MALFORMED: (400, "InvalidHTTPAuthHeader", "The HTTP authorization header is invalid."),
                   signatures.UNKNOWN_KEY: (403, "InvalidAccessKeyId",
                                            "The Access Key ID you provided does not exist in our records."),
                   signatures.MISMATCH: (403, "SignatureDoesNotMatch", "The request signature we calculated does not"
                                         " match the signature you provided.")},
}


def check_signature(cloud: str, method: str, path: str, headers: dict, body: bytes,
                    keys: dict[str, str]) -> signatures.Refusal:
    """The cloud's signature check of one request, with `keys` (key id -> secret) the ones it knows."""
    if cloud == "alicloud":
        return signatures.acs3(method, path, headers, body, keys.get)
    if cloud == "tencentcloud":  # the price API is CVM's (InquiryPriceRunInstances): the scope must say cvm
        return signatures.tc3(method, path, headers, body, keys.get, service="cvm")
    if cloud == "huaweicloud":
        return signatures.sdk_hmac_sha256(method, path, headers, body, keys.get)
    # Baidu: bce-auth-v1 through the Baidu API stand-in's own check.
    parts = urlsplit(path)
    why = baidu_standins.verify(method, parts.path, parse_qsl(parts.query, keep_blank_values=True), headers,
                                  keys=keys)
    if why is None:
        return None
    if why == baidu_standins.NO_AUTHORIZATION:
        return signatures.MALFORMED, why
    return (signatures.UNKNOWN_KEY if why.startswith(baidu_standins.UNKNOWN_KEY) else signatures.MISMATCH), why


class PriceStandIn(RecordingStandIn):
    def __init__(self, cloud: str, deny: bool = False, signed: bool = True, postpaid_total: bool = False):
        """signed=False: no signature check (a hand-written request testing only the cloud's rules).
        postpaid_total: Baidu answers a Postpaid price as a total for the purchaseLength months asked (the
        unit the API reference leaves open, U4), not a rate."""
        super().__init__()
        self.cloud, self.deny, self.signed, self.postpaid_total = cloud, deny, signed, postpaid_total
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

    def error(self, code: str, message: str, status: int | None = None) -> tuple[int, dict]:
        if self.cloud == "alicloud":
            return status or 400, {"Code": code, "Message": message, "RequestId": "r"}
        if self.cloud == "tencentcloud":
            return 200, {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": "r"}}
        if self.cloud == "huaweicloud":
            if status:  # an API Gateway refusal (authentication), not a BSS one
                return status, {"error_code": code, "error_msg": message, "request_id": "r"}
            return 400, {"error_code": "CBC.0100", "error_msg": f"{code}: {message}"}
        return status or 400, {"code": code, "message": message, "requestId": "r"}

    def signature_refusal(self, method, path, headers, body) -> tuple[int, dict] | None:
        refused = check_signature(self.cloud, method, path, headers, body.encode(), {KEY_ID: SECRET})
        if refused is None:
            return None
        kind, why = refused
        status, code, message = SIGNATURE_ERRORS[self.cloud][kind]
        self.refusals.append((code, why))
        return self.error(code, f"{message} ({why})" if self.cloud != "huaweicloud" else f"{message}: {why}", status)

    def answer(self, method, path, headers, body):
        if self.deny:
            code = {"alicloud": "InvalidAccessKeyId.NotFound", "tencentcloud": "AuthFailure.SecretIdNotFound",
                    "huaweicloud": "APIGW.0301", "baiducloud": "AccessDenied"}[self.cloud]
            return self.error(code, "the access key is not valid")
        refused = self.signed and self.signature_refusal(method, path, headers, body)
        if refused:
            return refused
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
        if self.postpaid_total:
            price = round(price * 720 * int(params["purchaseLength"]), 4)
        return 200, {"price": [{"specId": family, "specPrices": [
            {"spec": spec, "status": "available", "specPrice": price, "tradePrice": price}]}]}
