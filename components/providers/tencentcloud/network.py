"""Tencent Cloud network: a VPC, one subnet per zone, and a security group that lets members talk (NCCL).

Rules are one `security.GroupRuleSet` (the whole rule list of the group); the SDK forbids mixing it
with `GroupRule`/`GroupLiteRule`, so nothing else adds rules to this group.
"""
from __future__ import annotations

import pulumi
from tencentcloud_iac_pulumi import instance as cvm_instance
from tencentcloud_iac_pulumi import security, subnet, vpc

from components.providers.base import NetworkParts, PartContext
from components.providers.tencentcloud.profile import TURBO
from components.spec import Spec

VPC_CIDR = "10.42.0.0/16"
# CFS Turbo sits in its own range on the CCN; it must not overlap anything bound to the CCN.
TURBO_CIDR = "10.43.0.0/24"
ANYWHERE = "0.0.0.0/0"


def subnet_cidr(index: int) -> str:
    return f"10.42.{index}.0/24"


def primary_zone(spec: Spec) -> pulumi.Output:
    if spec.zone:
        return pulumi.Output.from_input(spec.zone)
    # DescribeZoneInstanceConfigInfos filters by family, not by type: keep the row of our exact type.
    family = spec.instance.name.split(".")[0]
    charge = "SPOTPAID" if spec.spot else "POSTPAID_BY_HOUR"
    found = cvm_instance.get_types_output(
        filters=[cvm_instance.GetTypesFilterArgs(name="instance-family", values=[family]),
                 cvm_instance.GetTypesFilterArgs(name="instance-charge-type", values=[charge])],
        exclude_sold_out=True)
    return found.instance_types.apply(lambda rows: _zone_of(rows, spec))


def _zone_of(rows, spec: Spec) -> str:
    for row in rows or []:
        if row.instance_type == spec.instance.name:
            return row.availability_zone
    raise pulumi.RunError(f"no zone in {spec.region} sells {spec.instance.name} ({'spot' if spec.spot else 'pay-as-you-go'})"
                          " right now; set gpu-training:zone or pick another instanceType")


def ingress_rules(spec: Spec, group_id: pulumi.Input[str]) -> list:
    rules = [security.GroupRuleSetIngressArgs(
        action="ACCEPT", protocol="ALL", port="ALL", source_security_id=group_id,
        description="members: NCCL, torchrun rendezvous")]
    if spec.shared_storage == TURBO:
        rules.append(security.GroupRuleSetIngressArgs(
            action="ACCEPT", protocol="TCP", port="988", cidr_block=TURBO_CIDR,
            description="CFS Turbo (Lustre LNet, port 988) from the file system's CCN range"))
    for cidr in spec.ssh_allow_cidrs:
        rules.append(security.GroupRuleSetIngressArgs(
            action="ACCEPT", protocol="TCP", port="22", cidr_block=cidr, description="SSH from sshAllowCidrs"))
    return rules


class Network(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:tencentcloud:Network", f"{ctx.name}-network", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(ctx.tags)
        self.zone = primary_zone(spec)
        self.vpc = vpc.Instance(f"{ctx.name}-vpc", name=f"gpu-training-{spec.stack}", cidr_block=VPC_CIDR,
                                tags=tags, opts=child)
        zones = [self.zone] + [pulumi.Output.from_input(z) for z in (spec.spot_zones if spec.spot else ())]
        self.subnets = {}
        self.cidrs = {}
        for index, zone in enumerate(zones):
            self.subnets[index] = subnet.Instance(
                f"{ctx.name}-subnet-{index}", vpc_id=self.vpc.id, availability_zone=zone,
                cidr_block=subnet_cidr(index), name=f"gpu-training-{spec.stack}-{index}", tags=tags, opts=child)
            self.cidrs[index] = subnet_cidr(index)
        self.security_group = security.Group(
            f"{ctx.name}-sg", name=f"gpu-training-{spec.stack}",
            description="gpu-training nodes: all traffic between members, SSH only from sshAllowCidrs",
            tags=tags, opts=child)
        # Egress stays open: mirrors, COS, the CVM API (self-release) and the CUDA repository.
        security.GroupRuleSet(
            f"{ctx.name}-sg-rules", security_group_id=self.security_group.id,
            ingresses=ingress_rules(spec, self.security_group.id),
            egresses=[security.GroupRuleSetEgressArgs(action="ACCEPT", protocol="ALL", port="ALL",
                                                      cidr_block=ANYWHERE, description="outbound")],
            opts=child)
        self.register_outputs({"vpcId": self.vpc.id, "securityGroupId": self.security_group.id})

    def parts(self) -> NetworkParts:
        return NetworkParts(vpc_id=self.vpc.id,
                            subnet_ids={i: s.id for i, s in self.subnets.items()},
                            subnet_cidrs=dict(self.cidrs), security_group_id=self.security_group.id,
                            zone=self.zone)


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network(spec, ctx).parts()
