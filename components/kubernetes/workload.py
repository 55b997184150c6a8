"""Register the training run's Kubernetes objects (manifests.py) through pulumi-kubernetes.

One explicit Provider built from the cluster's kubeconfig (a secret), so nothing reads a kubeconfig
of the user's machine. Each dict becomes the typed resource of its kind; their inputs are exactly the
manifest (what the schema tests check). NVIDIA's GPU Operator, when kubernetes.gpuOperator is true,
is a Helm release pinned to one chart version, with every part that ACK already manages switched off.
"""
from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.spec import Spec

# NVIDIA GPU Operator (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html):
# the chart and the release the docs name as current.
GPU_OPERATOR_CHART = {"chart": "gpu-operator", "version": "v25.10.1", "repo": "https://helm.ngc.nvidia.com/nvidia"}
# The managed cluster installs the driver, the container toolkit and a device plugin on its GPU nodes: a
# second copy of any of them fights the first. What is left: GPU feature discovery (node labels) and
# DCGM metrics. The operator's namespace must allow privileged pods (its daemons are).
GPU_OPERATOR_VALUES = {
    "driver": {"enabled": False}, "toolkit": {"enabled": False}, "devicePlugin": {"enabled": False},
    "migManager": {"enabled": False}, "dcgmExporter": {"enabled": True}, "gfd": {"enabled": True},
    "nfd": {"enabled": True},
    "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
}
GPU_OPERATOR_NAMESPACE = "gpu-operator"

KINDS = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Service"): k8s.core.v1.Service,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
}
# Fields besides metadata that each kind takes, as the SDK names its arguments.
FIELDS = {"spec": "spec", "data": "data", "automountServiceAccountToken": "automount_service_account_token"}


def provider(name: str, kubeconfig: pulumi.Output, parent: pulumi.Resource) -> k8s.Provider:
    return k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig, enable_server_side_apply=True,
                        opts=pulumi.ResourceOptions(parent=parent))


def register(name: str, objects: list[dict], k8s_provider: k8s.Provider, parent: pulumi.Resource,
             after: Sequence[pulumi.Resource] = ()) -> list:
    """Each object as its typed resource, each depending on the ones before it (namespace first, Job last),
    the first on `after` (what the cluster part says must exist first)."""
    made: list = []
    for obj in objects:
        kind = KINDS[(obj["apiVersion"], obj["kind"])]
        args: dict[str, Any] = {FIELDS[key]: value for key, value in obj.items() if key in FIELDS}
        resource_name = f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}"
        made.append(kind(resource_name, metadata=obj["metadata"], **args, opts=pulumi.ResourceOptions(
            parent=parent, provider=k8s_provider, depends_on=made[-1:] or list(after))))
    return made


def gpu_operator(spec: Spec, name: str, k8s_provider: k8s.Provider, parent: pulumi.Resource) -> k8s.helm.v3.Release:
    opts = pulumi.ResourceOptions(parent=parent, provider=k8s_provider)
    space = k8s.core.v1.Namespace(f"{name}-gpu-operator-namespace", metadata={
        "name": GPU_OPERATOR_NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}, opts=opts)
    return k8s.helm.v3.Release(
        f"{name}-gpu-operator", chart=GPU_OPERATOR_CHART["chart"], version=GPU_OPERATOR_CHART["version"],
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=GPU_OPERATOR_CHART["repo"]),
        namespace=GPU_OPERATOR_NAMESPACE, values=GPU_OPERATOR_VALUES, atomic=True,
        opts=pulumi.ResourceOptions(parent=parent, provider=k8s_provider, depends_on=[space]))
