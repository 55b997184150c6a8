"""__Cloud__ storage: the training code upload, the checkpoint bucket when asked, the shared file system
and its mount address.

Contract: components/providers/contract.py StoragePart; docs/providers.md. The neutral
components.providers.storage_part.StorageComponent decides when each is made (the bucket only with
checkpoint.create, retained on destroy; one object per file, re-uploaded when it changes); fill in its
hooks with this cloud's resources.
"""
from __future__ import annotations

from typing import Optional

import pulumi

from components.artifacts import Artifact
from components.providers.base import NetworkParts, PartContext, StorageParts
from components.providers.storage_part import StorageComponent


class Storage(StorageComponent):
    def checkpoint_bucket(self, spec, name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        raise NotImplementedError("__cloud__: the checkpoint bucket is not written yet (docs/providers.md)")

    def put_object(self, spec, name: str, artifact: Artifact, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        raise NotImplementedError("__cloud__: the object upload is not written yet (docs/providers.md)")

    def shared_fs(self, spec, ctx: PartContext, network: NetworkParts) -> Optional[pulumi.Output]:
        raise NotImplementedError("__cloud__: the shared file system is not written yet (docs/providers.md)")


def create(spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    return Storage("__cloud__", spec, ctx, network).parts()
