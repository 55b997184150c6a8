"""Local stand-ins of the public price feeds the clouds' websites read (no account): real HTTP servers on
127.0.0.1 answering in the recorded shapes, each from its source (the feeds have no API reference):

- Alibaba: the pricing page names `https://g.alicdn.com/aliyun/ecs-price-info/<version>` (cloudpilot-ai/priceserver
  pkg/client/alibabacloud.go, getECSPrice's regex), and `<that>/price/download/instancePrice.json` is
  {currency, version, pricingInfo: {"region::type::network::os::io": {hours: [{price, period}], months, years}}}
  (fuzzbuster/ec2instances.info@ff76b4f alicloud/scrape.go pricingFile, pricingEntry; scrape_test.go's keys
  "cn-hangzhou::ecs.g6.xlarge::vpc::linux::optimized" with prices as strings).
- Tencent: POST /cgi/api?i=cvm/DescribeZoneInstanceConfigInfos&uin=&region=R with {serviceType, action, region,
  data: {Filters, Platform, Version}, cgiName} answers {data: {Response: {InstanceTypeQuotaSet: [{InstanceType,
  InstanceChargeType, Status, Price: {UnitPrice, UnitPriceDiscount, ChargeUnit}}]}}} (tencentcloud/scrape.go
  fetchPublicZoneInstances, publicCVMResponse, publicInstancePrice; ChargeUnit from CVM's ItemPrice model).
- Huawei: GET .../v4/api/productInfo?urlPath=ecs&tag=general.online.portal&region=R&tab=calc&sign=common answers
  {region, product: {ec2_vm: [{spec, imageSpec, planList: [{billingMode, periodNum, amount}]}]}}
  (huaweicloud/scrape.go portalProductResponse, portalVM, portalPlan; scrape_test.go: ONDEMAND 4.25 beside
  MONTHLY 2040 for one flavor).

`shape` other than "recorded" answers as a changed feed would: a renamed key ("renamed"), a price of 0
("zero"), or (Huawei) a per-month figure where the hourly one was ("monthly"); the refresh must refuse each.
Every request is recorded; a request not in the recorded shape is refused (HTTP 400) and listed in `refusals`.
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from tests.localcloud.http_standin import RecordingStandIn
from tests.localcloud.price_standins import NOT_SOLD, price_of

VERSION = "2.0.999"
REGIONS = {"alicloud": ("cn-hangzhou", "cn-beijing"), "tencentcloud": ("ap-guangzhou",), "huaweicloud": ("cn-north-4",)}
TENCENT_SPOT = 0.12
ZONE_STEP = 0.5  # each further zone of a Tencent region prices 0.5 higher: the lowest zone must win


def regional_price(name: str, region: str) -> float:
    """The feeds' price of a type in a region: regions differ, so a figure lands in its own region or fails."""
    return round(price_of(name) + (0.75 if region.endswith("beijing") else 0.0), 4)


