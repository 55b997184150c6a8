"""The public API for Pulumi programs (gpu_training: TrainingCluster, TrainingArgs): docs/api.md's program, as
written there, on Pulumi's mock engine; the same resources as the stack program for the same settings; bad
arguments refused by field name before any resource; the typed fields one to one with the stack keys."""
from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest

import gpu_training as gt
from components import schema
from gpu_training import args as api_args
from tools.mockrun import run_program

REPO = Path(__file__).resolve().parent.parent
REGION = {"alicloud:region": "cn-hangzhou"}
SECTIONS = {"checkpoint": gt.Checkpoint, "train": gt.Train, "data": gt.Data, "bootstrap": gt.Bootstrap,
            "platform": gt.Platform, "failover": gt.Failover, "kubernetes": gt.Kubernetes}
PY_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "commands": "array"}


def docs_program(tmp_path: Path) -> Path:
    """The first Python block of docs/api.md, as a program file in a project folder of its own."""
    block = re.search(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(), re.S).group(1)
    folder = tmp_path / "my-infra"
    folder.mkdir()
    (folder / "__main__.py").write_text(block)
    return folder / "__main__.py"


def test_the_docs_program_plans_the_training_on_the_mock_engine(tmp_path):
    plan = run_program(REGION, "dev", program_file=docs_program(tmp_path))
    types = [r.type for r in plan.resources]
    assert "gpu-training:index:Training" in types and "gpu-training:index:TrainingCluster" in types
    instance = next(r for r in plan.resources if r.type == "alicloud:ecs/instance:Instance")
    assert instance.inputs["instanceType"] == plan.outputs["instanceType"]
    assert instance.inputs["userData"]  # the bootstrap rides along
    assert instance.inputs["tags"]["team"] == "ml"
    # The outputs the commands read, under their own names (status, logs, report, down).
    assert {"checkpoint", "nodeCount", "expiresAt", "keepsBilling"} <= set(plan.outputs)
    assert plan.outputs["checkpoint"]["bucket"] == "my-gpu-training-checkpoints"


def test_the_component_declares_what_the_stack_program_declares(tmp_path):
    args = gt.TrainingArgs(provider="alicloud", tier="entry", gpu="T4", billing="spot", max_hours=6,
                           checkpoint=gt.Checkpoint(bucket="my-bucket"),
                           train=gt.Train(command="python train_cnn.py --steps 10", env={"SEED": "1"}))
    program = tmp_path / "__main__.py"
    program.write_text("import gpu_training as gt\nfrom gpu_training.args import *\n"
                       f"gt.TrainingCluster('same', {args!r}).export()\n")
    ours = run_program(REGION, "same", program_file=program)
    stack = run_program({**REGION, **args.stack_config()}, "same")

    def declared(plan):
        return sorted((r.type, r.name) for r in plan.resources if r.type != "gpu-training:index:Training")

    assert declared(ours) == declared(stack)
    assert ours.outputs == stack.outputs
    pool = [r for r in ours.resources if r.type == "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup"]
    assert pool, "billing='spot' did not reach the plan"


def test_bad_arguments_raise_config_error_by_field_before_any_resource(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text("import gpu_training as gt\n"
                       "gt.TrainingCluster('bad', gt.TrainingArgs(tier='entry', gpus_per_node=3, "
                       "checkpoint=gt.Checkpoint(bucket='my-bucket'), train=gt.Train(code_dir='no-such-folder')))\n")
    with pytest.raises(gt.ConfigError) as refused:
        run_program(REGION, "bad", program_file=program)
    message = str(refused.value)
    assert "invalid TrainingArgs (2 errors)" in message
    assert "gpus_per_node: 3 does not fit the entry tier" in message
    assert "train.code_dir: 'no-such-folder' is not a folder (relative to the project" in message
    assert "gpusPerNode" not in message  # the fields' names, not the stack keys'


def test_the_region_is_the_clouds_own_config_key(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text("import gpu_training as gt\n"
                       "gt.TrainingCluster('r', gt.TrainingArgs(checkpoint=gt.Checkpoint(bucket='my-bucket')))\n")
    with pytest.raises(gt.ConfigError, match="alicloud:region: not set; the region is Alibaba Cloud's own key"):
        run_program({}, "no-region", program_file=program)
    assert run_program({"alicloud:region": "cn-beijing"}, "r", program_file=program).resources


def _field_types(cls) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _kind(hint) -> object:
    """Optional[X] -> X's schema kind: str, int, float, bool, 'array', 'map', or a section class."""
    inner = [a for a in typing.get_args(hint) if a is not type(None)][0]
    origin = typing.get_origin(inner)
    if origin is typing.Literal:
        return type(typing.get_args(inner)[0])
    if origin is not None and issubclass(origin, typing.Sequence):
        return "array"
    if origin is not None and issubclass(origin, typing.Mapping):
        return "map"
    return inner


def test_the_typed_fields_are_the_stack_keys_one_to_one():
    fields = _field_types(gt.TrainingArgs)
    assert sorted(api_args.camel(name) for name in fields) == sorted(schema.BY_NAME)
    for name, hint in fields.items():
        key = schema.BY_NAME[api_args.camel(name)]
        if key.type == "object" and key.fields != {"*": "string"}:
            section = SECTIONS[key.name]
            assert _kind(hint) is section, name
            inner = _field_types(section)
            assert sorted(api_args.camel(n) for n in inner) == sorted(key.fields), key.name
            for field_name, field_hint in inner.items():
                wanted = key.fields[api_args.camel(field_name)]
                assert _kind(field_hint) == PY_TYPES.get(wanted, wanted), (key.name, field_name)
        elif key.type == "object":
            assert _kind(hint) == "map", name
        else:
            assert _kind(hint) == PY_TYPES.get(key.type, key.type), name
        if key.allowed:
            inner = [a for a in typing.get_args(hint) if a is not type(None)][0]
            assert set(typing.get_args(inner)) == set(key.allowed), name
