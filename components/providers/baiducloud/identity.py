"""Baidu AI Cloud node role: release only this stack's instances, list its peers, its object prefix only.

Contract: components/providers/contract.py IdentityPart; docs/providers.md, the identity.py row.
"""
from __future__ import annotations

from components.providers.base import IdentityParts, PartContext


def create(spec, ctx: PartContext) -> IdentityParts:
    raise NotImplementedError("baiducloud: identity.create is not written yet (docs/providers.md)")
