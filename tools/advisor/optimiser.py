"""Evaluate every catalog offer against a request and rank the configurations that fit.

A configuration is an instance type in a region, a node count and a billing model. For each instance type and
billing the search starts at the fewest nodes that could possibly meet the deadline (perfect
scaling) and stops at the first node count that does: cost and GPU-hours never fall as nodes are
added (efficiency only drops, spot reclaims only grow), so that node count is the cheapest for the
pair. Fit follows the guide (components/data/tiers.yaml `fit`): 8-16 vCPU per GPU is a rule, and RAM follows
the validator's rule (components.tiers.ram_shortfalls: at least twice the data set and the tier's floor), so a
type outside them is rejected with the reason, never ranked; the tier's RAM range is advice that cost weighs.
Each type is offered in its cheapest region among those the user allows (--region) or, without one, among
those a price book lists it in; a type priced nowhere is offered unpriced.

Ranking: configurations with a known price in the ranking currency (the one most of them are priced in: no
currency is converted) come first, by total cost to the deadline; the rest follow by GPU-hours (spot hours
weighted by the provider's typical spot fraction), and the result says how many and why. Among GPU-hours
equals (within 1%) the slower GPU class goes first: where the CPUs bound the speed, a faster GPU trains no
faster and its hours cost more. Either way the guide's named GPUs come before stand-ins among equals (the same
cost to the unit). tests/tools/test_advisor.py checks the search against a brute force over the catalog.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional, Union

from components import cost, price_book, providers
from components.providers import regions as region_tables
from components.catalog import InstanceType, Price, load_catalog, regional_price
from components.providers.profile_records import ProviderProfile
from components.spec import MAX_NODES
from components.tiers import Tier, fit_rules, ram_shortfalls, tiers
from tools.advisor import perf as perfmod
from tools.advisor.request import Request, usable_providers

DISK_MAX_GB = 32000  # the smallest per-disk ceiling among the clouds' SSD classes
MIN_BATCH = 8  # below this BatchNorm statistics get noisy: the advisor will not go lower on its own


@dataclass(frozen=True)
class Offer:
    provider: str
    profile: ProviderProfile
    instance: InstanceType  # its price is the one of `region`
    tier: Optional[Tier]
    gpu: Optional[perfmod.GpuPerf]
    region: Optional[str] = None  # None: priced in no allowed region, none chosen

    @property
    def label(self) -> str:
        return f"{self.provider} {self.instance.name}" + (f" ({self.region})" if self.region else "")

    @property
    def stand_in(self) -> bool:
        """The GPU is accepted by its tier but is not one the guide names for it (e.g. L20 for entry)."""
        return self.tier is not None and self.instance.gpu not in self.tier.gpus


@dataclass(frozen=True)
class Rejection:
    offer: Offer
    constraint: str  # tier | performance | vcpu | ram | vram | nodes | deadline | budget | spot
    message: str
    billing: Optional[str] = None


@dataclass(frozen=True)
class Fit:
    """What holds for an offer whatever the node count: batch, memory, per-GPU and per-node rates."""
    batch: int
    batch_lowered: bool
    memory_needed_gb: float
    usable_gb: float
    per_gpu: float  # samples/s of one GPU
    node_cpu: float  # samples/s the node's CPUs can prepare
    ram_needed_gb: float
    max_nodes: int
    nodes_limit: str  # why max_nodes is what it is
    data_disk_gb: int


@dataclass(frozen=True)
class Evaluation:
    offer: Offer
    fit: Fit
    nodes: int
    billing: str
    scaling: perfmod.Scaling
    images_per_second: float
    gpu_images_per_second: float  # what the GPUs could take
    cpu_images_per_second: float  # what the CPUs can feed
    train_hours: float
    run: cost.RunCost

    @property
    def gpus(self) -> int:
        return self.nodes * self.offer.instance.gpu_count

    @property
    def hours(self) -> Optional[float]:
        return self.run.hours(self.billing)

    @property
    def cost(self) -> Optional[float]:
        return self.run.total(self.billing)

    @property
    def gpu_hours(self) -> Optional[float]:
        return self.run.gpu_hours(self.billing)

    @property
    def weighted_gpu_hours(self) -> Optional[float]:
        hours = self.gpu_hours
        if hours is None:
            return None
        return hours * (self.offer.profile.spot.discount if self.billing == "spot" else 1.0)

    @property
    def cpu_bound(self) -> bool:
        return self.cpu_images_per_second < self.gpu_images_per_second


@dataclass
class Result:
    request: Request
    ranked: list[Evaluation]
    rejections: list[Rejection]
    mode: str  # cost | gpu-hours
    notes: list[str] = field(default_factory=list)
    offers: list[Offer] = field(default_factory=list)  # what was searched (relaxations search it again)
    currency: Optional[str] = None  # the ranking currency in cost mode

    @property
    def feasible(self) -> bool:
        return bool(self.ranked)


# ---------------------------------------------------------------- offers

def offers(request: Request) -> tuple[list[Offer], list[str]]:
    """Every catalog row of the requested providers, each in its cheapest allowed region, with its tier and GPU
    figures; plus skip notes."""
    perf = perfmod.load()
    tier_table = tiers()
    notes = []
    usable = usable_providers()
    for name in providers.names():
        if name not in usable:
            notes.append(f"{name}: registered but has no catalog ({providers.catalog_path(name)}); skipped")
    result = []
    for name in request.providers:
        if name not in usable:
            continue
        profile = providers.profile(name)
        book = price_book.load(name)
        table = region_tables.load(name)
        allowed = request.regions.get(name)
        # Without --region: the regions a stack can name (the provider's region table; the spec refuses others).
        deployable = None if table is None else set(table.regions)
        for row in load_catalog(name).instances:
            tier = next((t for t in tier_table.values()
                         if row.gpu_count in t.gpu_counts and t.accepts(row.gpu)), None)
            region, price = _cheapest_region(row, allowed, book, deployable)
            result.append(Offer(name, profile, replace(row, price=price), tier, perf.gpus.get(row.gpu), region))
    return result, notes


def _cheapest_region(row: InstanceType, allowed: Optional[tuple[str, ...]], book: Optional[price_book.Book],
                     deployable: Optional[set[str]] = None) -> tuple[Optional[str], Price]:
    """The region (of `allowed`, else of those with a price that a stack may name) where the row is cheapest,
    and its price there; the first allowed region (or None) with an unknown price when no candidate has one."""
    listed = set(book.listed_regions(row.name)) if book else set()
    if row.price.known and row.price.region:
        listed.add(row.price.region)
    if deployable is not None:
        listed &= deployable
    candidates = list(allowed) if allowed else sorted(listed)
    priced = [(regional_price(row, region, book), region) for region in candidates]
    known = [(price, region) for price, region in priced if price.known]
    if known:
        price, region = min(known, key=lambda item: (item[0].on_demand_per_hour, item[1]))
        return region, price
    if allowed:
        return allowed[0], priced[0][0]
    return None, row.price


def tier_summary() -> str:
    return "; ".join(f"{t.name}: {'/'.join(map(str, t.gpu_counts))}x {', '.join(t.gpus + t.extra_gpus)}"
                     for t in tiers().values())


def data_disk_gb(request: Request, tier: Tier) -> int:
    # Room for the data set, a preprocessed copy's worth of headroom and local checkpoints (estimate).
    return min(DISK_MAX_GB, max(tier.data_disk_default_gb, math.ceil(request.dataset_gb_int * 1.5 + 50)))


def check_static(offer: Offer, request: Request) -> Union[Fit, Rejection]:
    """The checks that do not depend on the node count or billing, in the order a person would ask."""
    perf = perfmod.load()
    row, tier = offer.instance, offer.tier
    if tier is None:
        return Rejection(offer, "tier", f"{row.gpu_count}x {row.gpu} fits no tier")
    if offer.gpu is None or offer.gpu.images_per_second is None:
        return Rejection(offer, "performance", f"no training throughput figure for {row.gpu} in perf.yaml"
                         + (f" ({offer.gpu.basis})" if offer.gpu else ""))
    rules = fit_rules()
    low_vcpu, high_vcpu = rules.vcpus_per_gpu
    if not low_vcpu <= row.vcpus_per_gpu <= high_vcpu:
        return Rejection(offer, "vcpu", f"{row.vcpus} vCPU = {row.vcpus_per_gpu:g} per GPU, outside the guide's"
                         f" {low_vcpu}-{high_vcpu}")
    dataset = request.dataset_gb_int
    ram_needed = max(tier.memory_floor_gb, 2 * dataset)
    short = ram_shortfalls(tier, row.memory_gb, dataset)  # the validator's rule, nothing stricter
    if short:
        return Rejection(offer, "ram", f"{row.name}: {'; '.join(message for _, message in short)}")
    usable = perfmod.usable_gb(perf, row.gpu_memory_gb)
    model = request.model
    if request.batch is not None:
        batch, lowered = request.batch, False
        need = perfmod.memory_needed_gb(perf, model, batch, request.resolution)
        if need > usable:
            return Rejection(offer, "vram", f"batch {batch} per GPU needs ~{need:.1f} GB; each {row.gpu} offers"
                             f" {usable:.1f} of {row.gpu_memory_gb} GB")
    else:
        chosen = perfmod.default_batch(perf, model, row.gpu_memory_gb, request.resolution, MIN_BATCH)
        if chosen is None:
            need = perfmod.memory_needed_gb(perf, model, MIN_BATCH, request.resolution)
            return Rejection(offer, "vram", f"even batch {MIN_BATCH} per GPU needs ~{need:.1f} GB; each {row.gpu}"
                             f" offers {usable:.1f} of {row.gpu_memory_gb} GB")
        batch, lowered = chosen, chosen < model.default_batch
    per_gpu = perfmod.gpu_images_per_second(perf, model, offer.gpu, request.resolution, batch)
    assert per_gpu is not None
    if not tier.multi_node:
        max_nodes, why = 1, f"the {tier.name} tier is single-node"
    elif row.nvlink is False:
        max_nodes, why = 1, f"{row.name} has no NVLink (the spec refuses multi-node without it)"
    elif not row.network_gbps:
        max_nodes, why = 1, f"{row.name}'s network bandwidth is unknown"
    else:
        max_nodes, why = request.max_nodes, f"--max-nodes {request.max_nodes}"
    return Fit(batch=batch, batch_lowered=lowered, memory_needed_gb=perfmod.memory_needed_gb(
        perf, model, batch, request.resolution), usable_gb=usable, per_gpu=per_gpu,
        node_cpu=perfmod.node_cpu_images_per_second(perf, model, row, request.resolution),
        ram_needed_gb=ram_needed, max_nodes=max_nodes, nodes_limit=why, data_disk_gb=data_disk_gb(request, tier))


def ram_range(tier: Tier, dataset_gb: int) -> tuple[float, float]:
    """The RAM (GiB as the cloud lists it) a type of `tier` may have: the tier's range with the slack for
    the clouds' rounding, stretched up to dataRamMax x the data set where the data needs more."""
    rules = fit_rules()
    low, high = tier.memory_gb
    slack = rules.memory_range_slack
    return low * (1 - slack), max(high * (1 + slack), rules.data_ram_max * dataset_gb)


