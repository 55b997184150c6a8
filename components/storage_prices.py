"""Dated list prices of the storage a stack pays for besides its nodes: data disks, the shared file system and
object storage, shipped with each provider as `storage_prices.yaml` (or `<provider>.storage_prices.yaml` in
$GPU_TRAINING_CATALOGS).

Each snapshot is one source (a URL, or repo@commit and file) with its date, currency, site and basis, and any of:
  disks:          {category or category/level: {region: per GB-hour}}   the disk size as the cloud counts it
  diskThroughput: {category: {region: per MB/s-hour}}                   extra throughput bought for a disk,
                  valid up to `diskThroughputUpToMBps` (the first tier of a tiered price)
  sharedStorage:  {kind: {region: per GiB-hour}}                       the stack's sharedStorage, provisioned size
  objectStorage:  {class: {region: per GB-month}}                      what is stored (its size is the user's)
A kind absent from a region has no price there: it is never lent from another region (prices differ by region).
`unpublished` says, per group (disks, sharedStorage, objectStorage), why no figure is shipped and where today's
price is; `checkPages` names the page per group. The newest snapshot that prices a (kind, region) wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from components import datafiles, providers

FILE = "storage_prices.yaml"
GROUPS = ("disks", "diskThroughput", "sharedStorage", "objectStorage")
UNITS = {"disks": "GB-h", "diskThroughput": "MB/s-h", "sharedStorage": "GiB-h", "objectStorage": "GB-month"}


@dataclass(frozen=True)
class Snapshot:
    source: str
    url: Optional[str]
    date: str
    currency: str
    site: str
    basis: str
    caveat: Optional[str]
    prices: Mapping[str, Mapping[str, Mapping[str, float]]]  # group -> kind -> region -> price
    throughput_up_to_mbps: Optional[int] = None


@dataclass(frozen=True)
class Quote:
    """One unit price of one storage kind in one region, with where it was read."""
    group: str
    kind: str
    region: str
    price: float
    currency: str
    date: str
    source: str
    url: Optional[str]
    site: str
    basis: str
    caveat: Optional[str] = None
    up_to: Optional[int] = None  # diskThroughput: the most MB/s this price covers

    @property
    def unit(self) -> str:
        return UNITS[self.group]

    def text(self) -> str:
        """`0.0003 USD/GB-h (ap-guangzhou, 2023-11-23, source; caveat)`: the figure and where it is from."""
        said = "; ".join(part for part in (self.site, self.basis, self.caveat) if part)
        return (f"{self.price:g} {self.currency}/{self.unit} ({self.region}, {self.date}, {self.url or self.source}"
                + (f"; {said}" if said else "") + ")")


@dataclass(frozen=True)
class Book:
    provider: str
    path: Path
    check_pages: Mapping[str, str]
    unpublished: Mapping[str, str]
    snapshots: tuple[Snapshot, ...] = field(default_factory=tuple)

    def quote(self, group: str, kind: str, region: str) -> Optional[Quote]:
        """The newest snapshot's price of `kind` in `region`, or None (never another region's)."""
        for snapshot in sorted(self.snapshots, key=lambda s: s.date, reverse=True):
            value = snapshot.prices.get(group, {}).get(kind, {}).get(region)
            if value is not None:
                return Quote(group, kind, region, float(value), snapshot.currency, snapshot.date, snapshot.source,
                             snapshot.url, snapshot.site, snapshot.basis, snapshot.caveat,
                             snapshot.throughput_up_to_mbps if group == "diskThroughput" else None)
        return None

    def why_none(self, group: str, kind: str, region: str) -> str:
        """Why `kind` has no price in `region`, with the page that has today's."""
        page = self.check_pages.get("disks" if group == "diskThroughput" else group)
        listed = sorted({r for s in self.snapshots for r in s.prices.get(group, {}).get(kind, {})})
        if listed:
            why = (f"no list price for {kind} in {region} (listed for {', '.join(listed)}; prices differ by region,"
                   " so none is lent)")
        else:
            why = self.unpublished.get("disks" if group == "diskThroughput" else group) or f"no dated price for {kind}"
        return why + (f"; today's price: {page}" if page else "")


def path_of(provider: str) -> Path:
    return providers.overlay(f"{provider}.{FILE}") or providers.package_dir(provider) / FILE


def load(provider: str) -> Book:
    """The provider's storage price book; an empty one (every price unknown, said why) when it ships none."""
    path = path_of(provider)
    raw = (datafiles.load_path(path) or {}) if path.is_file() else {}
    snapshots = tuple(
        Snapshot(source=s["source"], url=s.get("url"), date=str(s["date"]), currency=s["currency"], site=s["site"],
                 basis=s["basis"], caveat=s.get("caveat"),
                 prices={group: s.get(group) or {} for group in GROUPS},
                 throughput_up_to_mbps=s.get("diskThroughputUpToMBps"))
        for s in raw.get("snapshots") or [])
    unpublished = dict(raw.get("unpublished") or {})
    if not path.is_file():
        unpublished = {group: f"no storage price book for {provider} ({path.name} in its package)" for group in GROUPS}
    return Book(provider, path, dict(raw.get("checkPages") or {}), unpublished, snapshots)
