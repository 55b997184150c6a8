"""Dated list prices per instance type and region, shipped with each provider and renewed by a refresh.

A provider's `prices.yaml` (in its package, or `<provider>.prices.yaml` in $GPU_TRAINING_CATALOGS) holds
snapshots: each one source (a URL, or repo@commit and file), its date, currency, the site it priced
(China or international: they bill in different currencies and price books), its basis (Linux,
pay-as-you-go, list price) and `onDemand: {type: {region: per hour}}` (optionally `spot` alike). A type
absent from a region in every snapshot has no price there: it is never borrowed from another region;
`price_for` says where it is listed instead. `unpublished` names types no public price exists for
(H20-class, platform flavors) with the page a user checks; `spotRange` is the cloud's documented spot
range, shown until a refresh reads a spot figure. The newest snapshot that prices a (type, region) wins.

A refresh (scripts/prices.py, `gpu-training prices refresh`) replaces the regions it read with a new
snapshot (`replace_regions`), so an old figure for a region never outlives a newer read of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Optional

import yaml

from components import datafiles, providers

FILE = "prices.yaml"


@dataclass(frozen=True)
class Snapshot:
    source: str  # repo@commit:file, an API, or a page
    url: Optional[str]
    date: str
    currency: str
    site: str  # whose price book: "China site (aliyun.com)", "international site (tencentcloud.com)", ...
    basis: str
    on_demand: Mapping[str, Mapping[str, float]]  # type -> region -> per hour
    spot: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    caveat: Optional[str] = None

    def regions(self) -> set[str]:
        return {region for by_region in (*self.on_demand.values(), *self.spot.values()) for region in by_region}


@dataclass(frozen=True)
class SpotRange:
    """The cloud's documented spot price range as fractions of the on-demand price (low None: no floor given)."""
    low: Optional[float]
    high: float
    source: str

    def text(self) -> str:
        low = "" if self.low is None else f"{self.low:.0%}-"
        return f"{low}{self.high:.0%} of pay-as-you-go ({self.source})"


@dataclass(frozen=True)
class Book:
    provider: str
    path: Path
    check_page: Optional[str]  # where a user reads today's price
    spot_range: Optional[SpotRange]
    unpublished: Mapping[str, str]  # type -> why no public price, and where to look
    snapshots: tuple[Snapshot, ...]

    def quote(self, instance_type: str, region: str) -> Optional[tuple[Snapshot, float, Optional[float]]]:
        """(snapshot, on-demand, spot or None) from the newest snapshot that prices the type in the region."""
        for snapshot in sorted(self.snapshots, key=lambda s: s.date, reverse=True):
            value = snapshot.on_demand.get(instance_type, {}).get(region)
            if value is not None:
                return snapshot, float(value), _float(snapshot.spot.get(instance_type, {}).get(region))
        return None

    def listed_regions(self, instance_type: str) -> dict[str, tuple[Snapshot, float]]:
        """Every region some snapshot prices the type in, with its newest price."""
        found: dict[str, tuple[Snapshot, float]] = {}
        for snapshot in sorted(self.snapshots, key=lambda s: s.date):
            for region, value in snapshot.on_demand.get(instance_type, {}).items():
                found[region] = (snapshot, float(value))
        return found


def _float(value) -> Optional[float]:
    return None if value is None else float(value)


def path_of(provider: str) -> Path:
    return providers.overlay(f"{provider}.{FILE}") or providers.package_dir(provider) / FILE


def refresh_target(provider: str) -> tuple[Path, Path]:
    """(the price book a public refresh writes by default, the one it edits: providers.refresh_target)."""
    return providers.refresh_target(f"{provider}.{FILE}", providers.package_dir(provider) / FILE)