def spot_risk() -> cost.SpotRisk:
    perf = perfmod.load()
    lost = (perf.spot_restart_minutes + perf.spot_checkpoint_minutes / 2) / 60
    return cost.SpotRisk(perf.spot_interruptions_per_node_hour, lost, perf.spot_max_lost_fraction,
                         f"{perf.spot_interruptions_per_node_hour:g} reclaims per node-hour, {lost * 60:.1f} min lost"
                         " each; estimates in perf.yaml `spot`")


def evaluate(offer: Offer, fit: Fit, nodes: int, billing: str, request: Request) -> Optional[Evaluation]:
    """One configuration; None when the scaling model cannot judge it (unknown network rate)."""
    perf = perfmod.load()
    row = offer.instance
    assert offer.gpu is not None
    scale = perfmod.scaling(perf, request.model, offer.gpu, row, nodes, fit.per_gpu, fit.batch,
                            providers.profile(offer.provider).interconnect.rdma_enabled)
    if scale is None:
        return None
    gpu_rate = nodes * row.gpu_count * fit.per_gpu * scale.efficiency
    cpu_rate = nodes * fit.node_cpu
    rate = min(gpu_rate, cpu_rate)
    train_hours = request.samples / rate / 3600
    run = cost.training_run_cost(row, nodes, train_hours, perf.startup_minutes / 60,
                                 offer.profile.spot.discount, offer.profile.spot.discount_source, spot_risk())
    return Evaluation(offer, fit, nodes, billing, scale, rate, gpu_rate, cpu_rate, train_hours, run)


