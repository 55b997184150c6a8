"""The user's packages as a stack names them: train.setup (shell commands) and train.requirements (issue 33).

Through the real stack files and `--set` overrides (what the CLIs read), into the Spec and the node config the
agent gets; a bad value is refused naming the key, the value and what is allowed, and the preview exits 2.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.validation import SpecError
from tools import stackfiles
from tools.stackfiles import node_config_for_stack, stack_spec

REPO = Path(__file__).resolve().parents[2]
STACK = ("config:\n  alicloud:region: cn-hangzhou\n  gpu-training:tier: entry\n"
         "  gpu-training:checkpoint:\n    bucket: team-ckpt-1\n")


def errors_of(stack: str, *sets: str) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        stack_spec(stack, sets)
    return {f.key: f.message for f in caught.value.errors}


@pytest.fixture
def code(tmp_path):
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "train.py").write_text("print('train')\n")
    (folder / "requirements.txt").write_text("timm==1.0.9\n")
    (folder / "deps").mkdir()
    (folder / "deps" / "gpu.txt").write_text("albumentations\n")
    return folder


@pytest.mark.parametrize("value,expected", [
    ("pip install timm", ("pip install timm",)),  # SkyPilot's `setup:` is one string
    ('["pip install timm", "apt-get install -y libgl1"]', ("pip install timm", "apt-get install -y libgl1")),
    # A comma is shell text, not a list separator; a command may start with '['.
    ("pip install 'numpy>=1.26,<2'", ("pip install 'numpy>=1.26,<2'",)),
    ("[ -d data ] || ./fetch.sh", ("[ -d data ] || ./fetch.sh",)),
    ("[]", ()),
])
def test_train_setup_takes_a_list_or_one_command(value, expected):
    _, spec = stack_spec("entry-t4", (f"train.setup={value}",))
    assert spec.train.setup == expected
    node = node_config_for_stack("entry-t4", (f"train.setup={value}",))
    assert node["train"].get("setup", []) == list(expected)


def test_a_stack_file_writes_setup_as_yaml_list_and_the_node_config_carries_it(tmp_path, monkeypatch, code):
    monkeypatch.setattr(stackfiles, "STACKS_DIR", tmp_path)
    (tmp_path / "Pulumi.mine.yaml").write_text(
        STACK + f"  gpu-training:train:\n    codeDir: {code}\n    command: python train.py\n    setup:\n"
        "      - pip install -U 'timm>=1,<2'\n      - |\n        cd data\n        ./fetch.sh\n")
    _, spec = stack_spec("mine")
    assert spec.train.setup == ("pip install -U 'timm>=1,<2'", "cd data\n./fetch.sh")
    assert spec.train.requirements == "requirements.txt", "codeDir holds requirements.txt: installed by default"
    node = node_config_for_stack("mine")
    assert node["train"]["setup"] == list(spec.train.setup) and node["train"]["requirements"] == "requirements.txt"


def test_requirements_default_to_the_code_folders_file_and_can_be_named_or_turned_off(code):
    base = f'"codeDir": "{code}", "command": "python train.py"'
    assert stack_spec("entry-t4", (f"train={{{base}}}",))[1].train.requirements == "requirements.txt"
    assert stack_spec("entry-t4", (f'train={{{base}, "requirements": "deps/gpu.txt"}}',))[1].train.requirements \
        == "deps/gpu.txt"
    assert stack_spec("entry-t4", (f'train={{{base}, "requirements": ""}}',))[1].train.requirements is None
    info = [f.message for f in stack_spec("entry-t4", (f"train={{{base}}}",))[1].findings if f.level == "info"
            and f.key == "train.requirements"]
    assert info and "pip install -r requirements.txt (found in train.codeDir" in info[0], info
    (code / "requirements.txt").unlink()
    _, spec = stack_spec("entry-t4", (f"train={{{base}}}",))
    assert spec.train.requirements is None and "requirements" not in node_config_for_stack(
        "entry-t4", (f"train={{{base}}}",))["train"]


@pytest.mark.parametrize("value,key,fragment", [
    ('["pip install x", 3]', "train.setup[1]", "3 is not allowed; a shell command (a string) is required"),
    ('["", "pip install x"]', "train.setup[0]", "is empty"),
    ('["pip install x\\u0000"]', "train.setup[0]", "control character; allowed: printable text"),
    ("5", "train.setup", "5 is not a list of shell commands"),
    # A dotted --set stores true as a boolean and other text as text (Pulumi's --path rule, tools.stackfiles.
    # path_value): '{"pip": "x"}' would be one shell command, as `pulumi up` reads it.
    ("true", "train.setup", "is not a list of shell commands"),
    ('["pip install x", "echo a\nb"]', "train.setup", "is not a list of shell commands"),  # meant a list; no JSON
    (json.dumps(["pip install " + "x" * 140_000]), "train.setup[0]", "at most 130,048 bytes"),
])
def test_a_bad_setup_is_refused_naming_the_key_and_what_is_allowed(value, key, fragment):
    errors = errors_of("entry-t4", f"train.setup={value}")
    assert key in errors and fragment in errors[key], errors


@pytest.mark.parametrize("value,fragment", [
    ("nope.txt", "'nope.txt' is not a file in train.codeDir"),
    ("../requirements.txt", "'../requirements.txt' is not allowed; allowed: a file inside train.codeDir"),
    ("/etc/hostname", "'/etc/hostname' is not allowed; allowed: a file inside train.codeDir"),
    ("deps", "'deps' is not a file in train.codeDir"),
])
def test_a_bad_requirements_file_is_refused_naming_the_key_and_what_is_allowed(code, value, fragment):
    errors = errors_of("entry-t4", f'train={{"codeDir": "{code}", "requirements": "{value}"}}')
    assert fragment in errors.get("train.requirements", ""), errors


def test_requirements_without_a_code_folder_are_refused():
    errors = errors_of("entry-t4", 'train={"codeDir": "", "requirements": "requirements.txt"}')
    assert "train.codeDir is empty" in errors["train.requirements"], errors


def test_the_preview_exits_2_naming_a_bad_setup_without_a_traceback():
    result = subprocess.run([sys.executable, "scripts/preview.py", "entry-t4", "--set", 'train.setup=["ok", 7]'],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z",
                                 "PYTHONPATH": f"{REPO}:{REPO / 'node'}"})
    assert result.returncode == 2, result.stderr[-800:]
    assert "error: train.setup[1]: 7 is not allowed" in result.stderr and "Traceback" not in result.stderr


def test_a_long_setup_rides_in_the_boot_payload_not_in_user_data():
    """User-data is the loader (docs/bootstrap.md, "The loader"): a setup that overflowed Tencent's 16 KB before
    is accepted, and user-data keeps >= 8 KB free."""
    import random
    import string

    from components.bootstrap import render_user_data, user_data_limit
    from components.nodeconfig import build_node_config

    rng = random.Random(33)
    noise = "".join(rng.choice(string.ascii_letters) for _ in range(60000))
    _, spec = stack_spec("tc-entry-t4", (f'train.setup={json.dumps(["pip install timm", "echo " + noise])}',))
    rendered = render_user_data(build_node_config(spec, shared_fs_address=None))
    assert user_data_limit(spec.provider) - rendered.encoded_size >= 8192
    assert noise in rendered.payload.content and noise not in rendered.cloud_config
