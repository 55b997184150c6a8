"""The stack outputs every node stack exports, on VMs (components/cluster.py) and on Kubernetes
(components/kubernetes/cluster.py): one builder, so the two paths cannot drift apart.

scripts/run.py and tools/runlib read these keys from either kind of stack (`pulumi stack output`): the
nodes and their addresses, the pool, the expiry, the cost, what keeps billing. Each path passes what only
it knows (a Kubernetes stack has no instance ids: its pods come and go) as keyword arguments that have no
default, so a path that forgets one fails at once instead of exporting a stack that lacks the key.
The Kubernetes path adds its own keys (KubernetesTraining) on top of these.
"""
from __future__ import annotations

from typing import Any, Optional

import pulumi

from components import billing, cost

# Every key node_outputs() writes, in the order it writes them (tests compare both paths' exports to it).
NODE_KEYS = ("stack", "provider", "region", "instanceType", "nodeCount", "billing", "instanceIds", "privateIps",
             "poolId", "sharedFsAddress", "expiresAt", "costPerHour", "checkpoint", "sshCommand", "keepsBilling")


def node_outputs(spec, *, instance_ids: list, private_ips: list, pool_id: Optional[pulumi.Input[str]],
                 shared_fs_address: Optional[pulumi.Input[str]], expires_at: pulumi.Input[str],
                 ssh_command: Optional[pulumi.Input[str]]) -> dict[str, Any]:
    """The outputs both paths export: the spec's facts plus what the path's parts made."""
    return {
        "stack": spec.stack,
        "provider": spec.provider,
        "region": spec.region,
        "instanceType": spec.instance.name,
        "nodeCount": spec.nodes,
        "billing": spec.billing,
        "instanceIds": instance_ids,
        "privateIps": private_ips,
        "poolId": pool_id,
        "sharedFsAddress": shared_fs_address,
        "expiresAt": expires_at,
        "costPerHour": cost.spec_cost(spec).as_dict(),  # the preview's "cost", same keys
        "checkpoint": spec.checkpoint.output(),
        "sshCommand": ssh_command,
        # What bills after the nodes release themselves (maxHours ends nodes only): run.py shows it.
        "keepsBilling": billing.as_output(spec),
    }
