"""Helpers for the bootstrap tests. Node configs: every stack file through the real node config builder,
plus fixture configs for what no stack covers yet (an Ascend node)."""
from __future__ import annotations

import copy
import functools
import json
import os
import shutil
from pathlib import Path

import pytest
from stackcases import node_stack_names

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).with_name("fixtures")
# Every stack whose machines boot through the bootstrap: a platform job (ModelArts, PAI-DLC) has none.
STACK_NAMES = sorted(node_stack_names())
# Ascend has no stack (Huawei's Ascend flavors are prepaid bare metal, refused: docs/huaweicloud.md): its node
# config is a fixture that follows the contract.
FIXTURE_NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
ALL_CONFIGS = [f"stack:{n}" for n in STACK_NAMES] + [f"fixture:{n}" for n in FIXTURE_NAMES]


@functools.lru_cache(maxsize=None)
def _load(name: str) -> str:
    kind, _, stack = name.partition(":")
    if kind == "stack":
        from tools.stackfiles import node_config_for_stack
        return json.dumps(node_config_for_stack(stack))
    return (FIXTURES / f"{stack}.json").read_text()


# Stack configs carry the preview's "<...>" placeholder for the shared FS address; a node would get the
# real mount target, in the form each provider snippet documents.
SAMPLE_FS_ADDRESS = {"cpfs": "cpfs-0123456789abcdef-000001.cn-hangzhou.cpfs.aliyuncs.com:/share",
                     "nas": "0a1b2c3d4e-abc12.cn-hangzhou.nas.aliyuncs.com", "cfsturbo": "10.0.3.7:/a1b2c3d4",
                     "sfsturbo": "192.168.0.8:/"}
# What installing a shared-FS client changes on a real node, for snippets that check it on re-runs.
SAMPLE_FS_EFFECTS = {"cfsturbo": {"cfs_turbo_client_setup": 'mkdir -p "$GPU_TRAINING_ROOT/sys/module/ptlrpc"'}}


def load_config(name: str, *, real_address: bool = True) -> dict:
    """A fresh copy of a node config: 'stack:<name>' (stacks/Pulumi.<name>.yaml) or 'fixture:<name>'."""
    cfg = copy.deepcopy(json.loads(_load(name)))
    if "artifacts" not in cfg:
        # Fixture files omit what changes with every agent edit: the program computes it the same way.
        from components.artifacts import agent_section
        from node_agent import layout
        root = layout.stack_root(cfg["checkpoint"]["prefix"], cfg["stack"])
        cfg["artifacts"] = {"agent": agent_section(cfg["checkpoint"]["prefix"], cfg["stack"]),
                            "code": {"prefix": root + layout.CODE}}
    fs = cfg["bootstrap"]["sharedFs"]
    if real_address and str(fs.get("address") or "").startswith("<"):
        fs["address"] = SAMPLE_FS_ADDRESS[fs["type"]]
    return cfg


def tool(name: str) -> str | None:
    """Path of an external validator; under CI=true a missing one is a failure, never a skip."""
    found = shutil.which(name) or (shutil.which(name, path=str(REPO / ".venv" / "bin")))
    if not found:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is required under CI=true (.ci/run installs it)")
        pytest.skip(f"{name} not installed")
    return found
