"""Alibaba Cloud network: a VPC, one vSwitch per zone, and a security group that lets members talk (NCCL)."""
from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.providers.alicloud.profile import CPFS_STORAGE_TYPE
from components.providers.part_records import NetworkParts, PartContext
from components.providers.network_part import VPC_CIDR, NetworkComponent
from components.providers.zones import ZoneError, pick_zone
from components.spec import Spec


def primary_zone(spec: Spec) -> pulumi.Output:
    """A zone that sells the instance type now (and CPFS, with sharedStorage cpfs); RunError if none does."""
    fs_zones = None
    if spec.shared_storage == "cpfs":
        # Zones selling CPFS of our storage type (nas.get_zones, NAS API DescribeZones FileSystemType=cpfs).
        fs_zones = alicloud.nas.get_zones_output(file_system_type="cpfs").zones.apply(
            lambda found: [z.zone_id for z in found if any(t.storage_type == CPFS_STORAGE_TYPE for t in z.instance_types)])
    elif spec.zone:
        return pulumi.Output.from_input(spec.zone)
    # The zones where the instance type can be created right now.
    instance_zones = alicloud.get_zones_output(available_instance_type=spec.instance.name,
                                               available_resource_creation="VSwitch").zones.apply(
        lambda found: [z.id for z in found])
    return pulumi.Output.all(instance_zones, fs_zones).apply(lambda v: _pick(spec, v[0], v[1]))


def _pick(spec: Spec, instance_zones, fs_zones) -> str:
    try:
        return pick_zone(spec.region, spec.instance.name, instance_zones, wanted=spec.zone,
                         fs_kind="CPFS (advance_100)", fs_zones=fs_zones)
    except ZoneError as error:
        raise pulumi.RunError(str(error)) from None


class Network(NetworkComponent):
    """A VPC, one vSwitch per zone, a security group whose rules admit the members and SSH from sshAllowCidrs."""

    primary_zone = staticmethod(primary_zone)

    def make_vpc(self, spec: Spec, name: str) -> alicloud.vpc.Network:
        return alicloud.vpc.Network(f"{name}-vpc", vpc_name=f"gpu-training-{spec.stack}", cidr_block=VPC_CIDR,
                                    tags=self.tags, opts=self.child)

    def make_subnet(self, spec: Spec, name: str, index: int, zone, cidr: str) -> alicloud.vpc.Switch:
        return alicloud.vpc.Switch(f"{name}-vswitch-{index}", vpc_id=self.vpc.id, cidr_block=cidr, zone_id=zone,
                                   vswitch_name=f"gpu-training-{spec.stack}-{index}", tags=self.tags, opts=self.child)

    def make_security_group(self, spec: Spec, name: str) -> alicloud.ecs.SecurityGroup:
        group = alicloud.ecs.SecurityGroup(
            f"{name}-sg", vpc_id=self.vpc.id, security_group_name=f"gpu-training-{spec.stack}",
            description="gpu-training nodes: all traffic between members, SSH only from sshAllowCidrs",
            tags=self.tags, opts=self.child)
        alicloud.ecs.SecurityGroupRule(
            f"{name}-sg-members", type="ingress", ip_protocol="all", port_range="-1/-1", nic_type="intranet",
            policy="accept", source_security_group_id=group.id, security_group_id=group.id,
            description="NCCL, torchrun rendezvous, shared FS", opts=self.child)
        for index, cidr in enumerate(spec.ssh_allow_cidrs):
            alicloud.ecs.SecurityGroupRule(
                f"{name}-sg-ssh-{index}", type="ingress", ip_protocol="tcp", port_range="22/22",
                nic_type="intranet", policy="accept", cidr_ip=cidr, security_group_id=group.id,
                description="SSH from sshAllowCidrs", opts=self.child)
        return group


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network("alicloud", spec, ctx).parts()
