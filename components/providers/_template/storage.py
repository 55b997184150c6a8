"""__Cloud__ storage: the training code upload, the shared file system and its mount address.

Contract: components/providers/contract.py StoragePart; docs/providers.md. The resources are placeholders
(components/providers/placeholder.py): replace each with its class in the cloud's Pulumi SDK. The shared
file system's mount address is the cloud's computed output (preview.py COMPUTED_OUTPUTS answers it offline).
"""
from __future__ import annotations

import pulumi

from components.artifacts import all_artifacts
from components.providers.base import NetworkParts, PartContext, StorageParts
from components.providers.placeholder import Placeholder

SHARED_FS_TYPE = "__cloud__:storage:SharedFileSystem"


class Storage(pulumi.ComponentResource):
    def __init__(self, spec, ctx: PartContext, network: NetworkParts):
        super().__init__("gpu-training:__cloud__:Storage", f"{ctx.name}-storage", None, ctx.opts())
        tags = dict(ctx.tags)
        after = []
        if spec.checkpoint.bucket and spec.checkpoint.create:
            # Checkpoints must outlive the stack: destroy leaves the bucket (and its data) in place.
            after = [Placeholder("__cloud__:storage:Bucket", f"{ctx.name}-checkpoints",
                                 {"bucket": spec.checkpoint.bucket, "encrypted": True, "tags": tags},
                                 pulumi.ResourceOptions(parent=self, retain_on_delete=True))]
        for index, artifact in enumerate(all_artifacts(spec)):
            # The digest as an input makes a changed file a changed input, so `pulumi up` uploads it again.
            Placeholder("__cloud__:storage:BucketObject", f"{ctx.name}-file-{index}",
                        {"bucket": spec.checkpoint.bucket, "key": artifact.key, "source": artifact.source,
                         "contentMd5": artifact.md5_base64}, pulumi.ResourceOptions(parent=self, depends_on=after))
        self.address = None
        if spec.shared_storage != "none":
            # TODO(__cloud__): the file system of profile.shared_storage, reachable from the VPC only.
            fs = Placeholder(SHARED_FS_TYPE, f"{ctx.name}-shared-fs",
                             {"name": f"gpu-training-{spec.stack}", "kind": spec.shared_storage,
                              "capacityGb": spec.shared_storage_gb, "vpcId": network.vpc_id, "zone": network.zone,
                              "tags": tags}, pulumi.ResourceOptions(parent=self), outputs=("mountAddress",))
            self.address = fs.mountAddress
        self.register_outputs({"sharedFsAddress": self.address})


def create(spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return StorageParts(shared_fs_address=Storage(spec, ctx, network).address)
