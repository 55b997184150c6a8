"""Alibaba Cloud list prices without an account: the public price JSON the ECS pricing page loads.

The China site's pricing page (PAGE) names the current price data version in a URL
`https://g.alicdn.com/aliyun/ecs-price-info/<version>`; `<that>/price/download/instancePrice.json` is
`{"currency"?, "version"?, "pricingInfo": {"<region>::<instanceType>::<network>::<os>::<io>":
{"hours": [{"price": "1.30", "period": "1"}], "months": [...], "years": [...]}}}`. Sources of that
shape and of the version discovery: cloudpilot-ai/priceserver pkg/client/alibabacloud.go (getECSPrice: the
page, the regex, `Hours[0].Price` of the `linux` keys) and fuzzbuster/ec2instances.info@ff76b4f
alicloud/scrape.go (pricingFile: currency, version, pricingInfo; "Same format, CNY pricing" for the China
CDN, USD for the international `ecs-price-info-intl` one). The China site prices in CNY; `site="intl"`
reads the international JSON (USD), whose version must be given (`feed_version`): no public page that
names it was verified. The CDN lists no zone stock: a price says the type is sold in the region, not that
a zone has capacity now.
"""
from __future__ import annotations

import re
from typing import Iterable, Optional

from components import public_feed
from components.price_book import Snapshot
from components.public_feed import FeedError

DISPLAY = "Alibaba Cloud"
ALL_REGIONS = True  # one JSON prices every region: a refresh needs no --region
PAGE = "https://www.aliyun.com/price/ecs/ecs-pricing/zh"
CDN = {"china": "https://g.alicdn.com/aliyun/ecs-price-info", "intl": "https://g.alicdn.com/aliyun/ecs-price-info-intl"}
CURRENCY = {"china": "CNY", "intl": "USD"}
SITE = {"china": "China site (aliyun.com price book)", "intl": "international site (alibabacloud.com price book)"}
BASIS = "Linux, pay-as-you-go (hours[0] of the public price JSON), list price"
PREFERRED = ("vpc", "optimized")  # network and I/O of the keys a VPC GPU instance is priced by


def discover_version(endpoint: Optional[str]) -> str:
    page = public_feed.get_text(public_feed.at(PAGE, endpoint))
    found = re.search(r"https://g\.alicdn\.com/aliyun/ecs-price-info/([0-9][0-9.]*[0-9])", page)
    if not found:
        raise FeedError(f"{PAGE}: no g.alicdn.com/aliyun/ecs-price-info/<version> link in the page; the page"
                        " changed (give the version with --feed-version)")
    return found.group(1)


def json_url(site: str, version: str) -> str:
    return f"{CDN[site]}/{version}/price/download/instancePrice.json"


def fetch(types: Iterable[str], *, regions: Optional[list[str]], endpoint: Optional[str], today: str,
          site: str = "china", feed_version: Optional[str] = None, **_) -> Snapshot:
    """One snapshot of the catalog `types` in `regions` (None: every region the JSON lists)."""
    if site not in CDN:
        raise FeedError(f"site {site!r}: allowed: {', '.join(CDN)}")
    if site == "intl" and not feed_version:
        raise FeedError("the international price JSON's version is not discovered here: give --feed-version"
                        " (the number after ecs-price-info-intl/ in the pricing page's requests)")
    version = feed_version or discover_version(endpoint)
    url = public_feed.at(json_url(site, version), endpoint)
    answer = public_feed.get_json(url)
    info = public_feed.field(answer, "pricingInfo", dict, url)
    currency = answer.get("currency") or CURRENCY[site]
    if currency != CURRENCY[site]:
        raise FeedError(f"{url}: currency {currency!r}, expected {CURRENCY[site]} for the {site} site")
    wanted, allowed = set(types), None if not regions else set(regions)
    best: dict[str, dict[str, tuple[int, float]]] = {}
    for key, entry in info.items():
        parts = key.split("::")
        if len(parts) != 5:
            raise FeedError(f"{url}: key {key!r} is not region::type::network::os::io; the feed changed")
        region, instance_type, network, os_name, io = parts
        if instance_type not in wanted or os_name != "linux" or (allowed and region not in allowed):
            continue
        hours = public_feed.field(entry, "hours", list, f"{url} {key}")
        if not hours or not isinstance(hours[0], dict) or "price" not in hours[0]:
            raise FeedError(f"{url} {key}: `hours` holds no price; the feed changed")
        price = public_feed.positive_price(hours[0]["price"], f"{url} {key}")
        rank = (network != PREFERRED[0]) + (io != PREFERRED[1])  # a VPC, I/O-optimized key wins
        seen = best.setdefault(instance_type, {}).get(region)
        if seen is None or rank < seen[0]:
            best[instance_type][region] = (rank, price)
    if not best:
        where = "" if not allowed else f" in {', '.join(sorted(allowed))}"
        raise FeedError(f"{url}: none of the {len(wanted)} catalog types has a Linux price{where}; nothing written")
    return Snapshot(source=f"public price JSON {url.split('://', 1)[-1]} (version {version})", url=url, date=today,
                    currency=currency, site=SITE[site], basis=BASIS,
                    on_demand={t: {r: p for r, (_, p) in by_region.items()} for t, by_region in best.items()})
