"""Huawei Cloud storage: the node agent and the training code in OBS, the checkpoint bucket when asked
to create it (retained on destroy), and SFS Turbo HPC as the large tier's shared file system.

OBS objects carry the file's MD5 as `etag`, so a changed file re-uploads on `pulumi up`; they are
SSE-KMS encrypted (`encryption`, the account's default OBS key). SFS Turbo sits in the stack's VPC,
subnet and security group (members may reach it), and nodes mount its `export_location` over NFSv3.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pulumi

from components.artifacts import all_artifacts
from components.providers.base import NetworkParts, PartContext, StorageParts
from components.providers.huaweicloud.profile import TURBO, TURBO_HPC_BANDWIDTH, TURBO_SHARE_TYPE
from components.providers.huaweicloud.sdk import obs, sfs
from components.spec import Spec


def _md5_hex(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


class Storage(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext, network: NetworkParts):
        super().__init__("gpu-training:huaweicloud:Storage", f"{ctx.name}-storage", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(ctx.tags)
        bucket_dependency = []
        if spec.checkpoint.bucket and spec.checkpoint.create:
            # Checkpoints must outlive the stack: destroy leaves the bucket (and its data) in place.
            bucket = obs.Bucket(f"{ctx.name}-checkpoints", bucket=spec.checkpoint.bucket, acl="private",
                                encryption=True, sse_algorithm="kms", versioning=True, force_destroy=False, tags=tags,
                                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True))
            bucket_dependency = [bucket]
        for index, artifact in enumerate(all_artifacts(spec)):
            obs.BucketObject(f"{ctx.name}-file-{index}", bucket=spec.checkpoint.bucket, key=artifact.key,
                             source=artifact.source, etag=_md5_hex(artifact.path), encryption=True, acl="private",
                             opts=pulumi.ResourceOptions(parent=self, depends_on=bucket_dependency))
        self.address = None
        if spec.shared_storage == TURBO:
            turbo = sfs.Turbo(
                f"{ctx.name}-sfsturbo", name=f"gpu-training-{spec.stack}", size=spec.shared_storage_gb,
                share_proto="NFS", share_type=TURBO_SHARE_TYPE, hpc_bandwidth=TURBO_HPC_BANDWIDTH,
                availability_zone=network.zone, vpc_id=network.vpc_id, subnet_id=network.subnet_ids[0],
                security_group_id=network.security_group_id, charging_mode="postPaid", tags=tags, opts=child)
            self.address = turbo.export_location
        self.register_outputs({"sharedFsAddress": self.address})


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return StorageParts(shared_fs_address=Storage(spec, ctx, network).address)
