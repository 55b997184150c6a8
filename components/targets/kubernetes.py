"""A managed Kubernetes cluster and a training Job whose pods run the node agent (components/kubernetes/).

A cluster has no cloud-side release: the Job stops at its deadline (activeDeadlineSeconds, maxHours) and the
cluster with its pools bills until the stack is destroyed (`gpu-training down`, or `up` at the end of a run).
Refresh and destroy run the program: the provider takes a temporary kubeconfig the program reads. What keeps
billing is the provider profile's list, which names the cluster and its pools.
"""
from __future__ import annotations

from typing import Mapping

from components.targets.base import DeclaredTarget


class KubernetesTarget(DeclaredTarget):
    def selects(self, spec) -> bool:
        return spec.kubernetes is not None

    def preview_lines(self, spec, outputs: Mapping) -> list[str]:
        k8s = spec.kubernetes
        return [f"image: {k8s.image} (the training pods' container)",
                f"time limit: the training Job stops {spec.max_hours:g} h after it starts (activeDeadlineSeconds);"
                " the cluster has no cloud-side release: it and its node pools bill until `gpu-training down`"
                f" (or `pulumi destroy --stack {spec.stack}`)"]


# node_endpoints: the pods' agent reaches the same endpoints a node's does.
TARGET = KubernetesTarget(kind="kubernetes", description="a Kubernetes cluster", run="pods",
                          ending="the Job stops after maxHours; the cluster bills until destroyed",
                          node_endpoints=True, data_disks=True, teardown_runs_program=True,
                          component_class="components.kubernetes.training:KubernetesTraining")
