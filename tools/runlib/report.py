"""A run's report from every node's files: one table and one combined plot.

Each node's agent uploads report/<node>/{summary.json, utilisation.csv, loader.csv, utilisation.png}
when it ends (node_agent/monitor.py). This reads a folder of those (as StackBucket.download_report
writes it), puts every node in one table with its diagnosis, applies the same diagnosis to the
whole run (all nodes' samples together) and draws one plot of every node. scripts/report.py and
run.py's report phase use it; the numbers and the advice are the node's own (node_agent/diagnosis.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from rich.table import Table

from node_agent import diagnosis, monitor, plot

COMBINED_PLOT = "run-utilisation.png"


@dataclass
class NodeReport:
    node: str
    summary: dict
    rows: list = field(default_factory=list)          # utilisation.csv
    loader_rows: list = field(default_factory=list)   # loader.csv (the trainer's own figures)

    @property
    def diagnosis(self) -> dict:
        return self.summary.get("diagnosis") or diagnosis.diagnose(self.summary)


class ReportError(Exception):
    """No report could be read: the message says where we looked."""


def load(folder: Path) -> list[NodeReport]:
    """Every <folder>/<node>/ that holds a summary.json or utilisation.csv, by node name."""
    reports = []
    for node_dir in sorted(p for p in Path(folder).iterdir() if p.is_dir()) if Path(folder).is_dir() else []:
        rows = monitor.read_csv(node_dir / "utilisation.csv", monitor.COLS)
        loader_rows = monitor.read_csv(node_dir / "loader.csv", monitor.LOADER_COLS)
        try:
            summary = json.loads((node_dir / "summary.json").read_text())
            summary = summary if isinstance(summary, dict) else {}
        except (OSError, ValueError):
            summary = {}
        if not summary and not rows:
            continue
        if not summary:  # a node that ended before writing its summary: recompute it from the samples
            summary = monitor.summarise(rows, loader_rows)
            summary["diagnosis"] = diagnosis.diagnose(summary)
        reports.append(NodeReport(node_dir.name, summary, rows, loader_rows))
    if not reports:
        raise ReportError(f"no node reports in {folder} (report/<node>/summary.json or utilisation.csv)")
    return reports


def run_summary(reports: list[NodeReport]) -> dict:
    """The whole run's means over every node's samples, and its diagnosis with the first node's facts."""
    rows = [dict(r, gpu=f"{n.node}/{r['gpu']}" if r["gpu"] else "") for n in reports for r in n.rows]
    loader_rows = [r for n in reports for r in n.loader_rows]
    rows.sort(key=lambda r: float(r["time"]))
    summary = monitor.summarise(rows, loader_rows)
    facts = next((n.summary["context"] for n in reports if isinstance(n.summary.get("context"), dict)), {})
    summary["context"] = facts
    summary["diagnosis"] = diagnosis.diagnose(summary, {**facts, "workers": summary["workers"]})
    summary["nodes"] = len(reports)
    return summary


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.0f}%"


def table(reports: list[NodeReport], run: dict, title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for column in ("node", "GPU util", "GPU mem", "CPU busy", "I/O wait", "data wait", "img/s", "diagnosis"):
        t.add_column(column, justify="left" if column in ("node", "diagnosis") else "right")

    def row(name, s, d):
        ips = s.get("imagesPerSecondMean")
        t.add_row(name, _pct(s.get("gpuUtilMean")), _pct(s.get("gpuMemUsedPercent")), _pct(s.get("cpuBusyMean")),
                  _pct(s.get("iowaitMean")), _pct(s.get("dataWaitMean")), "n/a" if ips is None else f"{ips:,.0f}",
                  d["kind"] if d["kind"] in ("ok", "unknown") else f"under {diagnosis.UTIL_LINE}%: {d['kind']}")

    for n in reports:
        row(n.node, n.summary, n.diagnosis)
    if len(reports) > 1:
        row(f"run ({len(reports)} nodes)", run, run["diagnosis"])
    return t


def draw(reports: list[NodeReport], run: dict, path: Path, stack: str) -> Path:
    """The combined plot: each node's mean accelerator utilisation and memory, CPU busy per node."""
    firsts = [float(r["time"]) for n in reports for r in n.rows[:1]]
    t0 = min(firsts) if firsts else 0.0
    util, memory, host = [], [], []
    for n in reports:
        per_time: dict[str, list[dict]] = {}
        for r in n.rows:
            per_time.setdefault(r["time"], []).append(r)
        merged = [{"time": t, "node": n.node,
                   "util": monitor.mean(x["util"] for x in rs),
                   "mem": monitor.mean(monitor.percent(x["memUsedMiB"], x["memTotalMiB"]) for x in rs),
                   "cpu": monitor.num(rs[0]["cpuBusy"])} for t, rs in per_time.items()]
        gpus = len({r["gpu"] for r in n.rows} - {""})
        label = f"{n.node} (mean of {gpus})" if gpus > 1 else n.node
        util += monitor.series(merged, "node", lambda _, label=label: label, t0, lambda r: r["util"])
        memory += monitor.series(merged, "node", lambda _, label=label: label, t0, lambda r: r["mem"])
        host += monitor.series(merged, "node", lambda node: f"CPU busy {node}", t0, lambda r: r["cpu"])
    facts = run.get("context") or {}
    heading = plot.title(stack, f"{len(reports)} node{'s' if len(reports) != 1 else ''}", facts.get("instanceType"),
                         f"{facts.get('gpus') or '?'}x {facts.get('model') or 'GPU'} each",
                         run.get("firstSample"), run.get("lastSample"))
    plot.draw(str(path), heading, diagnosis.caption(run["diagnosis"]), util, memory, host)
    return path


def advice_lines(run: dict) -> list[str]:
    d = run["diagnosis"]
    return [d["headline"], d["evidence"], *(f"fix: {a}" for a in d["advice"])]


def report_folder(folder: Path, stack: str, plot_path: Optional[Path] = None) -> tuple[list[NodeReport], dict, Optional[Path]]:
    """Load, summarise and plot a downloaded report folder; (reports, run summary, plot path or None)."""
    reports = load(folder)
    run = run_summary(reports)
    try:
        drawn = draw(reports, run, plot_path or Path(folder) / COMBINED_PLOT, stack)
    except ImportError:
        drawn = None
    return reports, run, drawn
