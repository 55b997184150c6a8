"""What a spot reclaim costs a stack: how the trainer learns of it, how early, and the work it can lose.

The facts are each cloud's (its profile's `spot.notice`, ReclaimNotice with sources; a platform's
platform.yaml `reclaim`); this module does the arithmetic the preview prints (scripts/preview.py, the
`reclaim` section) and picks the periodic sync interval the node config carries (components/nodeconfig.py):
- a notice that reaches the node: the agent polls it every SPOT_POLL_SECONDS, signals the trainer and
  gives it min(MAX_GRACE_SECONDS, lead - UPLOAD_ALLOWANCE_SECONDS) to save, then uploads before the
  reclaim: a trainer that saves on the signal loses nothing;
- nothing reaches the node: what survives is the last periodic sync, so the interval shortens to
  NO_NOTICE_SYNC_SECONDS: what a sync costs when nothing changed is measured by bench/sync_cost.py
  (docs/agent.md, "Reclaim notices"), and a reclaim then loses at most the trainer's own checkpoint
  interval plus one minute plus the upload.
"""
from __future__ import annotations

from typing import Any, Optional

SPOT_POLL_SECONDS = 0.5  # measured: bench/agent_latency.py --spot, docs/agent.md "Spot poll interval"
MAX_GRACE_SECONDS = 120
UPLOAD_ALLOWANCE_SECONDS = 30  # the node agent's default (node/node_agent/config.py agent.uploadAllowanceSeconds)
SYNC_SECONDS = 300  # where a notice gives the trainer time to save, the periodic sync is only a backstop
# Where no notice reaches the node: measured by bench/sync_cost.py (docs/agent.md, "Reclaim notices").
NO_NOTICE_SYNC_SECONDS = 60


def notice(spec: Any):
    """The cloud's ReclaimNotice for this stack (components/providers/profile_records.py)."""
    return spec.profile.spot.notice(spec)


def warned(spec: Any) -> bool:
    """Whether a notice reaches the trainer's node before a reclaim (a lead that is not zero)."""
    return notice(spec).lead_seconds != 0


def sync_interval(spec: Any) -> int:
    """The node config's agent.syncIntervalSeconds: shorter on spot nodes that nothing warns."""
    return NO_NOTICE_SYNC_SECONDS if spec.spot and not spec.platform and not warned(spec) else SYNC_SECONDS


def _minutes(seconds: Optional[float]) -> str:
    if seconds is None:
        return "unknown"
    return f"{seconds / 60:g} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"


def describe(spec: Any) -> Optional[dict]:
    """The preview's reclaim section of a spot stack (None on demand): mechanism, lead time, grace, work at risk."""
    if not spec.spot:
        return None
    if spec.platform:
        facts = dict(spec.platform.offer.data.get("reclaim") or {})
        return {"mechanism": facts.get("mechanism", "the platform's; not described in its platform.yaml"),
                "lead": facts.get("lead", "unknown"), "leadSeconds": facts.get("leadSeconds"),
                "source": facts.get("source", ""), "note": facts.get("note", ""), "syncIntervalSeconds": None,
                "graceSeconds": None,
                "workAtRisk": facts.get("workAtRisk", "what the trainer did since its last checkpoint")}
    facts = notice(spec)
    sync = sync_interval(spec)
    if facts.lead_seconds == 0:
        grace = None
        risk = (f"no warning reaches the node: a reclaim loses what the trainer did since its last checkpoint that a"
                f" periodic sync uploaded, up to its checkpoint interval plus {_minutes(sync)} (syncIntervalSeconds"
                f" {sync}) plus the time the upload takes")
    else:
        known = facts.lead_seconds is not None
        grace = min(MAX_GRACE_SECONDS, facts.lead_seconds - UPLOAD_ALLOWANCE_SECONDS) if known else None
        told = (f"the trainer is signalled within {SPOT_POLL_SECONDS:g} s of the notice and gets"
                + (f" {grace:g} s" if known else f" up to {MAX_GRACE_SECONDS} s")
                + f" to save (min(maxGraceSeconds {MAX_GRACE_SECONDS}, the time to the reclaim less"
                  f" {UPLOAD_ALLOWANCE_SECONDS} s for the upload))")
        risk = (f"{told}; the agent uploads before the reclaim: a trainer that saves on SIGTERM loses nothing, one"
                " that does not loses what it did since its last checkpoint")
    return {"mechanism": facts.mechanism, "lead": facts.lead, "leadSeconds": facts.lead_seconds,
            "source": facts.source, "note": facts.note, "syncIntervalSeconds": sync, "graceSeconds": grace,
            "workAtRisk": risk}
