"""Tencent Cloud storage: the node agent and the training code in COS, the checkpoint bucket when asked to
create it (retained on destroy), and CFS Turbo as the shared file system.

CFS Turbo is reached over a Cloud Connect Network (CCN), not through a VPC mount target: the program
creates a CCN, attaches the stack's VPC to it, and gives the file system its own CIDR on the CCN
(tencentcloud-iac-pulumi `cfs.FileSystem`: net_interface "CCN" needs ccn_id and cidr_block; Tencent
CFS docs: associate the client VPC with the file system's CCN). Nodes mount it with the Lustre client
at `<mount ip>@tcp0:/<fs id>/cfs` (TencentCloud/kubernetes-csi-tencentcloud, driver/cfsturbo).

The policy (when the bucket is made, what is uploaded after it) is the neutral StorageComponent's
(components/providers/storage_part.py); this module gives its COS and CFS resources.
"""
from __future__ import annotations

from typing import Optional

import pulumi
from tencentcloud_iac_pulumi import ccn, cfs, cos

from components.artifacts import Artifact
from components.providers.part_records import NetworkParts, PartContext, StorageParts
from components.providers.storage_part import StorageComponent
from components.providers.tencentcloud.network import TURBO_CIDR, VPC_CIDR
from components.providers.tencentcloud.profile import TURBO, TURBO_STORAGE_TYPE
from components.spec import Spec


class Storage(StorageComponent):
    """COS for the checkpoint bucket and the files; CFS Turbo over a CCN."""

    def checkpoint_bucket(self, spec: Spec, name: str, opts: pulumi.ResourceOptions) -> cos.Bucket:
        return cos.Bucket(name, bucket=spec.checkpoint.bucket, acl="private", encryption_algorithm="AES256",
                          versioning_enable=True, force_clean=False, tags=self.tags, opts=opts)

    def put_object(self, spec: Spec, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> cos.BucketObject:
        # The MD5 as etag makes a changed file a changed input, so `pulumi up` re-uploads it.
        return cos.BucketObject(name, bucket=spec.checkpoint.bucket, key=artifact.key, source=artifact.source,
                                etag=artifact.md5_hex, tags=self.tags, opts=opts)

    def put_text(self, spec: Spec, name: str, text: pulumi.Output, opts: pulumi.ResourceOptions) -> cos.BucketObject:
        return cos.BucketObject(name, bucket=spec.checkpoint.bucket, key=text.key, content=text.content,
                                etag=text.md5_hex, tags=self.tags, opts=opts)

    def shared_fs(self, spec: Spec, ctx: PartContext, network: NetworkParts) -> Optional[pulumi.Output]:
        if spec.shared_storage != TURBO:
            return None
        child, tags = self.child, self.tags
        net = ccn.Instance(f"{ctx.name}-ccn", name=f"gpu-training-{spec.stack}",
                           description=f"gpu-training {spec.stack}: reaches CFS Turbo", qos="AU",
                           charge_type="POSTPAID", tags=tags, opts=child)
        attachment = ccn.AttachmentV2(f"{ctx.name}-ccn-vpc", ccn_id=net.id, instance_id=network.vpc_id,
                                    instance_type="VPC", instance_region=spec.region,
                                    description="the stack's VPC", opts=child)
        group = cfs.AccessGroup(f"{ctx.name}-cfs-access", name=f"gpu-training-{spec.stack}",
                                description="only this stack's VPC", opts=child)
        cfs.AccessRule(f"{ctx.name}-cfs-rule", access_group_id=group.id, auth_client_ip=VPC_CIDR, priority=1,
                       rw_permission="RW", user_permission="no_root_squash", opts=child)
        fs = cfs.FileSystem(
            f"{ctx.name}-cfsturbo", name=f"gpu-training-{spec.stack}", availability_zone=network.zone,
            access_group_id=group.id, protocol="TURBO", storage_type=TURBO_STORAGE_TYPE, net_interface="CCN",
            ccn_id=net.id, cidr_block=TURBO_CIDR, capacity=spec.shared_storage_gb, tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[attachment]))
        return pulumi.Output.all(fs.mount_ip, fs.fs_id).apply(lambda v: f"{v[0]}:/{v[1]}")


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return Storage("tencentcloud", spec, ctx, network).parts()
