"""train.command and train.codeDir must name a trainer the nodes get (newcomer trial, 2026-12-07).

A stack with `train: {codeDir: src}` and no command previewed clean and passed `up`'s checks; the default
command, the example trainer's `python train_cnn.py ...`, then ran in src/ on a paid node and failed at once
(only `rehearse` caught it). A command whose script is not in the code folder (`python trian.py`) previewed
the same way. Now the first is refused (exit 2, naming train.command, its default and what is allowed), and
the second is a preview warning that `up` refuses (Finding.blocks_up, as the example bucket), or a warning
alone when train.setup runs first and could make the file. The preview and `up` run as a user runs them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.spec import SpecError
from tests.tools.run_harness import run_cli
from tools import stackfiles
from tools.runlib import exitcodes
from tools.stackfiles import load_stack_config, stack_names, stack_spec

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's project: Pulumi.yaml, stack `mine` (entry, Alibaba, a bucket of the user's own) with
    `train: {codeDir: src}` and no command, src/ holding train.py and sub/run.py."""
    root = tmp_path / "project"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "train.py").write_text("print('train')\n")
    (root / "src" / "sub" / "run.py").write_text("print('run')\n")
    (root / "src" / "run.sh").write_text("python train.py\n")
    (root / "src" / ".git").mkdir()
    (root / "src" / ".git" / "hook.py").write_text("")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir()
    config = {"alicloud:region": "cn-hangzhou", "gpu-training:tier": "entry",
              "gpu-training:checkpoint": {"bucket": "team-ckpt-1"}, "gpu-training:train": {"codeDir": "src"}}
    (root / "stacks" / "Pulumi.mine.yaml").write_text(yaml.safe_dump({"config": config}))
    monkeypatch.setenv("GPU_TRAINING_PROJECT", str(root))
    monkeypatch.setattr(stackfiles, "STACKS_DIR", root / "stacks")
    return root


def preview(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.cli", "--project", str(project), "preview", "mine", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GPU_TRAINING_NOW": "2026-12-07T10:00:00Z",
                               "GPU_TRAINING_OUT": str(project / "out")})


def findings(*sets: str, level: str = "warning") -> dict:
    _, spec = stack_spec("mine", sets)
    return {f.key: f for f in spec.findings if f.level == level}


def test_the_preview_refuses_a_code_folder_of_ones_own_without_a_command(project):
    done = preview(project)
    assert done.returncode == 2, done.stdout[-1500:] + done.stderr[-1500:]
    assert "Traceback" not in done.stderr
    line = next(line for line in done.stderr.splitlines() if "train.command:" in line)
    assert "not set" in line and "'python train_cnn.py --steps 2000 --ckpt-every 200'" in line, line
    assert "in train.codeDir 'src'" in line and "the command that starts YOUR trainer" in line, line
    assert '--set "train.command=python train.py"' in line, line  # src's one train*.py


def test_with_its_command_the_stack_previews_clean(project):
    done = preview(project, "--set", "train.command=python train.py")
    assert done.returncode == 0, done.stderr[-1500:]
    assert "train.command" not in done.stdout + done.stderr


def test_a_typo_in_the_script_is_a_preview_warning_naming_the_file_and_a_close_one(project):
    done = preview(project, "--set", "train.command=python trian.py")
    assert done.returncode == 0, done.stderr[-1500:]
    text = " ".join((done.stdout + done.stderr).split())  # the console wraps long lines
    assert "warning train.command: 'python trian.py' runs 'trian.py', which is not in train.codeDir 'src'" in text
    assert "did you mean 'train.py'?" in text


def test_up_refuses_a_script_that_is_not_in_the_code_folder_before_anything_starts(project, capsys, monkeypatch):
    def nothing_may_start(*args, **kwargs):
        pytest.fail("up went on to Pulumi despite the missing script")

    monkeypatch.setattr(run_cli, "REPO", project)  # the project `up` runs in (scripts/run.py reads it at import)

    code = run_cli.main(["mine", "--set", "train.command=python trian.py"], stack_factory=nothing_may_start)
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE, err
    assert "train.command: 'python trian.py' runs 'trian.py'" in err and "`up` stops here" in err, err


