"""The Pulumi program: read the stack config, validate it into a Spec, build its target's component, export.

Invalid config stops the program before any resource is declared: every problem is printed and
the process exits with status 2 (never a traceback).
"""
from __future__ import annotations

import sys
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components import targets
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
    log_findings(spec)
    return spec


def log_findings(spec: Spec) -> None:
    """The validation's warnings and notes, in the engine's log (`pulumi up` shows them)."""
    for finding in spec.findings:
        (pulumi.log.warn if finding.level == "warning" else pulumi.log.info)(f"{finding.key}: {finding.message}")


def main() -> pulumi.ComponentResource:
    spec = validated_spec()
    # Where the training runs (VM nodes, a Kubernetes cluster, a platform job): components/targets.
    cluster = targets.of(spec).component(spec.stack, spec)
    for name, value in cluster.outputs.items():
        pulumi.export(name, value)
    return cluster
