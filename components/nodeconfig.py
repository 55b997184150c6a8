"""The node config: one JSON document per stack that the bootstrap and the node agent read (docs/node-config.md).

Built from a validated Spec plus the few values only known at deploy time (the shared FS mount
address, the node role's name). It never carries a credential.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from components import artifacts, cost, reclaim, tags
from components.naming import pool_name, role_name

if TYPE_CHECKING:  # annotations only: the node config reads a Spec, it builds none
    from components.spec import Spec

VERSION = 1


# What the user-data budget and the offline tools render in place of the nodes' expiry, which only `pulumi up`
# knows (the recorded creation time + maxHours): the same length as a real one (clock.EXPIRY_FORMAT).
EXPIRY_STANDIN = "2000-01-01T00:00:00Z"


def build_node_config(spec: Spec, *, shared_fs_address: Optional[str], role: Optional[str] = None,
                      expires_at: Optional[str] = None) -> dict[str, Any]:
    """The node config (docs/node-config.md). `expires_at`: when the cloud releases the VM nodes (the stack's one
    clock, components/vm_training.py), which the agent stops before; None where no such moment exists (a Kubernetes
    Job's deadline counts from its start: the agent counts maxHours from the boot)."""
    instance = spec.instance
    profile = spec.profile
    unit = cost.spec_node_hour_price(spec)  # a spot pool priced by a type that has a price: said in its basis
    effective = unit.spot if spec.spot else unit.on_demand
    shared_path = "/shared" if spec.shared_storage != "none" else None
    return {
        "version": VERSION,
        "project": spec.project,
        "stack": spec.stack,
        "provider": spec.provider,
        "region": spec.region,
        "zone": spec.zone,
        "tier": spec.tier.name,
        "billing": spec.billing,
        "nodeCount": spec.nodes,
        "instanceType": instance.name,
        "accelerator": {
            "kind": spec.gpu.kind,
            "model": spec.gpu.name,
            "count": spec.gpus_per_node,
            "memoryGb": instance.gpu_memory_gb,
            "nvswitch": bool(instance.nvswitch),
        },
        # What the node really has set up: RDMA hardware the program does not enable counts as none.
        "host": {"vcpus": instance.vcpus, "memoryGb": round(instance.memory_gb),
                 "rdma": instance.rdma if instance.rdma in profile.interconnect.rdma_enabled else "none"},
        "paths": {
            "data": "/data",
            "shared": shared_path,
            "checkpoints": "/data/checkpoints",
            "dataset": "/data/dataset",
            "state": "/var/lib/gpu-training",
            "logs": "/var/log/gpu-training",
            "venv": "/opt/gpu-training/venv",
            "agent": "/opt/gpu-training/agent",
        },
        "checkpoint": {
            "bucket": spec.checkpoint.bucket,
            "prefix": spec.checkpoint.prefix,
            "endpoint": spec.checkpoint.endpoint_for_nodes,
            "region": spec.checkpoint.region,
            "addressingStyle": spec.checkpoint.addressing_style,
            "signatureVersion": spec.checkpoint.signature_version,
            "verify": spec.checkpoint.verification.node_config(),
        },
        "train": {
            "command": spec.train.command,
            "env": dict(spec.train.env),
            "workdir": "/data/work",
            "launcher": spec.train.launcher,
            "gpusPerNode": spec.gpus_per_node,
            "stopSignal": "SIGTERM",
            "rendezvousPort": 29400,
            # What the agent installs before training (node_agent/setup.py); left out when none (user-data room).
            **({"setup": list(spec.train.setup)} if spec.train.setup else {}),
            **({"requirements": spec.train.requirements} if spec.train.requirements else {}),
        },
        "agent": {
            # 60 s on spot nodes that no notice warns, else 300 (components/reclaim.py, bench/sync_cost.py).
            "syncIntervalSeconds": reclaim.sync_interval(spec),
            "spotPollSeconds": reclaim.SPOT_POLL_SECONDS,  # measured: bench/agent_latency.py --spot
            "utilSampleSeconds": 5,
            "idleMinutes": spec.idle_minutes,
            "idleUtilPercent": 5,
            "maxHours": spec.max_hours,
            **({"expiresAt": expires_at} if expires_at else {}),
            "ttlMarginMinutes": 15,
            "maxGraceSeconds": reclaim.MAX_GRACE_SECONDS,
            "keep": spec.keep,
            "uploadAttempts": 8,
        },
        # The packed data set under <prefix>/<stack>/data/ (docs/data.md), staged before training.
        # Keys at their agent default are left out: Tencent's large stacks are near their 16 KB user-data.
        "data": {"stage": spec.data.stage,
                 **({"manifestSha256": spec.data.manifest_sha256} if spec.data.manifest_sha256 else {}),
                 **({"waitMinutes": spec.data.wait_minutes} if spec.data.wait_minutes is not None else {})},
        "endpoints": {"metadata": profile.node.metadata_endpoint, "cloudApi": profile.egress.cloud_api(spec.region)},
        "cost": {"currency": unit.currency, "onDemandPerNodeHour": unit.on_demand,
                 "effectivePerNodeHour": effective},
        "identity": {"roleName": role or role_name(spec)},
        "artifacts": artifacts.node_config_section(spec),
        "cluster": {"tagKey": tags.STACK, "tagValue": spec.stack,
                    "poolName": pool_name(spec) if spec.profile.spot.has_pool(spec) else None},
        "bootstrap": {
            "aptMirror": profile.node.apt_mirror,
            "pipIndex": profile.node.pip_index,
            "nodeRequirements": list(profile.node.requirements),
            "driverBranch": spec.bootstrap["driverBranch"],
            "cudaToolkit": spec.bootstrap["cudaToolkit"],
            "framework": spec.bootstrap["framework"],
            "frameworkVersion": spec.bootstrap["frameworkVersion"],
            "frameworkIndexUrl": spec.bootstrap.get("frameworkIndexUrl") or None,
            "sharedFs": {
                "type": spec.shared_storage,
                "address": shared_fs_address if spec.shared_storage != "none" else None,
                "mountOptions": None,
            },
            "dataDisk": {"serial": None, "sizeGb": spec.data_disk.size_gb},
            "ascend": ({"packagesUrl": spec.bootstrap["ascendPackagesUrl"]} if spec.gpu.kind == "ascend" else None),
        },
    }