@pytest.mark.parametrize("command,script", [
    ("python trian.py", "trian.py"),
    ("python -u -W ignore missing.py --steps 5", "missing.py"),
    ("cd sub && python train.py", "sub/train.py"),
    ("cd nosuch; python3 train.py", "nosuch/train.py"),
    ("WANDB_MODE=offline /usr/bin/python3.11 -X dev missing.py | tee log", "missing.py"),
    ("export A=1; env B=2 nohup python ./missing.py", "missing.py"),
    ("bash missing.sh", "missing.sh"),
    ("./missing.sh --fast", "missing.sh"),
    ("python .git/hook.py", ".git/hook.py"),  # there, but not uploaded (components/artifacts.py SKIP_PARTS)
    ("python train_cnn.py --steps 2000", "train_cnn.py"),
])
def test_a_script_the_code_folder_lacks_is_flagged_and_up_refuses_it(project, command, script):
    found = findings(f"train.command={command}")
    assert "train.command" in found, found
    assert f"runs {script!r}, which is not in train.codeDir 'src'" in found["train.command"].message
    assert found["train.command"].blocks_up


@pytest.mark.parametrize("command", [
    "python train.py", "python -u train.py --steps 5", "cd sub && python run.py", "cd sub/ ; python ../train.py",
    "WANDB_MODE=offline python3 train.py | tee log", "env A=1 nice python train.py", "bash run.sh", "./run.sh",
    # not known without running it: a module, code, an expansion, an absolute path, outside the folder, or
    # another program first (it may make the file)
    "python -m mypkg.train", "python -c 'print(1)'", "python $SCRIPT", "python /opt/code/x.py", "python ../x.py",
    "cd /workspace && python x.py", "cd $HOME && python x.py", "tar xf code.tgz && python missing.py",
    "pip install x && python missing.py", "accelerate launch missing.py", "python 'unclosed", "python sub",
    "python " + "x" * 300 + ".py",  # longer than a file name may be: left to the node, no traceback
])
def test_a_script_in_the_code_folder_or_one_not_known_statically_is_not_flagged(project, command):
    assert "train.command" not in findings(f"train.command={command}")


def test_with_a_setup_that_could_make_the_file_it_is_a_warning_up_gets_past(project):
    found = findings("train.command=python fetched.py", 'train.setup=["git clone https://example.com/x fetched"]')
    assert "unless a setup command makes it" in found["train.command"].message
    assert not found["train.command"].blocks_up


def test_a_command_for_ones_own_code_without_a_code_folder_points_to_codedir(project):
    """No codeDir: the nodes get the example trainer's folder, where the user's script is not."""
    found = findings("train.codeDir=examples/cnn", "train.command=python train.py")
    assert "not in train.codeDir 'examples/cnn'" in found["train.command"].message
    config = {**load_stack_config("mine"), "gpu-training:train": {"command": "python train.py"}}
    (project / "stacks" / "Pulumi.mine.yaml").write_text(yaml.safe_dump({"config": config}))
    message = findings()["train.command"].message
    assert "(not set: the example trainer" in message and "or train.codeDir set to your code's folder" in message


def test_a_copy_of_the_example_as_ones_code_folder_runs_the_default_command(project):
    shutil.copy(REPO / "examples" / "cnn" / "train_cnn.py", project / "src" / "train_cnn.py")
    assert "train.command" not in findings()


def test_no_code_folder_at_all_and_no_command_is_refused(project):
    with pytest.raises(SpecError) as caught:
        stack_spec("mine", ("train.codeDir=",))
    errors = {f.key: f.message for f in caught.value.errors}
    assert "no code folder at all" in errors["train.command"], errors


def test_every_shipped_stack_runs_a_script_its_code_folder_holds(monkeypatch):
    monkeypatch.setattr(stackfiles, "STACKS_DIR", REPO / "stacks")
    for name in stack_names():
        _, spec = stack_spec(name)
        assert not [f for f in spec.findings if f.key.startswith("train.command")], name


def test_a_code_folder_that_is_not_there_is_the_one_error_named(project):
    with pytest.raises(SpecError) as caught:
        stack_spec("mine", ("train.codeDir=srcc",))
    assert [f.key for f in caught.value.errors] == ["train.codeDir"], caught.value.errors
