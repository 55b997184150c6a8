"""The one cost model, shared by the preview, the stack outputs, the node agent's config and the advisor.

Prices come from the catalog (dated, sourced, or unknown). Spot is estimated as a fraction of the
on-demand price (the provider's declared typical fraction), capped by the user's spot price cap.
Whatever is unknown stays None, with the reason in `basis`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from components.catalog import InstanceType


@dataclass(frozen=True)
class NodeHourPrice:
    currency: str
    on_demand: Optional[float]
    spot: Optional[float]
    basis: str


@dataclass(frozen=True)
class ClusterCost:
    currency: str
    nodes: int
    on_demand_per_hour: Optional[float]
    spot_per_hour: Optional[float]
    effective_per_hour: Optional[float]  # what this stack pays per hour with its billing
    basis: str

    def as_dict(self) -> dict:
        return {"currency": self.currency, "onDemandPerHour": self.on_demand_per_hour,
                "spotPerHour": self.spot_per_hour, "effectivePerHour": self.effective_per_hour,
                "basis": self.basis}


def node_hour_price(instance: InstanceType, spot_fraction: float, spot_source: str,
                    spot_cap: Optional[float] = None) -> NodeHourPrice:
    price = instance.price
    if not price.known:
        return NodeHourPrice(price.currency, None, None,
                             f"unknown: no dated on-demand price for {instance.name} in the catalog"
                             " (scripts/prices.py refresh fills it)")
    on_demand = float(price.on_demand_per_hour)
    spot = on_demand * spot_fraction
    basis = (f"on-demand {on_demand:g} {price.currency}/h ({price.region}, {price.date}, {price.source});"
             f" spot estimated at {spot_fraction:.0%} of on-demand ({spot_source})")
    if spot_cap is not None and spot_cap < spot:
        spot = spot_cap
        basis += f"; capped at spotMaxPricePerHour {spot_cap:g}"
    return NodeHourPrice(price.currency, on_demand, round(spot, 4), basis)


def cluster_cost(instance: InstanceType, nodes: int, billing: str, spot_fraction: float, spot_source: str,
                 spot_cap: Optional[float] = None) -> ClusterCost:
    unit = node_hour_price(instance, spot_fraction, spot_source, spot_cap)

    def times(value: Optional[float]) -> Optional[float]:
        return None if value is None else round(value * nodes, 4)

    on_demand, spot = times(unit.on_demand), times(unit.spot)
    effective = spot if billing == "spot" else on_demand
    return ClusterCost(unit.currency, nodes, on_demand, spot, effective, unit.basis)


def run_cost(hourly: Optional[float], hours: float) -> Optional[float]:
    return None if hourly is None else round(hourly * hours, 2)


def spec_cost(spec) -> ClusterCost:
    """The hourly cost of a validated Spec (components.spec.Spec)."""
    return cluster_cost(spec.instance, spec.nodes, spec.billing, spec.profile.spot_discount,
                        spec.profile.spot_discount_source, spec.spot_max_price)
