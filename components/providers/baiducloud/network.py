"""Baidu AI Cloud network: a VPC, one subnet in the stack's zone (one per spot zone for bid nodes), and a
security group that admits the VPC's own traffic (NCCL between members) and SSH only from sshAllowCidrs.

The zone is the stack's `zone` (validation requires it on Baidu: no zone lookup is built; profile.rules.checks).
"""
from __future__ import annotations

import pulumi

from components import cidrs
from components import tags as tags_scheme
from components.providers.baiducloud import dynamic
from components.providers.base import NetworkParts, PartContext
from components.spec import Spec

VPC_CIDR = cidrs.STACK_VPC


def security_rules(spec: Spec) -> list[dict]:
    """Members talk freely inside the VPC; SSH from each sshAllowCidrs entry only; all egress."""
    rules = [{"direction": "ingress", "protocol": "", "portRange": "", "sourceIp": VPC_CIDR, "ethertype": "IPv4",
              "remark": "members: NCCL, torchrun / paddle rendezvous"},
             {"direction": "egress", "protocol": "", "portRange": "", "destIp": "0.0.0.0/0", "ethertype": "IPv4",
              "remark": "outbound: packages, BOS, the BCC API"}]
    rules += [{"direction": "ingress", "protocol": "tcp", "portRange": "22", "sourceIp": cidr, "ethertype": "IPv4",
               "remark": "SSH from sshAllowCidrs"} for cidr in spec.ssh_allow_cidrs]
    return rules


class Network(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:baiducloud:Network", f"{ctx.name}-network", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        # Not the expiry tag: it moves with maxHours, and bce-python-sdk's VPC and subnet clients have no
        # call that changes a tag, so a changed tag would replace the network (dynamic.SCHEMAS).
        tags = {k: v for k, v in ctx.tags.items() if k != tags_scheme.EXPIRES_AT}
        self.zone = spec.zone
        self.vpc = dynamic.Vpc(f"{ctx.name}-vpc", {"name": f"gpu-training-{spec.stack}", "cidr": VPC_CIDR,
                                                  "description": "gpu-training nodes", "tags": tags},
                               spec.region, child)
        self.subnets, self.cidrs = {}, {}
        for index, zone, cidr in cidrs.stack_subnets(VPC_CIDR, spec.zone, spec):
            self.cidrs[index] = cidr
            self.subnets[index] = dynamic.Subnet(
                f"{ctx.name}-subnet-{index}", {"name": f"gpu-training-{spec.stack}-{index}", "zoneName": zone,
                                               "cidr": cidr, "vpcId": self.vpc.id, "tags": tags},
                spec.region, child)
        self.security_group = dynamic.SecurityGroup(
            f"{ctx.name}-sg", {"name": f"gpu-training-{spec.stack}", "vpcId": self.vpc.id,
                               "description": "gpu-training nodes: VPC traffic, SSH only from sshAllowCidrs",
                               "rules": security_rules(spec), "tags": tags}, spec.region, child)
        self.register_outputs({"vpcId": self.vpc.id, "securityGroupId": self.security_group.id})

    def parts(self) -> NetworkParts:
        return NetworkParts(vpc_id=self.vpc.id, subnet_ids={i: s.id for i, s in self.subnets.items()},
                            subnet_cidrs=dict(self.cidrs), security_group_id=self.security_group.id,
                            zone=pulumi.Output.from_input(self.zone))


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network(spec, ctx).parts()
