"""Huawei Cloud storage: the node agent and the training code in OBS, the checkpoint bucket when asked
to create it (retained on destroy), and SFS Turbo HPC as the large tier's shared file system.

OBS objects are SSE-KMS encrypted (`encryption`, the account's default OBS key). A changed file must
be a changed input, or `pulumi up` would not upload it again; that input cannot be `etag`: the
provider's Read stores the ETag OBS returns (resource_huaweicloud_obs_bucket_object.go:281, v1.73.3),
and the ETag of an SSE-KMS object is not its MD5 (OBS API "Server-Side Encryption Overview",
https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0105.html), so an MD5 etag would differ
after every Read and re-upload every object on every `pulumi up` (provider_facts.json hand_written
`obs_object_etag_read_back`). The file's SHA-256 rides in `content_type` as a MIME parameter instead:
the provider sends it on each PUT (Content-Type) and Read stores what OBS returns for it, which is what
was sent, so it differs only when the file does; a changed input is an in-place update (UpdateContext
is the same PUT), never a replacement.

SFS Turbo sits in the stack's VPC, subnet and security group (members may reach it), and nodes mount
its `export_location` over NFSv3.

The policy (when the bucket is made, what is uploaded after it) is the neutral StorageComponent's
(components/providers/storage_part.py); this module gives its OBS and SFS resources.
"""
from __future__ import annotations

from typing import Optional

import pulumi

from components.artifacts import Artifact, TextObject
from components.providers import storage_part
from components.providers.part_records import NetworkParts, PartContext, StorageParts
from components.providers.huaweicloud.profile import TURBO, TURBO_HPC_BANDWIDTH, TURBO_SHARE_TYPE
from components.providers.huaweicloud.sdk import obs, sfs
from components.providers.storage_part import StorageComponent
from components.spec import Spec


def content_type(artifact: Artifact | TextObject) -> str:
    """The object's Content-Type with the file's SHA-256 as a parameter (RFC 2045 `type/subtype; name=value`).
    Always octet-stream: a type guessed from the system's MIME table would differ between workstations."""
    return f"application/octet-stream; sha256={artifact.sha256}"


def put_object(spec: Spec, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> obs.BucketObject:
    """One private, KMS-encrypted OBS object, its SHA-256 in the content type (the module docstring says why)."""
    return obs.BucketObject(name, bucket=spec.checkpoint.bucket, key=artifact.key, source=artifact.source,
                            content_type=content_type(artifact), encryption=True, acl="private", opts=opts)


def put_text(spec: Spec, name: str, text: pulumi.Output, opts: pulumi.ResourceOptions) -> obs.BucketObject:
    """One private, KMS-encrypted OBS object from text (the boot payload), its SHA-256 in the content type."""
    return obs.BucketObject(name, bucket=spec.checkpoint.bucket, key=text.key, content=text.content,
                            content_type=text.apply(content_type), encryption=True, acl="private", opts=opts)


def upload(spec: Spec, name: str, artifacts: list[Artifact], opts: pulumi.ResourceOptions) -> list:
    """The VM path's storage part and a platform stack's code (ModelArts) both upload through here."""
    return storage_part.upload(spec, name, artifacts, put_object, opts)


class Storage(StorageComponent):
    """OBS for the checkpoint bucket and the files; SFS Turbo HPC for the large tier."""

    put_object = staticmethod(put_object)  # the module's, which a platform stack's upload() uses too
    put_text = staticmethod(put_text)

    def checkpoint_bucket(self, spec: Spec, name: str, opts: pulumi.ResourceOptions) -> obs.Bucket:
        return obs.Bucket(name, bucket=spec.checkpoint.bucket, acl="private", encryption=True, sse_algorithm="kms",
                          versioning=True, force_destroy=False, tags=self.tags, opts=opts)

    def shared_fs(self, spec: Spec, ctx: PartContext, network: NetworkParts) -> Optional[pulumi.Output]:
        if spec.shared_storage != TURBO:
            return None
        turbo = sfs.Turbo(
            f"{ctx.name}-sfsturbo", name=f"gpu-training-{spec.stack}", size=spec.shared_storage_gb,
            share_proto="NFS", share_type=TURBO_SHARE_TYPE, hpc_bandwidth=TURBO_HPC_BANDWIDTH,
            availability_zone=network.zone, vpc_id=network.vpc_id, subnet_id=network.subnet_ids[0],
            security_group_id=network.security_group_id, charging_mode="postPaid", tags=self.tags, opts=self.child)
        return turbo.export_location


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return Storage("huaweicloud", spec, ctx, network).parts()