class PublicPriceStandIn(RecordingStandIn):
    def __init__(self, cloud: str, types: list[str], shape: str = "recorded"):
        super().__init__()
        self.cloud, self.types, self.shape = cloud, [t for t in types if t not in NOT_SOLD], shape
        self.refusals: list[str] = []

    def respond(self, method, path, headers, body):
        status, payload = getattr(self, f"answer_{self.cloud}")(method, urlsplit(path), headers, body)
        if isinstance(payload, str):
            return status, "text/html; charset=utf-8", payload.encode()
        return status, "application/json", json.dumps(payload).encode()

    def refuse(self, why: str):
        self.refusals.append(why)
        return 400, {"error": why}

    def price(self, value: float):
        return 0 if self.shape == "zero" else value

    # ------------------------------------------------------------ Alibaba: page, then the price JSON
    def answer_alicloud(self, method, url, headers, body):
        if url.path == "/price/ecs/ecs-pricing/zh":
            return 200, ("<html><script src=\"https://g.alicdn.com/aliyun/ecs-price-info/" + VERSION
                         + "/js/index.js\"></script></html>")
        if url.path != f"/aliyun/ecs-price-info/{VERSION}/price/download/instancePrice.json" or method != "GET":
            return self.refuse(f"{method} {url.path}: not the price JSON of version {VERSION}")
        info = {}
        for region in REGIONS["alicloud"]:
            for name in self.types:
                price = regional_price(name, region)
                info[f"{region}::{name}::vpc::linux::optimized"] = {
                    "hours": [{"price": f"{self.price(price):g}", "period": "1"}],
                    "months": [{"price": f"{price * 500:g}", "period": "1"}]}
                # A classic-network and a Windows key of the same type: neither is the VPC Linux price.
                info[f"{region}::{name}::classic::linux::optimized"] = {"hours": [{"price": "0.01", "period": "1"}]}
                info[f"{region}::{name}::vpc::windows::optimized"] = {"hours": [{"price": f"{price + 3:g}", "period": "1"}]}
        key = "prices" if self.shape == "renamed" else "pricingInfo"
        return 200, {"currency": "CNY", "version": VERSION, key: info}

    # ------------------------------------------------------------ Tencent: one POST per zone
    def answer_tencentcloud(self, method, url, headers, body):
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            request = json.loads(body)
        except ValueError:
            return self.refuse("the body is not JSON")
        filters = {f.get("Name"): f.get("Values") for f in request.get("data", {}).get("Filters", [])}
        expected = (method == "POST" and url.path == "/cgi/api" and query.get("i") == "cvm/DescribeZoneInstanceConfigInfos"
                    and request.get("serviceType") == "cvm" and request.get("action") == "DescribeZoneInstanceConfigInfos"
                    and request.get("region") == query.get("region") and request.get("cgiName") == "api"
                    and request.get("data", {}).get("Platform") == "LINUX"
                    and request.get("data", {}).get("Version") == "2017-03-12"
                    and "POSTPAID_BY_HOUR" in (filters.get("instance-charge-type") or [])
                    and len(filters.get("zone") or []) == 1)
        if not expected:
            return self.refuse(f"not the recorded DescribeZoneInstanceConfigInfos request: {method} {url.path}"
                               f"?{url.query} {body[:200]}")
        zone = filters["zone"][0]
        step = ZONE_STEP * (int(zone.rsplit("-", 1)[-1]) % 7)
        items = []
        for name in self.types:
            price = round(regional_price(name, query["region"]) + step, 4)
            for charge, value in (("POSTPAID_BY_HOUR", price), ("SPOTPAID", round(price * TENCENT_SPOT, 4))):
                if charge not in filters["instance-charge-type"]:
                    continue
                items.append({"Zone": zone, "InstanceType": name, "InstanceChargeType": charge, "Status": "SELL",
                              "Cpu": 8, "Memory": 32, "GpuCount": 1,
                              "Price": {"UnitPrice": self.price(value), "UnitPriceDiscount": self.price(value),
                                        "ChargeUnit": "HOUR", "Discount": 100}})
        key = "InstanceTypeQuotaList" if self.shape == "renamed" else "InstanceTypeQuotaSet"
        return 200, {"code": 0, "data": {"Response": {key: items, "RequestId": "r"}}}

    # ------------------------------------------------------------ Huawei: the calculator's product list
    def answer_huaweicloud(self, method, url, headers, body):
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        expected = (method == "GET" and url.path.endswith("/portalcalculatornodeservice/v4/api/productInfo")
                    and query.get("urlPath") == "ecs" and query.get("tag") == "general.online.portal"
                    and query.get("region"))
        if not expected:
            return self.refuse(f"not the recorded productInfo request: {method} {url.path}?{url.query}")
        region = query["region"]
        vms = []
        for name in self.types:
            hourly = regional_price(name, region)
            monthly = round(hourly * 500, 2)
            on_demand = monthly if self.shape == "monthly" else self.price(hourly)
            vms.append({"spec": name, "imageSpec": "linux", "cpu": "8BSSUNIT.pluralUnit.23", "mem": "32BSSUNIT",
                        "planList": [{"billingMode": "ONDEMAND", "periodNum": None, "amount": on_demand},
                                     {"billingMode": "MONTHLY", "periodNum": 1, "amount": monthly}]})
            vms.append({"spec": name, "imageSpec": "win", "planList": [{"billingMode": "ONDEMAND", "amount": 0.01}]})
        key = "ecs_vm" if self.shape == "renamed" else "ec2_vm"
        return 200, {"region": region, "product": {key: vms}}
