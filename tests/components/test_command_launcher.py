"""A train.command that starts torchrun itself, on a stack whose launcher is torchrun, is refused (issue 33).

The node runs the command as each rank's program under torchrun (node/node_agent/launch.py), so a torchrun in
it would start once per rank. Through the real stack files and `--set` (what the CLIs do) and preview's main().
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from node_agent import launch
from components.validation import SpecError
from tools.stackfiles import stack_spec

REPO = Path(__file__).resolve().parents[2]

TWICE = ["torchrun --nproc_per_node 4 train.py", "cd src && torchrun train.py",
         "pip install timm&&/opt/venv/bin/torchrun train.py", "python -m torch.distributed.run train.py",
         "WANDB_MODE=offline python3 -m torch.distributed.launch --use-env train.py",
         "python -mtorch.distributed.run train.py", "env WANDB_MODE=offline torchrun train.py",
         "nohup torchrun train.py", "(cd src; torchrun train.py)"]


@pytest.mark.parametrize("command", TWICE)
def test_a_command_starting_torchrun_is_refused_under_the_torchrun_launcher(command):
    with pytest.raises(SpecError) as caught:
        stack_spec("medium-a100", (f"train.command={command}",))  # 4 GPUs: the launcher is torchrun
    (finding,) = [f for f in caught.value.errors if f.key == "train.command"]
    assert "torchrun would start twice" in finding.message and "train.launcher: direct" in finding.message


@pytest.mark.parametrize("command", TWICE[:2])
def test_the_same_command_is_accepted_where_the_user_is_the_launcher(command):
    for stack, sets in (("entry-t4", ()), ("medium-a100", ("train.launcher=direct",))):
        _, spec = stack_spec(stack, (f"train.command={command}", *sets))
        assert spec.train.launcher == "direct" and spec.train.command == command


@pytest.mark.parametrize("command", ["cd src && WANDB_MODE=offline python train.py | tee log",
                                     "pip install x && python train.py", "python train.py --note torchrun.log",
                                     # torchrun as an argument or an echoed word starts nothing
                                     "python train.py --log torchrun", "echo torchrun && python train.py",
                                     "python train.py -m torch.distributed.run"])
def test_shell_commands_without_torchrun_are_accepted_under_torchrun(command):
    _, spec = stack_spec("medium-a100", (f"train.command={command}",))
    assert spec.train.launcher == "torchrun" and launch.starts_torchrun(command) is None


def test_preview_exits_2_naming_train_command(capsys):
    loader = importlib.util.spec_from_file_location("script_preview", REPO / "scripts" / "preview.py")
    preview = importlib.util.module_from_spec(loader)
    sys.modules[loader.name] = preview
    loader.loader.exec_module(preview)
    assert preview.main(["medium-a100", "--set", "train.command=torchrun --nproc_per_node 4 train.py"]) == 2
    err = capsys.readouterr().err
    assert "train.command" in err and "torchrun would start twice" in err and "Traceback" not in err
