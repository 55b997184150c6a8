"""Alibaba Cloud GPU nodes: N pay-as-you-go ECS instances, or a spot pool (an auto provisioning group
of type maintain over a launch template) that replaces reclaimed nodes. Every node: hardened
metadata (tokens required), encrypted ESSD disks, the node role, the cloud-side release time."""
from __future__ import annotations

import hashlib
import json

import pulumi
import pulumi_alicloud as alicloud

from components.naming import pool_name
from components.providers.alicloud.identity import grant_pool_retire
from components.providers.alicloud.profile import INTERNET_CHARGE_TYPE, public_bandwidth_mbps
from components.providers.part_records import (ComputeParts, IdentityParts, NetworkParts, NodeLaunch, PartContext,
                                               StorageParts, group_suffix, placement_groups)
from components.providers.nodes_part import NodesComponent
from components.spec import Spec

SYSTEM_DISK_GB = 100


def image_id(spec: Spec) -> pulumi.Output:
    if spec.image:
        return pulumi.Output.from_input(spec.image)
    images = alicloud.ecs.get_images_output(name_regex=r"^ubuntu_22_04_x64", owners="system", most_recent=True,
                                            instance_type=spec.instance.name)
    return images.images.apply(lambda found: found[0].id if found else _missing_image(spec))


def _missing_image(spec: Spec) -> str:
    raise pulumi.RunError(f"no Ubuntu 22.04 public image for {spec.instance.name} in {spec.region};"
                          " set gpu-training:image")


def on_demand_price(spec: Spec, instance_type: str) -> pulumi.Output:
    """The price cap for one pool type: the user's cap, else the on-demand price (the account's as the signed
    price API read it, or the cloud's at deploy time; never a list price from the price book, which may be old)."""
    row = next(t for t in spec.pool_types if t.name == instance_type)
    account = row.price.account_price
    if spec.spot_max_price is not None:
        cap = spec.spot_max_price if account is None else min(spec.spot_max_price, account)
        return pulumi.Output.from_input(f"{cap:g}")
    if account is not None:
        return pulumi.Output.from_input(f"{account:g}")
    # Not read for the account: ask the cloud for the pay-as-you-go price at deploy time.
    types = alicloud.ecs.get_instance_types_output(instance_type=instance_type, instance_charge_type="PostPaid",
                                                   sorted_by="Price")
    return types.instance_types.apply(lambda found: _price_or_fail(found, instance_type))


def _price_or_fail(found, instance_type: str) -> str:
    price = found[0].price if found else None
    if price:
        return str(price)
    if pulumi.runtime.is_dry_run():
        return "on-demand price (read from DescribeInstanceTypes at deploy time)"
    raise pulumi.RunError(f"the on-demand price of {instance_type} is unknown here and Alibaba returned none;"
                          " set gpu-training:spotMaxPricePerHour")


