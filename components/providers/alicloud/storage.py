"""Alibaba Cloud storage: the node agent and the training code in OSS, the checkpoint bucket when
asked to create it (retained on destroy), and the shared file system in the VPC: CPFS with an NFS
protocol service and export, or NAS with a mount target. The policy (when the bucket is made, what is
uploaded after it) is the neutral StorageComponent's (components/providers/storage_part.py); this module
gives its OSS and NAS resources."""
from __future__ import annotations

import os
from typing import Optional

import pulumi
import pulumi_alicloud as alicloud

from components.artifacts import Artifact
from components.providers.alicloud.profile import CPFS_STORAGE_TYPE
from components.providers.alicloud.cpfs_export import (NAS_ENDPOINT_ENV, PLACEHOLDER, ExportLookupError, credentials_from,
                                                       export_domain)
from components.providers import storage_part
from components.providers.part_records import NetworkParts, PartContext, StorageParts
from components.providers.storage_part import StorageComponent
from components.spec import Spec


def put_object(spec: Spec, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> alicloud.oss.BucketObject:
    """One OSS object, SSE on; content_md5 makes a changed file a changed input, so `pulumi up` re-uploads it."""
    return alicloud.oss.BucketObject(name, bucket=spec.checkpoint.bucket, key=artifact.key, source=artifact.source,
                                     content_md5=artifact.md5_base64, server_side_encryption="AES256", opts=opts)


def put_text(spec: Spec, name: str, text: pulumi.Output, opts: pulumi.ResourceOptions) -> alicloud.oss.BucketObject:
    """One OSS object from text (the boot payload), SSE on; its MD5 makes a changed text a changed input."""
    return alicloud.oss.BucketObject(name, bucket=spec.checkpoint.bucket, key=text.key, content=text.content,
                                     content_md5=text.md5_base64, server_side_encryption="AES256", opts=opts)


def upload(spec: Spec, name: str, artifacts: list[Artifact], opts: pulumi.ResourceOptions) -> list:
    """The VM path's storage part and a platform stack's code (PAI-DLC) both upload through here."""
    return storage_part.upload(spec, name, artifacts, put_object, opts)


class Storage(StorageComponent):
    """OSS for the checkpoint bucket and the files; CPFS (NFS protocol service and export) or NAS."""

    put_object = staticmethod(put_object)  # the module's, which a platform stack's upload() uses too
    put_text = staticmethod(put_text)

    def checkpoint_bucket(self, spec: Spec, name: str, opts: pulumi.ResourceOptions) -> alicloud.oss.Bucket:
        return alicloud.oss.Bucket(
            name, bucket=spec.checkpoint.bucket,
            server_side_encryption_rule=alicloud.oss.BucketServerSideEncryptionRuleArgs(sse_algorithm="AES256"),
            versioning=alicloud.oss.BucketVersioningArgs(status="Enabled"), force_destroy=False, tags=self.tags,
            opts=opts)

    def shared_fs(self, spec: Spec, ctx: PartContext, network: NetworkParts) -> Optional[pulumi.Output]:
        child, tags = self.child, self.tags
        if spec.shared_storage == "cpfs":
            fs = alicloud.nas.FileSystem(
                f"{ctx.name}-cpfs", file_system_type="cpfs", protocol_type="cpfs", storage_type=CPFS_STORAGE_TYPE,
                capacity=spec.shared_storage_gb, zone_id=network.zone, vpc_id=network.vpc_id,
                vswitch_id=network.subnet_ids[0], description=f"gpu-training {spec.stack} shared FS",
                tags=tags, opts=child)
            # NFS access through a protocol service and an export, not a POSIX mount target (which needs
            # the CPFS POSIX client and bills three quorum ECS instances): CPFS doc "Mount a file system
            # using a CPFS-NFS client"; the General spec is free (NAS API CreateProtocolService).
            service = alicloud.nas.ProtocolService(
                f"{ctx.name}-cpfs-protocol", file_system_id=fs.id, protocol_spec="General", protocol_type="NFS",
                vpc_id=network.vpc_id, vswitch_id=network.subnet_ids[0],
                description=f"gpu-training {spec.stack} NFS access", opts=child)
            export = alicloud.nas.ProtocolMountTarget(
                f"{ctx.name}-cpfs-export", file_system_id=fs.id, protocol_service_id=service.protocol_service_id,
                path="/", vpc_id=network.vpc_id, vswitch_id=network.subnet_ids[0],
                access_group_name="DEFAULT_VPC_GROUP_NAME", description=f"gpu-training {spec.stack} nodes",
                opts=child)
            return export_address(spec, fs.id, export.export_id)
        if spec.shared_storage == "nas":
            fs = alicloud.nas.FileSystem(
                f"{ctx.name}-nas", file_system_type="standard", protocol_type="NFS", storage_type="Performance",
                encrypt_type=1, description=f"gpu-training {spec.stack} shared FS", tags=tags, opts=child)
            group = alicloud.nas.AccessGroup(
                f"{ctx.name}-nas-access", access_group_name=f"gpu-training-{spec.stack}", access_group_type="Vpc",
                file_system_type="standard", description="only this stack's vSwitches", opts=child)
            for index, cidr in network.subnet_cidrs.items():
                alicloud.nas.AccessRule(
                    f"{ctx.name}-nas-rule-{index}", access_group_name=group.access_group_name,
                    file_system_type="standard", source_cidr_ip=cidr, rw_access_type="RDWR",
                    user_access_type="no_squash", priority=1, opts=child)
            target = alicloud.nas.MountTarget(
                f"{ctx.name}-nas-mount", file_system_id=fs.id, access_group_name=group.access_group_name,
                vpc_id=network.vpc_id, vswitch_id=network.subnet_ids[0], network_type="Vpc", opts=child)
            return target.mount_target_domain
        return None


def export_address(spec: Spec, file_system_id: pulumi.Output, export_id: pulumi.Output) -> pulumi.Output:
    """The export's domain (cpfs_export.py): read once the export exists, with the deploying credentials."""
    config = pulumi.Config("alicloud")
    secrets = [config.get_secret(key) for key in ("accessKey", "secretKey", "securityToken")]

    def lookup(values) -> str:
        fs, export, access_key, secret_key, token = values
        found = credentials_from(os.environ, {"access_key_id": access_key, "access_key_secret": secret_key,
                                              "security_token": token})
        if found is None:
            if pulumi.runtime.is_dry_run():
                return PLACEHOLDER
            raise pulumi.RunError("the CPFS export's mount address is read with DescribeProtocolMountTarget, which"
                                  " needs the credentials pulumi-alicloud uses: set ALICLOUD_ACCESS_KEY and"
                                  " ALICLOUD_SECRET_KEY, or alicloud:accessKey and alicloud:secretKey")
        try:
            return export_domain(spec.region, fs, export, found, os.environ.get(NAS_ENDPOINT_ENV))
        except ExportLookupError as error:
            raise pulumi.RunError(str(error)) from None

    return pulumi.Output.unsecret(pulumi.Output.all(file_system_id, export_id, *secrets).apply(lookup))


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return Storage("alicloud", spec, ctx, network).parts()