def meets_deadline(ev: Evaluation, request: Request) -> bool:
    return ev.hours is not None and ev.hours <= request.deadline_hours


def within_budget(ev: Evaluation, request: Request) -> bool:
    return request.budget is None or (ev.cost is not None and ev.cost <= request.budget)


def rank_currency(evaluations: list[Evaluation]) -> Optional[str]:
    """The currency most priced configurations are in (ties: alphabetical); None when none is priced."""
    counts: dict[str, int] = {}
    for ev in evaluations:
        if ev.cost is not None:
            counts[ev.run.currency] = counts.get(ev.run.currency, 0) + 1
    return min(counts, key=lambda c: (-counts[c], c)) if counts else None


def rank_mode(evaluations: list[Evaluation]) -> str:
    return "cost" if rank_currency(evaluations) is not None else "gpu-hours"


def unconfirmed(row: InstanceType) -> int:
    """How many of the facts the scaling model leans on the catalog leaves unconfirmed."""
    return (row.nvlink is None) + (row.nvswitch is None) + (row.rdma == "unknown")


def rank_key(ev: Evaluation, mode: str, currency: Optional[str] = None) -> tuple:
    # Ties go to the shorter run, fewer nodes, then the instance whose docs confirm more.
    tail = (ev.hours, ev.nodes, unconfirmed(ev.offer.instance), ev.offer.provider, ev.offer.instance.name,
            ev.offer.region or "", ev.billing)
    priced = mode == "cost" and ev.cost is not None and ev.run.currency == currency
    if priced:
        # The same cost to the currency unit is a tie: the guide's named GPU goes first.
        return (0, round(ev.cost), ev.offer.stand_in, ev.cost, ev.gpu_hours) + tail
    # No comparable price: GPU-hours of an L20 and a T4 say nothing about which costs less, so every
    # configuration that fits is an equal and the guide's named GPUs come first; GPU-hours order each group,
    # and among equal GPU-hours (1%) the slower GPU class (where the CPUs set the pace, it trains as fast).
    hours = ev.weighted_gpu_hours
    bucket = round(math.log(hours) / math.log(1.01)) if hours and hours > 0 else 0
    speed = ev.offer.gpu.images_per_second if ev.offer.gpu and ev.offer.gpu.images_per_second else 0.0
    return (1, ev.offer.stand_in, bucket, speed, hours) + tail


