"""`make rehearse` installs the `rehearse` extra, not the test set (issue 33: the test set is 2.7 GB with
PaddlePaddle), so the extra must hold what a rehearsal imports: the local S3 server, the example trainer's torch,
and the node runtime of every cloud (the rehearsed node agent releases itself through its cloud's SDK).

The fast test checks the declared lists; the slow one rehearses a stack of each cloud in a virtualenv that
can import only the runtime (requirements.txt) and the extra, with what they depend on: the installed
distributions of that closure, linked into one folder, nothing else of this environment.
"""
from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from components import providers

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
REHEARSE = PYPROJECT["project"]["optional-dependencies"]["rehearse"]
RUNTIME = [line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
           if line.strip() and not line.strip().startswith("#")]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_makefiles_rehearse_target_installs_the_extra_not_the_test_set():
    text = (REPO / "Makefile").read_text()
    rule = re.search(r"^rehearse: (.*)$", text, re.MULTILINE).group(1)
    assert "$(VENV)/.dev" not in rule and "$(VENV)/.rehearse" in rule, rule
    stamp = re.search(r"^\$\(VENV\)/\.rehearse:.*\n((?:\t.*\n)+)", text, re.MULTILINE).group(1)
    assert "'.[rehearse]'" in stamp and "requirements-dev" not in stamp, stamp


def test_the_extra_holds_every_clouds_node_runtime_and_no_test_tool():
    declared = {canonical(Requirement(line).name) for line in RUNTIME + REHEARSE}
    for cloud in providers.REGISTRY:
        wanted = {canonical(name) for name in providers.profile(cloud).node.requirements}
        assert wanted <= declared, f"{cloud}'s node runtime needs {sorted(wanted - declared)}"
    test_tools = {"pytest", "pytest-xdist", "hypothesis", "ruff", "paddlepaddle", "build"}
    assert not test_tools & {canonical(Requirement(line).name) for line in REHEARSE}


# --- a rehearsal with only the extra --------------------------------------------------------------------------
def closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions `requirements` need, transitively (their extras and markers evaluated)."""
    found: dict[str, metadata.Distribution] = {}
    extras: dict[str, set[str]] = {}
    todo = [Requirement(line) for line in requirements]
    while todo:
        wanted = todo.pop()
        name = canonical(wanted.name)
        if name in found and set(wanted.extras) <= extras[name]:
            continue
        dist = found.get(name) or metadata.distribution(wanted.name)
        found[name] = dist
        extras[name] = extras.get(name, set()) | set(wanted.extras)
        for line in dist.requires or []:
            need = Requirement(line)
            if need.marker is None or any(need.marker.evaluate({"extra": extra})
                                          for extra in ("", *sorted(extras[name]))):
                todo.append(need)
    return found


@pytest.fixture(scope="module")
def rehearse_only_python(tmp_path_factory) -> Path:
    """A virtualenv whose site-packages adds one folder: links to the closure's installed top-level entries."""
    root = tmp_path_factory.mktemp("rehearse-only")
    lib = root / "lib"
    lib.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for dist in closure(RUNTIME + REHEARSE).values():
        for entry in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            if entry != "__pycache__" and (site / entry).exists() and not (lib / entry).exists():
                (lib / entry).symlink_to(site / entry)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=300)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "rehearse_extra_only.pth").write_text(f"import site; site.addsitedir({str(lib)!r})\n")
    # pip writes each distribution's console scripts into the venv's bin (torchrun, which the agent starts
    # under `launcher: torchrun`, among them); the linked closure gets the same ones.
    for dist in closure(RUNTIME + REHEARSE).values():
        for point in dist.entry_points.select(group="console_scripts"):
            module, _, attribute = point.value.partition(":")
            if not attribute.strip():
                continue
            attribute, script = attribute.split("[")[0].strip(), root / "venv" / "bin" / point.name
            script.write_text(f"#!{python}\nimport sys\nfrom {module} import {attribute.split('.')[0]}\n"
                              f"sys.exit({attribute}())\n")
            script.chmod(0o755)
    for absent in ("hypothesis", "paddle", "pytest"):  # the test set is not there
        assert subprocess.run([str(python), "-c", f"import {absent}"], capture_output=True).returncode != 0, absent
    return python


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["entry-t4", "tc-entry-t4", "hw-entry-t4", "bd-large-a100-spot"])
def test_a_stack_of_each_cloud_rehearses_with_only_the_runtime_and_the_extra(rehearse_only_python, stack, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = f"{rehearse_only_python.parent}{os.pathsep}{env.get('PATH', '')}"  # the trainer's `python`
    env["GPU_TRAINING_OUT"] = str(tmp_path)
    done = subprocess.run([str(rehearse_only_python), str(REPO / "scripts" / "rehearse.py"), stack, "--steps", "40"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "No module named" not in output and "resumed, not from zero" in output
    shutil.rmtree(tmp_path, ignore_errors=True)
