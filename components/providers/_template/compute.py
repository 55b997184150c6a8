"""__Cloud__ nodes: encrypted disks, required metadata tokens, the node role, a cloud-side TTL.

Contract: components/providers/contract.py ComputePart; docs/providers.md. Built like every cloud's, as a
components.providers.nodes_part.NodesComponent (`super().__init__("__cloud__", ctx)` gives `self.child`,
`self.tags` and `login_key()`, which calls this cloud's `key_pair()`) whose on_demand() and spot_pool()
share one NodeLaunch. The resources are placeholders (components/providers/placeholder.py): replace each
with its class in the cloud's Pulumi SDK, keeping the inputs' intent (encrypted disks, metadata tokens, the
TTL at expires_at).
"""
from __future__ import annotations

import pulumi

from components.providers.part_records import (ComputeParts, IdentityParts, NetworkParts, NodeLaunch, PartContext,
                                               StorageParts, group_suffix, placement_groups)
from components.providers.nodes_part import NodesComponent
from components.providers.placeholder import Placeholder

NODE_TYPE = "__cloud__:compute:Instance"


def node_settings(launch: NodeLaunch) -> dict:
    """What an instance and a pool's template both get: the image, the role, the user data, the disks."""
    disk = launch.spec.data_disk
    return {"image": launch.image, "securityGroupIds": [launch.network.security_group_id],
            "roleName": launch.identity.role_name, "userData": launch.user_data, "metadataTokens": "required",
            "keyPair": launch.key,
            "dataDisk": {"category": disk.category, "sizeGb": disk.size_gb, "encrypted": True},
            "systemDiskEncrypted": True, "tags": launch.tags}


class Nodes(NodesComponent):
    def __init__(self, spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
                 user_data: pulumi.Output, expires_at: pulumi.Output):
        super().__init__("__cloud__", ctx)
        groups = placement_groups(spec, spec.profile.spot.has_pool(spec), lambda g: Placeholder(
            "__cloud__:compute:PlacementGroup", f"{ctx.name}-placement{group_suffix(g)}",
            {"name": f"gpu-training-{spec.stack}{group_suffix(g)}", "tags": self.tags}, self.child).id)
        # TODO(__cloud__): the GPU image (a data source of the SDK; preview.py answers it offline).
        image = pulumi.Output.from_input(f"<the cloud's GPU image for {spec.instance.name}>")
        self.launch(NodeLaunch(spec, ctx, network, identity, user_data, expires_at, self.tags, image,
                               self.login_key(spec, ctx), groups, None, None))

    def key_pair(self, spec, ctx: PartContext, public_key):
        # TODO(__cloud__): the SDK's key pair resource; the nodes name it by what this returns.
        return Placeholder("__cloud__:compute:KeyPair", f"{ctx.name}-key",
                           {"name": f"gpu-training-{spec.stack}", "publicKey": public_key}, self.child).id

    def on_demand(self, launch: NodeLaunch) -> None:
        spec, child = launch.spec, self.child
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
        spec, child = launch.spec, self.child
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
