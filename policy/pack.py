"""components/safety.py's RULES as pulumi_policy policies: one table, two runners.

A "resource" rule becomes a ResourceValidationPolicy (judged on each resource's inputs as the engine
sends them); a "stack" rule, which follows references between resources (a disk made from an
encrypted snapshot, a termination timer naming its instance), becomes a StackValidationPolicy that
sees the whole plan with its property dependencies. Values that are unknown until apply are skipped,
never guessed. The stack name comes from PULUMI_STACK (set by the CLI) or the resource's URN.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

# The rules and the providers' adapters and facts live in the project next to this directory.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import (  # noqa: E402
    EnforcementLevel,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from components import safety  # noqa: E402

PACK_NAME = "gpu-training-safety"


def _stack(urn: str, stack: Optional[str]) -> str:
    return stack or os.environ.get("PULUMI_STACK") or safety.stack_of_urn(urn)


def _resource_policy(rule: safety.Rule, stack: Optional[str]) -> ResourceValidationPolicy:
    def validate(args, report_violation) -> None:
        if args.resource_type.startswith("pulumi:") or args.resource_type.startswith("gpu-training:"):
            return
        resource = safety.Resource(args.resource_type, args.name, safety.plain(args.props), args.urn)
        context = safety.Context(_stack(args.urn, stack))
        for message in rule.check(resource, [resource], context):
            report_violation(message)

    return ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                    enforcement_level=EnforcementLevel.MANDATORY,
                                    remediation_steps=rule.remediation)


def _stack_policy(rule: safety.Rule, stack: Optional[str]) -> StackValidationPolicy:
    def validate(args, report_violation) -> None:
        resources = safety.from_policy_resources(args.resources)
        if not resources:
            return
        context = safety.Context(_stack(resources[0].urn, stack))
        for resource in resources:
            for message in rule.check(resource, resources, context):
                report_violation(message, resource.urn)

    return StackValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                 enforcement_level=EnforcementLevel.MANDATORY,
                                 remediation_steps=rule.remediation)


def policies(stack: Optional[str] = None) -> list:
    """One policy per rule of components.safety.RULES, in the table's order."""
    return [(_resource_policy if rule.scope == "resource" else _stack_policy)(rule, stack) for rule in safety.RULES]
