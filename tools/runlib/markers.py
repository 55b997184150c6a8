"""Node markers (docs/node-config.md) and what a set of them says about the run. Pure: no I/O.

The agent overwrites ``<prefix>/<stack>/markers/<node-id>.json`` at each stage of a node's life.
DONE, FAILED and PREEMPTED are written only after a verified final upload, so they mean the
node's data is saved; RUNNING means work since the last periodic sync is only on the node;
SYNC_FAILED means the final upload failed and the node kept its data (it is not released).
A replacement node after a preemption writes under its own id: the old PREEMPTED marker stays.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, Mapping, Optional

SAVED_STATES = frozenset({"DONE", "FAILED", "PREEMPTED"})
KNOWN_STATES = SAVED_STATES | {"RUNNING", "SYNC_FAILED"}
# A node in one of these has stopped for good: its marker holds its own duration and cost.
FINAL_STATES = SAVED_STATES | {"SYNC_FAILED"}
UNREADABLE = "UNREADABLE"


@dataclass(frozen=True)
class Marker:
    key: str
    etag: str
    node: str
    state: str
    body: Mapping = field(default_factory=dict, compare=False)

    @property
    def saved(self) -> bool:
        return self.state in SAVED_STATES

    @property
    def reason(self) -> Optional[str]:
        return self.body.get("reason")

    @property
    def gpu_util(self) -> Optional[float]:
        util = self.body.get("utilisation")
        value = util.get("gpuUtilMean") if isinstance(util, Mapping) else None
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def updated_at(self) -> Optional[datetime]:
        return parse_time(self.body.get("updatedAt"))


def parse_time(value) -> Optional[datetime]:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def parse_marker(key: str, etag: str, raw: bytes) -> Marker:
    """One marker object; a body that is not a marker becomes UNREADABLE (never 'saved')."""
    node = key.rsplit("/", 1)[-1].removesuffix(".json")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return Marker(key, etag, node, UNREADABLE, {"reason": "not JSON"})
    if not isinstance(body, dict) or body.get("state") not in KNOWN_STATES:
        state = body.get("state") if isinstance(body, dict) else None
        return Marker(key, etag, node, UNREADABLE, {"reason": f"unknown state {state!r}"})
    return Marker(key, etag, str(body.get("node") or node), body["state"], body)


def current(markers: Iterable[Marker], baseline: Mapping[str, str] | None,
            since: Optional[datetime] = None) -> list[Marker]:
    """The markers of this run, leaving out those of earlier runs of the same stack.

    The bucket outlives every destroy, so an earlier run's DONE stays there; counting it would end
    the watch and destroy nodes that are still training. A marker belongs to this run when it was
    written or rewritten after the baseline (key -> ETag, listed right after `up`), or when its
    ``updatedAt`` is not before ``since`` (when `up` started: this catches a node that wrote before
    the baseline was taken). A marker without a readable time is kept: it can only block a destroy.
    """
    chosen = []
    for marker in markers:
        changed = baseline is not None and baseline.get(marker.key) != marker.etag
        stamp = marker.updated_at
        fresh = since is not None and (stamp is None or stamp >= since)
        if changed or fresh or (baseline is None and since is None):
            chosen.append(marker)
    return sorted(chosen, key=lambda m: m.key)


@dataclass(frozen=True)
class Verdict:
    """What the current markers say. ``state`` is one of:

    NO_MARKERS  no node has reported yet
    RUNNING     some node is running (or its marker is unreadable)
    PREEMPTED   every node reported a saved state, but fewer DONE than nodes: waiting for a replacement
    WAITING     every marker says saved, but some of the nodeCount nodes have not reported
    DONE        at least nodeCount nodes DONE and nobody running
    FAILED      a node FAILED (``settled`` once nobody is running any more)
    SYNC_FAILED a node could not save its data
    """
    state: str
    settled: bool                      # no node RUNNING or unreadable
    data_saved: bool                   # every current marker says its data is in object storage
    counts: Mapping[str, int]
    unsaved: tuple[str, ...] = ()      # nodes whose data is not known to be saved
    failed: tuple[str, ...] = ()
    missing: int = 0                   # nodes of nodeCount without any marker


def assess(markers: Iterable[Marker], node_count: int) -> Verdict:
    markers = list(markers)
    counts: dict[str, int] = {}
    for marker in markers:
        counts[marker.state] = counts.get(marker.state, 0) + 1
    unsaved = tuple(m.node for m in markers if not m.saved)
    failed = tuple(m.node for m in markers if m.state == "FAILED")
    running = counts.get("RUNNING", 0) + counts.get(UNREADABLE, 0)
    settled = running == 0
    # A node that never reported may be training all the same (a RUNNING marker that failed to
    # upload is only a warning on the node), so its data is not known to be saved.
    missing = max(0, node_count - len(markers))
    saved = bool(markers) and not unsaved and not missing
    if not markers:
        state = "NO_MARKERS"
    elif counts.get("SYNC_FAILED"):
        state = "SYNC_FAILED"
    elif failed:
        state = "FAILED"
    elif running:
        state = "RUNNING"
    elif counts.get("DONE", 0) >= max(1, node_count):
        state = "DONE"
    else:
        state = "PREEMPTED" if counts.get("PREEMPTED") else "WAITING"
    return Verdict(state, settled, saved, counts, unsaved, failed, missing)
