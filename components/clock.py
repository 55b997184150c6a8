"""Time in the plan: one creation time recorded in state, and the expiry (TTL) computed from it.

The clock is read once, when the stack's nodes are first created: pulumiverse-time's `Static`
resource keeps that moment in the Pulumi state, so a later `pulumi up` with no config change
computes the same expiry and changes nothing (a time taken from the clock at each run would move
the spot pool's ForceNew `valid_until`, Tencent's ForceNew action timers and every expires-at tag).
The TTL counts from that moment; changing `maxHours` moves it. A change that replaces the nodes
(`generation_triggers`) records a new moment, so replaced nodes get a full `maxHours`.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Optional

CLOCK_ENV = "GPU_TRAINING_NOW"  # ISO time; pins "now" so previews and tests are reproducible
TIME_STATIC = "time:index/static:Static"
# What replaces a time:Static (a new moment): both inputs are RequiresReplace in
# hashicorp/terraform-provider-time@16bc819e internal/provider/resource_time_static.go:124-150,
# which pulumiverse-time bridges.
TIME_STATIC_REPLACED_BY = ("triggers", "rfc3339")
EXPIRY_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def now() -> datetime:
    pinned = os.environ.get(CLOCK_ENV)
    if pinned:
        return parse(pinned)
    return datetime.now(timezone.utc)


def parse(moment: str) -> datetime:
    """An RFC 3339 time (as time:Static records it) as an aware UTC datetime."""
    return datetime.fromisoformat(moment.replace("Z", "+00:00")).astimezone(timezone.utc)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(EXPIRY_FORMAT)


def expiry(created: str, max_hours: float) -> str:
    """created + maxHours, on the next whole minute (clouds take minute precision), as yyyy-MM-ddTHH:mm:00Z."""
    moment = parse(created) + timedelta(hours=max_hours)
    moment = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return rfc3339(moment)


def generation_triggers(spec) -> dict[str, str]:
    """Settings whose change replaces the nodes (billing swaps instances for a pool; zone and data disk
    inputs are ForceNew on both clouds' instances; the pool's types are its replacement trigger) or,
    for instance types, resizes them: the recorded creation time is renewed with them, so a new node
    gets a whole `maxHours` instead of the remainder of the old one. The image is not among them: a
    running node keeps its image (docs/day2.md)."""
    disk = spec.data_disk
    return {
        "billing": spec.billing,
        "instanceTypes": ",".join(row.name for row in spec.pool_types),
        "zone": spec.zone or "",
        "spotZones": ",".join(spec.spot_zones),
        "dataDisk": f"{disk.category}/{disk.performance_level or ''}/{disk.size_gb}",
    }


def expired_note(expires_at: str, at: Optional[datetime] = None, margin_minutes: int = 30) -> Optional[str]:
    """Why nodes created now would be refused (the cloud wants the release time ahead), or None."""
    moment = at or now()
    if parse(expires_at) - moment >= timedelta(minutes=margin_minutes):
        return None
    return (f"the nodes' TTL (maxHours from their recorded creation time) ends at {expires_at}, less than"
            f" {margin_minutes} minutes from now: a node created now would be refused by the cloud. Raise maxHours,"
            " or restart the count with `pulumi up --replace` on the stack's time:index/static:Static resource"
            " (docs/day2.md)")
