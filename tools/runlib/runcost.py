"""What a finished (or running) run cost, for `gpu-training report`: each node's hours times the stack's prices.

A node's hours come from its marker (the agent's startedAt to endedAt, or to now while it runs: what it billed
while the agent ran), else from its report's utilisation samples (first to last: a lower bound, since boot and
the final upload are not sampled), and say which. The prices are the stack file's, through components/cost.py
run_cost: the same functions the preview and `status` use (node-hour price, data disks, shared file system).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping, Optional

from components import cost

from .markers import Marker, parse_marker, parse_time

MARKERS_FILE = "markers.json"  # scripts/report.py saves the run's markers beside the node folders


def node_hours(nodes: Iterable[str], markers: Mapping[str, Marker], spans: Mapping[str, tuple], now: float
               ) -> tuple[dict[str, float], dict[str, str]]:
    """({node: hours}, {node: where the hours come from}) for the run's nodes."""
    hours, how = {}, {}
    for node in nodes:
        marker = markers.get(node)
        began = parse_time(marker.body.get("startedAt")) if marker else None
        if began is not None:
            ended = parse_time(marker.body.get("endedAt"))
            end = ended.timestamp() if ended is not None else now
            hours[node] = max(0.0, end - began.timestamp()) / 3600
            how[node] = "its marker, startedAt to " + ("endedAt" if ended is not None else "now (still running)")
            continue
        first, last = spans.get(node, (None, None))
        if first is not None and last is not None:
            hours[node] = max(0.0, float(last) - float(first)) / 3600
            how[node] = "its utilisation samples, first to last (a lower bound: boot and upload are not sampled)"
    return hours, how


def shared_hours(markers: Mapping[str, Marker], hours: Mapping[str, float], now: float) -> Optional[float]:
    """The shared file system billed at least from the first node's start to the last node's end."""
    times = []
    for marker in markers.values():
        began, ended = parse_time(marker.body.get("startedAt")), parse_time(marker.body.get("endedAt"))
        if began is not None:
            times.append((began.timestamp(), ended.timestamp() if ended is not None else now))
    if times:
        return max(0.0, max(end for _, end in times) - min(start for start, _ in times)) / 3600
    return max(hours.values()) if hours else None


def save_markers(markers: Iterable[Marker], folder: Path) -> Optional[Path]:
    """The markers as one JSON list in the report folder, so `report --dir` prices the run offline; nothing when
    no report was downloaded (no folder: the report says so itself)."""
    path = Path(folder) / MARKERS_FILE
    if not path.parent.is_dir():
        return None
    path.write_text(json.dumps([{"key": m.key, "body": m.body} for m in markers], indent=1))
    return path


def load_markers(folder: Path) -> dict[str, Marker]:
    """{node: marker} from a report folder's markers.json; {} when there is none."""
    path = Path(folder) / MARKERS_FILE
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    found = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("key"), str):
            marker = parse_marker(row["key"], "", json.dumps(row.get("body") or {}).encode())
            found[marker.node] = marker
    return found


def run_cost(spec, nodes: Iterable[str], markers: Mapping[str, Marker], spans: Mapping[str, tuple],
             now: float) -> dict:
    """The run's cost document: per node and storage item, the totals per currency, and where the hours came from."""
    hours, how = node_hours(nodes, markers, spans, now)
    from components import targets

    items = cost.run_cost(spec, hours, shared_hours(markers, hours, now), targets.of(spec).data_disks)
    return {"items": [item.as_dict() for item in items], "totals": cost.totals(items), "hoursFrom": how,
            "billing": spec.billing, "unpricedNodes": sorted(set(nodes) - set(hours))}


def lines(document: Mapping) -> list[str]:
    """The cost section of the report, as text lines."""
    out = [f"cost of the run ({document['billing']}):"]
    # Each node's basis repeats the same price text (source, date, spot range): said once, as a numbered note.
    notes: dict[str, int] = {}
    for item in document["items"]:
        if item["amount"] is not None:
            figure = f"{item['amount']:,.2f} {item['currency']}"
        elif item.get("range"):
            low, high = item["range"]
            figure = (f"up to {high:,.2f}" if low == 0 else f"{low:,.2f}-{high:,.2f}") + f" {item['currency']}"
        else:
            figure = "unknown"
        head, _, rest = item["basis"].partition(" (")
        number = notes.setdefault("(" + rest, len(notes) + 1) if rest else None
        out.append(f"  {item['what']}: {figure}  [{head}" + (f" [{number}]]" if number else "]"))
    for currency, total in document["totals"].items():
        figure = (f"{total['amount']:,.2f}" if total["high"] == total["amount"]
                  else f"{total['amount']:,.2f}-{total['high']:,.2f}") + f" {currency}"
        unknown = f" + {total['unknown']} part(s) unknown (above)" if total["unknown"] else ""
        out.append(f"  total: {figure}{unknown}")
    out += [f"  [{number}] {text}" for text, number in notes.items()]
    for node, source in document["hoursFrom"].items():
        out.append(f"  hours of {node}: from {source}")
    for node in document["unpricedNodes"]:
        out.append(f"  {node}: no marker and no samples: its hours are unknown and it is not counted")
    return out
