"""VM nodes: the provider's network, identity, storage and compute parts, each node with the bootstrap and the
node agent (components/vm_training.py). The cloud releases the nodes at `expiresAt`; the agent stops before it."""
from __future__ import annotations

from typing import Mapping

from components.targets.base import DeclaredTarget, expiry_text


class VmTarget(DeclaredTarget):
    def selects(self, spec) -> bool:
        return True  # the default: a stack without a kubernetes: or platform: section

    def preview_lines(self, spec, outputs: Mapping) -> list[str]:
        return [f"image: {spec.image or spec.profile.node.default_image_note}",
                f"expires at {expiry_text(outputs)}: the cloud releases the nodes then (maxHours {spec.max_hours:g} h"
                " from their recorded creation time); each node's agent saves and releases it before"]


TARGET = VmTarget(kind="vm", description="VM nodes", run="nodes", ending="the nodes release themselves after maxHours",
                  node_endpoints=True, data_disks=True, teardown_runs_program=False,
                  component_class="components.vm_training:TrainingCluster")
