"""Tencent Cloud GPU nodes: N pay-as-you-go CVM instances, or a spot pool (an auto scaling group over a
SPOTPAID launch configuration with several instance types) that replaces reclaimed nodes.

Every node: the CAM role (`cam_role_name`), an encrypted CBS data disk by tier, the cloud-side TTL, tags,
a placement group when there is more than one node, and a public address for outbound traffic only.

- TTL: each on-demand instance gets a `cvm.ActionTimer` TerminateInstances at expires_at (UTC, >= 5 min
  ahead). Auto scaling instances are not known when the program runs, so the pool gets an
  `as_.Schedule` at expires_at (UTC+8, as that API wants it) that sets min/max/desired to 0: auto
  scaling then terminates every node.
- Encryption in the pool: `as_.ScalingConfig` data disks have no `encrypt` argument in
  tencentcloud-iac-pulumi 0.2.3, so the pool's data disk is created from a snapshot of a small encrypted
  seed disk; CBS disks created from an encrypted snapshot are encrypted (CBS doc 362/33139).
- Placement group: Tencent's placement groups spread instances (anti-affinity), there is no
  low-latency kind for GPU families; type HOST is the loosest (one node per host, which an 8-GPU
  instance is anyway) and, unlike SW/RACK, does not force the nodes onto different switches or racks.
- Public address: outbound only (the security group admits members and sshAllowCidrs); nodes need
  it for the CVM API (self-release, peers) and the CUDA repository when the image has no driver.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pulumi
from tencentcloud_iac_pulumi import as_, cbs, cvm, images, key, placement
from tencentcloud_iac_pulumi import instance as cvm_instance

from components.naming import pool_name
from components.providers.part_records import (ComputeParts, IdentityParts, NetworkParts, NodeLaunch, PartContext,
                                               StorageParts, group_suffix, placement_groups)
from components.providers.nodes_part import NodesComponent
from components.providers.tencentcloud.profile import (INTERNET_CHARGE_TYPE, SEED_DISK_GB, extra_throughput,
                                                         public_bandwidth_mbps, spot_cap)
from components.spec import Spec

SYSTEM_DISK_GB = 100
SYSTEM_DISK_TYPE = "CLOUD_SSD"
UBUNTU = r"^Ubuntu Server 22\.04 LTS 64"
CST = timezone(timedelta(hours=8))


def image_id(spec: Spec) -> pulumi.Output:
    if spec.image:
        return pulumi.Output.from_input(spec.image)
    found = images.get_instance_output(image_types=["PUBLIC_IMAGE"], image_name_regex=UBUNTU,
                                       instance_type=spec.instance.name)
    return found.images.apply(lambda rows: rows[0].image_id if rows else _missing_image(spec))


def _missing_image(spec: Spec) -> str:
    raise pulumi.RunError(f"no public Ubuntu 22.04 image for {spec.instance.name} in {spec.region};"
                          " set gpu-training:image")


def price_string(value: float) -> str:
    """A decimal string as SPOTPAID wants it ("0.50"), never scientific notation."""
    return format(Decimal(str(value)).normalize(), "f")


def beijing_time(expires_at: str) -> str:
    moment = datetime.strptime(expires_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return moment.astimezone(CST).strftime("%Y-%m-%dT%H:%M:%S+08:00")


def host_name(spec: Spec, limit: int, suffix: str = "") -> str:
    # Linux host names: letters, digits, '-' and '.'; Pulumi stack names may also hold '_'.
    base = re.sub(r"[^A-Za-z0-9.-]", "-", f"gpu-{spec.stack}")
    return (base[: limit - len(suffix)] + suffix).strip("-.")


def key_pair_name(spec: Spec) -> str:
    # Key pair names: letters, digits and '_', at most 25 characters.
    return re.sub(r"[^A-Za-z0-9_]", "_", f"gt_{spec.stack}")[:25]


def node_options(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """User data is read by cloud-init at first boot only: a changed one (a new agent, train.command)
    is for nodes created after it; the running node's is left alone (the provider would rewrite it with
    ModifyInstancesAttribute, and replace the node if user_data_replace_on_change were set). A newer
    public image would reinstall a running node (ResetInstance; provider facts,
    instance_image_change_reinstalls_instance): it keeps the image it booted (docs/day2.md)."""
    return pulumi.ResourceOptions(parent=parent, ignore_changes=["userData", "imageId"])


class Nodes(NodesComponent):
    def __init__(self, spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
                 user_data: pulumi.Output, expires_at: pulumi.Output[str]):
        super().__init__("tencentcloud", ctx)
        key_ids = self.login_key(spec, ctx)
        # One group (profile.PLACEMENT: its member limit is the account's quota, not a published number).
        group_ids = placement_groups(spec, spec.profile.spot.has_pool(spec), lambda g: placement.Group(
            f"{ctx.name}-placement{group_suffix(g)}", name=f"gpu-training-{spec.stack}{group_suffix(g)}", type="HOST",
            tags=self.tags, opts=self.child).id)
        # Outbound-only public address (profile.py, "egress"): the CVM/AS APIs and the CUDA repository.
        public_bandwidth = public_bandwidth_mbps(spec)
        internet_charge = INTERNET_CHARGE_TYPE if public_bandwidth else None
        self.launch(NodeLaunch(spec, ctx, network, identity, user_data, expires_at, self.tags, image_id(spec), key_ids,
                               group_ids, public_bandwidth, internet_charge))

    def key_pair(self, spec: Spec, ctx: PartContext, public_key: str) -> list:
        pair = key.Pair(f"{ctx.name}-key", key_name=key_pair_name(spec), public_key=public_key, tags=self.tags,
                        opts=self.child)
        return [pair.id]

    def on_demand(self, launch: NodeLaunch) -> None:
        spec, disk = launch.spec, launch.spec.data_disk
        child = self.child
        for index in range(spec.nodes):
            node = cvm_instance.Instance(
                f"{launch.ctx.name}-node-{index}", instance_name=f"gpu-training-{spec.stack}-{index}",
                hostname=host_name(spec, 60, f"-{index}"), instance_type=spec.instance.name, image_id=launch.image,
                instance_charge_type="POSTPAID_BY_HOUR", availability_zone=launch.network.zone,
                vpc_id=launch.network.vpc_id, subnet_id=launch.network.subnet_ids[0],
                orderly_security_groups=[launch.network.security_group_id],
                system_disk_type=SYSTEM_DISK_TYPE, system_disk_size=SYSTEM_DISK_GB,
                data_disks=[cvm_instance.InstanceDataDiskArgs(
                    data_disk_type=disk.category, data_disk_size=disk.size_gb, encrypt=True,
                    delete_with_instance=True, throughput_performance=extra_throughput(disk),
                    data_disk_name=f"gpu-training-{spec.stack}-data-{index}")],
                user_data=launch.user_data, cam_role_name=launch.identity.role_name,
                placement_group_id=launch.group_of(index), key_ids=launch.key,
                allocate_public_ip=bool(launch.public_bandwidth), internet_charge_type=launch.internet_charge,
                internet_max_bandwidth_out=launch.public_bandwidth, disable_api_termination=False,
                tags=launch.tags, opts=node_options(self))
            # The last resort if the agent never releases the node: the cloud terminates it.
            cvm.ActionTimer(f"{launch.ctx.name}-node-{index}-ttl", instance_id=node.id,
                            action_timer=cvm.ActionTimerActionTimerArgs(timer_action="TerminateInstances",
                                                                        action_time=launch.expires_at),
                            opts=child)
            self.instance_ids.append(node.id)
            self.private_ips.append(node.private_ip)
            self.public_ips.append(node.public_ip)

    def spot_pool(self, launch: NodeLaunch) -> None:
        spec, disk = launch.spec, launch.spec.data_disk
        child = self.child
        seed = cbs.Storage(f"{launch.ctx.name}-seed-disk", storage_name=f"gpu-training-{spec.stack}-seed",
                           storage_type=disk.category, storage_size=SEED_DISK_GB, availability_zone=launch.network.zone,
                           charge_type="POSTPAID_BY_HOUR", encrypt=True, tags=launch.tags, opts=child)
        snapshot = cbs.Snapshot(f"{launch.ctx.name}-seed-snapshot", storage_id=seed.id,
                                snapshot_name=f"gpu-training-{spec.stack}-encrypted-seed", tags=launch.tags, opts=child)
        config = as_.ScalingConfig(
            f"{launch.ctx.name}-spot-config", configuration_name=f"gpu-training-{spec.stack}"[:60],
            instance_types=[row.name for row in spec.pool_types], image_id=launch.image,
            instance_charge_type="SPOTPAID", spot_instance_type="one-time",
            spot_max_price=price_string(spot_cap(spec)),
            system_disk_type=SYSTEM_DISK_TYPE, system_disk_size=SYSTEM_DISK_GB,
            data_disks=[as_.ScalingConfigDataDiskArgs(disk_type=disk.category, disk_size=disk.size_gb,
                                                      snapshot_id=snapshot.id, delete_with_instance=True)],
            security_group_ids=[launch.network.security_group_id], cam_role_name=launch.identity.role_name,
            user_data=launch.user_data, key_ids=launch.key, public_ip_assigned=bool(launch.public_bandwidth),
            internet_charge_type=launch.internet_charge, internet_max_bandwidth_out=launch.public_bandwidth,
            disaster_recover_group_ids=[launch.pool_group()] if launch.pool_group() else None,
            instance_name_settings=as_.ScalingConfigInstanceNameSettingsArgs(
                instance_name=f"gpu-training-{spec.stack}", instance_name_style="UNIQUE"),
            host_name_settings=as_.ScalingConfigHostNameSettingsArgs(
                host_name=host_name(spec, 40), host_name_style="UNIQUE"),
            instance_tags=launch.tags, tags=launch.tags, opts=child)
        group = as_.ScalingGroup(
            f"{launch.ctx.name}-spot-pool", scaling_group_name=pool_name(spec),
            configuration_id=config.id, vpc_id=launch.network.vpc_id,
            subnet_ids=list(launch.network.subnet_ids.values()),
            max_size=spec.nodes, min_size=0, desired_capacity=launch.pool_size(),
            multi_zone_subnet_policy="PRIORITY", retry_policy="INCREMENTAL_INTERVALS",
            termination_policies="NEWEST_INSTANCE", health_check_type="CVM", tags=launch.tags, opts=child)
        # The pool's TTL: at expires_at auto scaling brings the group to zero nodes.
        as_.Schedule(f"{launch.ctx.name}-spot-pool-ttl", scaling_group_id=group.id,
                     schedule_action_name=f"gpu-training-{spec.stack}-ttl"[:60],
                     start_time=pulumi.Output.from_input(launch.expires_at).apply(beijing_time),
                     min_size=0, max_size=0, desired_capacity=0,
                     opts=child)
        self.pool_id = group.id


def create(spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts, storage: StorageParts,
           user_data: pulumi.Output, expires_at: pulumi.Output[str]) -> ComputeParts:
    return Nodes(spec, ctx, network, identity, user_data, expires_at).parts()
