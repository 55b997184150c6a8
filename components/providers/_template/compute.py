"""__Cloud__ nodes: encrypted disks, required metadata tokens, the node role, a cloud-side TTL.

Contract: components/providers/contract.py ComputePart; docs/providers.md. The clouds build it as a
components.providers.base.NodesComponent (`super().__init__("__cloud__", ctx)` gives `self.child`,
`self.tags` and `login_key()`, which calls this cloud's `key_pair()`) whose on_demand() and spot_pool()
share one NodeLaunch.
"""
from __future__ import annotations

import pulumi

from components.providers.base import ComputeParts, IdentityParts, NetworkParts, PartContext, StorageParts


def create(spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts, storage: StorageParts,
           user_data: pulumi.Output, expires_at: pulumi.Output) -> ComputeParts:
    raise NotImplementedError("__cloud__: compute.create is not written yet (docs/providers.md)")
