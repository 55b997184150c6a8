"""The Pulumi program: read the stack config, validate it into a Spec, build one TrainingCluster, export.

Invalid config stops the program before any resource is declared: every problem is printed and
the process exits with status 2 (never a traceback).
"""
from __future__ import annotations

import sys
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components.cluster import TrainingCluster
from components.kubernetes.cluster import KubernetesTraining
from components.platforms.training import PlatformTraining
from components.spec import Spec
from components.validation import SpecError, build_spec


def stack_config() -> dict[str, Any]:
    """Every config value of the stack, all namespaces (so typos in our keys can be reported)."""
    merged = dict(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    return merged


def validated_spec() -> Spec:
    try:
        spec = build_spec(stack_config(), stack=pulumi.get_stack(), project=pulumi.get_project())
    except SpecError as error:
        print(error.render(), file=sys.stderr)
        raise SystemExit(2) from None
    for finding in spec.findings:
        (pulumi.log.warn if finding.level == "warning" else pulumi.log.info)(f"{finding.key}: {finding.message}")
    return spec


def main() -> TrainingCluster | KubernetesTraining | PlatformTraining:
    spec = validated_spec()
    # A stack with a `kubernetes:` section runs on a managed cluster (docs/kubernetes.md), else on VMs.
    # `platform:` submits a job to a managed training platform (docs/platforms.md).
    kind = PlatformTraining if spec.platform else KubernetesTraining if spec.kubernetes else TrainingCluster
    cluster = kind(spec.stack, spec)
    for name, value in cluster.outputs.items():
        pulumi.export(name, value)
    return cluster
