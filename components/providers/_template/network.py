"""__Cloud__ network: VPC, subnets, a security group without world-open ingress, the nodes' egress.

Contract: components/providers/contract.py NetworkPart; docs/providers.md and docs/egress.md.
The resources are placeholders (components/providers/placeholder.py) in the shape every cloud so far has
needed: replace each with its class in the cloud's Pulumi SDK, keeping what create() returns.
"""
from __future__ import annotations

import pulumi

from components import cidrs
from components.providers.base import NetworkParts, PartContext
from components.providers.placeholder import Placeholder

VPC_CIDR = cidrs.STACK_VPC


class Network(pulumi.ComponentResource):
    def __init__(self, spec, ctx: PartContext):
        super().__init__("gpu-training:__cloud__:Network", f"{ctx.name}-network", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(ctx.tags)
        # TODO(__cloud__): a zone that sells the instance type now (alicloud/network.py primary_zone, zones.pick_zone).
        self.zone = pulumi.Output.from_input(spec.zone or f"<a zone of {spec.region} that sells {spec.instance.name}>")
        self.vpc = Placeholder("__cloud__:network:Vpc", f"{ctx.name}-vpc",
                               {"name": f"gpu-training-{spec.stack}", "cidrBlock": VPC_CIDR, "tags": tags}, child)
        # One subnet per zone the nodes may use: the primary, and a spot pool's other zones (cidrs.py).
        subnets = cidrs.stack_subnets(VPC_CIDR, self.zone, spec)
        self.cidrs = {index: cidr for index, _, cidr in subnets}
        self.subnets = {index: Placeholder("__cloud__:network:Subnet", f"{ctx.name}-subnet-{index}",
                                           {"vpcId": self.vpc.id, "cidrBlock": cidr, "zone": zone, "tags": tags}, child)
                        for index, zone, cidr in subnets}
        # Members talk to each other (NCCL, the rendezvous, the shared FS); SSH only from sshAllowCidrs.
        self.security_group = Placeholder(
            "__cloud__:network:SecurityGroup", f"{ctx.name}-sg",
            {"vpcId": self.vpc.id, "name": f"gpu-training-{spec.stack}", "tags": tags,
             "ingress": [{"from": "members", "protocol": "all"},
                         *({"cidr": cidr, "protocol": "tcp", "port": 22} for cidr in spec.ssh_allow_cidrs)]}, child)
        # TODO(__cloud__): the nodes' outbound path (NAT or endpoints) the profile's egress.routes() declare
        # (docs/egress.md).
        self.register_outputs({"vpcId": self.vpc.id, "securityGroupId": self.security_group.id})

    def parts(self) -> NetworkParts:
        return NetworkParts(vpc_id=self.vpc.id, subnet_ids={i: s.id for i, s in self.subnets.items()},
                            subnet_cidrs=dict(self.cidrs), security_group_id=self.security_group.id, zone=self.zone)


def create(spec, ctx: PartContext) -> NetworkParts:
    return Network(spec, ctx).parts()
