"""What a provider's parts are handed and return (the contract's records, components/providers/contract.py):
the part context, the network, identity, storage, compute and cluster parts' outputs, and what both ways of
launching nodes share (NodeLaunch, the placement groups). What a provider declares is in profile_records.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import pulumi


def placement_groups(spec: Any, pooled: bool, make: Callable[[int], Any]) -> tuple:
    """The ids of the placement groups `spec`'s nodes go in, each made by `make(g)` (group 0 keeps the
    resource name a one-group stack has, so a stack that grows past `members` keeps its first group)."""
    placement = spec.profile.interconnect.placement
    return tuple(make(g) for g in range(placement.groups(spec.nodes, pooled) if placement else 0))


def group_suffix(group: int) -> str:
    """What placement group `group`'s names end with: nothing for group 0, "-<group>" after it."""
    return f"-{group}" if group else ""


@dataclass(frozen=True)
class PartContext:
    """What every provider part needs: the component to parent under, names and tags."""
    parent: pulumi.Resource
    name: str  # resource name prefix, e.g. "medium-a100"
    tags: Mapping[str, str]

    def opts(self, **kwargs) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent, **kwargs)


@dataclass(frozen=True)
class NetworkParts:
    vpc_id: pulumi.Output
    subnet_ids: Mapping[str, pulumi.Output]  # zone -> subnet id; the first is the primary zone
    subnet_cidrs: Mapping[str, str]
    security_group_id: pulumi.Output
    zone: pulumi.Output  # primary zone


@dataclass(frozen=True)
class IdentityParts:
    role_name: pulumi.Output


@dataclass(frozen=True)
class StorageParts:
    shared_fs_address: Optional[pulumi.Output]  # mount address for the bootstrap, None without a shared FS
    # (name, Output[components.artifacts.TextObject]) -> the object in the checkpoint bucket: the boot payload
    put_text: Optional[Callable[[str, pulumi.Output], pulumi.Resource]] = None


@dataclass(frozen=True)
class ComputeParts:
    instance_ids: list[pulumi.Output]
    private_ips: list[pulumi.Output]
    public_ips: list[pulumi.Output]
    pool_id: Optional[pulumi.Output]  # spot pool (auto provisioning / scaling group) id


@dataclass(frozen=True)
class ClusterParts:
    """What a provider's cluster part (cluster.py, the Kubernetes path) hands components/kubernetes/."""
    cluster_id: pulumi.Output
    kubeconfig: pulumi.Output  # a secret: the credential pulumi-kubernetes deploys with
    gpu_pool_id: pulumi.Output
    pod_role_name: str  # the pods' cloud role (bucket access), named in the node config; ours, known at preview
    namespace_labels: Mapping[str, str]  # labels the training namespace needs (workload identity on)
    service_account_annotations: Mapping[str, str]  # the ServiceAccount's link to the pod role
    api_endpoint_note: pulumi.Output  # who may reach the API server, and what is left to do, if anything
    workload_depends_on: list = field(default_factory=list)  # what must exist before the training objects


@dataclass(frozen=True)
class NodeLaunch:
    """What both ways a compute part launches nodes (instances on demand, a spot pool) share."""
    spec: Any
    ctx: PartContext
    network: NetworkParts
    identity: IdentityParts
    user_data: pulumi.Output
    expires_at: pulumi.Output
    tags: Mapping[str, Any]
    image: pulumi.Output
    key: Any  # the cloud's reference to the SSH key pair, or None
    placement: tuple  # the placement groups' ids (placement_groups); () when there is none
    public_bandwidth: Optional[int]  # outbound-only public bandwidth (Mbit/s), or None
    internet_charge: Optional[str]

    def group_of(self, index: int) -> Any:
        """The placement group of on-demand node `index` (node i is in group i // members), or None."""
        if not self.placement:
            return None
        return self.placement[index // self.spec.profile.interconnect.placement.members] if len(self.placement) > 1 \
            else self.placement[0]

    def pool_group(self) -> Any:
        """The one placement group a pool's template takes, or None (Placement.groups gives a pool at most one)."""
        return self.placement[0] if self.placement else None

    def pool_size(self) -> pulumi.Output[int]:
        """A spot pool's wanted size: spec.nodes, or 0 once its TTL has (nearly) passed. A pool's TTL is a
        scheduled action that fires once and sets it to zero; a later `pulumi up` that set it back to
        `nodes` would start spot GPUs that nothing stops (audit W4, on every cloud with a scheduled TTL)."""
        from components import clock

        def size(expires_at: str) -> int:
            note = clock.expired_note(expires_at)
            if note is None:
                return self.spec.nodes
            pulumi.log.warn(f"the spot pool is kept at 0 instances: {note}")
            return 0
        return pulumi.Output.from_input(self.expires_at).apply(size)
