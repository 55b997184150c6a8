"""TrainingCluster: the provider-neutral component that composes a provider's parts into a GPU cluster.

network -> identity -> storage -> compute (with the rendered user-data), then the outputs users and
scripts/run.py rely on. Nothing here knows a cloud: the registry hands over the provider's parts.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Optional

import pulumi

from components import billing, cost, providers
from components.bootstrap import render_user_data
from components.nodeconfig import build_node_config
from components.providers.base import PartContext
from components.spec import Spec

CLOCK_ENV = "GPU_TRAINING_NOW"  # ISO time; pins "now" so previews and tests are reproducible


def now() -> datetime:
    pinned = os.environ.get(CLOCK_ENV)
    if pinned:
        return datetime.fromisoformat(pinned.replace("Z", "+00:00")).astimezone(timezone.utc)
    return datetime.now(timezone.utc)


def expires_at(spec: Spec, start: Optional[datetime] = None) -> str:
    """now + maxHours, on a whole minute (clouds take minute precision), as yyyy-MM-ddTHH:mm:00Z."""
    moment = (start or now()) + timedelta(hours=spec.max_hours)
    moment = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def standard_tags(spec: Spec, expiry: str) -> dict[str, str]:
    return {
        **spec.tags,
        "gpu-training:project": spec.project,
        "gpu-training:stack": spec.stack,
        "gpu-training:tier": spec.tier.name,
        "gpu-training:expires-at": expiry,
    }


class TrainingCluster(pulumi.ComponentResource):
    def __init__(self, name: str, spec: Spec, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("gpu-training:index:TrainingCluster", name, None, opts)
        package = providers.parts(spec.provider)
        self.expires_at = expires_at(spec)
        ctx = PartContext(parent=self, name=name, tags=standard_tags(spec, self.expires_at))

        network = package.network.create(spec, ctx)
        identity = package.identity.create(spec, ctx)
        storage = package.storage.create(spec, ctx, network)
        user_data = pulumi.Output.all(storage.shared_fs_address, identity.role_name).apply(
            lambda values: render_user_data(
                build_node_config(spec, shared_fs_address=values[0], role=values[1])).encoded)
        compute = package.compute.create(spec, ctx, network, identity, storage, user_data, self.expires_at)

        hourly = cost.spec_cost(spec)
        self.outputs = {
            "stack": spec.stack,
            "provider": spec.provider,
            "region": spec.region,
            "instanceType": spec.instance.name,
            "nodeCount": spec.nodes,
            "billing": spec.billing,
            "instanceIds": compute.instance_ids,
            "privateIps": compute.private_ips,
            "poolId": compute.pool_id,
            "sharedFsAddress": storage.shared_fs_address,
            "expiresAt": self.expires_at,
            "costPerHour": {"currency": hourly.currency, "onDemand": hourly.on_demand_per_hour,
                            "spot": hourly.spot_per_hour, "effective": hourly.effective_per_hour,
                            "basis": hourly.basis},
            "checkpoint": {
                "bucket": spec.checkpoint.bucket, "prefix": spec.checkpoint.prefix,
                "endpoint": spec.checkpoint.endpoint, "region": spec.checkpoint.region,
                "addressingStyle": spec.checkpoint.addressing_style,
                "signatureVersion": spec.checkpoint.signature_version,
                "verify": spec.checkpoint.verification.node_config(),
            },
            "sshCommand": self._ssh_command(spec, compute.public_ips),
            # What bills after the nodes release themselves (maxHours ends nodes only): run.py shows it.
            "keepsBilling": billing.as_output(spec),
        }
        self.register_outputs(self.outputs)

    @staticmethod
    def _ssh_command(spec: Spec, public_ips: list) -> Optional[pulumi.Output]:
        if not spec.ssh_allow_cidrs:
            return None
        if not public_ips:  # spot pool: addresses are only known once nodes exist
            return pulumi.Output.from_input(
                f"ssh ubuntu@<public IP of a node tagged gpu-training:stack={spec.stack}>")
        return pulumi.Output.from_input(public_ips[0]).apply(lambda ip: f"ssh ubuntu@{ip}")
