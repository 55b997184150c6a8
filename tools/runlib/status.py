"""What `gpu-training status STACK` shows: each node's marker, the newest checkpoint's step, the TTL,
what keeps billing and the cost so far. Reads the bucket and the stack outputs only (no SSH); a platform job's
state comes from its job API instead of markers (the stack's run style, tools/runlib/targets.py).

The outputs are the Pulumi stack's (Automation API), the stack file's offline equivalent when no
Pulumi backend is at hand, or a kept rehearsal's record (localbucket.py): the same keys each time.
Cost so far: spend.cost_so_far (each ended node's own figure from its marker, the stack's costPerHour share
for nodes still running), with the price it rests on.
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Mapping, Optional

from .markers import assess, current, parse_time
from .spend import cost_so_far, money_text
from .targets import for_outputs
from .watch import clock_text


def step_of(manifest: Mapping) -> Optional[int]:
    """The training step of a snapshot: the largest number in its file names (ckpt-000300.pt, step_300/...),
    as the rehearsal reads it; None when no name has one."""
    steps = [int(n) for name in (manifest.get("files") or {}) for n in re.findall(r"(\d+)", str(name))]
    return max(steps) if steps else None


def snapshot_time(snapshot_id: str) -> Optional[datetime]:
    """Snapshot ids start with their UTC time (node_agent/store.py): 20261204T143000.123456789Z-<node>."""
    m = re.match(r"(\d{8}T\d{6})", snapshot_id or "")
    return datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc) if m else None


def gather(bucket, outputs: Mapping, stack: str, baseline: Optional[Mapping] = None,
           since: Optional[datetime] = None, every_run: bool = False, now: Optional[float] = None) -> dict:
    """The status document (what --json prints; render() draws it)."""
    now = time.time() if now is None else now
    run = for_outputs(outputs)
    every = bucket.markers() if run.markers else []
    chosen = every if every_run or (baseline is None and since is None) else current(every, baseline, since)
    node_count = int(outputs.get("nodeCount") or 1)
    verdict = assess(chosen, node_count)
    snapshot = bucket.newest_snapshot()
    logs = {node for node, _ in bucket.log_segments()} if run.markers else set()
    expires = parse_time(outputs.get("expiresAt"))
    nodes = []
    for m in sorted(chosen, key=lambda m: m.body.get("updatedAt") or "", reverse=True):
        updated = m.updated_at
        nodes.append({"node": m.node, "state": m.state, "reason": m.reason, "exitCode": m.body.get("exitCode"),
                      "updatedAt": m.body.get("updatedAt"),
                      "updatedAgoSeconds": round(now - updated.timestamp(), 1) if updated else None,
                      "lastCheckpoint": m.body.get("lastCheckpoint"), "gpuUtil": m.gpu_util,
                      "estimatedCost": m.body.get("estimatedCost"), "currency": m.body.get("currency"),
                      "setup": m.body.get("setup"), "log": m.node in logs})
    job = run.job_state(outputs)
    listed = outputs.get("instanceIds")
    for node in listed if isinstance(listed, list) else []:
        if isinstance(node, str) and node not in {n["node"] for n in nodes}:
            nodes.append({"node": node, "state": "NO_MARKER", "reason": "booting, or its agent has not written yet",
                          "log": node in logs})
    return {
        "stack": stack, "source": bucket.url, "simulated": bool(outputs.get("simulated")),
        "target": run.target.kind, "markers": run.markers,
        "state": verdict.state if job is None else str(job.get("state") or "unknown").upper(),
        "dataSaved": verdict.data_saved, "nodeCount": node_count,
        "nodes": nodes, "earlierRunsLeftOut": len(every) - len(chosen),
        "checkpoint": None if snapshot is None else {
            "id": snapshot.get("id"), "node": snapshot.get("node"), "step": step_of(snapshot),
            "at": (t.isoformat() if (t := snapshot_time(str(snapshot.get("id")))) else None)},
        "expiresAt": outputs.get("expiresAt"),
        "ttlSeconds": None if expires is None else round(expires.timestamp() - now),
        "keepsBilling": [k for k in outputs.get("keepsBilling") or [] if isinstance(k, Mapping)],
        "costSoFar": cost_so_far(outputs, chosen, now),
        "job": job,
        "noSuccessor": _no_successor(verdict, chosen, now),
    }


def _no_successor(verdict, markers, now: float) -> Optional[dict]:
    """A node preempted and none running in its place: how long since, and the preempted nodes. A spot
    pool that finds no stock in its zones starts no replacement; the cloud's pool history says why."""
    if verdict.state != "PREEMPTED":
        return None
    preempted = [m for m in markers if m.state == "PREEMPTED"]
    times = [m.updated_at.timestamp() for m in preempted if m.updated_at]
    return {"nodes": [m.node for m in preempted], "sinceSeconds": round(now - max(times), 1) if times else None}


