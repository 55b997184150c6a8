"""The stack outputs every node stack exports, on VMs (components/vm_training.py) and on Kubernetes
(components/kubernetes/training.py): one builder, so the two paths cannot drift apart; its first keys are the
ones every target writes (components/targets/base.py common_outputs, `target` first).

scripts/run.py and tools/runlib read these keys from either kind of stack (`pulumi stack output`): the
nodes and their addresses, the pool, the expiry, the cost, what keeps billing. Each path passes what only
it knows (a Kubernetes stack has no instance ids: its pods come and go) as keyword arguments that have no
default, so a path that forgets one fails at once instead of exporting a stack that lacks the key.
The Kubernetes path adds its own keys (KubernetesTraining) on top of these.
"""
from __future__ import annotations

from typing import Any, Optional

import pulumi

from components.targets.base import COMMON_KEYS, common_outputs

# Every key node_outputs() writes, in the order it writes them (tests compare both paths' exports to it).
NODE_KEYS = (*COMMON_KEYS, "instanceIds", "privateIps", "poolId", "sharedFsAddress", "sshCommand")


def node_outputs(spec, target, *, instance_ids: list, private_ips: list, pool_id: Optional[pulumi.Input[str]],
                 shared_fs_address: Optional[pulumi.Input[str]], expires_at: pulumi.Input[str],
                 ssh_command: Optional[pulumi.Input[str]]) -> dict[str, Any]:
    """The outputs both paths export: every target's (`keepsBilling`: what bills after the nodes release
    themselves, which run.py shows) plus what the path's parts made."""
    return {
        **common_outputs(target, spec, expires_at=expires_at, keeps_billing=target.keeps_billing(spec)),
        "instanceIds": instance_ids,
        "privateIps": private_ips,
        "poolId": pool_id,
        "sharedFsAddress": shared_fs_address,
        "sshCommand": ssh_command,
    }
