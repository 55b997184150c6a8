"""What a run has cost so far: the one place `gpu-training status` and run.py's watch and summary get it.

Each node that has ended counts its own figure from its marker (the agent's effective rate times its own
hours, so a node that released itself early stops counting); a node still running counts the stack's
costPerHour share since its marker's startedAt; a node that has not reported yet (booting) counts from the
stack's update, when the caller knows it. The price behind the rate (its date and source, or why it is unknown
and the command that fills it) comes with the figure, from the costPerHour output the preview also shows.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping, Optional

from .markers import FINAL_STATES, Marker, parse_time


@dataclass(frozen=True)
class CostRate:
    """The stack's cost per hour (all nodes) from its ``costPerHour`` output; None = unknown."""
    currency: Optional[str]
    effective: Optional[float]
    basis: Optional[str] = None  # the price behind it: date and source, or why it is unknown

    @classmethod
    def from_output(cls, value) -> "CostRate":
        value = value if isinstance(value, Mapping) else {}
        # "effective" is how stacks deployed before 2026-12-03 spelled it.
        rate = value.get("effectivePerHour", value.get("effective"))
        basis = value.get("basis")
        return cls(value.get("currency"), float(rate) if isinstance(rate, (int, float)) else None,
                   basis if isinstance(basis, str) else None)


def cost_so_far(outputs: Mapping, markers: list[Marker], now: float, started: Optional[float] = None) -> dict:
    """{amount, currency, basis, price}: amount None when no price is known (basis and price say why)."""
    rate = CostRate.from_output(outputs.get("costPerHour"))
    nodes = max(1, int(outputs.get("nodeCount") or 1))
    amount, currency, parts = 0.0, rate.currency, []

    def unknown(why: str) -> dict:
        return {"amount": None, "currency": currency, "basis": why, "price": rate.basis}

    for m in markers:
        spent = m.body.get("estimatedCost")
        if m.state in FINAL_STATES and isinstance(spent, (int, float)):
            amount += float(spent)
            currency = currency or m.body.get("currency")
            parts.append(f"{m.node}: {spent:g} (its marker)")
            continue
        began = parse_time(m.body.get("startedAt"))
        if rate.effective is None or began is None:
            return unknown(rate.basis or "no price known for this stack")
        amount += rate.effective / nodes * max(0.0, now - began.timestamp()) / 3600
        parts.append(f"{m.node}: running since {began.isoformat()}")
    silent = nodes - len({m.node for m in markers})
    if silent > 0 and started is not None:
        if rate.effective is None:
            return unknown(rate.basis or "no price known for this stack")
        amount += rate.effective / nodes * silent * max(0.0, now - started) / 3600
        since = datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds")
        parts.append(f"{silent} node(s) not reported yet: billing since the stack's update at {since}")
    if not parts:
        return unknown("no node has reported yet")
    return {"amount": round(amount, 4), "currency": currency, "basis": "; ".join(parts), "price": rate.basis}


def money_text(cost: Mapping) -> str:
    """`12.34 CNY`, or `unknown`."""
    if cost.get("amount") is None:
        return "unknown"
    return f"{cost['amount']:.2f} {cost.get('currency') or ''}".rstrip()
