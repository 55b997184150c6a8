"""Huawei Cloud network: a VPC, one subnet per zone, and a security group without world-open ingress.

The group is created with `delete_default_rules` (Huawei's default group rules admit the group's own
members and open all egress; ours are explicit instead): all traffic between members (NCCL, torchrun,
the SFS Turbo share, which sits in the same group), SSH only from `sshAllowCidrs`, and all egress
(OBS, the ECS/AS APIs for self-release, package repositories).
"""
from __future__ import annotations

import ipaddress

import pulumi

from components import cidrs
from components.providers.part_records import NetworkParts, PartContext
from components.providers.huaweicloud.sdk import ecs, huaweicloud, vpc
from components.providers.network_part import VPC_CIDR, NetworkComponent
from components.providers.zones import ZoneError, pick_zone
from components.spec import Spec

ANYWHERE = "0.0.0.0/0"


def gateway_ip(index: int, nodes: int = 1) -> str:
    """The subnet's first address (Huawei's gateway_ip must lie in its CIDR)."""
    return str(next(ipaddress.ip_network(cidrs.subnet(VPC_CIDR, index, nodes)).hosts()))


def sells_flavor(spec: Spec, zone: str) -> bool:
    """The zone lists the flavor (ECS ListFlavors filtered by zone, vCPUs and memory)."""
    found = ecs.get_flavors(availability_zone=zone, cpu_core_count=spec.instance.vcpus,
                            memory_size=int(spec.instance.memory_gib))
    return any(flavor.id == spec.instance.name for flavor in found.flavors or [])


def primary_zone(spec: Spec) -> pulumi.Output:
    """spec.zone, else the first available zone of the region whose flavor list has the type; RunError if none."""
    if spec.zone:
        return pulumi.Output.from_input(spec.zone)
    names = huaweicloud.get_availability_zones_output(state="available").names
    return names.apply(lambda zones: _pick(spec, [z for z in zones or [] if z.startswith("<") or sells_flavor(spec, z)]))


def _pick(spec: Spec, zones: list[str]) -> str:
    try:
        return pick_zone(spec.region, spec.instance.name, zones, wanted=spec.zone)
    except ZoneError as error:
        raise pulumi.RunError(f"{error} ({'spot' if spec.spot else 'pay-per-use'})") from None


class Network(NetworkComponent):
    """A VPC, one subnet per zone (its gateway inside it), a security group without Huawei's default rules."""

    primary_zone = staticmethod(primary_zone)

    def make_vpc(self, spec: Spec, name: str) -> vpc.Vpc:
        return vpc.Vpc(f"{name}-vpc", name=f"gpu-training-{spec.stack}", cidr=VPC_CIDR, tags=self.tags, opts=self.child)

    def make_subnet(self, spec: Spec, name: str, index: int, zone, cidr: str) -> vpc.Subnet:
        return vpc.Subnet(f"{name}-subnet-{index}", vpc_id=self.vpc.id, availability_zone=zone, cidr=cidr,
                          gateway_ip=gateway_ip(index, spec.nodes), name=f"gpu-training-{spec.stack}-{index}",
                          tags=self.tags, opts=self.child)

    def make_security_group(self, spec: Spec, name: str) -> vpc.Secgroup:
        group = vpc.Secgroup(
            f"{name}-sg", name=f"gpu-training-{spec.stack}", delete_default_rules=True,
            description="gpu-training nodes: all traffic between members, SSH only from sshAllowCidrs", tags=self.tags,
            opts=self.child)
        vpc.SecgroupRule(f"{name}-sg-members", security_group_id=group.id, direction="ingress", ethertype="IPv4",
                         remote_group_id=group.id, description="members: NCCL, torchrun rendezvous, SFS Turbo",
                         opts=self.child)
        vpc.SecgroupRule(f"{name}-sg-egress", security_group_id=group.id, direction="egress", ethertype="IPv4",
                         remote_ip_prefix=ANYWHERE, description="outbound", opts=self.child)
        for index, cidr in enumerate(spec.ssh_allow_cidrs):
            vpc.SecgroupRule(f"{name}-sg-ssh-{index}", security_group_id=group.id, direction="ingress",
                             ethertype="IPv4", protocol="tcp", ports="22", remote_ip_prefix=cidr,
                             description="SSH from sshAllowCidrs", opts=self.child)
        return group


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network("huaweicloud", spec, ctx).parts()
