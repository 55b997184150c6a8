"""The one cost model, shared by the preview, the stack outputs, the node agent's config and the advisor.

Prices come from the catalog (dated, sourced, or unknown). Spot is the cloud's own spot price where
`scripts/prices.py refresh --spot` read one, else estimated as a fraction of the on-demand price (the
provider's declared typical fraction); either is capped by the user's spot price cap. A price older
than catalog.STALE_AFTER_DAYS is used and said to be stale. Whatever is unknown stays None, with the
reason and the command that fills it in `basis`. `node_hours_cost` prices N node-hours of a stack
(what a run used so far) with the price's source and date. A whole training run (the advisor) is
the hourly cost times the billed hours; on spot the hours grow by the time reclaims cost
(`spot_hours`), so the spot figure includes the interruption overhead.

Storage is priced here too, from components/storage_prices.py: the data disks (`data_disk_cost`), the shared
file system (`shared_storage_cost`) and object storage per GB-month (`object_storage_rate`), each in its own
currency, never lent from another region. `cost_output` is the `costPerHour` stack output (nodes and storage:
what `status` counts), and `run_cost` prices a run's nodes by their hours for `gpu-training report`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date as Date
from typing import Optional

from components import catalog, clock, storage_prices
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
    if not price.refreshable:
        return f"unknown: {why}" + (f" (today's price: {price.check})" if price.check else "")
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


def priced_instance(spec) -> tuple[InstanceType, Optional[str]]:
    """The type a stack's hourly figures are for, and why it is not the stack's own type (None when it is).

    A spot pool may launch any of its types (spec.pool_types, the stack's instance type first). When the first has
    no price in the region but another does, the figures are that type's, said so: a node of the first type bills
    its own, unknown price. Anything else is priced (or unknown) as its own type: never another region's price."""
    own = spec.instance
    if own.price.known or not spec.spot:
        return own, None
    other = next((row for row in spec.pool_types[1:] if row.price.known), None)
    if other is None:
        return own, None
    return other, (f"priced as {other.name}, a type of the spot pool with a list price in {spec.region};"
                   f" the pool's first type {own.name} has none there ({own.price.why_unknown or 'no dated price'}),"
                   " so a node of that type bills its own price, not shown here")


def _with_note(unit, note: Optional[str]):
    return unit if note is None else replace(unit, basis=f"{note}; {unit.basis}")


def spec_cost(spec) -> ClusterCost:
    """The hourly cost of a validated Spec (components.spec.Spec)."""
    instance, note = priced_instance(spec)
    return _with_note(cluster_cost(instance, spec.nodes, spec.billing, spec.profile.spot.discount,
                                   spec.profile.spot.discount_source, spec.spot_max_price), note)


def spec_node_hour_price(spec) -> NodeHourPrice:
    """One node-hour of the stack (priced_instance), with its billing's spot estimate and cap."""
    instance, note = priced_instance(spec)
    profile = spec.profile
    return _with_note(node_hour_price(instance, profile.spot.discount, profile.spot.discount_source,
                                      spec.spot_max_price), note)


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
    unit = spec_node_hour_price(spec)
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


def _dated(quote_date: str) -> str:
    """`; STALE: ...` for a storage price older than catalog.STALE_AFTER_DAYS, else ''."""
    age = (clock.now().date() - Date.fromisoformat(quote_date[:10])).days
    if age <= catalog.STALE_AFTER_DAYS:
        return ""
    return (f"; STALE: dated {quote_date}, {age} days ago (over {catalog.STALE_AFTER_DAYS}): the page named"
            " above has today's price")


def data_disk_cost(spec) -> DiskCost:
    """The data disks' hourly cost: the account's disk price a signed refresh read for the stack's region
    (catalog.disk_price), else the shipped list price (components/storage_prices.py), else unknown and why."""
    disk = spec.data_disk
    kind = disk.category + (f" {disk.performance_level}" if disk.performance_level else "")
    signed = catalog.disk_price(spec.provider, disk.category, disk.performance_level)
    if signed is not None and signed.region == spec.region:
        per_hour = round(signed.per_gib_hour * disk.size_gb * spec.nodes, 4)
        return DiskCost(signed.currency, spec.nodes, disk.size_gb, kind, per_hour, signed.source, signed.date,
                        f"{signed.per_gib_hour:g} {signed.currency}/GiB-h x {disk.size_gb} GiB x {spec.nodes} node(s)"
                        f" ({signed.region}, {signed.date}, {signed.source})")
    book = storage_prices.load(spec.provider)
    level = disk.performance_level
    quote = book.quote("disks", f"{disk.category}/{level}", spec.region) if level else None
    extra_mbps = int(level) if level and level.isdigit() else 0  # a number: extra throughput bought (MB/s)
    if quote is None and (not level or extra_mbps):
        quote = book.quote("disks", disk.category, spec.region)
    if quote is None:
        kind_key = f"{disk.category}/{level}" if level and not extra_mbps else disk.category
        refresh = catalog.disk_refresh_command(spec.provider, spec.region)
        return DiskCost(None, spec.nodes, disk.size_gb, kind, None, None, None,
                        f"unknown: {book.why_none('disks', kind_key, spec.region)} ({refresh})")
    per_node = quote.price * disk.size_gb
    basis = f"{quote.price:g} {quote.currency}/{quote.unit} x {disk.size_gb} GiB"
    if extra_mbps:
        throughput = book.quote("diskThroughput", disk.category, spec.region)
        if throughput is None or throughput.currency != quote.currency or (
                throughput.up_to is not None and extra_mbps > throughput.up_to):
            return DiskCost(None, spec.nodes, disk.size_gb, kind, None, None, None,
                            f"unknown: {disk.size_gb} GiB at {quote.text()}, but no list price for"
                            f" +{extra_mbps} MB/s of extra throughput in {spec.region}"
                            f" ({book.why_none('diskThroughput', disk.category, spec.region)})")
        per_node += throughput.price * extra_mbps
        basis += f" + {throughput.price:g} {throughput.currency}/MB/s-h x {extra_mbps} MB/s extra throughput"
    per_hour = round(per_node * spec.nodes, 6)
    return DiskCost(quote.currency, spec.nodes, disk.size_gb, kind, per_hour, quote.url or quote.source,
                    quote.date, f"{basis} x {spec.nodes} node(s): {quote.text()}{_dated(quote.date)}")


@dataclass(frozen=True)
class SharedStorageCost:
    """The shared file system per hour: provisioned capacity, billed from creation until `pulumi destroy`."""
    kind: str  # the stack's sharedStorage
    size_gb: int
    currency: Optional[str]
    per_hour: Optional[float]  # None = unknown, or no shared file system
    source: Optional[str]
    date: Optional[str]
    basis: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "sizeGb": self.size_gb, "currency": self.currency, "perHour": self.per_hour,
                "priceSource": self.source, "priceDate": self.date, "basis": self.basis}


