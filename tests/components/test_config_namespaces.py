"""Keys outside the gpu-training namespace are read as `pulumi up` reads them, or refused by name (issue 33).

Pulumi gives a stack file's key without a namespace the project's name (pulumi/pulumi
sdk/go/common/workspace/loaders.go, LoadProjectStackBytes), so `billing: spot` is `<project>:billing` under
`pulumi up`; a key of another cloud or a misspelt provider key is read by nothing. Each was passed without a
word before (newcomer trial 3, finding 6): now each is an error naming the key and the one to write.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.validation import SpecError
from components.validation.namespaces import provider_keys
from tools import stackfiles
from tools.stackfiles import stack_spec

REPO = Path(__file__).resolve().parents[2]
SHIPPED = (REPO / "stacks" / "Pulumi.entry-t4.yaml").read_text()


def errors_of(stack: str, *sets: str) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        stack_spec(stack, sets)
    return {f.key: f.message for f in caught.value.errors}


@pytest.fixture
def stacks_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(stackfiles, "STACKS_DIR", tmp_path)
    return tmp_path


def write_stack(folder: Path, name: str, old: str, new: str) -> None:
    assert old in SHIPPED
    (folder / f"Pulumi.{name}.yaml").write_text(SHIPPED.replace(old, new))


def test_a_key_without_a_namespace_is_refused_naming_the_key_to_write(stacks_dir):
    write_stack(stacks_dir, "nons", "  gpu-training:billing: on-demand", "  billing: spot")
    errors = errors_of("nons")
    assert "'gpu-training:billing'" in errors["billing"] and "<project name>:billing" in errors["billing"]


def test_a_bare_region_without_a_namespace_is_pointed_to_the_clouds_region_key(stacks_dir):
    write_stack(stacks_dir, "bare", "  alicloud:region: cn-hangzhou", "  alicloud:region: cn-hangzhou\n  region: x")
    assert "'alicloud:region'" in errors_of("bare")["region"]


def test_a_misspelt_provider_key_gets_a_did_you_mean(stacks_dir):
    write_stack(stacks_dir, "typo", "  alicloud:region: cn-hangzhou", "  alicloud:regoin: cn-hangzhou")
    errors = errors_of("typo")
    assert "did you mean 'alicloud:region'?" in errors["alicloud:regoin"]
    assert "alicloud:region" in errors  # and the region is still said to be missing


@pytest.mark.parametrize("stack,sets,key,fragment", [
    ("tc-medium-a100", "alicloud:region=cn-beijing", "alicloud:region", "did you mean 'tencentcloud:region'?"),
    ("entry-t4", "tencentcloud:secretId=x", "tencentcloud:secretId", "runs on Alibaba Cloud"),
    ("hw-entry-t4", "alicloud:accessKey=x", "alicloud:accessKey", "did you mean 'huaweicloud:accessKey'?"),
    ("bd-large-a100", "alicloud:region=cn-beijing", "alicloud:region", "did you mean 'baiducloud:region'?"),
    ("bd-large-a100", "baiducloud:regoin=bj", "baiducloud:regoin", "did you mean 'baiducloud:region'?"),
    ("tc-entry-t4", "tencentcloud:secretld=x", "tencentcloud:secretld", "did you mean 'tencentcloud:secretId'"),
    ("entry-t4", "alicoud:region=cn-hangzhou", "alicoud:region", "did you mean 'alicloud:region'?"),
    ("entry-t4", "gpu-trainng:tier=large", "gpu-trainng:tier", "did you mean 'gpu-training:tier'?"),
])
def test_keys_of_other_clouds_and_misspelt_keys_are_refused_by_name(stack, sets, key, fragment):
    errors = errors_of(stack, sets)
    assert key in errors and fragment in errors[key], errors


@pytest.mark.parametrize("stack,sets", [
    ("entry-t4", "alicloud:accessKey=x"), ("entry-t4", "alicloud:profile=default"),
    ("tc-entry-t4", "tencentcloud:secretId=x"), ("hw-entry-t4", "huaweicloud:projectId=x"),
    ("entry-t4", "kubernetes:context=x"), ("entry-t4", "myteam:owner=x"),
])
def test_keys_the_provider_reads_and_other_namespaces_pass(stack, sets):
    stack_spec(stack, (sets,))


def test_the_provider_keys_come_from_the_installed_sdk():
    keys = provider_keys("alicloud")
    assert keys and {"region", "accessKey", "secretKey", "securityToken", "profile"} <= keys
    assert {"region", "secretId", "secretKey"} <= provider_keys("tencentcloud")
    assert provider_keys("baiducloud") == {"region"}


def test_under_the_engine_a_key_that_pulumi_gave_the_project_namespace_is_refused():
    """`pulumi up` in a project named `my-cnn` hands `billing: spot` to the program as `my-cnn:billing`."""
    from tools.mockrun import ProgramExit, run_program

    config = stackfiles.load_stack_config("entry-t4")
    config["my-cnn:billing"] = "spot"
    with pytest.raises(ProgramExit) as stop:
        run_program(config, "entry-t4", project="my-cnn")
    assert stop.value.code == 2 and "my-cnn:billing:" in stop.value.stderr
    assert "'gpu-training:billing'" in stop.value.stderr


def test_the_preview_command_exits_2_naming_the_key(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: my-cnn\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    write_stack(tmp_path / "stacks", "my-nons", "  gpu-training:billing: on-demand", "  billing: spot")
    done = subprocess.run([sys.executable, "-m", "tools.cli", "--project", str(tmp_path), "preview", "my-nons"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "node")])})
    assert done.returncode == 2, done.stdout[-500:] + done.stderr[-500:]
    assert "error: billing:" in done.stderr and "gpu-training:billing" in done.stderr
    assert "Traceback" not in done.stderr
