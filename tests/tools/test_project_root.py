"""The project comes from where a command runs, not from where the package is installed (issue 25):
two checkouts sharing one virtualenv each read their own stacks (tools/project.py).

A copy of the project (Pulumi.yaml and one stack file of its own) in a temporary folder: the CLI run
there, or pointed at it with --project, plans that stack; the installed checkout does not have it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components import project

REPO = Path(__file__).resolve().parents[2]
ONLY_IN_COPY = "copied-t4"


@pytest.fixture
def copy(tmp_path) -> Path:
    """A project folder besides the checkout: Pulumi.yaml, and entry-t4 renamed, with maxHours 7 (12 in the checkout)."""
    folder = tmp_path / "other-checkout"
    (folder / "stacks").mkdir(parents=True)
    shutil.copy(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    text = (REPO / "stacks" / "Pulumi.entry-t4.yaml").read_text()
    assert "gpu-training:maxHours: 12" in text
    (folder / "stacks" / f"Pulumi.{ONLY_IN_COPY}.yaml").write_text(text.replace("maxHours: 12", "maxHours: 7"))
    assert not (REPO / "stacks" / f"Pulumi.{ONLY_IN_COPY}.yaml").exists()
    return folder


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != project.ENV}
    return subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_cli_run_in_another_checkout_reads_that_checkouts_stacks(copy):
    (copy / "deeper").mkdir()
    done = cli("preview", ONLY_IN_COPY, "--json", cwd=copy / "deeper")  # Pulumi.yaml is found upward
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["stack"] == ONLY_IN_COPY and doc["cost"]["maxHours"] == 7
    assert "note:" not in done.stderr


def test_the_installed_checkouts_stacks_are_not_read_from_another_project(copy):
    done = cli("preview", "entry-t4", cwd=copy)
    assert done.returncode == 2
    assert str(copy / "stacks") in done.stderr and ONLY_IN_COPY in done.stderr


def test_project_names_the_project_from_anywhere(copy, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = cli("--project", str(copy), "preview", ONLY_IN_COPY, "--json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["cost"]["maxHours"] == 7


def test_a_project_folder_without_pulumi_yaml_is_refused_with_exit_2(tmp_path):
    done = cli("--project", str(tmp_path), "status", "entry-t4", cwd=REPO)
    assert done.returncode == 2
    assert "--project" in done.stderr and "Pulumi.yaml" in done.stderr and "Traceback" not in done.stderr


def test_the_order_env_then_upward_then_the_install(copy, tmp_path):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    assert project.locate(copy / "stacks", {}) == project.Project(copy, "upward")
    assert project.locate(nowhere, {project.ENV: str(copy)}) == project.Project(copy, "env")
    fallback = project.locate(nowhere, {})
    if project.find_upward(nowhere) is None:  # a temporary folder under no other project
        assert fallback == project.Project(project.INSTALL_ROOT, "install") and "installed" in fallback.note()
    assert project.stacks_dir(copy) == copy / "stacks"  # Pulumi.yaml's stackConfigDir
    with pytest.raises(project.ProjectError, match="holds no Pulumi.yaml"):
        project.locate(copy, {project.ENV: str(nowhere)})


def test_nothing_found_anywhere_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setattr(project, "INSTALL_ROOT", tmp_path / "site-packages")  # a wheel: no Pulumi.yaml
    if project.find_upward(tmp_path) is not None:
        pytest.skip("the temporary folder lies inside a project")
    with pytest.raises(project.ProjectError) as refused:
        project.locate(tmp_path, {})
    message = str(refused.value)
    assert str(tmp_path) in message and "--project DIR" in message and project.ENV in message
    assert "gpu-training init" in message  # an installed package's first step
