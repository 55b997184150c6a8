"""Per-provider GPU instance catalogs (data files with sources and dated prices) and type resolution."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date as Date
from pathlib import Path
from typing import Optional

from components import datafiles, price_book, providers

GIB_TO_GB = 1.073741824
# A price read more than this many days ago is shown as stale: clouds change list prices and spot
# markets move, and a month is the longest the toolkit trusts a figure it cannot re-check offline.
STALE_AFTER_DAYS = 30


def refresh_command(provider: str, region: Optional[str] = None) -> str:
    """The command that fills (or renews) a provider's catalog prices, for every place showing an unknown one:
    the public feed where the cloud has one (no account), else its signed price API."""
    where = region or "REGION"
    if providers.has_module(provider, "public_prices"):
        if getattr(providers.module(provider, "public_prices"), "ALL_REGIONS", False):
            return f"gpu-training prices refresh --provider {provider}"
        return f"gpu-training prices refresh --provider {provider} --region {where}"
    if not providers.has_module(provider, "pricing"):
        return f"no price API client for {provider} yet (components/providers/{provider}/pricing.py)"
    needs = providers.module(provider, "pricing").NEEDS
    extra = "".join(f" --{option.replace('_', '-')} ..." for option in needs)
    return f"gpu-training prices refresh --provider {provider} --region {where}{extra} --spot"


def disk_refresh_command(provider: str, region: Optional[str] = None) -> str:
    """The command that reads the account's disk prices (the signed API only: no public feed has them), or why
    nothing does yet."""
    if providers.has_module(provider, "pricing") and hasattr(providers.module(provider, "pricing"), "fetch_disks"):
        needs = providers.module(provider, "pricing").NEEDS
        extra = "".join(f" --{option.replace('_', '-')} ..." for option in needs)
        return (f"with credentials, gpu-training prices refresh --signed --provider {provider}"
                f" --region {region or 'REGION'}{extra} --disks reads the account's price")
    return f"no disk price client for {provider} yet (a fetch_disks in components/providers/{provider}/pricing.py)"


@dataclass(frozen=True)
class Price:
    on_demand_per_hour: Optional[float]  # None = unknown
    currency: str
    region: Optional[str]
    date: Optional[str]
    source: Optional[str]
    spot_per_hour: Optional[float] = None  # the cloud's own spot/bid price, when refresh --spot read one
    caveat: Optional[str] = None
    site: Optional[str] = None  # whose price book (China or international site): they bill in different currencies
    basis: Optional[str] = None  # e.g. "Linux, pay-as-you-go, list price"
    url: Optional[str] = None  # where the source can be read
    spot_range: Optional[price_book.SpotRange] = None  # the cloud's documented spot range (no spot figure read)
    check: Optional[str] = None  # the page a user reads today's price on
    # Unknown here but listed elsewhere: (region, on-demand per hour) from the price book, cheapest first.
    elsewhere: tuple[tuple[str, float], ...] = ()
    why_unknown: Optional[str] = None  # why there is no price (not listed in the region, no public price, ...)
    # Read by the signed price API for the account (the catalog row): the price `pulumi up` may cap spot bids
    # with. False for a list price from the price book or a public feed: shown and used for estimates only.
    from_api: bool = True
    # False: no refresh can fill it (a training platform's own rate: no feed or price API of ours reads it).
    refreshable: bool = True

    @property
    def known(self) -> bool:
        return self.on_demand_per_hour is not None

    @property
    def account_price(self) -> Optional[float]:
        """The on-demand price the signed API read for the account, or None (unknown, or a list price only):
        what a deployment may set as a spot price cap or hold a user's cap against."""
        return self.on_demand_per_hour if self.from_api else None

    def age_days(self, today: Date) -> Optional[int]:
        if self.date is None:
            return None
        return (today - Date.fromisoformat(str(self.date)[:10])).days

    def stale(self, today: Date, max_age_days: int = STALE_AFTER_DAYS) -> bool:
        age = self.age_days(today)
        return age is not None and age > max_age_days


@dataclass(frozen=True)
class InstanceType:
    provider: str
    name: str
    gpu: str
    gpu_count: int
    gpu_memory_gb: int
    vcpus: int
    memory_gib: float
    nvlink: Optional[bool]  # None = unconfirmed
    nvswitch: Optional[bool]
    rdma: str
    network_gbps: Optional[float]
    local_nvme: bool
    source: str
    note: Optional[str]
    price: Price

    @property
    def memory_gb(self) -> float:
        return self.memory_gib * GIB_TO_GB

    @property
    def vcpus_per_gpu(self) -> float:
        return self.vcpus / self.gpu_count


@dataclass(frozen=True)
class Catalog:
    provider: str
    currency: str
    sources: dict
    instances: tuple[InstanceType, ...]

    def get(self, name: str) -> Optional[InstanceType]:
        return next((row for row in self.instances if row.name == name), None)

    def matching(self, gpus: tuple[str, ...], count: int) -> list[InstanceType]:
        return [row for row in self.instances if row.gpu in gpus and row.gpu_count == count]

    def counts_for(self, gpu: str) -> list[int]:
        return sorted({row.gpu_count for row in self.instances if row.gpu == gpu})

    def in_region(self, region: str) -> "Catalog":
        """The same rows, each priced for `region` (regional_price)."""
        book = price_book.load(self.provider)
        return replace(self, instances=tuple(replace(row, price=regional_price(row, region, book))
                                             for row in self.instances))


