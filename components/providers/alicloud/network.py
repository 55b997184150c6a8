"""Alibaba Cloud network: a VPC, one vSwitch per zone, and a security group that lets members talk (NCCL)."""
from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components import cidrs
from components.providers.alicloud.profile import CPFS_STORAGE_TYPE
from components.providers.base import NetworkParts, PartContext
from components.providers.zones import ZoneError, pick_zone
from components.spec import Spec

VPC_CIDR = cidrs.STACK_VPC


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


class Network(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:alicloud:Network", f"{ctx.name}-network", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(ctx.tags)
        self.zone = primary_zone(spec)
        self.vpc = alicloud.vpc.Network(f"{ctx.name}-vpc", vpc_name=f"gpu-training-{spec.stack}",
                                        cidr_block=VPC_CIDR, tags=tags, opts=child)
        self.switches = {}
        self.cidrs = {}
        for index, zone, cidr in cidrs.stack_subnets(VPC_CIDR, self.zone, spec):
            self.cidrs[index] = cidr
            self.switches[index] = alicloud.vpc.Switch(
                f"{ctx.name}-vswitch-{index}", vpc_id=self.vpc.id, cidr_block=cidr, zone_id=zone,
                vswitch_name=f"gpu-training-{spec.stack}-{index}", tags=tags, opts=child)
        self.security_group = alicloud.ecs.SecurityGroup(
            f"{ctx.name}-sg", vpc_id=self.vpc.id, security_group_name=f"gpu-training-{spec.stack}",
            description="gpu-training nodes: all traffic between members, SSH only from sshAllowCidrs",
            tags=tags, opts=child)
        alicloud.ecs.SecurityGroupRule(
            f"{ctx.name}-sg-members", type="ingress", ip_protocol="all", port_range="-1/-1", nic_type="intranet",
            policy="accept", source_security_group_id=self.security_group.id,
            security_group_id=self.security_group.id, description="NCCL, torchrun rendezvous, shared FS",
            opts=child)
        for index, cidr in enumerate(spec.ssh_allow_cidrs):
            alicloud.ecs.SecurityGroupRule(
                f"{ctx.name}-sg-ssh-{index}", type="ingress", ip_protocol="tcp", port_range="22/22",
                nic_type="intranet", policy="accept", cidr_ip=cidr, security_group_id=self.security_group.id,
                description="SSH from sshAllowCidrs", opts=child)
        self.register_outputs({"vpcId": self.vpc.id, "securityGroupId": self.security_group.id})

    def parts(self) -> NetworkParts:
        return NetworkParts(vpc_id=self.vpc.id,
                            subnet_ids={i: s.id for i, s in self.switches.items()},
                            subnet_cidrs=dict(self.cidrs), security_group_id=self.security_group.id,
                            zone=self.zone)


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network(spec, ctx).parts()
