"""The one cost model, shared by the preview, the stack outputs, the node agent's config and the advisor.

Prices come from the catalog (dated, sourced, or unknown). Spot is the cloud's own spot price where
`scripts/prices.py refresh --spot` read one, else estimated as a fraction of the on-demand price (the
provider's declared typical fraction); either is capped by the user's spot price cap. A price older
than catalog.STALE_AFTER_DAYS is used and said to be stale. Whatever is unknown stays None, with the
reason and the command that fills it in `basis`. `node_hours_cost` prices N node-hours of a stack
(what a run used so far) with the price's source and date. A whole training run (the advisor) is
the hourly cost times the billed hours; on spot the hours grow by the time reclaims cost
(`spot_hours`), so the spot figure includes the interruption overhead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from components import catalog, clock
from components.catalog import InstanceType


@dataclass(frozen=True)
class NodeHourPrice:
    currency: str
    on_demand: Optional[float]
    spot: Optional[float]
    basis: str
    source: Optional[str] = None  # where the on-demand price was read (API action or page)
    date: Optional[str] = None  # when it was read
    stale: bool = False  # read longer ago than catalog.STALE_AFTER_DAYS
    spot_read: bool = False  # spot is the cloud's own price, not the profile's estimate
    spot_range: Optional[tuple[float, float]] = None  # the cloud's documented range per hour, when no figure was read
    site: Optional[str] = None  # whose price book the figure is from


@dataclass(frozen=True)
class ClusterCost:
    currency: str
    nodes: int
    on_demand_per_hour: Optional[float]
    spot_per_hour: Optional[float]
    effective_per_hour: Optional[float]  # what this stack pays per hour with its billing
    basis: str
    source: Optional[str] = None
    date: Optional[str] = None
    stale: bool = False
    spot_read: bool = False
    spot_range_per_hour: Optional[tuple[float, float]] = None  # all nodes; the documented range, no figure read
    site: Optional[str] = None

    def as_dict(self) -> dict:
        return {"currency": self.currency, "onDemandPerHour": self.on_demand_per_hour,
                "spotPerHour": self.spot_per_hour, "effectivePerHour": self.effective_per_hour,
                "spotRangePerHour": None if self.spot_range_per_hour is None else list(self.spot_range_per_hour),
                "basis": self.basis, "priceSource": self.source, "priceDate": self.date, "stale": self.stale,
                "priceSite": self.site,
                "spotSource": None if self.spot_per_hour is None else ("cloud" if self.spot_read else "estimate")}


def unknown_basis(instance: InstanceType) -> str:
    price = instance.price
    why = price.why_unknown or f"no dated on-demand price for {instance.name} in the catalog"
    check = f"; today's price: {price.check}" if price.check else ""
    return f"unknown: {why} ({catalog.refresh_command(instance.provider, price.region)} fills it{check})"


def spot_range(price: catalog.Price) -> Optional[tuple[float, float]]:
    """The documented spot range per hour of a known on-demand price with no spot figure read; None otherwise."""
    if not price.known or price.spot_per_hour is not None or price.spot_range is None:
        return None
    on_demand = float(price.on_demand_per_hour)
    low = 0.0 if price.spot_range.low is None else price.spot_range.low
    return round(on_demand * low, 4), round(on_demand * price.spot_range.high, 4)


def node_hour_price(instance: InstanceType, spot_fraction: float, spot_source: str,
                    spot_cap: Optional[float] = None) -> NodeHourPrice:
    price = instance.price
    if not price.known:
        return NodeHourPrice(price.currency, None, None, unknown_basis(instance))
    on_demand = float(price.on_demand_per_hour)
    age = price.age_days(clock.now().date())
    stale = age is not None and age > catalog.STALE_AFTER_DAYS
    book = "; ".join(part for part in (price.site, price.basis) if part)
    basis = (f"on-demand {on_demand:g} {price.currency}/h ({price.region}, {price.date}, {price.source}"
             + (f"; {book}" if book else "") + ")")
    if stale:
        basis += (f"; STALE: dated {price.date}, {age} days ago (over {catalog.STALE_AFTER_DAYS}):"
                  f" {catalog.refresh_command(instance.provider, price.region)} renews it")
    if price.caveat:
        basis += f"; {price.caveat}"
    documented = spot_range(price)
    if price.spot_per_hour is not None:
        spot = float(price.spot_per_hour)
        basis += f"; spot {spot:g} {price.currency}/h read from the cloud with it"
    else:
        spot = on_demand * spot_fraction
        if documented is not None:
            basis += (f"; spot {documented[0]:g}-{documented[1]:g} {price.currency}/h, the cloud's documented range"
                      f" ({price.spot_range.text()}) until a refresh reads a figure")
        basis += f"; spot estimated at {spot_fraction:.0%} of on-demand ({spot_source})"
    if spot_cap is not None and spot_cap < spot:
        spot = spot_cap
        basis += f"; capped at spotMaxPricePerHour {spot_cap:g}"
    if documented is not None and spot_cap is not None:
        documented = (min(documented[0], spot_cap), min(documented[1], spot_cap))
    return NodeHourPrice(price.currency, on_demand, round(spot, 4), basis, price.source, price.date, stale,
                         price.spot_per_hour is not None, documented, price.site)


def cluster_cost(instance: InstanceType, nodes: int, billing: str, spot_fraction: float, spot_source: str,
                 spot_cap: Optional[float] = None) -> ClusterCost:
    unit = node_hour_price(instance, spot_fraction, spot_source, spot_cap)

    def times(value: Optional[float]) -> Optional[float]:
        return None if value is None else round(value * nodes, 4)

    on_demand, spot = times(unit.on_demand), times(unit.spot)
    effective = spot if billing == "spot" else on_demand
    documented = None if unit.spot_range is None else (times(unit.spot_range[0]), times(unit.spot_range[1]))
    return ClusterCost(unit.currency, nodes, on_demand, spot, effective, unit.basis, unit.source, unit.date,
                       unit.stale, unit.spot_read, documented, unit.site)


def spec_cost(spec) -> ClusterCost:
    """The hourly cost of a validated Spec (components.spec.Spec)."""
    return cluster_cost(spec.instance, spec.nodes, spec.billing, spec.profile.spot.discount,
                        spec.profile.spot.discount_source, spec.spot_max_price)


@dataclass(frozen=True)
class NodeHoursCost:
    """What N node-hours of a stack cost with its billing: the run's "cost so far"."""
    node_hours: float
    billing: str
    currency: str
    per_node_hour: Optional[float]  # None = unknown
    total: Optional[float]
    source: Optional[str]
    date: Optional[str]
    stale: bool
    basis: str

    def as_dict(self) -> dict:
        return {"nodeHours": self.node_hours, "billing": self.billing, "currency": self.currency,
                "perNodeHour": self.per_node_hour, "total": self.total, "priceSource": self.source,
                "priceDate": self.date, "stale": self.stale, "basis": self.basis}


