"""What the per-cloud suites (test_alicloud, test_tencentcloud, test_huaweicloud) read from a stack and
its plan, written once: a stack's own setting, the expiry the pinned clock gives it, the node
resources and the node config they carry, the one resource of a type, whether an SDK type takes tags,
and what validation says of a bad config.

Plain functions, imported by name (`from provider_plans import ...`) like tests/bootstrap's helpers;
the fixtures stay in tests/conftest.py and tests/providers/conftest.py.
"""
from __future__ import annotations

import inspect
import os
from datetime import datetime, timedelta, timezone

import pytest

from components.bootstrap import node_config_in_plan
from components.validation import SpecError, build_spec
from tools.sdknames import args_class
from tools.stackfiles import engine_form, load_stack_config

# The moment tests/conftest.py pins the program's clock to (GPU_TRAINING_NOW): the plans count from it.
NOW = datetime.fromisoformat(os.environ["GPU_TRAINING_NOW"].replace("Z", "+00:00")).astimezone(timezone.utc)


def stack_value(stack: str, key: str, default=None):
    """`gpu-training:<key>` as the stack file sets it, or `default`."""
    return load_stack_config(stack).get(f"gpu-training:{key}", default)


def expiry(stack: str) -> datetime:
    """When the stack's nodes expire: maxHours (24 unless set) after the pinned clock."""
    return NOW + timedelta(hours=float(stack_value(stack, "maxHours", 24)))


def node_resources(plan, *node_types: str) -> list:
    """The plan's resources of the first of `node_types` it has (single instances, else the pool's
    template or configuration)."""
    return next((found for found in map(plan.of_type, node_types) if found), [])


def node_config_in(resource, plan) -> dict:
    """The node config (node.json) of a node resource: in the boot payload its user data names."""
    return node_config_in_plan(resource.inputs["userData"], plan.resources)


def one(plan, type_token: str):
    """The plan's only resource of `type_token` (fails when there are none or several)."""
    (resource,) = plan.of_type(type_token)
    return resource


def takes_tags(sdk_module: str, type_token: str) -> bool:
    """Whether the installed SDK's Args class for `type_token` has a `tags` argument."""
    return "tags" in inspect.signature(args_class(sdk_module, type_token).__init__).parameters


def refusal_of(base: dict, changes: dict, key: str) -> str:
    """The messages validation gives `key` for `base` with `changes` (a bare name is `gpu-training:<name>`;
    None removes the key); fails the test when the config is accepted or nothing names `key`."""
    config = dict(base)
    for name, value in changes.items():
        full = name if ":" in name else f"gpu-training:{name}"
        if value is None:
            config.pop(full)
        else:
            config[full] = value
    with pytest.raises(SpecError) as caught:
        build_spec(engine_form(config), stack="t")
    messages = " | ".join(f.message for f in caught.value.errors if f.key == key)
    assert messages, caught.value.render()
    return messages
