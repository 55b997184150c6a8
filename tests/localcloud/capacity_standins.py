"""Local stand-ins of the four clouds' read-only capacity calls (`gpu-training check`): real HTTP servers on
127.0.0.1 that check each request's signature as the cloud's gateway does (price_standins.PriceStandIn:
ACS3, TC3, SDK-HMAC-SHA256, bce-auth-v1, with KEY_ID/SECRET), refuse a request missing what the API
requires, and answer in the cloud's wire format with a sale state per (zone, type) and quotas set by the
test. Sale states and what they mean: components/providers/<cloud>/capacity.yaml.

- Alibaba ECS (RPC): DescribeAvailableResource (RegionId, DestinationResource required: "DescribeAvailableResource",
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeavailableresource),
  DescribeAccountAttributes (RegionId required).
- Tencent CVM (API 3.0): DescribeZoneInstanceConfigInfos (Filters), DescribeAccountQuota.
- Huawei ECS (REST): GET /v1/{project_id}/cloudservers/flavors?availability_zone=, GET .../cloudservers/limits
  (huaweicloudsdkecs 3.1.219 ecs_client.py list_flavors / show_server_limits paths).
- Baidu BCC (REST): GET /v1/instance/flavorZones?spec=&productType= (bce-python-sdk 0.9.79 list_type_zones).
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from tests.localcloud.price_standins import KEY_ID, SECRET, PriceStandIn  # noqa: F401  (the tests' keys)

ALI_REQUIRED = {"DescribeAvailableResource": ("RegionId", "DestinationResource"),
                "DescribeAccountAttributes": ("RegionId",)}


class CapacityStandIn(PriceStandIn):
    def __init__(self, cloud: str, zones: list[str], types: list[str], deny: bool = False):
        super().__init__(cloud, deny=deny)
        self.zones, self.types = list(zones), list(types)
        self.sold_out: set[tuple[str, str]] = set()
        self.quota = {"instances": (50, 2), "vcpus": (500, 40), "publicIps": (20, 1)}  # name -> (limit, used)

    def state(self, zone: str, name: str) -> str:
        return "sold out" if (zone, name) in self.sold_out else "on sale"

    def answer(self, method, path, headers, body):
        if self.deny:
            return super().answer(method, path, headers, body)
        refused = self.signature_refusal(method, path, headers, body)
        if refused:
            return refused
        return getattr(self, f"capacity_{self.cloud}")(method, path, headers, body)

    # ------------------------------------------------------------ Alibaba
    def capacity_alicloud(self, method, path, headers, body):
        call, params = self.parse(method, path, headers, body)
        missing = [p for p in ALI_REQUIRED.get(call, ()) if not params.get(p)]
        if call not in ALI_REQUIRED:
            return self.error("InvalidAction.NotFound", f"{call} is not served here")
        if missing:
            return self.error("MissingParameter", f"{', '.join(missing)} is required")
        if call == "DescribeAccountAttributes":
            limit, used = self.quota["vcpus"]
            items = [{"AttributeName": n, "AttributeValues": {"ValueItem": [{"Value": str(v)}]}}
                     for n, v in (("max-postpaid-instance-vcpu-count", limit), ("used-postpaid-instance-vcpu-count", used),
                                  ("max-spot-instance-vcpu-count", limit))]
            return 200, {"RequestId": "r", "AccountAttributeItems": {"AccountAttributeItem": items}}
        if params["DestinationResource"] != "InstanceType":
            return self.error("InvalidParameter", "the stand-in answers DestinationResource=InstanceType only")
        wanted = params.get("InstanceType")
        zones = []
        for zone in self.zones:
            supported = [{"Value": t, "Status": "SoldOut" if self.state(zone, t) == "sold out" else "Available",
                          "StatusCategory": "WithoutStock" if self.state(zone, t) == "sold out" else "WithStock"}
                         for t in self.types if wanted in (None, t)]
            zones.append({"ZoneId": zone, "RegionId": params["RegionId"], "Status": "Available",
                          "StatusCategory": "WithStock", "AvailableResources": {"AvailableResource": [
                              {"Type": "InstanceType", "SupportedResources": {"SupportedResource": supported}}]}})
        return 200, {"RequestId": "r", "AvailableZones": {"AvailableZone": zones}}

    # ------------------------------------------------------------ Tencent
    def capacity_tencentcloud(self, method, path, headers, body):
        call, params = self.parse(method, path, headers, body)
        if call == "DescribeAccountQuota":
            limit, used = self.quota["instances"]
            rows = [{"Zone": z, "TotalQuota": limit, "UsedQuota": used, "RemainingQuota": limit - used} for z in self.zones[:1]]
            return 200, {"Response": {"AppId": 1, "AccountQuotaOverview": {"Region": "r", "AccountQuota": {
                "PostPaidQuotaSet": rows, "SpotPaidQuotaSet": rows, "PrePaidQuotaSet": [], "ImageQuotaSet": [],
                "DisasterRecoverGroupQuotaSet": []}}, "RequestId": "r"}}
        if call != "DescribeZoneInstanceConfigInfos":
            return self.error("InvalidAction", f"{call} is not served here")
        filters = {f["Name"]: f["Values"] for f in params.get("Filters") or []}
        zones = [z for z in self.zones if z in filters.get("zone", self.zones)]
        types = [t for t in self.types if t in filters.get("instance-type", self.types)]
        rows = [{"Zone": z, "InstanceType": t, "Status": "SOLD_OUT" if self.state(z, t) == "sold out" else "SELL",
                 "InstanceChargeType": (filters.get("instance-charge-type") or ["POSTPAID_BY_HOUR"])[0]}
                for z in zones for t in types]
        return 200, {"Response": {"InstanceTypeQuotaSet": rows, "RequestId": "r"}}

    # ------------------------------------------------------------ Huawei
    def capacity_huaweicloud(self, method, path, headers, body):
        parts = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if method == "GET" and parts.path.endswith("/cloudservers/limits"):
            limits = {"maxTotalInstances": self.quota["instances"][0], "totalInstancesUsed": self.quota["instances"][1],
                      "maxTotalCores": self.quota["vcpus"][0], "totalCoresUsed": self.quota["vcpus"][1],
                      "maxTotalFloatingIps": self.quota["publicIps"][0],
                      "totalFloatingIpsUsed": self.quota["publicIps"][1]}
            return 200, {"absolute": limits}
        if method == "GET" and parts.path.endswith("/cloudservers/flavors"):
            zone = query.get("availability_zone")
            flavors = [{"id": t, "name": t, "vcpus": "8", "ram": 32768, "os_extra_specs": {
                "cond:operation:status": "normal",
                "cond:operation:az": ", ".join(f"{z}({'sellout' if self.state(z, t) == 'sold out' else 'normal'})"
                                               for z in self.zones)}}
                       for t in self.types if zone in self.zones]
            return 200, {"flavors": flavors}
        return self.error("Ecs.0005", f"{method} {parts.path} is not served here", 404)

    # ------------------------------------------------------------ Baidu
    def capacity_baiducloud(self, method, path, headers, body):
        parts = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if method == "GET" and parts.path == "/v1/instance/flavorZones":
            if not query.get("clientToken"):
                return self.error("MissingClientToken", "clientToken is required")
            spec = query.get("spec")
            return 200, {"zoneNames": [z for z in self.zones if spec in self.types and self.state(z, spec) == "on sale"]}
        return self.error("UnknownAction", f"{method} {parts.path} is not served here", 404)

    def respond(self, method, path, headers, body):
        status, payload = self.answer(method, path, headers, body)
        return status, "application/json", json.dumps(payload).encode()