def node_options(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """A node's user data is read by cloud-init at first boot only, and a change of it makes the provider
    stop and start the running instance (provider facts, instance_user_data_change_stops_instance): a
    new agent or train.command reaches nodes created after it, never a running one. The image lookup
    finds the newest public image, and a changed image_id replaces the instance (its CustomizeDiff):
    a running node keeps the image it booted (docs/day2.md)."""
    return pulumi.ResourceOptions(parent=parent, ignore_changes=["userData", "imageId"])


def pool_options(parent: pulumi.Resource, spec: Spec) -> pulumi.ResourceOptions:
    """The provider reads a pool's launch template configs back as one (provider facts,
    apg_reads_back_one_launch_template_config), and they are ForceNew: compared as read, a pool of two
    types would be replaced, its nodes terminated, on every `pulumi up`. So they are not compared;
    what they are meant to be (types, zones, the user's price cap; not the price looked up at deploy
    time) is the replacement trigger, and a real change of it still replaces the pool."""
    meant = {"types": [row.name for row in spec.pool_types], "zones": [spec.zone, *spec.spot_zones],
             "cap": spec.spot_max_price}
    digest = hashlib.sha256(json.dumps(meant, sort_keys=True).encode()).hexdigest()[:16]
    return pulumi.ResourceOptions(parent=parent, ignore_changes=["launchTemplateConfigs"],
                                  replacement_trigger=f"launch template configs {digest}")


def deployment_set(spec: Spec, ctx: PartContext, group: int, opts: pulumi.ResourceOptions,
                   description: str = "keep the training nodes close for NCCL") -> pulumi.Output:
    """Placement group `group` (0, 1, ...): group 0 keeps the name a stack of at most 20 nodes has."""
    suffix = group_suffix(group)
    return alicloud.ecs.EcsDeploymentSet(
        f"{ctx.name}-placement{suffix}", strategy="LowLatency",
        deployment_set_name=f"gpu-training-{spec.stack}{suffix}", description=description, opts=opts).id


def _data_disk(spec: Spec):
    disk = spec.data_disk
    return dict(size=disk.size_gb, category=disk.category, performance_level=disk.performance_level,
                encrypted=True, delete_with_instance=True, name=f"gpu-training-{spec.stack}-data",
                description="gpu-training data disk (/data); checkpoints are synced to object storage")


class Nodes(NodesComponent):
    def __init__(self, spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
                 user_data: pulumi.Output, expires_at: pulumi.Output[str]):
        super().__init__("alicloud", ctx)
        key_name = self.login_key(spec, ctx)
        # One LowLatency set holds at most 20 nodes (profile.PLACEMENT): more on-demand nodes take several.
        deployment_set_ids = placement_groups(spec, spec.profile.spot.has_pool(spec),
                                              lambda g: deployment_set(spec, ctx, g, self.child))
        # Outbound-only public address (profile.py, "egress"): the CUDA repository and other downloads.
        public_bandwidth = public_bandwidth_mbps(spec)
        internet_charge = INTERNET_CHARGE_TYPE if public_bandwidth else None
        self.launch(NodeLaunch(spec, ctx, network, identity, user_data, expires_at, self.tags, image_id(spec), key_name,
                               deployment_set_ids, public_bandwidth, internet_charge))

    def key_pair(self, spec: Spec, ctx: PartContext, public_key: str) -> pulumi.Output:
        return alicloud.ecs.EcsKeyPair(f"{ctx.name}-key", key_pair_name=f"gpu-training-{spec.stack}",
                                       public_key=public_key, tags=self.tags, opts=self.child).key_pair_name

    def on_demand(self, launch: NodeLaunch) -> None:
        spec = launch.spec
        for index in range(spec.nodes):
            instance = alicloud.ecs.Instance(
                f"{launch.ctx.name}-node-{index}", instance_name=f"gpu-training-{spec.stack}-{index}",
                host_name=f"gpu-{spec.stack}-{index}"[:60], instance_type=spec.instance.name, image_id=launch.image,
                instance_charge_type="PostPaid", spot_strategy="NoSpot", availability_zone=launch.network.zone,
                vswitch_id=launch.network.subnet_ids[0], security_groups=[launch.network.security_group_id],
                system_disk_category="cloud_essd", system_disk_size=SYSTEM_DISK_GB, system_disk_encrypted=True,
                data_disks=[alicloud.ecs.InstanceDataDiskArgs(**_data_disk(spec))],
                user_data=launch.user_data, http_tokens="required", http_endpoint="enabled",
                auto_release_time=launch.expires_at, deployment_set_id=launch.group_of(index), key_name=launch.key,
                internet_max_bandwidth_out=launch.public_bandwidth, internet_charge_type=launch.internet_charge,
                tags=launch.tags, volume_tags=launch.tags,
                role_name=launch.identity.role_name, opts=node_options(self))
            self.instance_ids.append(instance.id)
            self.private_ips.append(instance.private_ip)
            self.public_ips.append(instance.public_ip)

    def spot_pool(self, launch: NodeLaunch) -> None:
        spec = launch.spec
        child = self.child
        template = alicloud.ecs.EcsLaunchTemplate(
            f"{launch.ctx.name}-template", launch_template_name=f"gpu-training-{spec.stack}",
            instance_name=f"gpu-training-{spec.stack}", host_name=f"gpu-{spec.stack}"[:60],
            instance_type=spec.instance.name, image_id=launch.image, instance_charge_type="PostPaid",
            spot_strategy="SpotWithPriceLimit" if spec.spot_max_price is not None else "SpotAsPriceGo",
            spot_price_limit=spec.spot_max_price, spot_duration="1", zone_id=launch.network.zone,
            vpc_id=launch.network.vpc_id, vswitch_id=launch.network.subnet_ids[0],
            security_group_ids=[launch.network.security_group_id], ram_role_name=launch.identity.role_name,
            key_pair_name=launch.key, deployment_set_id=launch.pool_group(),
            system_disk=alicloud.ecs.EcsLaunchTemplateSystemDiskArgs(
                category="cloud_essd", size=SYSTEM_DISK_GB, encrypted=True, delete_with_instance=True),
            data_disks=[alicloud.ecs.EcsLaunchTemplateDataDiskArgs(**_data_disk(spec))],
            user_data=launch.user_data, http_tokens="required", http_endpoint="enabled",
            auto_release_time=launch.expires_at,
            internet_max_bandwidth_out=launch.public_bandwidth, internet_charge_type=launch.internet_charge,
            tags=launch.tags, template_tags=launch.tags,
            update_default_version_number=True, opts=child)
        configs = []
        for subnet in launch.network.subnet_ids.values():
            for type_index, row in enumerate(spec.pool_types):
                configs.append(alicloud.ecs.AutoProvisioningGroupLaunchTemplateConfigArgs(
                    instance_type=row.name, vswitch_id=subnet, max_price=on_demand_price(spec, row.name),
                    weighted_capacity="1", priority=str(type_index)))
        pool = alicloud.ecs.AutoProvisioningGroup(
            f"{launch.ctx.name}-spot-pool", auto_provisioning_group_name=pool_name(spec),
            auto_provisioning_group_type="maintain", launch_template_id=template.id,
            launch_template_configs=configs, total_target_capacity=str(spec.nodes),
            spot_target_capacity=str(spec.nodes), pay_as_you_go_target_capacity="0",
            default_target_capacity_type="Spot", spot_allocation_strategy="lowest-price",
            spot_instance_interruption_behavior="terminate", excess_capacity_termination_policy="termination",
            valid_until=launch.expires_at, terminate_instances_with_expiration=True, terminate_instances=True,
            description=f"gpu-training {spec.stack}: spot nodes, replaced when reclaimed",
            opts=pool_options(self, spec))
        self.pool_id = pool.id
        # Created after the pool so the role may delete exactly this pool (the agent retires it).
        grant_pool_retire(spec, launch.ctx, launch.identity.role_name, pool.id)


def create(spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts, storage: StorageParts,
           user_data: pulumi.Output, expires_at: pulumi.Output[str]) -> ComputeParts:
    return Nodes(spec, ctx, network, identity, user_data, expires_at).parts()
