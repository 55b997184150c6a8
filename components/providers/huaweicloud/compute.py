"""Huawei Cloud GPU nodes: N pay-per-use ECSs; or, on spot, a spot pool (an AS group over a spot AS
configuration with up to ten flavors) that replaces reclaimed nodes; or, with spotMaxPricePerHour, N
single spot ECSs capped at that price (an AS configuration takes no spot price; the ECS resource does:
`charging_mode = "spot"` with `spot_maximum_price`, resource_huaweicloud_compute_instance.go:418-436,
sent as extendparam marketType/spotPrice at :650-652, v1.73.3). Capped nodes are not replaced when
reclaimed, and have no cloud-side TTL (auto_terminate_time is pay-per-use only): the preview says so,
and a `pulumi up` past expires_at stops instead of starting them again.

Every node: the agency (`agency_name`; on the AS group for the pool), SSD disks by tier encrypted with
the stack's KMS key (system and data disks), the stack's tags, an anti-affinity server group when
there is more than one node, and an EIP for outbound traffic only (released with the node).

- TTL on demand: `auto_terminate_time` at expires_at (UTC, "yyyy-MM-ddTHH:mm:ssZ", >= 30 minutes
  ahead; pay-per-use only: terraform-provider-huaweicloud v1.73.3 docs/resources/compute_instance.md).
- TTL of the pool: spot ECSs take no auto_terminate_time, so the pool gets an AS policy of type
  SCHEDULED at expires_at ("YYYY-MM-DDThh:mmZ", UTC; docs/resources/as_policy.md) that SETs the
  group to 0 instances; the group deletes what it removes (delete_instances "yes", with their EIPs and
  disks). The agent's own TTL and scripts/run.py's destroy remain the backstop (the preview says so).
  A policy that has fired does not fire again, so a `pulumi up` after expires_at (less than 30
  minutes before it) asks for 0 instances instead of `nodes`: no spot GPU starts past its TTL.
- Login key of the pool: an AS configuration with user data and no key_name injects the user data as
  the root password (docs/resources/as_configuration.md:256-258), so the pool always names a key
  pair: the user's sshPublicKey, or a public key made at the first `pulumi up` whose private half is
  discarded (components/generated_key.py). SSH stays closed unless sshAllowCidrs opens it.
- Server groups: only `anti-affinity` (docs/resources/compute_servergroup.md): nodes are spread, not
  packed; no low-latency placement exists for these flavors (a preview finding for multi-node stacks).
"""
from __future__ import annotations

import re

import pulumi

from components import clock
from components.generated_key import GeneratedPublicKey
from components.naming import pool_name
from components.providers.part_records import (ComputeParts, IdentityParts, NetworkParts, NodeLaunch, PartContext,
                                               StorageParts, group_suffix, placement_groups)
from components.providers.nodes_part import NodesComponent
from components.providers.huaweicloud.profile import (AS_MAX_FLAVORS, capped_spot, disk_iops, disk_throughput,
                                                      public_bandwidth_mbps)
from components.providers.huaweicloud.sdk import as_, dew, ecs, ims
from components.spec import Spec

SYSTEM_DISK_GB = 100
SYSTEM_DISK_TYPE = "GPSSD"
UBUNTU = r"^Ubuntu 22\.04 server 64bit"
EIP_TYPE = "5_bgp"
KMS_PENDING_DAYS = "7"  # the shortest wait KMS allows before a scheduled key deletion completes


def image_id(spec: Spec) -> pulumi.Output:
    if spec.image:
        return pulumi.Output.from_input(spec.image)
    # ims.get_image (one image, most recent): ims.get_images cannot be called from Python in 0.0.12 (its
    # result class takes a `__support_agent_list` argument, which Python name-mangles: a TypeError).
    found = ims.get_image_output(name_regex=UBUNTU, visibility="public", os="Ubuntu", flavor_id=spec.instance.name,
                                 most_recent=True)
    return found.id


def launch_time(expires_at: str) -> str:
    """An AS scheduled policy's time: "YYYY-MM-DDThh:mmZ" (UTC, no seconds)."""
    return re.sub(r":\d{2}Z$", "Z", expires_at)


def key_pair_name(spec: Spec) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"gpu-training-{spec.stack}")[:64]


def unexpired(expires_at: str, value: str) -> str:
    """`value`, unless the TTL has (nearly) passed: then the up stops. A capped spot ECS has no cloud-side
    TTL, so one (re)created now, e.g. after its agent released it, would run until someone destroys it."""
    note = clock.expired_note(expires_at)
    if note:
        raise pulumi.RunError(f"refusing to start capped spot ECSs (spotMaxPricePerHour): {note}; or `pulumi destroy`")
    return value


