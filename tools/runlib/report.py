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
# Reports further apart than this belong to different runs (a spot replacement starts within minutes).
RUN_GAP_S = 3600


@dataclass
class NodeReport:
    node: str
    summary: dict
    rows: list = field(default_factory=list)          # utilisation.csv
    loader_rows: list = field(default_factory=list)   # loader.csv (the trainer's own figures)

    @property
    def diagnosis(self) -> dict:
        return self.summary.get("diagnosis") or diagnosis.diagnose(self.summary)

    @property
    def span(self) -> tuple[Optional[float], Optional[float]]:
        """(first, last) sample time, from the samples or the summary."""
        if self.rows:
            return float(self.rows[0]["time"]), float(self.rows[-1]["time"])
        return self.summary.get("firstSample"), self.summary.get("lastSample")


class ReportError(Exception):
    """No report could be read: the message says where we looked."""


def load(folder: Path, nodes: Optional[list[str]] = None) -> list[NodeReport]:
    """Every <folder>/<node>/ (of `nodes`, when given) that holds a summary.json or utilisation.csv, by name."""
    reports = []
    for node_dir in sorted(p for p in Path(folder).iterdir() if p.is_dir()) if Path(folder).is_dir() else []:
        if nodes is not None and node_dir.name not in nodes:
            continue
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
        raise ReportError(f"no node reports in {folder} (a folder per node: {folder}/<node>/summary.json or"
                          " utilisation.csv)")
    return reports


def latest_run(reports: list[NodeReport], gap_s: float = RUN_GAP_S) -> tuple[list[NodeReport], list[NodeReport]]:
    """(the newest run's reports, the earlier ones): reports are kept in the bucket across runs of a stack.

    A run is the newest report and every report whose samples reach within gap_s of the run's earliest
    (a preempted node and its replacement, the nodes of one multi-node job); a report without sample
    times belongs to no run and is left out with the earlier ones.
    """
    timed = sorted((r for r in reports if r.span[0] is not None), key=lambda r: r.span[0])
    if not timed:
        return reports, []
    run, start = [timed[-1]], timed[-1].span[0]
    for report in reversed(timed[:-1]):
        if (report.span[1] or report.span[0]) < start - gap_s:
            break
        run.append(report)
        start = min(start, report.span[0])
    chosen = {r.node for r in run}
    return [r for r in reports if r.node in chosen], [r for r in reports if r.node not in chosen]


def run_summary(reports: list[NodeReport]) -> dict:
    """The whole run's means over every node's samples, and its diagnosis with the first node's facts."""
    rows = [dict(r, gpu=f"{n.node}/{r['gpu']}" if r["gpu"] else "") for n in reports for r in n.rows]
    loader_rows = sorted((r for n in reports for r in n.loader_rows), key=lambda r: float(r["time"]))
    rows.sort(key=lambda r: float(r["time"]))
    summary = monitor.summarise(rows, loader_rows)
    if not rows:  # summaries without their samples: the nodes' own means, averaged
        for k in ("gpuUtilMean", "gpuMemUsedPercent", "cpuBusyMean", "iowaitMean", "dataWaitMean",
                  "imagesPerSecondMean"):
            summary[k] = monitor.mean(n.summary.get(k) for n in reports)
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
                  (d["kind"] if d["kind"] in ("ok", "unknown") else f"under {diagnosis.UTIL_LINE}%: {d['kind']}")
                  + (" (simulated)" if d.get("simulated") else ""))

    for n in reports:
        row(n.node, n.summary, n.diagnosis)
    if len(reports) > 1:
        row(f"run ({nodes_text(reports, run)})", run, run["diagnosis"])
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
    heading = plot.title(stack, nodes_text(reports, run), facts.get("instanceType"),
                         f"{facts.get('gpus') or '?'}x {facts.get('model') or 'GPU'} each"
                         + (", SIMULATED" if facts.get("simulated") else ""),
                         run.get("firstSample"), run.get("lastSample"))
    plot.draw(str(path), heading, diagnosis.caption(run["diagnosis"]), util, memory, host)
    return path


def nodes_text(reports: list[NodeReport], run: dict) -> str:
    """'1 node, replaced once' for a preempted node and its replacement: the stack's node count (from the
    nodes' own config), and how many machines beyond it reported."""
    slots = (run.get("context") or {}).get("nodeCount")
    slots = int(slots) if isinstance(slots, (int, float)) and slots >= 1 else len(reports)
    extra = len(reports) - slots
    text = f"{slots} node{'s' if slots != 1 else ''}"
    if extra > 0:
        text += f", replaced {'once' if extra == 1 else f'{extra} times'}"
    return text


def advice_lines(run: dict) -> list[str]:
    d = run["diagnosis"]
    return [d["headline"], d["evidence"], *(f"fix: {a}" for a in d["advice"])]


@dataclass
class RunReport:
    nodes: list[NodeReport]
    run: dict
    plot: Optional[Path]
    earlier: list[NodeReport] = field(default_factory=list)  # other runs' reports, left out
    plot_error: Optional[str] = None


def report_folder(folder: Path, stack: str, nodes: Optional[list[str]] = None,
                  every_run: bool = False) -> RunReport:
    """Load, summarise and plot a downloaded report folder: the given nodes, else the newest run's."""
    reports, earlier = load(folder, nodes), []
    if nodes is None and not every_run:
        reports, earlier = latest_run(reports)
    run = run_summary(reports)
    result = RunReport(reports, run, None, earlier)
    try:
        result.plot = draw(reports, run, Path(folder) / COMBINED_PLOT, stack)
    except ImportError:
        result.plot_error = "matplotlib is not installed: no plot"
    except Exception as exc:  # the table and the advice stand without the picture
        result.plot_error = f"no plot: {type(exc).__name__}: {exc}"
    return result


def render(console, result: RunReport, stack: str) -> None:
    """The table, the run's diagnosis with its advice, and where the plot is (scripts/report.py, run.py)."""
    console.print(table(result.nodes, result.run, f"stack {stack}: utilisation by node"))
    for line in advice_lines(result.run):
        console.print(line, highlight=False)
    if result.earlier:
        console.print(f"left out: {len(result.earlier)} report(s) of earlier runs "
                      f"({', '.join(r.node for r in result.earlier)}; report.py --all includes them)", highlight=False)
    console.print(f"plot: {result.plot}" if result.plot else result.plot_error, highlight=False)
