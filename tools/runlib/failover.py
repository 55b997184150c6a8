"""Capacity failover for `gpu-training up`: the attempts a stack allows, in order, and what moving on
from one to the next changes in its config (docs/capacity.md).

The first attempt is the stack as its file says. The next ones come from its `failover` key: each
alternative zone with the stack's type, then each alternative type in the stack's zone and the
alternative zones, then each alternative region (with the stack's type first), where the cloud picks
the region's first zone selling the type. An attempt is the config it sets over the stack file's:
`zone` (a spot pool keeps its other `spotZones`), `instanceType`, the cloud's region key; a region
change also pins the checkpoint bucket where it is (`checkpoint.region`, `checkpoint.endpoint`).

Which answer moves on (components/capacity.py): a stock answer (sold out where it was asked) moves to
the next attempt; a quota answer (the account's limit in the region) skips the attempts left in that
region.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from components.capacity import QUOTA, Answer

ZONE, TYPE, SPOT_ZONES = "gpu-training:zone", "gpu-training:instanceType", "gpu-training:spotZones"
CHECKPOINT_REGION, CHECKPOINT_ENDPOINT = "gpu-training:checkpoint.region", "gpu-training:checkpoint.endpoint"


@dataclass(frozen=True)
class Attempt:
    number: int
    zone: Optional[str]  # None: the region's first zone selling the type (the program's default)
    instance_type: str
    region: str
    changes: dict = field(default_factory=dict)  # config key -> value (None: removed) over the stack file's

    def label(self) -> str:
        return f"{self.instance_type} in {self.zone or f'{self.region} (its first zone selling it)'}"


@dataclass(frozen=True)
class Plan:
    attempts: tuple[Attempt, ...]
    home_region: str
    bucket: Optional[str]
    bucket_endpoint: str

    def next_after(self, attempt: Attempt, answer: Answer) -> Optional[Attempt]:
        """The attempt to try after `attempt` failed with `answer`; None when none is left."""
        for candidate in self.attempts[attempt.number:]:
            if answer.kind == QUOTA and candidate.region == attempt.region:
                continue  # a quota is the account's in the region: another zone or type there hits it too
            return candidate
        return None

    def region_change_cost(self, attempt: Attempt) -> str:
        """What moving to another region costs, said before the user agrees to it."""
        return (f"moving to region {attempt.region}: the checkpoint bucket {self.bucket or '(none)'} and the data set stay"
                f" in {self.home_region}; the nodes read and write them across regions through"
                f" {self.bucket_endpoint} (slower, and outbound traffic from {self.home_region} bills per GB at the"
                f" cloud's cross-region rate); a new network, role and disks are made in {attempt.region}")


def plan_for(spec) -> Plan:
    """The attempts `spec` allows: the first is the stack as it is."""
    region_key = spec.profile.region_key
    first_type, first_zone, region = spec.instance.name, spec.zone, spec.region
    spot = tuple(spec.spot_zones) if spec.spot else ()
    failover = spec.failover
    wanted: list[tuple[Optional[str], str, str]] = [(first_zone, first_type, region)]
    # The stack's own zone, type or region may be listed too (once `up` has moved on, the file names where
    # it moved to): each place is tried once, in order.
    zones = list(dict.fromkeys([first_zone, *failover.zones]))
    types = list(dict.fromkeys([first_type, *failover.instance_types]))
    for name in types:
        wanted += [(z, name, region) for z in zones if (z, name, region) not in wanted]
    for other in dict.fromkeys(r for r in failover.regions if r != region):
        wanted += [(None, name, other) for name in types]
    attempts = []
    for number, (zone, name, where) in enumerate(wanted, start=1):
        changes: dict[str, Any] = {}
        if number > 1:
            if where != region:
                changes.update({region_key: where, ZONE: None, CHECKPOINT_REGION: spec.checkpoint.region,
                                CHECKPOINT_ENDPOINT: spec.checkpoint.endpoint})
                if spot:
                    changes[SPOT_ZONES] = None  # zones of the stack's region
            elif zone != first_zone:
                changes[ZONE] = zone
                if spot and zone in spot:  # the pool keeps its spread: the new zone leaves the extra ones
                    changes[SPOT_ZONES] = [z for z in spot if z != zone] + ([first_zone] if first_zone else [])
            if name != first_type:
                changes[TYPE] = name
        attempts.append(Attempt(number, zone, name, where, changes))
    return Plan(tuple(attempts), region, spec.checkpoint.bucket, spec.checkpoint.endpoint)
