"""The target: where a stack's training runs (README "Layout" and "Where new work goes"), one type with one implementation per
kind, and the one place that picks it.

    vm          VM nodes of the provider's compute part (components/vm_training.py), each with the node agent
    kubernetes  a managed cluster and a training Job (components/kubernetes/)
    platform    a job on a managed training platform (components/platforms/: ModelArts, PAI-DLC)

Each target owns what differs by where the training runs: the component it builds, what keeps billing, the
lines of the preview that describe it, its outputs (one vocabulary for every target: `target` names the kind,
`instanceType` and `expiresAt` are there for each), and how the run is followed (`run`: which of the tools'
run styles, tools/runlib/targets.py, finds its end, its state, its logs and its report). The program asks
`of(spec)`; the tools ask `of_outputs(outputs)`; nothing guesses the target from other settings or output
names. A new target (TKE, CCE, a third platform kind) is a module here and one REGISTRY line.
"""
from __future__ import annotations

import importlib
from typing import Mapping

from components.targets.base import OUTPUT_KEY, Target

# kind -> the module whose TARGET implements it. Order matters: of(spec) takes the first whose selects(spec)
# is true, so the default (VM nodes, which selects every stack) comes last.
REGISTRY: dict[str, str] = {
    "platform": "components.targets.platform",
    "kubernetes": "components.targets.kubernetes",
    "vm": "components.targets.vm",
}


class UnknownTarget(Exception):
    def __init__(self, kind: object):
        super().__init__(f"unknown target {kind!r} in the stack outputs; known: {', '.join(REGISTRY)}")


def names() -> list[str]:
    return list(REGISTRY)


def get(kind: str) -> Target:
    if kind not in REGISTRY:
        raise UnknownTarget(kind)
    target = importlib.import_module(REGISTRY[kind]).TARGET
    if target.kind != kind:  # a registry line that names another kind's module
        raise ValueError(f"{REGISTRY[kind]}.TARGET is {target.kind!r}, registered as {kind!r}")
    return target


def of(spec) -> Target:
    """The target a validated spec runs on."""
    for kind in REGISTRY:
        target = get(kind)
        if target.selects(spec):
            return target
    raise LookupError("no target selects this stack (the registry's last entry must select every stack)")


def of_outputs(outputs: Mapping) -> Target:
    """The target of a deployed stack (or its offline equivalent) from its `target` output. Outputs written
    before the key existed are read as VM nodes': a Kubernetes stack of that age is read as one after its
    next `pulumi up`."""
    return get(str(outputs.get(OUTPUT_KEY) or "vm"))


__all__ = ["OUTPUT_KEY", "REGISTRY", "Target", "UnknownTarget", "get", "names", "of", "of_outputs"]
