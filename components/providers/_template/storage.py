"""__Cloud__ storage: the training code upload, the checkpoint bucket when asked, the shared file system
and its mount address.

Contract: components/providers/contract.py StoragePart; docs/providers.md. The neutral
components.providers.storage_part.StorageComponent decides when each is made (the bucket only with
checkpoint.create, retained on destroy; one object per file, re-uploaded when it changes); this cloud's
hooks make them. The resources are placeholders (components/providers/placeholder.py): replace each with
its class in the cloud's Pulumi SDK. The shared file system's mount address is the cloud's computed output
(preview.py COMPUTED_OUTPUTS answers it offline).
"""
from __future__ import annotations

from typing import Optional

import pulumi

from components.artifacts import Artifact
from components.providers.part_records import NetworkParts, PartContext, StorageParts
from components.providers.placeholder import Placeholder
from components.providers.storage_part import StorageComponent

SHARED_FS_TYPE = "__cloud__:storage:SharedFileSystem"


class Storage(StorageComponent):
    def checkpoint_bucket(self, spec, name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        return Placeholder("__cloud__:storage:Bucket", name,
                           {"bucket": spec.checkpoint.bucket, "encrypted": True, "tags": self.tags}, opts)

    def put_object(self, spec, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        return Placeholder("__cloud__:storage:BucketObject", name,
                           {"bucket": spec.checkpoint.bucket, "key": artifact.key, "source": artifact.source,
                            "contentMd5": artifact.md5_base64}, opts)

    def put_text(self, spec, name: str, text: pulumi.Output, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        return Placeholder("__cloud__:storage:BucketObject", name,
                           {"bucket": spec.checkpoint.bucket, "key": text.key, "content": text.content,
                            "contentMd5": text.md5_base64}, opts)

    def shared_fs(self, spec, ctx: PartContext, network: NetworkParts) -> Optional[pulumi.Output]:
        if spec.shared_storage == "none":
            return None
        # TODO(__cloud__): the file system of profile.shared_fs.kinds, reachable from the VPC only.
        fs = Placeholder(SHARED_FS_TYPE, f"{ctx.name}-shared-fs",
                         {"name": f"gpu-training-{spec.stack}", "kind": spec.shared_storage,
                          "capacityGb": spec.shared_storage_gb, "vpcId": network.vpc_id, "zone": network.zone,
                          "tags": self.tags}, self.child, outputs=("mountAddress",))
        return fs.mountAddress


def create(spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return Storage("__cloud__", spec, ctx, network).parts()