def shared_storage_cost(spec) -> Optional[SharedStorageCost]:
    """The shared file system's hourly list price (components/storage_prices.py), unknown and why; None without one."""
    if spec.shared_storage == "none":
        return None
    book = storage_prices.load(spec.provider)
    quote = book.quote("sharedStorage", spec.shared_storage, spec.region)
    if quote is None:
        return SharedStorageCost(spec.shared_storage, spec.shared_storage_gb, None, None, None, None,
                                 f"unknown: {book.why_none('sharedStorage', spec.shared_storage, spec.region)}")
    return SharedStorageCost(spec.shared_storage, spec.shared_storage_gb, quote.currency,
                             round(quote.price * spec.shared_storage_gb, 6), quote.url or quote.source, quote.date,
                             f"{quote.price:g} {quote.currency}/GiB-h x {spec.shared_storage_gb:,} GiB: {quote.text()}"
                             f"{_dated(quote.date)}")


def object_storage_rate(spec) -> str:
    """What storing data in the stack's bucket costs per GB-month (Standard class) with its source, or why unknown:
    the rate only, since how much the run stores is the user's."""
    book = storage_prices.load(spec.provider)
    quote = book.quote("objectStorage", "STANDARD", spec.region)
    if quote is None:
        return f"unknown: {book.why_none('objectStorage', 'STANDARD', spec.region)}"
    return quote.text() + _dated(quote.date)


@dataclass(frozen=True)
class RunCostItem:
    """One line of what a run cost: a node's instance or its data disk for its hours, or the shared file system."""
    what: str
    hours: float
    currency: Optional[str]
    amount: Optional[float]  # None = unknown, or only a range is known
    basis: str
    range: Optional[tuple[float, float]] = None  # spot with no figure read: the cloud's documented range

    def as_dict(self) -> dict:
        return {"what": self.what, "hours": round(self.hours, 4), "currency": self.currency, "amount": self.amount,
                "range": None if self.range is None else list(self.range), "basis": self.basis}