def ttl_text(seconds: Optional[float]) -> str:
    if seconds is None:
        return "unknown (no expiresAt output)"
    return f"{clock_text(seconds)} left" if seconds > 0 else f"expired {clock_text(-seconds)} ago"


def setup_text(setup: Optional[Mapping]) -> str:
    """The node's install of train.setup / train.requirements (node_agent/setup.py): its time and source."""
    if not isinstance(setup, Mapping):
        return ""
    if setup.get("failed"):
        return "failed"
    if setup.get("running"):
        return f"installing since {str(setup.get('since') or '?')[11:19]} UTC"
    seconds = setup.get("seconds")
    if not isinstance(seconds, (int, float)):
        return str(setup.get("source") or "")
    return (f"{seconds:.1f} s" if seconds < 60 else clock_text(seconds)) + f" from the {setup.get('source') or '?'}"


def render(console, doc: Mapping) -> None:
    """The nodes table, then one line each: checkpoint, TTL, cost so far, what keeps billing."""
    from rich.table import Table

    title = f"stack {doc['stack']}: {doc['state']}" + (" (rehearsal: simulated accelerator)" if doc["simulated"]
                                                        else "")
    table = Table(title=title, title_justify="left")
    for column in ("node", "marker", "reason", "updated", "setup", "checkpoint", "GPU util", "cost", "log"):
        table.add_column(column, overflow="fold")
    for n in doc["nodes"]:
        ago = n.get("updatedAgoSeconds")
        cost = n.get("estimatedCost")
        table.add_row(n["node"], n["state"], str(n.get("reason") or ""),
                      f"{clock_text(ago)} ago" if ago is not None else "",
                      setup_text(n.get("setup")), str(n.get("lastCheckpoint") or ""),
                      f"{n['gpuUtil']:.0f}%" if n.get("gpuUtil") is not None else "n/a",
                      f"{cost:g} {n.get('currency') or ''}".strip() if isinstance(cost, (int, float)) else "unknown",
                      "yes" if n.get("log") else "no")
    if doc["nodes"]:
        console.print(table)
    elif doc.get("markers", True):
        console.print(f"stack {doc['stack']}: no node has reported yet ({doc['source']}markers/)", highlight=False)
    else:  # a platform job writes no markers: the job API's answer is the state
        console.print(f"stack {doc['stack']}: {doc['state']}", highlight=False)
    say = lambda text: console.print(text, highlight=False, soft_wrap=True)  # noqa: E731
    from .platformjob import status_line

    if doc.get("job"):
        say(status_line(doc["job"]))
    waiting = doc.get("noSuccessor")
    if waiting:
        since = waiting.get("sinceSeconds")
        say(f"no successor yet: {', '.join(waiting['nodes'])} preempted"
            + (f" {clock_text(since)} ago" if since is not None else "")
            + " and no node has taken over; a spot pool that finds no stock in its zones starts none (the cloud's"
              " scaling/provisioning history says why; `gpu-training check STACK` shows the zones' stock)")
    ck = doc["checkpoint"]
    say(f"newest checkpoint: step {ck['step'] if ck['step'] is not None else '?'} ({ck['id']}, node {ck['node']})"
        if ck else "newest checkpoint: none in the bucket yet")
    say(("time to live: " if doc.get("markers", True) else "time limit (the platform stops the job): ")
        + ttl_text(doc["ttlSeconds"]) + (f" (expires {doc['expiresAt']})" if doc["expiresAt"] else ""))
    cost = doc["costSoFar"]
    say(f"cost so far: {money_text(cost)}" if cost["amount"] is not None
        else f"cost so far: unknown ({cost['basis']})")
    if cost["amount"] is not None and cost.get("price"):
        say(f"  price: {cost['price']}")
    for part in cost.get("storage") or []:  # disks and the shared file system: included, or why not
        figure = ("unknown" if part["amount"] is None else f"{part['amount']:g} {part['currency'] or ''}".rstrip())
        how = ("included" if part.get("added") else "NOT included: price unknown" if part["amount"] is None
               else "listed apart: another currency")
        say(f"  {part['what']}: {figure} ({how}; {part.get('basis') or 'no price'})")
    if doc["earlierRunsLeftOut"]:
        say(f"left out: {doc['earlierRunsLeftOut']} marker(s) of earlier runs (--all shows them)")
    if doc["keepsBilling"]:
        say("keeps billing until `gpu-training down` (even after the nodes released themselves):")
        for item in doc["keepsBilling"]:
            say(f"  - {item.get('what')}: {item.get('size')}; {item.get('rate') or 'rate unknown'}; "
                f"until {item.get('until')}")
