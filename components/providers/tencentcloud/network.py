"""Tencent Cloud network: a VPC, one subnet per zone, and a security group that lets members talk (NCCL).

Rules are one `security.GroupRuleSet` (the whole rule list of the group); the SDK forbids mixing it
with `GroupRule`/`GroupLiteRule`, so nothing else adds rules to this group.
"""
from __future__ import annotations

import pulumi
from typing import Optional

from tencentcloud_iac_pulumi import cfs
from tencentcloud_iac_pulumi import instance as cvm_instance
from tencentcloud_iac_pulumi import security, subnet, vpc

from components.providers.part_records import NetworkParts, PartContext
from components.providers.network_part import VPC_CIDR, NetworkComponent
from components.providers.tencentcloud.profile import TURBO, TURBO_STORAGE_TYPE
from components.providers.zones import ZoneError, pick_zone
from components.spec import Spec

# CFS Turbo sits in its own range on the CCN; it must not overlap anything bound to the CCN.
TURBO_CIDR = "10.43.0.0/24"
ANYWHERE = "0.0.0.0/0"


def primary_zone(spec: Spec) -> pulumi.Output:
    """A zone that sells the instance type now (and CFS Turbo TP, with sharedStorage cfsturbo); RunError if none."""
    fs_zones = None
    if spec.shared_storage == TURBO:
        fs_zones = cfs.get_available_zone_output().region_zones.apply(lambda regions: turbo_zones(regions, spec))
    elif spec.zone:
        return pulumi.Output.from_input(spec.zone)
    # DescribeZoneInstanceConfigInfos filters by family, not by type: keep the rows of our exact type.
    family = spec.instance.name.split(".")[0]
    charge = "SPOTPAID" if spec.spot else "POSTPAID_BY_HOUR"
    found = cvm_instance.get_types_output(
        filters=[cvm_instance.GetTypesFilterArgs(name="instance-family", values=[family]),
                 cvm_instance.GetTypesFilterArgs(name="instance-charge-type", values=[charge])],
        exclude_sold_out=True)
    instance_zones = found.instance_types.apply(
        lambda rows: list(dict.fromkeys(r.availability_zone for r in rows or [] if r.instance_type == spec.instance.name)))
    return pulumi.Output.all(instance_zones, fs_zones).apply(lambda v: _pick(spec, v[0], v[1]))


def turbo_zones(regions, spec: Spec) -> Optional[list[str]]:
    """Zones of the region where CFS Turbo TP is on sale (DescribeAvailableZoneInfo); None if it lists no Turbo.

    The data source documents the classes SD and HP only; when the region's answer names no Turbo class
    at all, the zone cannot be checked here, which is said instead of guessed.
    """
    zones, listed = [], False
    for region in regions or []:
        if region.region != spec.region:
            continue
        for zone in region.zones or []:
            for kind in zone.types or []:
                if kind.type == TURBO_STORAGE_TYPE:
                    listed = True
                    if any(p.sale_status == "saling" for p in kind.protocols or []):
                        zones.append(zone.zone)
    if not listed:
        pulumi.log.warn(f"CFS Turbo ({TURBO_STORAGE_TYPE}): DescribeAvailableZoneInfo lists no Turbo class in"
                        f" {spec.region}; the zone is not checked against where Turbo is sold")
        return None
    return zones


def _pick(spec: Spec, instance_zones, fs_zones) -> str:
    try:
        return pick_zone(spec.region, spec.instance.name, instance_zones, wanted=spec.zone,
                         fs_kind=f"CFS Turbo ({TURBO_STORAGE_TYPE})", fs_zones=fs_zones)
    except ZoneError as error:
        raise pulumi.RunError(f"{error} ({'spot' if spec.spot else 'pay-as-you-go'})") from None


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


class Network(NetworkComponent):
    """A VPC, one subnet per zone, a security group whose one rule set admits the members, CFS Turbo's range and
    SSH from sshAllowCidrs."""

    primary_zone = staticmethod(primary_zone)

    def make_vpc(self, spec: Spec, name: str) -> vpc.Instance:
        return vpc.Instance(f"{name}-vpc", name=f"gpu-training-{spec.stack}", cidr_block=VPC_CIDR, tags=self.tags,
                            opts=self.child)

    def make_subnet(self, spec: Spec, name: str, index: int, zone, cidr: str) -> subnet.Instance:
        return subnet.Instance(f"{name}-subnet-{index}", vpc_id=self.vpc.id, availability_zone=zone, cidr_block=cidr,
                               name=f"gpu-training-{spec.stack}-{index}", tags=self.tags, opts=self.child)

    def make_security_group(self, spec: Spec, name: str) -> security.Group:
        group = security.Group(
            f"{name}-sg", name=f"gpu-training-{spec.stack}",
            description="gpu-training nodes: all traffic between members, SSH only from sshAllowCidrs",
            tags=self.tags, opts=self.child)
        # Egress stays open: mirrors, COS, the CVM API (self-release) and the CUDA repository.
        security.GroupRuleSet(
            f"{name}-sg-rules", security_group_id=group.id, ingresses=ingress_rules(spec, group.id),
            egresses=[security.GroupRuleSetEgressArgs(action="ACCEPT", protocol="ALL", port="ALL",
                                                      cidr_block=ANYWHERE, description="outbound")],
            opts=self.child)
        return group


def create(spec: Spec, ctx: PartContext) -> NetworkParts:
    return Network("tencentcloud", spec, ctx).parts()
