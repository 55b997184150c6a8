"""Baidu AI Cloud storage: the node agent and the training code in BOS, put through BOS's S3 API (one
dynamic BucketObject per file; a changed file is a changed contentMd5 and is put again). The checkpoint
bucket is the user's (checkpoint.create is refused on Baidu) and no shared file system is built."""
from __future__ import annotations

import pulumi

from components.artifacts import all_artifacts
from components.providers.baiducloud import dynamic
from components.providers.base import NetworkParts, PartContext, StorageParts
from components.spec import Spec


class Storage(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:baiducloud:Storage", f"{ctx.name}-storage", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        for index, artifact in enumerate(all_artifacts(spec)):
            dynamic.BucketObject(f"{ctx.name}-file-{index}", {
                "bucket": spec.checkpoint.bucket, "key": artifact.key, "source": artifact.source,
                "contentMd5": artifact.md5_base64}, spec.region, child)
        self.register_outputs({})


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    Storage(spec, ctx)
    return StorageParts(shared_fs_address=None)
