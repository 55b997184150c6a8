"""A managed Kubernetes cluster and a training Job whose pods run the node agent (components/kubernetes/).

A cluster has no cloud-side release: the Job stops at its deadline (activeDeadlineSeconds, maxHours) and the
cluster with its pools bills until the stack is destroyed (`gpu-training down`, or `up` at the end of a run).
Refresh and destroy run the program: the provider takes a temporary kubeconfig the program reads.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

if TYPE_CHECKING:  # loaded by the tools too, which read its facts without Pulumi
    import pulumi


class KubernetesTarget:
    kind = "kubernetes"
    description = "a Kubernetes cluster"
    run = "pods"
    ending = "the Job stops after maxHours; the cluster bills until destroyed"
    node_endpoints = True  # the pods' agent reaches the same endpoints a node's does
    data_disks = True
    teardown_runs_program = True

    def selects(self, spec) -> bool:
        return spec.kubernetes is not None

    def component(self, name: str, spec, opts: Optional["pulumi.ResourceOptions"] = None):
        from components.kubernetes.cluster import KubernetesTraining

        return KubernetesTraining(name, spec, opts, target=self)

    def keeps_billing(self, spec) -> list:
        from components import billing

        return billing.keeps_billing(spec)  # the provider's profile lists the cluster and its pools

    def preview_lines(self, spec, outputs: Mapping) -> list[str]:
        k8s = spec.kubernetes
        return [f"image: {k8s.image} (the training pods' container)",
                f"time limit: the training Job stops {spec.max_hours:g} h after it starts (activeDeadlineSeconds);"
                " the cluster has no cloud-side release: it and its node pools bill until `gpu-training down`"
                f" (or `pulumi destroy --stack {spec.stack}`)"]


TARGET = KubernetesTarget()
