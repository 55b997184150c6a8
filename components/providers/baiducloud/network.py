"""Baidu AI Cloud network: a VPC, one subnet in the stack's zone (one per spot zone for bid nodes), and a
security group that admits the VPC's own traffic (NCCL between members) and SSH only from sshAllowCidrs.

The zone is the stack's `zone` (validation requires it on Baidu: no zone lookup is built; profile.rules.checks).
"""
from __future__ import annotations

from components import tags as tags_scheme
from components.providers.baiducloud import dynamic
from components.providers.part_records import NetworkParts, PartContext
from components.providers.network_part import VPC_CIDR, NetworkComponent
from components.spec import Spec


def security_rules(spec: Spec) -> list[dict]:
    """Members talk freely inside the VPC; SSH from each sshAllowCidrs entry only; all egress."""
    rules = [{"direction": "ingress", "protocol": "", "portRange": "", "sourceIp": VPC_CIDR, "ethertype": "IPv4",
              "remark": "members: NCCL, torchrun / paddle rendezvous"},
             {"direction": "egress", "protocol": "", "portRange": "", "destIp": "0.0.0.0/0", "ethertype": "IPv4",
              "remark": "outbound: packages, BOS, the BCC API"}]
    rules += [{"direction": "ingress", "protocol": "tcp", "portRange": "22", "sourceIp": cidr, "ethertype": "IPv4",
               "remark": "SSH from sshAllowCidrs"} for cidr in spec.ssh_allow_cidrs]
    return rules


class Network(NetworkComponent):
    """A VPC, one subnet per zone, a security group whose rules admit the VPC's traffic and SSH from sshAllowCidrs."""

    def stack_tags(self, ctx: PartContext) -> dict:
        # Not the expiry tag: it moves with maxHours, and bce-python-sdk's VPC and subnet clients have no
        # call that changes a tag, so a changed tag would replace the network (dynamic.SCHEMAS).
        return {k: v for k, v in ctx.tags.items() if k != tags_scheme.EXPIRES_AT}

    def primary_zone(self, spec: Spec) -> str:
        return spec.zone  # validation requires it on Baidu (profile.rules.checks)

    def make_vpc(self, spec: Spec, name: str) -> dynamic.Vpc:
        return dynamic.Vpc(f"{name}-vpc", {"name": f"gpu-training-{spec.stack}", "cidr": VPC_CIDR,
                                           "description": "gpu-training nodes", "tags": self.tags},
                           spec.region, self.child)

    def make_subnet(self, spec: Spec, name: str, index: int, zone: str, cidr: str) -> dynamic.Subnet:
        return dynamic.Subnet(f"{name}-subnet-{index}", {"name": f"gpu-training-{spec.stack}-{index}", "zoneName": zone,
                                                         "cidr": cidr, "vpcId": self.vpc.id, "tags": self.tags},
                              spec.region, self.child)

    def make_security_group(self, spec: Spec, name: str) -> dynamic.SecurityGroup:
        return dynamic.SecurityGroup(
            f"{name}-sg", {"name": f"gpu-training-{spec.stack}", "vpcId": self.vpc.id,
                           "description": "gpu-training nodes: VPC traffic, SSH only from sshAllowCidrs",
                           "rules": security_rules(spec), "tags": self.tags}, spec.region, self.child)


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network("baiducloud", spec, ctx).parts()
