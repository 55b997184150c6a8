"""Tencent Cloud list prices without an account: the price endpoint of the CVM purchase page ("workbench").

POST `https://workbench.cloud.tencent.com/cgi/api?i=cvm/DescribeZoneInstanceConfigInfos&uin=&region=<region>`
with `{"serviceType": "cvm", "action": "DescribeZoneInstanceConfigInfos", "region": ..., "data": {"Filters":
[{"Name": "instance-charge-type", "Values": [...]}, {"Name": "zone", "Values": [<zone>]}], "Platform": "LINUX",
"Version": "2017-03-12"}, "cgiName": "api"}` answers `{"data": {"Response": {"InstanceTypeQuotaSet": [{"InstanceType",
"InstanceChargeType", "Status", "Price": {"UnitPrice", "UnitPriceDiscount", "ChargeUnit"?}}], "Error"?}}}`: the
fields of CVM's own DescribeZoneInstanceConfigInfos (InstanceTypeQuotaItem, ItemPrice in tencentcloud-sdk-python
cvm v20170312 models.py). Sources: fuzzbuster/ec2instances.info@ff76b4f tencentcloud/scrape.go
(fetchPublicZoneInstances, publicPrices: POSTPAID_BY_HOUR -> UnitPrice, SPOTPAID -> UnitPriceDiscount) and its
docs/anonymous-tencentcloud.md ("public but ... not a documented stable API contract"). One request per zone
(the zones of components/providers/tencentcloud/regions.yaml, or --zone); a region's price is the lowest of its
zones, as the scraper keeps it. The answer carries no currency field: ItemPrice.UnitPrice is documented as
"后付费模式使用，单位：元" (CNY) in the China-site SDK model above, so CNY is recorded with the site it came from;
where other steps are returned, UnitPrice is the first tier, "(0, 96)小时" (the same model). The pages' own
statement: "价格计算器所示均为第一阶梯价格" (https://www.tencentcloud.com/zh/document/product/213/2176).
"""
from __future__ import annotations

from typing import Iterable, Optional

from components import public_feed
from components.price_book import Snapshot
from components.providers import regions as region_tables
from components.public_feed import FeedError

DISPLAY = "Tencent Cloud"
ENDPOINT = "https://workbench.cloud.tencent.com/cgi/api?i=cvm/DescribeZoneInstanceConfigInfos&uin=&region={region}"
SITE = "China site (cloud.tencent.com purchase page); the answer names no currency"
CURRENCY = "CNY"
BASIS = "Linux, pay-as-you-go first tier (UnitPrice), lowest over the region's zones; spot: SPOTPAID UnitPriceDiscount"
CHARGE_TYPES = ("POSTPAID_BY_HOUR", "SPOTPAID")


def request_body(region: str, zone: str) -> dict:
    return {"serviceType": "cvm", "action": "DescribeZoneInstanceConfigInfos", "region": region,
            "data": {"Filters": [{"Name": "instance-charge-type", "Values": list(CHARGE_TYPES)},
                                 {"Name": "zone", "Values": [zone]}],
                     "Platform": "LINUX", "Version": "2017-03-12"},
            "cgiName": "api"}


def zones_of(region: str, zones: Optional[list[str]]) -> list[str]:
    if zones:
        return zones
    table = region_tables.load("tencentcloud")
    listed = table.regions.get(region) if table else None
    if not listed:
        raise FeedError(f"no zones of {region} in components/providers/tencentcloud/regions.yaml: give --zone")
    return list(listed)


def fetch(types: Iterable[str], *, regions: Optional[list[str]], endpoint: Optional[str], today: str,
          zones: Optional[list[str]] = None, **_) -> Snapshot:
    if not regions:
        raise FeedError("the purchase page prices one region per request: give --region (e.g. ap-guangzhou)")
    wanted = set(types)
    on_demand: dict[str, dict[str, float]] = {}
    spot: dict[str, dict[str, float]] = {}
    read = []
    for region in regions:
        for zone in zones_of(region, zones if len(regions) == 1 else None):
            url = public_feed.at(ENDPOINT.format(region=region), endpoint)
            answer = public_feed.post_json(url, request_body(region, zone))
            response = public_feed.field(answer, "data.Response", dict, f"{url} ({zone})")
            if response.get("Error"):
                error = response["Error"]
                raise FeedError(f"{url} ({zone}): {error.get('Code')}: {error.get('Message')}")
            items = public_feed.field(response, "InstanceTypeQuotaSet", list, f"{url} ({zone})")
            read.append(zone)
            for item in items:
                name = item.get("InstanceType") if isinstance(item, dict) else None
                if name not in wanted:
                    continue
                where = f"{url} ({zone}) {name}"
                charge = item.get("InstanceChargeType")
                price = public_feed.field(item, "Price", dict, where)
                unit = price.get("ChargeUnit")
                if unit not in (None, "", "HOUR"):
                    raise FeedError(f"{where}: ChargeUnit {unit!r}, not HOUR; the feed changed")
                if charge == "POSTPAID_BY_HOUR":
                    value = public_feed.positive_price(price.get("UnitPrice"), where)
                    _lowest(on_demand, name, region, value)
                elif charge == "SPOTPAID" and price.get("UnitPriceDiscount") not in (None, 0, 0.0):
                    _lowest(spot, name, region, public_feed.positive_price(price["UnitPriceDiscount"], where))
    if not on_demand:
        raise FeedError(f"none of the {len(wanted)} catalog types has a pay-as-you-go price in"
                        f" {', '.join(regions)} (zones read: {', '.join(read)}); nothing written")
    host = (endpoint or ENDPOINT).split("://", 1)[-1].split("/", 1)[0]
    return Snapshot(source=f"purchase page price endpoint {host} DescribeZoneInstanceConfigInfos (zones {', '.join(read)})",
                    url=ENDPOINT.format(region=regions[0]), date=today, currency=CURRENCY, site=SITE, basis=BASIS,
                    on_demand=on_demand, spot={t: r for t, r in spot.items() if t in on_demand})


def _lowest(table: dict, name: str, region: str, value: float) -> None:
    seen = table.setdefault(name, {}).get(region)
    if seen is None or value < seen:
        table[name][region] = value