def node_hours_cost(spec, node_hours: float) -> NodeHoursCost:
    """The cost of `node_hours` node-hours of the stack `spec` (its instance type and billing)."""
    profile = spec.profile
    unit = node_hour_price(spec.instance, profile.spot.discount, profile.spot.discount_source, spec.spot_max_price)
    rate = unit.spot if spec.billing == "spot" else unit.on_demand
    total = None if rate is None else round(rate * node_hours, 4)
    return NodeHoursCost(node_hours, spec.billing, unit.currency, rate, total, unit.source, unit.date, unit.stale,
                         unit.basis)


@dataclass(frozen=True)
class SpotRisk:
    """What reclaims cost a spot run: how often a node is reclaimed and the hours each reclaim loses."""
    interruptions_per_node_hour: float
    lost_hours_per_interruption: float  # replacement boot + work since the last checkpoint
    max_lost_fraction: float  # beyond this the run mostly waits for replacements: not viable
    basis: str


def spot_lost_fraction(nodes: int, risk: SpotRisk) -> float:
    """The share of wall time lost to reclaims: any node's reclaim stalls the whole cluster."""
    return nodes * risk.interruptions_per_node_hour * risk.lost_hours_per_interruption


def spot_hours(train_hours: float, nodes: int, risk: SpotRisk) -> Optional[float]:
    """Training hours on spot, reclaims included; None when reclaims would eat the run."""
    lost = spot_lost_fraction(nodes, risk)
    if lost >= risk.max_lost_fraction:
        return None
    # Lost time is itself exposed to reclaims, hence the division rather than (1 + lost).
    return train_hours / (1 - lost)


