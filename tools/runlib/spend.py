"""What a run has cost so far: the one place `gpu-training status` and run.py's watch and summary get it.

Each node that has ended counts its own figure from its marker (the agent's effective rate times its own
hours, so a node that released itself early stops counting); a node still running counts the stack's
costPerHour share since its marker's startedAt; a node that has not reported yet (booting) counts from the
stack's update, when the caller knows it. The price behind the rate (its date and source, or why it is unknown
and the command that fills it) comes with the figure, from the costPerHour output the preview also shows. Storage
counts too (costPerHour.storage, components/cost.py storage_output): the data disks for the nodes' hours and the
shared file system since the stack's update; a part whose price is unknown is listed, not guessed.
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


@dataclass(frozen=True)
class StorageRate:
    """What the stack's storage costs per hour from its ``costPerHour.storage`` output (cost.storage_output): the
    data disks of all nodes (they go with the nodes) and the shared file system (it bills until destroyed)."""
    disks: Optional[float]
    disks_currency: Optional[str]
    disks_basis: Optional[str]
    shared: Optional[float]
    shared_currency: Optional[str]
    shared_basis: Optional[str]
    has_disks: bool
    has_shared: bool

    @classmethod
    def from_output(cls, value) -> "StorageRate":
        storage = (value if isinstance(value, Mapping) else {}).get("storage")
        storage = storage if isinstance(storage, Mapping) else {}
        disks, shared = storage.get("dataDisks"), storage.get("sharedStorage")
        disks = disks if isinstance(disks, Mapping) else None
        shared = shared if isinstance(shared, Mapping) else None

        def number(part):
            rate = (part or {}).get("perHour")
            return float(rate) if isinstance(rate, (int, float)) else None

        return cls(number(disks), (disks or {}).get("currency"), (disks or {}).get("basis"), number(shared),
                   (shared or {}).get("currency"), (shared or {}).get("basis"), disks is not None, shared is not None)


def cost_so_far(outputs: Mapping, markers: list[Marker], now: float, started: Optional[float] = None) -> dict:
    """{amount, currency, basis, price, storage}: amount None when no price is known (basis and price say why).

    `amount` is the nodes' cost plus, in the same currency, their data disks' (for the same hours) and the shared
    file system's (since the stack's update, `started`, else since the first node started: a lower bound). Storage
    whose price is unknown, or in another currency, is not added: `storage` lists each part and what it is."""
    rate = CostRate.from_output(outputs.get("costPerHour"))
    storage = StorageRate.from_output(outputs.get("costPerHour"))
    nodes = max(1, int(outputs.get("nodeCount") or 1))
    amount, currency, parts, node_hours = 0.0, rate.currency, [], 0.0

    def unknown(why: str) -> dict:
        return {"amount": None, "currency": currency, "basis": why, "price": rate.basis, "storage": []}

    for m in markers:
        spent = m.body.get("estimatedCost")
        if m.state in FINAL_STATES and isinstance(spent, (int, float)):
            amount += float(spent)
            currency = currency or m.body.get("currency")
            seconds = m.body.get("durationSeconds")
            node_hours += float(seconds) / 3600 if isinstance(seconds, (int, float)) else 0.0
            parts.append(f"{m.node}: {spent:g} (its marker)")
            continue
        began = parse_time(m.body.get("startedAt"))
        if rate.effective is None or began is None:
            return unknown(rate.basis or "no price known for this stack")
        hours = max(0.0, now - began.timestamp()) / 3600
        amount += rate.effective / nodes * hours
        node_hours += hours
        parts.append(f"{m.node}: running since {began.isoformat()}")
    silent = nodes - len({m.node for m in markers})
    if silent > 0 and started is not None:
        if rate.effective is None:
            return unknown(rate.basis or "no price known for this stack")
        hours = max(0.0, now - started) / 3600
        amount += rate.effective / nodes * silent * hours
        node_hours += silent * hours
        since = datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds")
        parts.append(f"{silent} node(s) not reported yet: billing since the stack's update at {since}")
    if not parts:
        return unknown("no node has reported yet")
    extra = _storage_parts(storage, node_hours / nodes, nodes, _shared_hours(markers, now, started))
    for part in extra:
        if part["amount"] is not None and part["currency"] == currency:
            amount += part["amount"]
            part["added"] = True
    return {"amount": round(amount, 4), "currency": currency, "basis": "; ".join(parts), "price": rate.basis,
            "storage": extra}


def _shared_hours(markers: list[Marker], now: float, started: Optional[float]) -> tuple[Optional[float], str]:
    """How long the shared file system has billed: since the stack's update, else since the first node started."""
    if started is not None:
        return max(0.0, now - started) / 3600, "since the stack's update"
    begun = [t.timestamp() for t in (parse_time(m.body.get("startedAt")) for m in markers) if t is not None]
    if not begun:
        return None, ""
    return max(0.0, now - min(begun)) / 3600, "since the first node started (it was created before: at least this)"


def _storage_parts(storage: StorageRate, per_node_hours: float, nodes: int,
                   shared: tuple[Optional[float], str]) -> list[dict]:
    """The data disks for the nodes' hours and the shared file system for its hours, each priced or unknown."""
    out = []
    if storage.has_disks:
        hours = per_node_hours * nodes
        out.append({"what": f"data disks, {hours:.2f} disk-hours (they go with the nodes)",
                    "amount": None if storage.disks is None else round(storage.disks / nodes * hours, 4),
                    "currency": storage.disks_currency, "basis": storage.disks_basis, "added": False})
    shared_hours, since = shared
    if storage.has_shared and shared_hours is not None:
        out.append({"what": f"shared file system, {shared_hours:.2f} h {since}",
                    "amount": None if storage.shared is None else round(storage.shared * shared_hours, 4),
                    "currency": storage.shared_currency, "basis": storage.shared_basis, "added": False})
    return out


def money_text(cost: Mapping) -> str:
    """`12.34 CNY`, `12.34 CNY + 0.56 USD` (storage priced in another currency: never converted), or `unknown`."""
    if cost.get("amount") is None:
        return "unknown"
    text = f"{cost['amount']:.2f} {cost.get('currency') or ''}".rstrip()
    for part in cost.get("storage") or []:
        if part.get("amount") is not None and not part.get("added"):
            text += f" + {part['amount']:.2f} {part.get('currency') or ''}".rstrip()
    return text
