"""Baidu AI Cloud GPU nodes: N BCC instances, pay-as-you-go (Postpaid) or bid (spot) with a price cap
that is never above the pay-as-you-go price, each with an encrypted SSD CDS data disk (a KMS key of
the stack), the node role bound (RoleBinding), and the cloud-side TTL (the instance's auto release
time, set right after it runs: dynamic.py BccInstanceProvider).

No pool replaces reclaimed bid instances: BCC's API (bce-python-sdk 0.9.79 bcc_client) has bid
instances but no group that keeps a count of them; Baidu's bidding groups live in CCE (Kubernetes)
instance groups, outside this program. A reclaimed bid node is gone; the agent's checkpoints let the
next `pulumi up` resume (docs/baiducloud.md).
"""
from __future__ import annotations

import pulumi

from components.providers.baiducloud import bceapi, dynamic
from components.providers.baiducloud.identity import grant_release
from components.providers.baiducloud.profile import PUBLIC_BANDWIDTH_MBPS, bid_model
from components.providers.profile_records import has_public_address, spot_cap
from components.providers.part_records import (ComputeParts, IdentityParts, NetworkParts, NodeLaunch, PartContext,
                                               StorageParts)
from components.providers.nodes_part import NodesComponent
from components.spec import Spec

SYSTEM_DISK_GB = 100
SYSTEM_DISK_TYPE = "enhanced_ssd_pl1"
IMAGE_PLACEHOLDER = "<newest BCC public Ubuntu 22.04 image (ListImages at deploy time)>"


def image_id(spec: Spec) -> pulumi.Output:
    if spec.image:
        return pulumi.Output.from_input(spec.image)
    if pulumi.runtime.is_dry_run():
        return pulumi.Output.from_input(IMAGE_PLACEHOLDER)
    return pulumi.Output.from_input(_newest_ubuntu(spec))


def _newest_ubuntu(spec: Spec) -> str:
    bcc = bceapi.client("bcc", bceapi.Settings(spec.region))
    got = bceapi.body(bceapi.call(bceapi.Settings(spec.region), "BCC images", "ListImages",
                                  lambda: bcc.list_images(image_type="System", max_keys=1000)))
    found = sorted((i for i in got.get("images") or []
                    if str(i.get("os_name", "")).lower() == "ubuntu" and str(i.get("os_version", "")).startswith("22.04")),
                   key=lambda i: i.get("create_time", ""), reverse=True)
    if not found:
        raise pulumi.RunError(f"no Ubuntu 22.04 public image in {spec.region}; set gpu-training:image")
    return found[0]["id"]


class Nodes(NodesComponent):
    def __init__(self, spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
                 user_data: pulumi.Output, expires_at: pulumi.Output[str]):
        super().__init__("baiducloud", ctx)
        # One KMS key per stack encrypts the data disks (CDS encryptKey).
        self.key = dynamic.KmsKey(f"{ctx.name}-disk-key", {
            "description": f"gpu-training {spec.stack} data disks", "keySpec": "AES_256", "protectedBy": "HSM",
            "pendingWindowInDays": 7}, spec.region, self.child)
        bandwidth = PUBLIC_BANDWIDTH_MBPS if has_public_address(spec) else 0
        self.launch(NodeLaunch(spec, ctx, network, identity, user_data, expires_at, self.tags, image_id(spec),
                               None, (), bandwidth, None))

    def _instances(self, launch: NodeLaunch, billing: dict) -> None:
        spec = launch.spec
        row = spec.instance
        for index in range(spec.nodes):
            subnet = launch.network.subnet_ids[index % len(launch.network.subnet_ids)]
            zone = ([spec.zone] + list(spec.spot_zones if spec.spot else ()))[index % len(launch.network.subnet_ids)]
            instance = dynamic.BccInstance(f"{launch.ctx.name}-node-{index}", {
                "name": f"gpu-training-{spec.stack}-{index}", "hostname": f"gpu-{spec.stack}-{index}"[:60],
                "spec": row.name, "cpuCount": row.vcpus, "memoryCapacityInGB": int(row.memory_gib),
                "imageId": launch.image, "zoneName": zone, "subnetId": subnet,
                "securityGroupId": launch.network.security_group_id, **billing,
                "rootDiskSizeInGb": SYSTEM_DISK_GB, "rootDiskStorageType": SYSTEM_DISK_TYPE,
                "dataDisk": {"cdsSizeInGB": spec.data_disk.size_gb, "storageType": spec.data_disk.category,
                             "encryptKey": self.key.id, "deleteWithInstance": True},
                "userData": launch.user_data, "networkCapacityInMbps": launch.public_bandwidth,
                "releaseTime": launch.expires_at, "tags": launch.tags, "deletionProtection": 0},
                spec.region, pulumi.ResourceOptions(parent=self, ignore_changes=["userData", "imageId"]))
            self.instance_ids.append(instance.id)
            self.private_ips.append(instance.internalIp)
            self.public_ips.append(instance.publicIp)
        dynamic.RoleBinding(f"{launch.ctx.name}-role-binding", {
            "roleName": launch.identity.role_name, "instanceIds": self.instance_ids}, spec.region,
            pulumi.ResourceOptions(parent=self))
        grant_release(spec, launch.ctx, launch.identity.role_name, self.instance_ids)

    def on_demand(self, launch: NodeLaunch) -> None:
        self._instances(launch, {"paymentTiming": "Postpaid"})

    def spot_pool(self, launch: NodeLaunch) -> None:
        """Bid instances. Without spotMaxPricePerHour an automatic (market) bid, which BCC releases only for lack
        of inventory; with it a custom bid at that cap, never above the pay-as-you-go price (profile.spot_cap),
        released also when the market price passes it (profile.bid_model). No pool: see the module docstring."""
        spec = launch.spec
        if bid_model(spec) == "market":
            self._instances(launch, {"paymentTiming": "bid", "bidModel": "market"})
            return
        known = spec.instance.price.account_price
        self._instances(launch, {"paymentTiming": "bid", "bidModel": "custom", "bidPrice": spot_cap(spec),
                                 "onDemandPrice": known})


def create(spec: Spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts, storage: StorageParts,
           user_data: pulumi.Output, expires_at: pulumi.Output[str]) -> ComputeParts:
    return Nodes(spec, ctx, network, identity, user_data, expires_at).parts()