def load(provider: str) -> Optional[Book]:
    """The provider's price book, or None when it ships none. A wheel install's refreshed copy
    (providers.adds_shipped) is read with the shipped book (with_shipped)."""
    path, shipped = path_of(provider), providers.package_dir(provider) / FILE
    if not path.is_file():
        return None
    book = book_from(datafiles.load_path(path) or {}, provider, path)
    if path != shipped and shipped.is_file() and providers.adds_shipped(path):
        book = with_shipped(book, book_from(datafiles.load_path(shipped) or {}, provider, shipped))
    return book


def with_shipped(copy: Book, shipped: Book) -> Book:
    """`copy` with each shipped snapshot it lacks (by source and date), so a newer package's dated prices reach a
    user whose copy is older; the newest snapshot still wins per type and region."""
    have = {(s.source, s.date) for s in copy.snapshots}
    return replace(copy, snapshots=(*(s for s in shipped.snapshots if (s.source, s.date) not in have),
                                    *copy.snapshots))


def book_from(raw: dict, provider: str, path: Path) -> Book:
    spot = raw.get("spotRange")
    snapshots = tuple(
        Snapshot(source=s["source"], url=s.get("url"), date=str(s["date"]), currency=s["currency"], site=s["site"],
                 basis=s["basis"], on_demand=s.get("onDemand") or {}, spot=s.get("spot") or {}, caveat=s.get("caveat"))
        for s in raw.get("snapshots") or [])
    return Book(provider, path, raw.get("checkPage"),
                None if not spot else SpotRange(spot.get("low"), float(spot["high"]), spot["source"]),
                dict(raw.get("unpublished") or {}), snapshots)


def snapshot_mapping(snapshot: Snapshot) -> dict:
    mapping = {"source": snapshot.source, "url": snapshot.url, "date": snapshot.date, "currency": snapshot.currency,
               "site": snapshot.site, "basis": snapshot.basis}
    if snapshot.caveat:
        mapping["caveat"] = snapshot.caveat
    mapping["onDemand"] = {t: dict(sorted(r.items())) for t, r in sorted(snapshot.on_demand.items())}
    if snapshot.spot:
        mapping["spot"] = {t: dict(sorted(r.items())) for t, r in sorted(snapshot.spot.items())}
    return mapping


def replace_regions(text: str, snapshot: Snapshot) -> str:
    """The price file's text with `snapshot` added and every older figure for its regions dropped.

    The head of the file (comments and the keys before `snapshots:`) is kept as written; the snapshots
    are rewritten one type per line. Raises ValueError when the text has no `snapshots:` key.
    """
    head, marker, _ = text.partition("\nsnapshots:")
    if not marker:
        raise ValueError("the price file has no `snapshots:` list")
    raw = yaml.safe_load(text) or {}
    regions = snapshot.regions()
    kept = []
    for old in raw.get("snapshots") or []:
        pruned = {key: {t: {r: v for r, v in by_region.items() if r not in regions}
                        for t, by_region in (old.get(key) or {}).items()} for key in ("onDemand", "spot")}
        pruned = {key: {t: r for t, r in value.items() if r} for key, value in pruned.items()}
        if pruned["onDemand"]:
            kept.append({**old, "onDemand": pruned["onDemand"], **({"spot": pruned["spot"]} if pruned["spot"] else {})})
            if not pruned["spot"]:
                kept[-1].pop("spot", None)
    snapshots = [*kept, snapshot_mapping(snapshot)]
    return head + "\nsnapshots:\n" + "".join(_render(s) for s in snapshots)


def _render(snapshot: Mapping) -> str:
    lines = []
    first = True
    for key, value in snapshot.items():
        lead = "  - " if first else "    "
        first = False
        if key in ("onDemand", "spot"):
            lines.append(f"{lead}{key}:")
            for instance_type, by_region in value.items():
                lines.append(f"      {instance_type}: " + yaml.safe_dump(dict(by_region), default_flow_style=True,
                                                                          width=10_000).strip())
        else:
            lines.append(f"{lead}{key}: " + yaml.safe_dump(value, default_flow_style=True, width=10_000)
                         .strip().removesuffix("\n...").strip())
    return "\n".join(lines) + "\n"
