"""`--set` paths read as `pulumi config set --path` reads them (newcomer trial, 2026-12-07).

`gpu-training preview entry-a10 --set train.env.WANDB_MODE=offline` was refused with "train.env.WANDB_MODE:
unknown field; allowed fields: codeDir, command, env, ...": the override took `env.WANDB_MODE` as one field
name of train, while `up` saves it with `pulumi config set --path`, which nests it (train: {env: {WANDB_MODE:
offline}}). The preview as a user types it, the check `up` runs, and the config `up` saves now agree; a
name that holds a dot is not offered back as an allowed field.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.validation import SpecError, build_spec
from tests.tools.run_harness import run_cli
from tools.stackfiles import (StackFileError, apply_overrides, engine_form, load_stack_config,
                              node_config_for_stack, stack_spec)

REPO = Path(__file__).resolve().parents[2]


def preview(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.cli", "preview", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "GPU_TRAINING_NOW": "2026-12-07T10:00:00Z"})


def test_the_preview_takes_a_variable_of_train_env_by_its_path():
    done = preview("entry-a10", "--set", "train.env.WANDB_MODE=offline")
    assert done.returncode == 0, done.stderr[-1500:]
    assert "unknown field" not in done.stdout + done.stderr


def test_a_variable_set_by_its_path_reaches_the_node_config_beside_the_stack_files_own():
    config = apply_overrides({"gpu-training:train": {"env": {"A": "1"}, "codeDir": "examples/cnn"}},
                             ["train.env.WANDB_MODE=offline", "train.env.STEPS=200"])
    assert config["gpu-training:train"] == {"env": {"A": "1", "WANDB_MODE": "offline", "STEPS": 200},
                                            "codeDir": "examples/cnn"}
    node = node_config_for_stack("entry-a10", ("train.env.WANDB_MODE=offline",))
    assert node["train"]["env"]["WANDB_MODE"] == "offline"


@pytest.mark.parametrize("sets,key,fragment", [
    (("train.env.WANDB_API_TOKEN=abc",), "train.env.WANDB_API_TOKEN", "looks like a credential"),
    (("train.env.1BAD=x",), "train.env.1BAD", "not a valid environment variable name"),
    (("train.env.A.B=x",), "train.env", "is not a map of strings"),  # Pulumi nests it too: no string value
    (("tags.team.x=a",), "tags", "is not a map of strings"),
])
def test_the_env_and_map_rules_still_apply_to_a_value_set_by_its_path(sets, key, fragment):
    with pytest.raises(SpecError) as caught:
        stack_spec("entry-a10", sets)
    found = {f.key: f.message for f in caught.value.errors}
    assert key in found and fragment in found[key], found


def test_a_quoted_name_holds_a_dot_and_the_stack_files_value_is_left_as_it_was():
    stack = {"gpu-training:tags": {"team": "a"}}
    changed = apply_overrides(stack, ['tags["cost.centre"]=ml', "alicloud:region=cn-shanghai"])
    assert changed["gpu-training:tags"] == {"team": "a", "cost.centre": "ml"}
    assert changed["alicloud:region"] == "cn-shanghai" and stack == {"gpu-training:tags": {"team": "a"}}


@pytest.mark.parametrize("assignment,fragment", [
    ("failover.zones[0]=cn-hangzhou-h", "give the whole list instead: --set 'failover.zones=[\"a\", \"b\"]'"),
    ("train.command.x=1", "train.command is 'python train_cnn.py"),
    ('tags["a=1', "no closing quote"),
    ("train[x]=1", 'quote a name: ["x"]'),
])
def test_a_path_pulumi_would_not_set_is_refused_naming_it(assignment, fragment):
    stack = {"gpu-training:train": {"command": "python train_cnn.py"}}
    with pytest.raises(StackFileError) as caught:
        apply_overrides(stack, [assignment])
    assert assignment[:20] in caught.value.render() and fragment in caught.value.render(), caught.value.render()


@pytest.mark.parametrize("extra,key,fragment", [
    ({"gpu-training:train": {"env.WANDB_MODE": "offline"}}, "train.env.WANDB_MODE",
     "`env: {WANDB_MODE: ...}` under gpu-training:train"),
    ({"gpu-training:checkpoint.bucket": "mine"}, "gpu-training:checkpoint.bucket",
     "`gpu-training:checkpoint: {bucket: ...}` in the stack file"),
    ({"gpu-training:checkpoint": {"bucket": "mine-1", "bucket.x": "1"}}, "checkpoint.bucket.x",
     "checkpoint.bucket is a string, with no fields"),
])
def test_a_name_holding_a_dot_is_not_told_its_own_field_is_allowed(extra, key, fragment):
    """A stack file that writes a path as one name: the refusal says so, and does not list the field it refuses
    a child of as allowed (nor suggest it, "did you mean 'bucket'?")."""
    config = {**load_stack_config("entry-a10"), **extra}
    with pytest.raises(SpecError) as caught:
        build_spec(engine_form(config), stack="entry-a10")
    found = {f.key: f.message for f in caught.value.errors}
    assert key in found and fragment in found[key], found
    assert "allowed fields" not in found[key] and "did you mean" not in found[key]


def test_up_saves_a_path_as_the_config_key_it_checked():
    """`up` writes --set with `pulumi config set [--path]` (tools/runlib/automation.py); its keys and values are
    the ones apply_overrides judged: a path is typed by Pulumi's --path rule, a quoted name keeps its dot."""
    changes = run_cli.config_changes(["train.env.WANDB_MODE=offline", 'tags["a:b"]=7', "billing=spot",
                                  "alicloud:region=cn-beijing"])
    assert changes == {"gpu-training:train.env.WANDB_MODE": "offline", 'gpu-training:tags["a:b"]': 7,
                       "gpu-training:billing": "spot", "alicloud:region": "cn-beijing"}
