"""__Cloud__ nodes: encrypted disks, required metadata tokens, the node role, a cloud-side TTL.

Contract: components/providers/contract.py ComputePart; docs/providers.md. Built like every cloud's, as a
components.providers.base.NodesComponent whose on_demand() and spot_pool() share one NodeLaunch. The
resources are placeholders (components/providers/placeholder.py): replace each with its class in the
cloud's Pulumi SDK, keeping the inputs' intent (encrypted disks, metadata tokens, the TTL at expires_at).
"""
from __future__ import annotations

import pulumi

from components.providers.base import (ComputeParts, IdentityParts, NetworkParts, NodeLaunch, NodesComponent,
                                       PartContext, StorageParts, group_suffix, placement_groups)
from components.providers.placeholder import Placeholder

NODE_TYPE = "__cloud__:compute:Instance"


def node_settings(launch: NodeLaunch) -> dict:
    """What an instance and a pool's template both get: the image, the role, the user data, the disks."""
    disk = launch.spec.data_disk
    return {"image": launch.image, "securityGroupIds": [launch.network.security_group_id],
            "roleName": launch.identity.role_name, "userData": launch.user_data, "metadataTokens": "required",
            "dataDisk": {"category": disk.category, "sizeGb": disk.size_gb, "encrypted": True},
            "systemDiskEncrypted": True, "tags": launch.tags}


class Nodes(NodesComponent):
    def __init__(self, spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
                 user_data: pulumi.Output, expires_at: pulumi.Output):
        super().__init__("gpu-training:__cloud__:Nodes", f"{ctx.name}-nodes", ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(ctx.tags)
        groups = placement_groups(spec, spec.profile.has_pool(spec), lambda g: Placeholder(
            "__cloud__:compute:PlacementGroup", f"{ctx.name}-placement{group_suffix(g)}",
            {"name": f"gpu-training-{spec.stack}{group_suffix(g)}", "tags": tags}, child).id)
        # TODO(__cloud__): the GPU image (a data source of the SDK; preview.py answers it offline) and the key pair.
        image = pulumi.Output.from_input(f"<the cloud's GPU image for {spec.instance.name}>")
        self.launch(NodeLaunch(spec, ctx, network, identity, user_data, expires_at, tags, image, None, groups,
                               None, None))

    def on_demand(self, launch: NodeLaunch) -> None:
        spec, child = launch.spec, pulumi.ResourceOptions(parent=self)
        for index in range(spec.nodes):
            node = Placeholder(NODE_TYPE, f"{launch.ctx.name}-node-{index}",
                               {"name": f"gpu-training-{spec.stack}-{index}", "instanceType": spec.instance.name,
                                "zone": launch.network.zone, "subnetId": launch.network.subnet_ids[0],
                                "placementGroupId": launch.group_of(index), **node_settings(launch)},
                               child, outputs=("privateIp", "publicIp"))
            # The last resort if the agent never releases the node: the cloud releases it at expires_at.
            Placeholder("__cloud__:compute:ReleaseTimer", f"{launch.ctx.name}-node-{index}-ttl",
                        {"instanceId": node.id, "releaseAt": launch.expires_at}, child)
            self.instance_ids.append(node.id)
            self.private_ips.append(node.privateIp)
            self.public_ips.append(node.publicIp)

    def spot_pool(self, launch: NodeLaunch) -> None:
        spec, child = launch.spec, pulumi.ResourceOptions(parent=self)
        # A pool keeps `nodes` spot nodes from the tier's types, replacing reclaimed ones; the agent retires it
        # (node_runtime.retire_pool) before it releases its node, and the schedule below empties it at the TTL.
        pool = Placeholder("__cloud__:compute:SpotPool", f"{launch.ctx.name}-spot-pool",
                           {"name": f"gpu-training-{spec.stack}", "instanceTypes": [row.name for row in spec.pool_types],
                            "subnetIds": list(launch.network.subnet_ids.values()), "maxPricePerHour": spec.spot_max_price,
                            "desiredSize": launch.pool_size(), "maxSize": spec.nodes, "minSize": 0,
                            "placementGroupId": launch.pool_group(), **node_settings(launch)}, child)
        Placeholder("__cloud__:compute:PoolSchedule", f"{launch.ctx.name}-spot-pool-ttl",
                    {"poolId": pool.id, "at": launch.expires_at, "desiredSize": 0, "maxSize": 0}, child)
        self.pool_id = pool.id


def create(spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts, storage: StorageParts,
           user_data: pulumi.Output, expires_at: pulumi.Output) -> ComputeParts:
    return Nodes(spec, ctx, network, identity, user_data, expires_at).parts()
