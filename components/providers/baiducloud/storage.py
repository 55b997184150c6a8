"""Baidu AI Cloud storage: the training code upload, the shared file system and its mount address.

Contract: components/providers/contract.py StoragePart; docs/providers.md.
"""
from __future__ import annotations

from components.providers.base import NetworkParts, PartContext, StorageParts


def create(spec, ctx: PartContext, network: NetworkParts) -> StorageParts:
    raise NotImplementedError("baiducloud: storage.create is not written yet (docs/providers.md)")
