"""Per-provider GPU instance catalogs (data files with sources and dated prices) and type resolution."""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date as Date
from pathlib import Path
from typing import Optional

from components import datafiles, providers

GIB_TO_GB = 1.073741824
# A price read more than this many days ago is shown as stale: clouds change list prices and spot
# markets move, and a month is the longest the toolkit trusts a figure it cannot re-check offline.
STALE_AFTER_DAYS = 30


def refresh_command(provider: str) -> str:
    """The command that fills (or renews) a provider's catalog prices, for every place showing an unknown one."""
    if not providers.has_module(provider, "pricing"):
        return f"no price API client for {provider} yet (components/providers/{provider}/pricing.py)"
    needs = providers.module(provider, "pricing").NEEDS
    extra = "".join(f" --{option.replace('_', '-')} ..." for option in needs)
    return f"scripts/prices.py refresh --provider {provider} --region REGION{extra} --spot"


def disk_refresh_command(provider: str) -> str:
    """The command that fills a provider's disk prices, or why nothing does yet."""
    if providers.has_module(provider, "pricing") and hasattr(providers.module(provider, "pricing"), "fetch_disks"):
        return refresh_command(provider) + " --disks"
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

    @property
    def known(self) -> bool:
        return self.on_demand_per_hour is not None

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
    """disk_prices.yaml in the provider's package, or <provider>.disks.yaml in $GPU_TRAINING_CATALOGS."""
    folder = os.environ.get(providers.CATALOGS_ENV)
    if folder and (Path(folder) / f"{provider}.disks.yaml").is_file():
        return Path(folder) / f"{provider}.disks.yaml"
    return providers.package_dir(provider) / "disk_prices.yaml"


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


def load_catalog(provider: str) -> Catalog:
    return catalog_from(datafiles.load_path(providers.catalog_path(provider)), provider)


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
            ),
        ))
    return Catalog(provider, currency, raw.get("sources", {}), tuple(rows))