@dataclass(frozen=True)
class RunCost:
    """A training run priced both ways: on-demand, and on spot with the interruption overhead."""
    currency: str
    nodes: int
    gpus: int
    on_demand_hours: float  # billed: training plus start-up
    spot_hours: Optional[float]  # billed on spot; None = spot not viable for this run
    on_demand: Optional[float]  # None = price unknown
    spot: Optional[float]
    basis: str

    def hours(self, billing: str) -> Optional[float]:
        return self.spot_hours if billing == "spot" else self.on_demand_hours

    def total(self, billing: str) -> Optional[float]:
        return self.spot if billing == "spot" else self.on_demand

    def gpu_hours(self, billing: str) -> Optional[float]:
        hours = self.hours(billing)
        return None if hours is None else hours * self.gpus


def training_run_cost(instance: InstanceType, nodes: int, train_hours: float, startup_hours: float,
                      spot_fraction: float, spot_source: str, risk: SpotRisk,
                      spot_cap: Optional[float] = None) -> RunCost:
    """Price `train_hours` of training on `nodes` x `instance`, billed from start-up to the end."""
    hourly = cluster_cost(instance, nodes, "on-demand", spot_fraction, spot_source, spot_cap)
    on_demand_hours = train_hours + startup_hours
    on_spot = spot_hours(train_hours, nodes, risk)
    billed_spot = None if on_spot is None else on_spot + startup_hours

    def total(rate: Optional[float], hours: Optional[float]) -> Optional[float]:
        return None if rate is None or hours is None else rate * hours

    basis = hourly.basis
    if on_spot is None:
        basis += (f"; spot not viable: reclaims would take {spot_lost_fraction(nodes, risk):.0%} of the run"
                  f" (limit {risk.max_lost_fraction:.0%})")
    else:
        basis += f"; spot hours include reclaims ({risk.basis})"
    return RunCost(hourly.currency, nodes, nodes * instance.gpu_count, on_demand_hours, billed_spot,
                   total(hourly.on_demand_per_hour, on_demand_hours), total(hourly.spot_per_hour, billed_spot),
                   basis)


@dataclass(frozen=True)
class DiskCost:
    """The stack's data disks per hour (they bill while the nodes run and go with them)."""
    currency: Optional[str]
    nodes: int
    size_gb: int
    kind: str
    per_hour: Optional[float]  # all nodes; None = unknown
    source: Optional[str]
    date: Optional[str]
    basis: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "sizeGb": self.size_gb, "nodes": self.nodes, "currency": self.currency,
                "perHour": self.per_hour, "priceSource": self.source, "priceDate": self.date, "basis": self.basis}


def data_disk_cost(spec) -> DiskCost:
    """The data disks' hourly cost from the refreshed disk prices (catalog.disk_price), or unknown and why."""
    disk = spec.data_disk
    kind = disk.category + (f" {disk.performance_level}" if disk.performance_level else "")
    price = catalog.disk_price(spec.provider, disk.category, disk.performance_level)
    if price is None:
        return DiskCost(None, spec.nodes, disk.size_gb, kind, None, None, None,
                        f"unknown: no refreshed price for {kind} disks ({catalog.disk_refresh_command(spec.provider)})")
    per_hour = round(price.per_gib_hour * disk.size_gb * spec.nodes, 4)
    return DiskCost(price.currency, spec.nodes, disk.size_gb, kind, per_hour, price.source, price.date,
                    f"{price.per_gib_hour:g} {price.currency}/GiB-h x {disk.size_gb} GiB x {spec.nodes} node(s)"
                    f" ({price.region}, {price.date}, {price.source})")
