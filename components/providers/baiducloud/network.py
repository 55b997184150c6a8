"""Baidu AI Cloud network: VPC, subnets, a security group without world-open ingress, the nodes' egress.

Contract: components/providers/contract.py NetworkPart; docs/providers.md and docs/egress.md.
"""
from __future__ import annotations

from components.providers.base import NetworkParts, PartContext


def create(spec, ctx: PartContext) -> NetworkParts:
    raise NotImplementedError("baiducloud: network.create is not written yet (docs/providers.md)")
