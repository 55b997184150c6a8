"""The contract of a provider's Pulumi parts: one `create` per part module, typed as Protocols.

components/vm_training.py (the VM path) calls them in this order, each given what the earlier ones made:
network -> identity -> storage -> (user-data rendered) -> compute. components/kubernetes/training.py (the
Kubernetes path) calls network -> storage -> cluster. A provider package has the four modules `network.py`,
`identity.py`, `storage.py`, `compute.py`, and `cluster.py` where it offers the Kubernetes path, each with
a module-level `create` of the signature below (parameter names and order count: the components pass them
by position). providers.parts() compares the signatures of every part it hands over, once, at lookup;
tests/providers/test_contract.py does it for every registered package. What each returns is the dataclass
of components/providers/part_records.py; the components read nothing else from a part.
"""
from __future__ import annotations

import inspect
from types import ModuleType
from typing import Protocol, runtime_checkable

import pulumi

from components.providers.part_records import (ClusterParts, ComputeParts, IdentityParts, NetworkParts, PartContext,
                                               StorageParts)


@runtime_checkable
class NetworkPart(Protocol):
    """VPC, subnets in the zones the nodes may use, a security group without world-open ingress,
    and whatever outbound path the nodes need (NAT, endpoints: docs/egress.md)."""

    def create(self, spec, ctx: PartContext) -> NetworkParts: ...


@runtime_checkable
class IdentityPart(Protocol):
    """The node role: assumable by the cloud's compute service only, limited to the stack's
    instances and its object prefix (docs/providers.md, the identity.py row)."""

    def create(self, spec, ctx: PartContext) -> IdentityParts: ...


@runtime_checkable
class StoragePart(Protocol):
    """The training code upload (train.codeDir), the checkpoint bucket only when checkpoint.create
    (retained on delete), and the shared file system (large tier) with its mount address, or none."""

    def create(self, spec, ctx: PartContext, network: NetworkParts) -> StorageParts: ...


@runtime_checkable
class ComputePart(Protocol):
    """The nodes (or the spot pool that keeps them), with encrypted disks, required metadata
    tokens, the stack tag, a cloud-side TTL at expires_at, and the rendered user-data."""

    def create(self, spec, ctx: PartContext, network: NetworkParts, identity: IdentityParts,
               storage: StorageParts, user_data: pulumi.Output,
               expires_at: pulumi.Output) -> ComputeParts: ...


@runtime_checkable
class ClusterPart(Protocol):
    """The Kubernetes path (optional, `cluster.py`): a managed cluster in the network's VPC with a small
    system pool and a GPU pool (tainted, scaling from zero), the pods' cloud role for the bucket, and the
    kubeconfig as a secret (components/kubernetes/training.py calls it instead of identity and compute)."""

    def create(self, spec, ctx: PartContext, network: NetworkParts) -> ClusterParts: ...


class NodeRuntime(Protocol):
    """What the node agent calls on the provider's node_runtime.py `Runtime(cfg, metadata)`
    (docs/agent.md, "Delivery to the node"). The file is self-contained on the node, so it cannot
    import this Protocol; tests/providers/test_contract.py compares the methods instead."""

    def instance_id(self) -> str: ...
    def private_ip(self) -> str: ...
    def credentials(self) -> dict: ...  # botocore's refreshable-credential dict, from the node role
    def spot_notice(self): ...  # an aware UTC datetime, or None
    def release(self): ...
    def peers(self) -> list: ...  # [(instance id, private IP)] of the stack's nodes
    def retire_pool(self) -> str: ...  # what it did


RUNTIME_METHODS = ("instance_id", "private_ip", "credentials", "spot_notice", "release", "peers", "retire_pool")

# Every file a provider package has: True = required (the registry, the tools or the tests use it
# for every cloud), False = optional (the tool that needs it says so). docs/providers.md describes each.
PACKAGE_FILES: dict[str, bool] = {
    "__init__.py": True, "profile.py": True, "preview.py": True,
    "network.py": True, "identity.py": True, "storage.py": True, "compute.py": True,
    "node_runtime.py": True, "catalog.yaml": True, "conformance.yaml": True,
    "bridge.yaml": True, "provider_facts.json": True,
    "pricing.py": False, "regions_api.py": False, "regions.yaml": False, "templates/": False,
    "cluster.py": False, "pod_runtime.py": False,  # the Kubernetes path (docs/kubernetes.md)
}

PROTOCOLS: dict[str, type] = {"network": NetworkPart, "identity": IdentityPart, "storage": StoragePart,
                              "compute": ComputePart, "cluster": ClusterPart}


def _parameters(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values() if p.name != "self"]


def runtime_mismatches(module: ModuleType) -> list[str]:
    """What keeps a node_runtime module from being the one the agent calls: empty when it conforms."""
    runtime = getattr(module, "Runtime", None)
    if not isinstance(runtime, type):
        return [f"{module.__name__} has no class Runtime"]
    problems = [] if _parameters(runtime.__init__) == ["cfg", "metadata"] else [
        f"{module.__name__}.Runtime({', '.join(_parameters(runtime.__init__))}) must take (cfg, metadata)"]
    return problems + [f"{module.__name__}.Runtime has no method {name}()" for name in RUNTIME_METHODS
                       if not callable(getattr(runtime, name, None))]


def mismatches(part: str, module: ModuleType) -> list[str]:
    """What keeps `module` from being the `part` the cluster calls: empty when it conforms."""
    create = getattr(module, "create", None)
    if not callable(create):
        return [f"{module.__name__} has no create()"]
    wanted, got = _parameters(PROTOCOLS[part].create), _parameters(create)
    if wanted != got:
        return [f"{module.__name__}.create({', '.join(got)}) must take ({', '.join(wanted)})"]
    return []