def _lower_bound_nodes(fit: Fit, offer: Offer, request: Request) -> Optional[int]:
    """Fewest nodes that could meet the deadline even with perfect scaling; None if start-up alone can't."""
    perf = perfmod.load()
    train_budget = request.deadline_hours - perf.startup_minutes / 60
    if train_budget <= 0:
        return None
    per_node = min(offer.instance.gpu_count * fit.per_gpu, fit.node_cpu)
    return max(1, math.ceil(request.samples / (train_budget * 3600 * per_node) - 1e-9))


def best_for(offer: Offer, fit: Fit, billing: str, request: Request) -> Union[Evaluation, Rejection]:
    """The cheapest node count for one offer and billing, or why there is none."""
    perf = perfmod.load()
    lowest = _lower_bound_nodes(fit, offer, request)
    if lowest is None:
        return Rejection(offer, "deadline", f"start-up alone takes {perf.startup_minutes:g} min", billing)
    if lowest > fit.max_nodes:
        where = f"at most {fit.max_nodes} node{'s' if fit.max_nodes > 1 else ''} ({fit.nodes_limit})"
        return Rejection(offer, "deadline", f"needs {lowest}+ nodes even with perfect scaling; {where}", billing)
    last = None
    for nodes in range(lowest, fit.max_nodes + 1):
        ev = evaluate(offer, fit, nodes, billing, request)
        if ev is None:
            break
        last = ev
        if billing == "spot" and ev.run.spot_hours is None:
            # Reclaims only grow with more nodes: no larger cluster is viable on spot either.
            return Rejection(offer, "spot", f"at {nodes} nodes reclaims would take"
                             f" {cost.spot_lost_fraction(nodes, spot_risk()):.0%} of the run", billing)
        if meets_deadline(ev, request):
            if not within_budget(ev, request):
                shown = "unknown" if ev.cost is None else f"{ev.cost:,.0f} {ev.run.currency}"
                return Rejection(offer, "budget", f"{nodes} node(s) meet the deadline for {shown}"
                                 + (" (no known price to check the budget against)" if ev.cost is None else ""),
                                 billing)
            return ev
    if last is None:
        return Rejection(offer, "deadline", f"multi-node needs a known network rate for {offer.instance.name}", billing)
    return Rejection(offer, "deadline", f"{last.nodes} node(s) ({fit.nodes_limit}) take {last.hours:.1f} h"
                     f" > {request.deadline_hours:g} h", billing)


def search(request: Request, offer_list: Optional[list[Offer]] = None) -> Result:
    if offer_list is None:
        offer_list, notes = offers(request)
    else:
        notes = []
    feasible: list[Evaluation] = []
    rejections: list[Rejection] = []
    for offer in offer_list:
        fit = check_static(offer, request)
        if isinstance(fit, Rejection):
            rejections.append(fit)
            continue
        for billing in request.billings:
            outcome = best_for(offer, fit, billing, request)
            (rejections if isinstance(outcome, Rejection) else feasible).append(outcome)
    mode, currency = rank_mode(feasible), rank_currency(feasible)
    feasible.sort(key=lambda ev: rank_key(ev, mode, currency))
    if mode == "cost":
        notes.extend(_caveated_prices(feasible))
    return Result(request, feasible, rejections, mode, notes, list(offer_list), currency)


