"""Baidu AI Cloud storage: the node agent and the training code in BOS, put through BOS's S3 API (one
dynamic BucketObject per file; a changed file is a changed contentMd5 and is put again). The checkpoint
bucket is the user's (checkpoint.create is refused on Baidu, so the neutral StorageComponent never asks
for it) and no shared file system is built."""
from __future__ import annotations

import pulumi

from components.artifacts import Artifact
from components.providers.baiducloud import dynamic
from components.providers.part_records import NetworkParts, PartContext, StorageParts
from components.providers.storage_part import StorageComponent
from components.spec import Spec


class Storage(StorageComponent):
    """The files in the user's BOS bucket; nothing else."""

    def put_object(self, spec: Spec, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> dynamic.BucketObject:
        return dynamic.BucketObject(name, {"bucket": spec.checkpoint.bucket, "key": artifact.key,
                                           "source": artifact.source, "contentMd5": artifact.md5_base64},
                                    spec.region, opts)

    def put_text(self, spec: Spec, name: str, text: pulumi.Output, opts: pulumi.ResourceOptions) -> dynamic.BucketObject:
        return dynamic.BucketObject(name, {"bucket": spec.checkpoint.bucket, "key": text.key, "content": text.content,
                                           "contentMd5": text.md5_base64}, spec.region, opts)


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return Storage("baiducloud", spec, ctx, network).parts()
