"""TrainingCluster: the provider-neutral component that composes a provider's parts into a GPU cluster.

network -> identity -> storage -> the boot payload (an object in the bucket) -> compute (with the rendered
user-data: the loader that fetches that payload; docs/bootstrap.md, "The loader"), then the outputs users and
scripts/run.py rely on (components/stack_outputs.py: the same keys as the Kubernetes path's). Nothing
here knows a cloud: the registry hands over the provider's parts.
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumiverse_time

from components import clock, providers, tags
from components.bootstrap import render_user_data
from components.nodeconfig import build_node_config
from components.providers.part_records import PartContext
from components.spec import Spec
from components.stack_outputs import node_outputs


def expires_at(spec: Spec, created: pulumi.Input[str]) -> pulumi.Output[str]:
    """The nodes' release time: the recorded creation time + maxHours (components/clock.py)."""
    return pulumi.Output.from_input(created).apply(lambda moment: clock.expiry(moment, spec.max_hours))


def record_creation_time(spec: Spec, name: str, parent: pulumi.Resource) -> pulumi.Output[str]:
    """The moment the nodes were created, kept in state (time:Static): stable across `pulumi up`s
    until a setting that replaces the nodes changes (clock.generation_triggers)."""
    created = pulumiverse_time.Static(f"{name}-created", triggers=clock.generation_triggers(spec),
                                      opts=pulumi.ResourceOptions(parent=parent))
    return created.rfc3339


def _warn_if_expired(expiry: str) -> str:
    note = clock.expired_note(expiry)
    if note:
        pulumi.log.warn(note)
    return expiry


def standard_tags(spec: Spec, expiry: pulumi.Input[str]) -> dict[str, pulumi.Input[str]]:
    """The user's tags and the program's own (components/tags.py: one scheme every cloud accepts)."""
    value = pulumi.Output.from_input(expiry).apply(tags.expiry_value)
    return {**spec.tags, **tags.standard(spec.project, spec.stack, spec.tier.name, value)}


class TrainingCluster(pulumi.ComponentResource):
    def __init__(self, name: str, spec: Spec, opts: Optional[pulumi.ResourceOptions] = None, *, target):
        super().__init__("gpu-training:index:TrainingCluster", name, None, opts)
        package = providers.parts(spec.provider)
        self.expires_at = expires_at(spec, record_creation_time(spec, name, self)).apply(_warn_if_expired)
        ctx = PartContext(parent=self, name=name, tags=standard_tags(spec, self.expires_at))

        network = package.network.create(spec, ctx)
        identity = package.identity.create(spec, ctx)
        storage = package.storage.create(spec, ctx, network)
        # The agent stops before the cloud releases the node, by the same moment (docs/agent.md, "Stops").
        rendered = pulumi.Output.all(storage.shared_fs_address, identity.role_name, self.expires_at).apply(
            lambda values: render_user_data(
                build_node_config(spec, shared_fs_address=values[0], role=values[1], expires_at=values[2])))
        payload = storage.put_text(f"{name}-boot-payload", rendered.apply(lambda r: r.payload))
        # Through the payload object's urn, so the nodes are created after it is uploaded.
        user_data = pulumi.Output.all(rendered, payload.urn).apply(lambda values: values[0].encoded)
        compute = package.compute.create(spec, ctx, network, identity, storage, user_data, self.expires_at)

        self.outputs = node_outputs(spec, target, instance_ids=compute.instance_ids, private_ips=compute.private_ips,
                                    pool_id=compute.pool_id, shared_fs_address=storage.shared_fs_address,
                                    expires_at=self.expires_at, ssh_command=self._ssh_command(spec, compute.public_ips))
        self.register_outputs(self.outputs)

    @staticmethod
    def _ssh_command(spec: Spec, public_ips: list) -> Optional[pulumi.Output]:
        if not spec.ssh_allow_cidrs:
            return None
        if not public_ips:  # spot pool: addresses are only known once nodes exist
            return pulumi.Output.from_input(
                f"ssh ubuntu@<public IP of a node tagged {tags.STACK}={spec.stack}>")
        return pulumi.Output.from_input(public_ips[0]).apply(lambda ip: f"ssh ubuntu@{ip}")