def totals(items) -> dict[str, dict]:
    """Per currency: {"amount": sum of the known figures, "high": that plus the tops of the ranges, "unknown": how
    many parts are unknown}. Currencies are never added together or converted."""
    found: dict[str, dict] = {}
    for item in items:
        entry = found.setdefault(item.currency or "?", {"amount": 0.0, "high": 0.0, "unknown": 0})
        if item.amount is not None:
            entry["amount"] = round(entry["amount"] + item.amount, 4)
            entry["high"] = round(entry["high"] + item.amount, 4)
        elif item.range is not None:
            entry["amount"] = round(entry["amount"] + item.range[0], 4)
            entry["high"] = round(entry["high"] + item.range[1], 4)
        else:
            entry["unknown"] += 1
    # An unknown part whose price (and so its currency) is unknown belongs to no currency: with one currency known,
    # count it there ("12.40 CNY + 2 part(s) unknown"), not as a total of its own ("0.00 ?").
    stray, known = found.get("?"), [c for c in found if c != "?"]
    if stray is not None and stray["high"] == 0 and len(known) == 1:
        found[known[0]]["unknown"] += found.pop("?")["unknown"]
    return found


def run_cost(spec, node_hours: dict[str, float], shared_hours: Optional[float], data_disks: bool = True
             ) -> list[RunCostItem]:
    """What a run cost: each node's hours x its node-hour price and x its data disk's, and the shared file system's
    hours x its price, from the functions that price the preview and `status`. On spot, the cloud's spot figure a
    refresh read, else the cloud's documented range (never the profile's estimate). Unknown parts stay None, why said.
    `data_disks`: whether the stack's nodes carry our data disk (its target's `data_disks`; a platform's do not)."""
    unit = spec_node_hour_price(spec)
    disks = data_disk_cost(spec) if data_disks else None
    disk_rate = None if disks is None or disks.per_hour is None else disks.per_hour / spec.nodes
    rate, spread = (unit.on_demand, None) if not spec.spot else (
        (unit.spot, None) if unit.spot_read else (None, unit.spot_range))
    if spec.spot and not unit.spot_read and unit.on_demand is not None and spread is None:
        spread = (0.0, unit.on_demand)  # no documented range: at most the pay-as-you-go price
    items = []
    for node, hours in sorted(node_hours.items()):
        if rate is not None:
            priced, amount, low_high = f"{rate:g} {unit.currency}/h", round(rate * hours, 4), None
        elif spread is not None:
            low_high = (round(spread[0] * hours, 4), round(spread[1] * hours, 4))
            priced, amount = f"{spread[0]:g}-{spread[1]:g} {unit.currency}/h, the documented spot range", None
        else:
            priced, amount, low_high = "unknown", None, None
        items.append(RunCostItem(node, hours, unit.currency, amount, f"{hours:.2f} node-h x {priced}"
                                 f" ({spec.billing}; {unit.basis})", low_high))
        if disks is not None:
            items.append(RunCostItem(f"{node} data disk", hours, disks.currency,
                                     None if disk_rate is None else round(disk_rate * hours, 4),
                                     f"{hours:.2f} h x " + ("unknown" if disk_rate is None else
                                                            f"{disk_rate:g} {disks.currency}/h") + f" ({disks.basis})"))
    shared = shared_storage_cost(spec)
    if shared is not None and shared_hours is not None:
        items.append(RunCostItem(f"shared file system ({shared.kind}, {shared.size_gb:,} GiB)", shared_hours,
                                 shared.currency, None if shared.per_hour is None else
                                 round(shared.per_hour * shared_hours, 4), f"{shared_hours:.2f} h x ({shared.basis})"))
    return items


def storage_output(spec, data_disks: bool) -> dict:
    """What a stack's storage costs per hour, for its `costPerHour` output (status adds it to the cost so far);
    `data_disks` as in run_cost (the target knows: components/targets)."""
    disks = data_disk_cost(spec) if data_disks else None
    shared = shared_storage_cost(spec)
    return {"dataDisks": None if disks is None else disks.as_dict(),
            "sharedStorage": None if shared is None else shared.as_dict()}


def cost_output(spec, data_disks: bool) -> dict:
    """The `costPerHour` stack output: the nodes' hourly cost (ClusterCost) and the storage's (storage_output)."""
    return {**spec_cost(spec).as_dict(), "storage": storage_output(spec, data_disks)}
