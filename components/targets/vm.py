"""VM nodes: the provider's network, identity, storage and compute parts, each node with the bootstrap and the
node agent (components/cluster.py). The cloud releases the nodes at `expiresAt`; the agent stops before it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

if TYPE_CHECKING:  # loaded by the tools too, which read its facts without Pulumi
    import pulumi
from components.targets.base import expiry_text


class VmTarget:
    kind = "vm"
    description = "VM nodes"
    run = "nodes"
    ending = "the nodes release themselves after maxHours"
    node_endpoints = True
    data_disks = True
    teardown_runs_program = False

    def selects(self, spec) -> bool:
        return True  # the default: a stack without a kubernetes: or platform: section

    def component(self, name: str, spec, opts: Optional["pulumi.ResourceOptions"] = None):
        from components.cluster import TrainingCluster

        return TrainingCluster(name, spec, opts, target=self)

    def keeps_billing(self, spec) -> list:
        from components import billing

        return billing.keeps_billing(spec)

    def preview_lines(self, spec, outputs: Mapping) -> list[str]:
        return [f"image: {spec.image or spec.profile.node.default_image_note}",
                f"expires at {expiry_text(outputs)}: the cloud releases the nodes then (maxHours {spec.max_hours:g} h"
                " from their recorded creation time); each node's agent saves and releases it before"]


TARGET = VmTarget()
