"""What the commands tell a user to run or to read exists where gpu-training is installed as a wheel: no
`scripts/<name>.py` (a wheel has no scripts/ folder to run), program names as typed (`gpu-training up`,
not run.py), and every README section named by its title is one the README has. Each test runs the CLI as a
user does, in a project `gpu-training init` made in a temporary folder."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from components import project

REPO = Path(__file__).resolve().parents[2]
SCRIPT_NAMES = re.compile(r"\b(?:scripts/\w+\.py|(?:preview|rehearse|recommend|pack|prices|regions|run|report)\.py)\b")
README_POINTER = re.compile(r"README\.md, [\"“]([^\"”]+)[\"”]")
HELPS = [(), ("init",), ("preview",), ("rehearse",), ("recommend",), ("pack",), ("prices",), ("prices", "show"),
         ("prices", "refresh"), ("regions",), ("regions", "show"), ("regions", "refresh"), ("up",), ("down",),
         ("check",), ("status",), ("logs",), ("report",), ("ssh",)]


def cli(*args, cwd: Path, timeout=180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (project.ENV, project.OUT_ENV)}
    return subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def readme_sections() -> list[str]:
    return [line.lstrip("#").strip() for line in (REPO / "README.md").read_text().splitlines()
            if line.startswith("#")]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pointers") / "my-repo"
    folder.mkdir()
    if project.find_upward(folder) is not None:
        pytest.skip("the temporary folder lies inside a Pulumi project")
    done = cli("init", "--cloud", "alicloud", "--gpu", "T4", cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder


def assert_followable(text: str, where: str) -> None:
    assert not SCRIPT_NAMES.findall(text), f"{where} names a script a wheel install cannot run: {SCRIPT_NAMES.findall(text)}"
    sections = readme_sections()
    for named in README_POINTER.findall(" ".join(text.split())):
        assert any(title.startswith(named) for title in sections), f"{where}: README.md has no section {named!r}"


@pytest.mark.parametrize("command", HELPS, ids=[" ".join(c) or "top" for c in HELPS])
def test_every_help_names_commands_and_sections_that_exist(made, command):
    done = cli(*command, "--help", cwd=made)
    assert done.returncode == 0, done.stderr
    assert_followable(done.stdout, f"gpu-training {' '.join(command)} --help")
    if command in ((), ("up",), ("down",)):  # their exit codes are listed here, not in docs/run.md (not installed)
        assert "docs/" not in done.stdout, done.stdout


def test_the_stack_file_init_writes_points_at_a_readme_section_that_exists(made):
    text = (made / "stacks" / "Pulumi.entry-t4.yaml").read_text()
    assert README_POINTER.search(" ".join(text.replace("#", " ").split())), text[:600]
    assert_followable(text.replace("#", " "), "the stack file init wrote")


def test_errors_name_the_command_the_user_typed(made):
    up = cli("up", "entry-t4", "--timeout", "-1", cwd=made)
    assert up.returncode == 2 and up.stderr.startswith("gpu-training up: error: --timeout -1"), up.stderr
    prices = cli("prices", "show", "--max-age-days", "soon", cwd=made)
    assert prices.returncode == 2 and "(see gpu-training prices show --help)" in prices.stderr, prices.stderr
