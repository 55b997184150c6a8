"""What keeps billing after the nodes release themselves, and at what rate where known.

`maxHours` and the agent's self-release end the nodes only. Shared file systems, disks, snapshots,
network services and the data in object storage bill until `pulumi destroy` (or until you delete
them). Each provider declares, as data in its profile's `billing` group, `keeps_billing(spec)` (those things, each with
its size, what the bill counts, the rate with its source or None = unknown, and until when) and
`bills_nothing_alone` (every other resource type it creates, with why it bills nothing by itself).
The preview, the stack outputs (`keepsBilling`, read by scripts/run.py) and the tests use this
module; a resource type the plan holds that neither list names is reported, never assumed free.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from components import clock, generated_key
from components.providers.profile_records import Lingering

COMPONENT_PREFIX = "gpu-training:"  # our own component resources: no cloud resource, no bill
# Provider-neutral resources that live in the Pulumi state only (no cloud account involved).
STATE_ONLY = {clock.TIME_STATIC: "pulumiverse-time: a time kept in the Pulumi state, no cloud resource",
              generated_key.TYPE: "a public key made by `pulumi up` itself (components/generated_key.py), no cloud resource"}


def checkpoint_data(spec, what: str = "checkpoints, markers and reports the nodes wrote") -> Lingering:
    """What the training writes to object storage: it outlives the stack on purpose."""
    where = f"{spec.checkpoint.bucket}/{spec.checkpoint.stack_prefix(spec.stack)}/"
    return Lingering(what, None, where,
                     "object storage: stored GiB per month plus requests", None,
                     "you delete them (kept on destroy, so training can resume and reports stay)", prices="objectStorage")


def keeps_billing(spec) -> list[Lingering]:
    return priced(spec, [*spec.profile.billing.keeps_billing(spec), checkpoint_data(spec)])


def priced(spec, items) -> list[Lingering]:
    """The items with the shipped list price (components/cost.py) as their rate where one is known; where none is,
    the rate stays None (unknown) and `basis` says why and names the page with today's price."""
    from components import cost

    shared = cost.shared_storage_cost(spec) if any(i.prices == "sharedStorage" for i in items) else None
    stored = cost.object_storage_rate(spec) if any(i.prices == "objectStorage" for i in items) else None
    out = []
    for item in items:
        if item.rate is not None or item.prices is None:
            out.append(item)
        elif item.prices == "sharedStorage" and shared is not None and shared.per_hour is not None:
            out.append(replace(item, rate=f"{shared.per_hour:,.4f} {shared.currency}/h: {shared.basis}"))
        elif item.prices == "sharedStorage" and shared is not None:
            out.append(replace(item, basis=f"{item.basis}; price {shared.basis}"))
        elif item.prices == "objectStorage" and stored is not None and not stored.startswith("unknown"):
            out.append(replace(item, rate=stored))
        elif item.prices == "objectStorage":
            out.append(replace(item, basis=f"{item.basis}; price {stored}"))
        else:
            out.append(item)
    return out


def as_output(spec) -> list[dict]:
    """The `keepsBilling` stack output and preview section: plain dicts, rates None when unknown."""
    return [item.as_dict() for item in keeps_billing(spec)]


def unclassified(spec, resources: Sequence[Any], lingering: Sequence[Lingering] = (),
                 classified: Mapping[str, str] = MappingProxyType({})) -> list[str]:
    """Resource types in the plan that the provider neither lists as billing nor as billing nothing alone;
    `lingering` and `classified` (type -> why) are what the stack's target adds (components/targets)."""
    known = ({item.type for item in (*keeps_billing(spec), *lingering)} | set(spec.profile.billing.bills_nothing_alone)
             | set(STATE_ONLY) | set(classified))
    return sorted({r.type for r in resources if not r.type.startswith((COMPONENT_PREFIX, *INSIDE_THE_CLUSTER))} - known)


# Kubernetes objects and their provider live inside the cluster (the Kubernetes path): the nodes they
# run on bill (the provider's node pools), the objects do not.
INSIDE_THE_CLUSTER = ("kubernetes:", "pulumi:providers:kubernetes")