def _caveated_prices(ranked: list[Evaluation]) -> list[str]:
    """A cost ranking that leans on a price the API left unverified (Baidu's unit, say) says so, once per
    provider: the order is only as good as that price."""
    said: dict[str, str] = {}
    for ev in ranked:
        caveat = ev.offer.instance.price.caveat
        if caveat and ev.offer.provider not in said:
            said[ev.offer.provider] = (f"ranked by cost with {ev.offer.provider} prices that carry a caveat ({caveat}):"
                                       " check them before trusting the order across clouds")
    return list(said.values())


# ---------------------------------------------------------------- infeasible requests

def every_configuration(request: Request, offer_list: list[Offer]) -> Iterator[Evaluation]:
    """Exhaustively: every offer x billing x node count that fits statically, deadline and budget aside.

    The reference the pruned search() is tested against (tests/tools/test_advisor.py, bench/advisor_search.py).
    """
    for offer in offer_list:
        fit = check_static(offer, request)
        if isinstance(fit, Rejection):
            continue
        for billing in request.billings:
            for nodes in range(1, fit.max_nodes + 1):
                ev = evaluate(offer, fit, nodes, billing, request)
                if ev is not None and ev.hours is not None:
                    yield ev


def fastest(request: Request, offer_list: list[Offer]) -> Optional[Evaluation]:
    """The quickest configuration ignoring deadline and budget (scans every node count)."""
    return min(every_configuration(request, offer_list), key=lambda ev: ev.hours, default=None)


def relaxations(result: Result) -> list[str]:
    """For a request nothing fits: which constraints failed, and what would admit a configuration."""
    request = result.request
    counts: dict[str, int] = {}
    for rejection in result.rejections:
        counts[rejection.constraint] = counts.get(rejection.constraint, 0) + 1
    hints = []
    if "deadline" in counts or "spot" in counts:
        quick = fastest(request, result.offers)
        if quick is not None:
            hints.append(f"deadline: the fastest configuration, {quick.nodes} x {quick.offer.label}"
                         f" ({quick.billing}), takes {quick.hours:.1f} h: a deadline of {math.ceil(quick.hours)} h"
                         " or more admits it (or train fewer epochs)")
            if request.max_nodes < MAX_NODES and quick.nodes == request.max_nodes:
                hints.append(f"nodes: the fastest configuration uses all {request.max_nodes} nodes allowed:"
                             " raising --max-nodes may help")
    if "budget" in counts:
        relaxed = search(replace(request, budget=None), result.offers)
        priced = [ev for ev in relaxed.ranked if ev.cost is not None]
        if priced:
            cheapest = min(priced, key=lambda ev: ev.cost)
            hints.append(f"budget: the cheapest configuration that meets the deadline costs"
                         f" {cheapest.cost:,.0f} {cheapest.run.currency} ({cheapest.nodes} x {cheapest.offer.label},"
                         f" {cheapest.billing}): a budget of {math.ceil(cheapest.cost):,} or more admits it")
        elif relaxed.ranked:
            hints.append("budget: configurations meet the deadline but none has a known price to check a budget"
                         " against: drop --budget, or fill prices with `gpu-training prices refresh --provider P`")
    if "vram" in counts and not result.ranked:
        perf = perfmod.load()
        largest = max((o.instance.gpu_memory_gb for o in result.offers if o.tier is not None), default=0)
        room = perfmod.max_batch(perf, request.model, largest, request.resolution)
        if room >= 1:
            hints.append(f"vram: the largest GPU ({largest} GB) holds a batch of {room} per GPU:"
                         f" --batch-size {room} or lower (gradient accumulation keeps the global batch)")
        else:
            hints.append(f"vram: the model does not fit the largest GPU ({largest} GB) even at batch 1:"
                         " a lower --resolution or a smaller model")
    if "ram" in counts:
        most = max((o.instance.memory_gb for o in result.offers if o.tier is not None), default=0)
        hints.append(f"ram: the largest node has {most:.0f} GB RAM; the rule RAM >= 2x data set admits up to"
                     f" {int(most // 2)} GB of data (--dataset-gb): use a subset, or compressed shards")
    others = sorted(set(usable_providers()) - set(request.providers))
    if others:
        hints.append(f"providers: also allow {', '.join(others)} (--provider)")
    summary = ", ".join(f"{name} {count}" for name, count in sorted(counts.items(), key=lambda kv: -kv[1]))
    return [f"failed constraints (offers rejected per constraint): {summary}"] + hints
