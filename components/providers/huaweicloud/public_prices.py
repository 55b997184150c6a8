"""Huawei Cloud list prices without an account: the price calculator's public product endpoint.

GET `https://portal.huaweicloud.com/api/calculator/rest/cbc/portalcalculatornodeservice/v4/api/productInfo?
urlPath=ecs&tag=general.online.portal&region=<region>&tab=calc&sign=common` answers `{"region", "product":
{"ec2_vm": [{"spec": "<flavor>", "imageSpec": "linux", "cpu", "mem", "acceleratorCard", "planList":
[{"billingMode": "ONDEMAND" | "MONTHLY" | "YEARLY" | "RI", "periodNum"?, "amount": 4.25}]}]}}`. Source:
fuzzbuster/ec2instances.info@ff76b4f huaweicloud/scrape.go (portalProductURLBase, portalVM, portalPlan,
mergePortalVM: Linux only, ONDEMAND amount as the on-demand price) and docs/anonymous-huaweicloud.md
("Calculator endpoints are public website services and may change without an API deprecation period").
The answer states no unit: the ONDEMAND amount is taken per hour (the calculator's pay-per-use price is
hourly), and refused when a MONTHLY plan of the same flavor is not well above it (a monthly figure would be).
The China portal prices in CNY; the site is recorded with the figure.
"""
from __future__ import annotations

from typing import Iterable, Optional

from components import public_feed
from components.price_book import Snapshot
from components.public_feed import FeedError

DISPLAY = "Huawei Cloud"
URL = ("https://portal.huaweicloud.com/api/calculator/rest/cbc/portalcalculatornodeservice/v4/api/productInfo"
       "?urlPath=ecs&tag=general.online.portal&region={region}&tab=calc&sign=common")
HEADERS = {"Accept": "application/json", "Origin": "https://www.huaweicloud.com",
           "Referer": "https://www.huaweicloud.com/pricing/calculator.html"}
SITE = "China site (huaweicloud.com price calculator)"
CURRENCY = "CNY"
BASIS = "Linux, pay-per-use (ONDEMAND plan of the price calculator), list price"
# A month of pay-per-use costs hundreds of hours; a monthly plan is at most a few times cheaper than that.
# An ONDEMAND amount at least a tenth of the MONTHLY one is no hourly price.
HOURLY_CHECK = 0.1


def fetch(types: Iterable[str], *, regions: Optional[list[str]], endpoint: Optional[str], today: str,
          **_) -> Snapshot:
    if not regions:
        raise FeedError("the calculator prices one region per request: give --region (e.g. cn-north-4)")
    wanted = set(types)
    on_demand: dict[str, dict[str, float]] = {}
    for region in regions:
        url = public_feed.at(URL.format(region=region), endpoint)
        answer = public_feed.get_json(url, HEADERS)
        vms = public_feed.field(answer, "product.ec2_vm", list, url)
        for vm in vms:
            if not isinstance(vm, dict) or vm.get("spec") not in wanted or vm.get("imageSpec") != "linux":
                continue
            where = f"{url} {vm['spec']}"
            plans = public_feed.field(vm, "planList", list, where)
            by_mode = {plan.get("billingMode"): plan for plan in plans if isinstance(plan, dict)}
            if "ONDEMAND" not in by_mode:
                continue  # not sold pay-per-use in the region
            hourly = public_feed.positive_price(by_mode["ONDEMAND"].get("amount"), where)
            monthly = by_mode.get("MONTHLY", {}).get("amount")
            if monthly is not None and hourly >= HOURLY_CHECK * public_feed.positive_price(monthly, where):
                raise FeedError(f"{where}: ONDEMAND {hourly:g} is not an hourly price next to MONTHLY {monthly}:"
                                " the unit changed; nothing written")
            on_demand.setdefault(vm["spec"], {})[region] = hourly
    if not on_demand:
        raise FeedError(f"none of the {len(wanted)} catalog flavors has a Linux ONDEMAND price in"
                        f" {', '.join(regions)}; nothing written")
    host = (endpoint or URL).split("://", 1)[-1].split("/", 1)[0]
    return Snapshot(source=f"price calculator {host} productInfo", url=URL.format(region=regions[0]), date=today,
                    currency=CURRENCY, site=SITE, basis=BASIS, on_demand=on_demand)
