"""The GPU catalog a person reads (`gpu-training prices show`): one row per instance type and region with its
GPUs, memory, vCPU, RAM, on-demand and spot price per hour, currency, date and source, like `sky show-gpus`
and `dstack offer`. Built from each provider's catalog (catalog.yaml) and price book (prices.yaml) through
catalog.regional_price, so it shows exactly the price a preview of that type in that region would.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date as Date
from pathlib import Path
from typing import Iterable, Optional

from components import catalog, price_book, providers
from components.catalog import InstanceType, Price


@dataclass(frozen=True)
class Offer:
    provider: str
    row: InstanceType
    region: Optional[str]  # None: priced nowhere
    price: Price
    regions_listed: int  # how many regions the type has a price in

    def spot_text(self) -> str:
        price = self.price
        if price.spot_per_hour is not None:
            return f"{price.spot_per_hour:,.2f}"
        if price.known and price.spot_range is not None:
            low = price.spot_range.low
            high = price.on_demand_per_hour * price.spot_range.high
            return (f"<= {high:,.2f}" if low is None else
                    f"{price.on_demand_per_hour * low:,.2f}-{high:,.2f}") + " (range)"
        return "-"

    def as_dict(self, today: Date, max_age_days: int) -> dict:
        row, price = self.row, self.price
        age = price.age_days(today)
        return {"provider": self.provider, "gpu": row.gpu, "gpuCount": row.gpu_count, "gpuMemoryGb": row.gpu_memory_gb,
                "vcpus": row.vcpus, "memoryGiB": row.memory_gib, "instanceType": row.name, "region": self.region,
                "onDemandPerHour": price.on_demand_per_hour, "spotPerHour": price.spot_per_hour,
                "spotRange": None if price.spot_range is None or not price.known else
                [None if price.spot_range.low is None else round(price.on_demand_per_hour * price.spot_range.low, 4),
                 round(price.on_demand_per_hour * price.spot_range.high, 4)],
                "currency": price.currency if price.known else None, "date": price.date,
                "old": age is not None and age > max_age_days, "source": price.source, "site": price.site,
                "basis": price.basis, "url": price.url, "checkPage": price.check,
                "whyUnknown": None if price.known else price.why_unknown, "regionsListed": self.regions_listed}


def offers(provider: str, *, gpu: Optional[str] = None, region: Optional[str] = None, every_region: bool = False,
           catalog_file: Optional[Path] = None) -> list[Offer]:
    """The provider's offers: with `region`, that region's price of every type; with `every_region`, one
    row per type and listed region; else each type at its cheapest listed region."""
    raw = catalog.datafiles.load_path(catalog_file) if catalog_file else None
    found = catalog.catalog_from(raw, provider) if raw is not None else catalog.load_catalog(provider)
    book = price_book.load(provider)
    result = []
    for row in found.instances:
        if gpu and row.gpu.lower() != gpu.lower():
            continue
        listed = _regions(row, book)
        if region:
            result.append(Offer(provider, row, region, catalog.regional_price(row, region, book), len(listed)))
            continue
        priced = [Offer(provider, row, r, catalog.regional_price(row, r, book), len(listed)) for r in listed]
        if not priced:
            result.append(Offer(provider, row, None, _unpriced(row, book), 0))
        elif every_region:
            result.extend(sorted(priced, key=lambda o: (o.price.on_demand_per_hour, o.region)))
        else:
            result.append(min(priced, key=lambda o: (o.price.on_demand_per_hour, o.region)))
    return result


def _regions(row: InstanceType, book: Optional[price_book.Book]) -> list[str]:
    listed = set(book.listed_regions(row.name)) if book else set()
    if row.price.known and row.price.region:
        listed.add(row.price.region)
    return sorted(listed)


def _unpriced(row: InstanceType, book: Optional[price_book.Book]) -> Price:
    why = (book.unpublished.get(row.name) if book else None) or f"no dated price for {row.name} in any region"
    return Price(None, row.price.currency, None, None, None, check=book.check_page if book else None,
                 why_unknown=why, from_api=False)


def every_offer(names: Iterable[str], **filters) -> list[Offer]:
    return [offer for name in names for offer in offers(name, **filters)]


def pricing_providers() -> list[str]:
    return [name for name in providers.names() if providers.catalog_path(name).is_file()]
