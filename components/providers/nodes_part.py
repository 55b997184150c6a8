"""The neutral compute part's component (`gpu-training:<cloud>:Nodes`), as storage_part.py and network_part.py are
for storage and the network: each cloud's compute.py subclasses NodesComponent and gives the launch hooks."""
from __future__ import annotations

from typing import Any, Optional

import pulumi

from components.providers.part_records import ComputeParts, NodeLaunch, PartContext


class NodesComponent(pulumi.ComponentResource):
    """A compute part's component (`gpu-training:<cloud>:Nodes`): its subclass fills the four outputs from
    on_demand() or spot_pool(). `self.child` parents a resource under it; `self.tags` are the stack's tags."""

    def __init__(self, cloud: str, ctx: PartContext):
        super().__init__(f"gpu-training:{cloud}:Nodes", f"{ctx.name}-nodes", None, ctx.opts())
        self.child = pulumi.ResourceOptions(parent=self)
        self.tags = dict(ctx.tags)
        self.instance_ids: list[pulumi.Output] = []
        self.private_ips: list[pulumi.Output] = []
        self.public_ips: list[pulumi.Output] = []
        self.pool_id: Optional[pulumi.Output] = None

    def login_key(self, spec: Any, ctx: PartContext) -> Any:
        """The cloud's reference to the nodes' SSH key pair (NodeLaunch.key), made from `public_key()`;
        None without a public key: the nodes then have no key pair at all."""
        public_key = self.public_key(spec, ctx)
        return self.key_pair(spec, ctx, public_key) if public_key else None

    def public_key(self, spec: Any, ctx: PartContext) -> Any:
        """The public key the nodes' key pair holds: the user's sshPublicKey, or None."""
        return spec.ssh_public_key

    def key_pair(self, spec: Any, ctx: PartContext, public_key: Any) -> Any:
        """The cloud's key pair resource for `public_key`, and what a node names it by."""
        raise NotImplementedError(f"{type(self).__module__}: this cloud makes no key pair")

    def launch(self, launch: NodeLaunch) -> None:
        if launch.spec.spot:
            self.spot_pool(launch)
        else:
            self.on_demand(launch)
        self.register_outputs({"instanceIds": self.instance_ids, "poolId": self.pool_id})

    def on_demand(self, launch: NodeLaunch) -> None:
        raise NotImplementedError

    def spot_pool(self, launch: NodeLaunch) -> None:
        raise NotImplementedError

    def parts(self) -> ComputeParts:
        return ComputeParts(instance_ids=self.instance_ids, private_ips=self.private_ips,
                            public_ips=self.public_ips, pool_id=self.pool_id)
