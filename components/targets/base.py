"""What every target gives (the Protocol), and the parts they share: the outputs' common vocabulary and the
preview's lines about time.

A target's `run` names one of the run styles the tools know (tools/runlib/targets.py):

    nodes  VM nodes with the agent: markers, logs and reports in the bucket; up watches the markers
    pods   the same agent in pods: as nodes, plus a start deadline and the pods' restart hint
    job    a platform job: up, status, logs and down ask the platform's job API; no markers, no report

so a new target reuses a style (a TKE cluster runs `pods`, a third platform `job`) and touches no tool.

A target is written as a `DeclaredTarget`: its facts given once, by keyword, where its module makes `TARGET`
(a missing fact or an unknown run style is refused there, not when a tool first reads it), its component
named by import path, and `selects` and `preview_lines` of its own.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol, runtime_checkable

if TYPE_CHECKING:  # the tools read a target's facts without loading Pulumi (`status` of a kept rehearsal)
    import pulumi

OUTPUT_KEY = "target"
RUN_STYLES = ("nodes", "pods", "job")
# The keys every target's outputs carry (tests compare each target's exports to it): the target's kind, what
# it runs on, until when, at what price, where its data goes and what bills after it.
COMMON_KEYS = (OUTPUT_KEY, "stack", "provider", "region", "instanceType", "nodeCount", "billing", "expiresAt",
               "costPerHour", "checkpoint", "keepsBilling")


@runtime_checkable
class Target(Protocol):
    kind: str           # the value of the `target` output: "vm" | "kubernetes" | "platform" | ...
    description: str    # a few words for people: "VM nodes", "a Kubernetes cluster", "a platform job"
    run: str            # one of RUN_STYLES
    ending: str         # what maxHours ends, in a few words for the cost table's title
    node_endpoints: bool  # the nodes reach the cloud's endpoints themselves (the preview's routes table)
    data_disks: bool    # each node has a data disk the stack sizes (the preview's cost rows)
    teardown_runs_program: bool  # refresh and destroy must run the program (credentials it computes)

    def selects(self, spec) -> bool:
        """Whether this stack runs on this target (the registry asks in order; the last selects every stack)."""

    def component(self, name: str, spec, opts: Optional["pulumi.ResourceOptions"] = None) -> "pulumi.ComponentResource":
        """The top component; its `outputs` dict is what the program exports (common_outputs() and the target's own)."""

    def keeps_billing(self, spec) -> list:
        """What bills after the training ends, until `pulumi destroy` or beyond (providers.profile_records.Lingering)."""

    def preview_lines(self, spec, outputs: Mapping) -> list[str]:
        """The preview's lines about this target: what runs, its image, when it ends and who ends it."""


@dataclass(frozen=True)
class DeclaredTarget:
    """A Target's facts (the Protocol's attributes) and what most targets do alike: the component, imported
    from `component_class` ("module:Class", called with `target=` this target) only when the program builds
    it, and keeps_billing from the provider's profile. A subclass gives `selects` and `preview_lines`."""
    kind: str
    description: str
    run: str
    ending: str
    node_endpoints: bool
    data_disks: bool
    teardown_runs_program: bool
    component_class: str

    def __post_init__(self):
        if self.run not in RUN_STYLES:
            raise ValueError(f"target {self.kind!r}: run {self.run!r} is not one of {', '.join(RUN_STYLES)}")

    def component(self, name: str, spec, opts: Optional["pulumi.ResourceOptions"] = None) -> "pulumi.ComponentResource":
        module, _, cls = self.component_class.partition(":")
        return getattr(importlib.import_module(module), cls)(name, spec, opts, target=self)

    def keeps_billing(self, spec) -> list:
        from components import billing

        return billing.keeps_billing(spec)


@dataclass(frozen=True)
class Placeholder:
    """A stack value that is the example the stack files ship with, not the user's: the preview flags it."""
    key: str
    value: str
    why: str

    def line(self) -> str:
        return f"placeholder {self.key} = {self.value!r}: {self.why}"


def common_outputs(target: Target, spec, *, expires_at: "pulumi.Input[str]", keeps_billing: list) -> dict[str, Any]:
    """The outputs every target exports (COMMON_KEYS), in that order."""
    from components import cost

    return {
        OUTPUT_KEY: target.kind,
        "stack": spec.stack,
        "provider": spec.provider,
        "region": spec.region,
        "instanceType": spec.instance.name,
        "nodeCount": spec.nodes,
        "billing": spec.billing,
        "expiresAt": expires_at,
        "costPerHour": cost.cost_output(spec, target.data_disks),  # the preview's "cost", same keys; `storage` per hour besides
        "checkpoint": spec.checkpoint.output(),
        "keepsBilling": [item.as_dict() for item in keeps_billing],
    }


def expiry_text(outputs: Mapping) -> str:
    """The recorded expiry, or what it will be when the plan has not recorded it yet (never 'None')."""
    value = outputs.get("expiresAt")
    return str(value) if isinstance(value, str) and value else "(set at `pulumi up`: its creation time + maxHours)"
