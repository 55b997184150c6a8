"""The network part's cloud-neutral policy: `NetworkComponent`, which every cloud's network.py subclasses.

What it decides, once for every cloud: the stack's VPC is `cidrs.STACK_VPC`; the primary zone comes first,
then one subnet per zone the nodes may use (the primary zone's, then each of a spot pool's `spotZones`), each
cut by `cidrs.stack_subnets` to hold every node; the security group comes after the subnets; the component
registers the VPC's and the group's ids, and `parts()` is what the part returns. What each cloud decides is
in four small hooks: its primary zone, how it makes the VPC, one subnet, and the security group with its
rules (docs/providers.md, "network.py").
"""
from __future__ import annotations

from typing import Any

import pulumi

from components import cidrs
from components.providers.part_records import NetworkParts, PartContext

VPC_CIDR = cidrs.STACK_VPC


class NetworkComponent(pulumi.ComponentResource):
    """A network part's component (`gpu-training:<cloud>:Network`): the policy above, the cloud's hooks below.

    Hooks see `self.child` (options parenting a resource under the component), `self.tags` (`stack_tags`),
    and, as each is made, `self.zone` and `self.vpc`. `name` is the part's name: each hook names its
    resources after it (`<name>-vpc`, `<name>-subnet-<index>`, `<name>-sg`, ...)."""

    def __init__(self, cloud: str, spec: Any, ctx: PartContext):
        super().__init__(f"gpu-training:{cloud}:Network", f"{ctx.name}-network", None, ctx.opts())
        self.child = pulumi.ResourceOptions(parent=self)
        self.tags = self.stack_tags(ctx)
        self.zone = self.primary_zone(spec)
        self.vpc = self.make_vpc(spec, ctx.name)
        self.subnets: dict[int, pulumi.Resource] = {}
        self.cidrs: dict[int, str] = {}
        for index, zone, cidr in cidrs.stack_subnets(VPC_CIDR, self.zone, spec):
            self.cidrs[index] = cidr
            self.subnets[index] = self.make_subnet(spec, ctx.name, index, zone, cidr)
        self.security_group = self.make_security_group(spec, ctx.name)
        self.register_outputs({"vpcId": self.vpc.id, "securityGroupId": self.security_group.id})

    def parts(self) -> NetworkParts:
        return NetworkParts(vpc_id=self.vpc.id, subnet_ids={i: s.id for i, s in self.subnets.items()},
                            subnet_cidrs=dict(self.cidrs), security_group_id=self.security_group.id,
                            zone=pulumi.Output.from_input(self.zone))

    # -- what a cloud fills in
    def stack_tags(self, ctx: PartContext) -> dict:
        """The tags of every resource of the part: the stack's, as a plain dict."""
        return dict(ctx.tags)

    def primary_zone(self, spec: Any) -> pulumi.Input[str]:
        """The zone of the first subnet, where on-demand nodes start: `spec.zone` unless the cloud looks one up."""
        return pulumi.Output.from_input(spec.zone)

    def make_vpc(self, spec: Any, name: str) -> pulumi.Resource:
        """The stack's VPC over `VPC_CIDR`."""
        raise NotImplementedError(f"{type(self).__module__}: make_vpc is not written yet")

    def make_subnet(self, spec: Any, name: str, index: int, zone: pulumi.Input[str], cidr: str) -> pulumi.Resource:
        """Subnet `index` of `self.vpc`, in `zone`, over `cidr`."""
        raise NotImplementedError(f"{type(self).__module__}: make_subnet is not written yet")

    def make_security_group(self, spec: Any, name: str) -> pulumi.Resource:
        """The nodes' security group in `self.vpc` with its rules: all traffic between members, SSH only from
        `spec.ssh_allow_cidrs` (none when empty), and the egress the nodes need."""
        raise NotImplementedError(f"{type(self).__module__}: make_security_group is not written yet")