def node_options(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """User data is read by cloud-init at first boot only: a changed one is for nodes created after it,
    and a newer public image must not rebuild a running node (docs/day2.md)."""
    return pulumi.ResourceOptions(parent=parent, ignore_changes=["userData", "imageId"])


class Nodes(NodesComponent):
    def __init__(self, spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
                 user_data: pulumi.Output, expires_at: pulumi.Output[str]):
        super().__init__("huaweicloud", ctx)
        # One customer key per stack encrypts every disk of it (EVS needs a KMS key id to encrypt).
        self.disk_key = dew.Key(f"{ctx.name}-disk-key", key_alias=f"gpu-training-{spec.stack}-disks",
                                key_description=f"gpu-training {spec.stack}: node disks",
                                pending_days=KMS_PENDING_DAYS, tags=self.tags, opts=self.child)
        key_name = self.login_key(spec, ctx)
        # One group (profile.PLACEMENT: its member limit differs by region and is not a published number).
        group_ids = placement_groups(spec, spec.profile.spot.has_pool(spec), lambda g: ecs.Servergroup(
            f"{ctx.name}-servergroup{group_suffix(g)}", name=f"gpu-training-{spec.stack}{group_suffix(g)}",
            policies=["anti-affinity"], opts=self.child).id)
        bandwidth = public_bandwidth_mbps(spec)
        self.launch(NodeLaunch(spec, ctx, network, identity, user_data, expires_at, self.tags, image_id(spec), key_name,
                               group_ids, bandwidth or None, "traffic" if bandwidth else None))

    def public_key(self, spec: Spec, ctx: PartContext) -> object:
        """The user's key; for a pool without one, a key nobody holds (the module docstring says why)."""
        if not spec.ssh_public_key and spec.profile.spot.has_pool(spec):
            return GeneratedPublicKey(f"{ctx.name}-pool-login-key", comment=f"gpu-training-{spec.stack}-no-private-key",
                                      opts=self.child).public_key
        return spec.ssh_public_key

    def key_pair(self, spec: Spec, ctx: PartContext, public_key: object) -> pulumi.Output:
        # A new public key replaces the key pair (ForceNew); its name stays, so the old one goes first.
        return ecs.Keypair(f"{ctx.name}-key", name=key_pair_name(spec), public_key=public_key,
                           opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True)).name

    def on_demand(self, launch: NodeLaunch) -> None:
        # The last resort if the agent never releases the node: Huawei deletes it.
        self.instances(launch, charging_mode="postPaid", auto_terminate_time=launch.expires_at)

    def instances(self, launch: NodeLaunch, **billing) -> None:
        """One ECS per node; `billing`: the charging mode and what goes with it."""
        spec, disk = launch.spec, launch.spec.data_disk
        for index in range(spec.nodes):
            node = ecs.Instance(
                f"{launch.ctx.name}-node-{index}", name=f"gpu-training-{spec.stack}-{index}",
                flavor_id=spec.instance.name, image_id=launch.image, availability_zone=launch.network.zone,
                networks=[ecs.InstanceNetworkArgs(uuid=launch.network.subnet_ids[0])],
                security_group_ids=[launch.network.security_group_id],
                system_disk_type=SYSTEM_DISK_TYPE, system_disk_size=SYSTEM_DISK_GB,
                system_disk_kms_key_id=self.disk_key.id,
                data_disks=[ecs.InstanceDataDiskArgs(
                    type=disk.category, size=disk.size_gb, kms_key_id=self.disk_key.id,
                    iops=disk_iops(disk.category, disk.size_gb), throughput=disk_throughput(disk.category, disk.size_gb))],
                delete_disks_on_termination=True,
                eip_type=EIP_TYPE if launch.public_bandwidth else None,
                bandwidth=ecs.InstanceBandwidthArgs(share_type="PER", size=launch.public_bandwidth,
                                                    charge_mode=launch.internet_charge) if launch.public_bandwidth else None,
                delete_eip_on_termination=True,
                user_data=launch.user_data, agency_name=launch.identity.role_name, key_pair=launch.key,
                scheduler_hints=([ecs.InstanceSchedulerHintArgs(group=launch.group_of(index))]
                                 if launch.placement else None),
                tags=launch.tags, opts=node_options(self), **billing)
            self.instance_ids.append(node.id)
            self.private_ips.append(node.access_ip_v4)
            self.public_ips.append(node.public_ip)

    def spot_pool(self, launch: NodeLaunch) -> None:
        if capped_spot(launch.spec):
            # No pool: single spot ECSs at most at the user's price (a string in the provider).
            price = f"{launch.spec.spot_max_price:g}"
            self.instances(launch, charging_mode="spot", spot_maximum_price=pulumi.Output.from_input(
                launch.expires_at).apply(lambda expiry: unexpired(expiry, price)))
            return
        spec, disk = launch.spec, launch.spec.data_disk
        child = self.child
        public_ip = None
        if launch.public_bandwidth:
            public_ip = as_.ConfigurationInstanceConfigPublicIpArgs(eip=as_.ConfigurationInstanceConfigPublicIpEipArgs(
                ip_type=EIP_TYPE, bandwidth=as_.ConfigurationInstanceConfigPublicIpEipBandwidthArgs(
                    share_type="PER", size=launch.public_bandwidth, charging_mode=launch.internet_charge)))
        config = as_.Configuration(
            f"{launch.ctx.name}-spot-config", scaling_configuration_name=pool_name(spec),
            instance_config=as_.ConfigurationInstanceConfigArgs(
                flavor=",".join(row.name for row in spec.pool_types[:AS_MAX_FLAVORS]), flavor_priority_policy="PICK_FIRST",
                image=launch.image, charging_mode="spot", security_group_ids=[launch.network.security_group_id],
                key_name=launch.key, user_data=launch.user_data, ecs_group_id=launch.pool_group(), public_ip=public_ip,
                disks=[as_.ConfigurationInstanceConfigDiskArgs(size=SYSTEM_DISK_GB, volume_type=SYSTEM_DISK_TYPE,
                                                               disk_type="SYS", kms_id=self.disk_key.id),
                       as_.ConfigurationInstanceConfigDiskArgs(
                           size=disk.size_gb, volume_type=disk.category, disk_type="DATA", kms_id=self.disk_key.id,
                           iops=disk_iops(disk.category, disk.size_gb),
                           throughput=disk_throughput(disk.category, disk.size_gb))]),
            # instance_config is ForceNew: a newer public image would replace the configuration for
            # nothing (the pool keeps the image it started with, like the nodes); a changed user data
            # does replace it, for the nodes the pool starts later (docs/day2.md).
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["instanceConfig.image"]))
        zones = [launch.network.zone] + [pulumi.Output.from_input(z) for z in spec.spot_zones]
        group = as_.Group(
            f"{launch.ctx.name}-spot-pool", scaling_group_name=pool_name(spec), scaling_configuration_id=config.id,
            vpc_id=launch.network.vpc_id, networks=[as_.GroupNetworkArgs(id=s) for s in launch.network.subnet_ids.values()],
            security_groups=[as_.GroupSecurityGroupArgs(id=launch.network.security_group_id)],
            availability_zones=zones, multi_az_scaling_policy="PRIORITY",
            desire_instance_number=launch.pool_size(),
            min_instance_number=0, max_instance_number=spec.nodes,
            agency_name=launch.identity.role_name, health_periodic_audit_method="NOVA_AUDIT",
            # What the group removes is deleted, with its EIP and disks: nothing keeps billing.
            delete_instances="yes", delete_publicip=True, delete_volume=True, force_delete=True,
            # Enabled when created, and never again by the program: the node agent pauses the group
            # when training ends (node_runtime.retire_pool), the provider's Read then records
            # enable=false (status != INSERVICE), and without ignore_changes the next refreshed
            # `pulumi up` would resume it (enable defaults to true, Update calls groups.Enable:
            # terraform-provider-huaweicloud@v1.73.3 resource_huaweicloud_as_group.go, `enable`,
            # resourceASGroupRead, resourceASGroupUpdate), starting `nodes` spot GPUs that find the
            # finished checkpoint and release themselves. A new run is a new pool: down, then up.
            enable=True, tags=launch.tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["enable"])))
        # The pool's TTL: at expires_at the group is set to zero instances.
        as_.Policy(f"{launch.ctx.name}-spot-pool-ttl", scaling_policy_name=f"gpu-training-{spec.stack}-ttl",
                   scaling_group_id=group.id, scaling_policy_type="SCHEDULED",
                   scheduled_policy=as_.PolicyScheduledPolicyArgs(
                       launch_time=pulumi.Output.from_input(launch.expires_at).apply(launch_time)),
                   scaling_policy_action=as_.PolicyScalingPolicyActionArgs(operation="SET", instance_number=0),
                   opts=child)
        self.pool_id = group.id


def create(spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts, storage: StorageParts,
           user_data: pulumi.Output, expires_at: pulumi.Output[str]) -> ComputeParts:
    return Nodes(spec, ctx, network, identity, user_data, expires_at).parts()
