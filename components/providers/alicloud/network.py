"""Alibaba Cloud network: a VPC, one vSwitch per zone, and a security group that lets members talk (NCCL)."""
from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.providers.base import NetworkParts, PartContext
from components.spec import Spec

VPC_CIDR = "10.42.0.0/16"


def subnet_cidr(index: int) -> str:
    return f"10.42.{index}.0/24"


def primary_zone(spec: Spec) -> pulumi.Output:
    if spec.zone:
        return pulumi.Output.from_input(spec.zone)
    # The first zone where the instance type can be created right now.
    zones = alicloud.get_zones_output(available_instance_type=spec.instance.name,
                                      available_resource_creation="VSwitch")
    return zones.zones.apply(lambda found: found[0].id if found else _no_zone(spec))


def _no_zone(spec: Spec) -> str:
    raise pulumi.RunError(f"no zone in {spec.region} offers {spec.instance.name}; set gpu-training:zone"
                          " or pick another instanceType")


class Network(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:alicloud:Network", f"{ctx.name}-network", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(ctx.tags)
        self.zone = primary_zone(spec)
        self.vpc = alicloud.vpc.Network(f"{ctx.name}-vpc", vpc_name=f"gpu-training-{spec.stack}",
                                        cidr_block=VPC_CIDR, tags=tags, opts=child)
        zones = [self.zone] + [pulumi.Output.from_input(z) for z in (spec.spot_zones if spec.spot else ())]
        self.switches = {}
        self.cidrs = {}
        for index, zone in enumerate(zones):
            switch = alicloud.vpc.Switch(f"{ctx.name}-vswitch-{index}", vpc_id=self.vpc.id,
                                         cidr_block=subnet_cidr(index), zone_id=zone,
                                         vswitch_name=f"gpu-training-{spec.stack}-{index}", tags=tags, opts=child)
            self.switches[index] = switch
            self.cidrs[index] = subnet_cidr(index)
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
