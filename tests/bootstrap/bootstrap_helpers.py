"""Helpers for the bootstrap tests. Node configs: every stack file through the real node config builder,
plus fixture configs for what no stack covers yet (an Ascend node, a NAS mount, a spot A100)."""
from __future__ import annotations

import copy
import functools
import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).with_name("fixtures")
STACK_NAMES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (REPO / "stacks").glob("Pulumi.*.yaml"))
# Ascend has no stack yet (no Huawei provider); the rest stay as contract examples.
FIXTURE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
ALL_CONFIGS = [f"stack:{n}" for n in STACK_NAMES] + [f"fixture:{n}" for n in FIXTURE_NAMES]


@functools.lru_cache(maxsize=None)
def _load(name: str) -> str:
    kind, _, stack = name.partition(":")
    if kind == "stack":
        from components.nodeconfig import node_config_for_stack
        return json.dumps(node_config_for_stack(stack))
    return (FIXTURES / f"{stack}.json").read_text()


def load_config(name: str) -> dict:
    """A fresh copy of a node config: 'stack:<name>' (stacks/Pulumi.<name>.yaml) or 'fixture:<name>'."""
    return copy.deepcopy(json.loads(_load(name)))


def tool(name: str) -> str | None:
    """Path of an external validator; under CI=true a missing one is a failure, never a skip."""
    found = shutil.which(name) or (shutil.which(name, path=str(REPO / ".venv" / "bin")))
    if not found:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is required under CI=true (.ci/run installs it)")
        pytest.skip(f"{name} not installed")
    return found
