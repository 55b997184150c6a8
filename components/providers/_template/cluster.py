"""__Cloud__'s managed Kubernetes: the Kubernetes path's cluster part (components/kubernetes/, docs/kubernetes.md).

Contract: components/providers/contract.py ClusterPart; docs/providers.md, the cluster.py row. The shape of
Alibaba's ACK part (alicloud/cluster.py), which every managed Kubernetes needs in some form: a cluster in
the stack's VPC and security group (network.py) whose API server admits only kubernetes.apiAllowCidrs; a
small CPU system pool for CoreDNS and the controllers; the GPU pool (the tier's types in fallback order,
spot or on-demand, one placement group, encrypted disks, metadata tokens required, the GPU taint, scaling
from zero to `nodes` with the cluster autoscaler); the pods' own cloud role for the bucket, assumable only
by the training ServiceAccount (the cloud's workload identity: profile KUBERNETES.workload_identity); the
kubeconfig as a secret. The resources are placeholders (components/providers/placeholder.py): replace each
with its class in the cloud's Pulumi SDK, keeping what create() returns.
"""
from __future__ import annotations

import pulumi

from components.kubernetes import manifests
from components.providers.part_records import ClusterParts, NetworkParts, PartContext, placement_groups
from components.providers.placeholder import Placeholder
from components.providers.__cloud__.identity import bucket_statements

# Pod and Service CIDRs outside the stack's VPC (network.py VPC_CIDR). TODO(__cloud__): the ranges the service accepts.
POD_CIDR = "172.20.0.0/16"
SERVICE_CIDR = "172.21.0.0/20"
# The cloud's workload identity: the namespace label that turns it on and the ServiceAccount annotation that
# names the pods' role. TODO(__cloud__): both from the service's workload identity doc (empty if it needs none).
WORKLOAD_IDENTITY_LABELS: dict[str, str] = {}
ROLE_ANNOTATION = "todo.__cloud__.example/role-name"
CLUSTER_TYPE = "__cloud__:kubernetes:Cluster"


def pod_role_name(spec) -> str:
    return f"gpu-training-{spec.stack}-pod"


def gpu_pool_billing(spec) -> dict:
    """The GPU pool's spot inputs: the cap per hour (the user's, else none: the on-demand price) or on-demand."""
    if not spec.spot:
        return {"billing": "on-demand"}
    return {"billing": "spot", "maxPricePerHour": spec.spot_max_price, "zones": len(spec.spot_zones) + 1}


class ManagedCluster(pulumi.ComponentResource):
    def __init__(self, spec, ctx: PartContext, network: NetworkParts):
        super().__init__("gpu-training:__cloud__:ManagedCluster", f"{ctx.name}-k8s", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        k8s, tags = spec.kubernetes, dict(ctx.tags)
        subnets = list(network.subnet_ids.values())
        self.cluster = Placeholder(
            CLUSTER_TYPE, f"{ctx.name}-cluster",
            {"name": f"gpu-training-{spec.stack}", "clusterSpec": k8s.offer.cluster_spec, "version": k8s.version,
             "vpcId": network.vpc_id, "subnetIds": subnets[:1], "securityGroupId": network.security_group_id,
             "podCidr": POD_CIDR, "serviceCidr": SERVICE_CIDR, "apiAllowCidrs": list(k8s.api_allow_cidrs),
             "workloadIdentity": True, "deletionProtection": False, "tags": tags},
            child, outputs=("kubeconfig", "oidcIssuer"))
        pool = dict(clusterId=self.cluster.id, securityGroupIds=[network.security_group_id], metadataTokens="required",
                    systemDiskEncrypted=True, tags=tags)
        self.system_pool = Placeholder(
            "__cloud__:kubernetes:NodePool", f"{ctx.name}-system-pool",
            {"name": f"{spec.stack}-system", "subnetIds": subnets[:1], "instanceTypes": [k8s.system_instance_type],
             "size": k8s.system_nodes, "labels": {manifests.POOL_LABEL: "system"}, **pool}, child)
        # The pool takes one placement group: none past what one holds (profile.interconnect.placement).
        placement = next(iter(placement_groups(spec, True, lambda g: Placeholder(
            "__cloud__:compute:PlacementGroup", f"{ctx.name}-gpu-placement", {"name": f"gpu-training-{spec.stack}",
                                                                           "tags": tags}, child).id)), None)
        disk = spec.data_disk
        # From zero: GPU nodes exist while the Job's pods need them; the autoscaler removes idle ones.
        self.gpu_pool = Placeholder(
            "__cloud__:kubernetes:NodePool", f"{ctx.name}-gpu-pool",
            {"name": f"{spec.stack}-gpu", "subnetIds": subnets, "instanceTypes": [row.name for row in spec.pool_types],
             "autoscaling": {"min": 0, "max": spec.nodes}, "placementGroupId": placement,
             "dataDisk": {"category": disk.category, "sizeGb": disk.size_gb, "encrypted": True},
             "labels": {manifests.POOL_LABEL: "gpu"}, "taints": [dict(manifests.GPU_TAINT)],
             **gpu_pool_billing(spec), **pool}, child)
        self.pod_role = Placeholder(
            "__cloud__:identity:Role", f"{ctx.name}-pod-role",
            {"roleName": pod_role_name(spec), "tags": tags,
             # Only the training ServiceAccount of this cluster may assume it (the OIDC subject).
             "trust": {"oidcIssuer": self.cluster.oidcIssuer,
                       "subject": f"system:serviceaccount:{k8s.namespace}:{manifests.SERVICE_ACCOUNT}"}}, child)
        Placeholder("__cloud__:identity:Policy", f"{ctx.name}-pod-policy",
                    {"roleName": pod_role_name(spec), "statements": bucket_statements(spec)},
                    pulumi.ResourceOptions(parent=self, depends_on=[self.pod_role]))
        # TODO(__cloud__): a credential of limited life where the service offers one (KUBERNETES.credential_minutes).
        self.kubeconfig = pulumi.Output.secret(self.cluster.kubeconfig)
        self.register_outputs({"clusterId": self.cluster.id})

    def parts(self, spec) -> ClusterParts:
        cidrs = ", ".join(spec.kubernetes.api_allow_cidrs)
        return ClusterParts(cluster_id=self.cluster.id, kubeconfig=self.kubeconfig, gpu_pool_id=self.gpu_pool.id,
                            pod_role_name=pod_role_name(spec), namespace_labels=dict(WORKLOAD_IDENTITY_LABELS),
                            service_account_annotations={ROLE_ANNOTATION: pod_role_name(spec)},
                            api_endpoint_note=self.cluster.id.apply(lambda _: f"the API server admits only {cidrs}"),
                            # The pods need the pools (and the role) before they are scheduled.
                            workload_depends_on=[self.system_pool, self.gpu_pool, self.pod_role])


def create(spec, ctx: PartContext, network: NetworkParts) -> ClusterParts:
    return ManagedCluster(spec, ctx, network).parts(spec)