@dataclass(frozen=True)
class DiskPrice:
    """The pay-as-you-go price of a disk category (and performance level) per GiB-hour, as refresh read it."""
    category: str
    performance_level: Optional[str]
    per_gib_hour: float
    currency: str
    region: str
    date: str
    source: str


def disk_prices_path(provider: str) -> Path:
    """disk_prices.yaml in the provider's package, or <provider>.disks.yaml in providers.catalogs_folder()."""
    return providers.overlay(f"{provider}.disks.yaml") or providers.package_dir(provider) / "disk_prices.yaml"


def disk_price(provider: str, category: str, performance_level: Optional[str]) -> Optional[DiskPrice]:
    """The refreshed price of a disk kind, or None (no disk price file, or the kind is not in it)."""
    path = disk_prices_path(provider)
    if not path.is_file():
        return None
    for row in (datafiles.load_path(path) or {}).get("disks") or []:
        if row["category"] == category and row.get("performanceLevel") == performance_level:
            return DiskPrice(category, performance_level, float(row["perGiBHour"]), row["currency"], row["region"],
                             str(row["date"]), row["source"])
    return None


def load_catalog(provider: str, region: Optional[str] = None) -> Catalog:
    """The provider's catalog; with `region`, each row carries its price in that region (regional_price)."""
    path, shipped = providers.catalog_path(provider), providers.package_dir(provider) / "catalog.yaml"
    found = catalog_from(datafiles.load_path(path), provider)
    if path != shipped and providers.adds_shipped(path):
        found = with_shipped(found, catalog_from(datafiles.load_path(shipped), provider))
    return found if region is None else found.in_region(region)


def with_shipped(copy: Catalog, shipped: Catalog) -> Catalog:
    """A wheel install's refreshed copy with the types a newer package added (the copy's own rows win)."""
    have = {row.name for row in copy.instances}
    return replace(copy, instances=copy.instances + tuple(row for row in shipped.instances if row.name not in have))


def regional_price(row: "InstanceType", region: str, book: Optional[price_book.Book] = None) -> Price:
    """The row's price in `region`: a signed API refresh of that region (the catalog row) wins, else the
    newest price book snapshot that lists the type there; else unknown, with why and where it is listed."""
    book = book if book is not None else price_book.load(row.provider)
    spot_range = book.spot_range if book else None
    check = book.check_page if book else None
    own = row.price
    quoted = book.quote(row.name, region) if book else None
    if own.known and own.region == region and (quoted is None or str(own.date) >= quoted[0].date):
        return replace(own, spot_range=None if own.spot_per_hour is not None else spot_range, check=check)
    if quoted is not None:
        snapshot, on_demand, spot = quoted
        return Price(on_demand, snapshot.currency, region, snapshot.date, snapshot.source, spot, snapshot.caveat,
                     snapshot.site, snapshot.basis, snapshot.url, None if spot is not None else spot_range, check,
                     from_api=False)
    if book and row.name in book.unpublished:
        return Price(None, own.currency, region, None, None, check=check, spot_range=spot_range,
                     why_unknown=book.unpublished[row.name], from_api=False)
    listed = book.listed_regions(row.name) if book else {}
    elsewhere = tuple(sorted(((r, v) for r, (_, v) in listed.items()), key=lambda item: (item[1], item[0])))
    if elsewhere:
        currency = next(iter(listed.values()))[0].currency
        why = (f"{row.name} has no list price in {region} (the price book lists it in {len(elsewhere)} other"
               f" region(s), cheapest {elsewhere[0][0]} {elsewhere[0][1]:g} {currency}/h): not sold there, or not"
               " yet read; pick a listed region or refresh this one")
    else:
        why = f"no dated price for {row.name} in the price book"
    return Price(None, own.currency, region, None, None, check=check, spot_range=spot_range, elsewhere=elsewhere,
                 why_unknown=why, from_api=False)


def catalog_from(raw: dict, provider: str) -> Catalog:
    """A catalog from its parsed file: a provider's catalog.yaml, or a training platform's flavors.yaml
    (components/platforms: the same rows, so the tier rules judge a platform flavor like an instance type)."""
    currency = raw["currency"]
    rows = []
    for row in raw["instances"]:
        price = row.get("price") or {}
        rows.append(InstanceType(
            provider=provider,
            name=row["type"],
            gpu=row["gpu"],
            gpu_count=int(row["gpuCount"]),
            gpu_memory_gb=row["gpuMemoryGb"],
            vcpus=int(row["vcpus"]),
            memory_gib=float(row["memoryGiB"]),
            nvlink=row.get("nvlink"),
            nvswitch=row.get("nvswitch"),
            rdma=row.get("rdma", "none"),
            network_gbps=row.get("networkGbps"),
            local_nvme=bool(row.get("localNvme", False)),
            source=row["source"],
            note=row.get("note"),
            price=Price(
                on_demand_per_hour=price.get("onDemandPerHour"),
                currency=price.get("currency", currency),
                region=price.get("region"),
                date=None if price.get("date") is None else str(price.get("date")),
                source=price.get("source"),
                spot_per_hour=price.get("spotPerHour"),
                caveat=price.get("caveat"),
                check=price.get("check"),
                why_unknown=price.get("why"),
                refreshable=bool(price.get("refreshable", True)),
            ),
        ))
    return Catalog(provider, currency, raw.get("sources", {}), tuple(rows))
