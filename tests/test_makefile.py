"""`make` says in one line that the Python is too old, before it installs anything (issue 33; newcomer trial 3:
on Python 3.10 pip backtracked through the pins for 24 minutes without a word).

The Makefile runs in a folder of the test's own (a copy of it and the files its targets depend on), with a
stand-in for Python 3.10: the real interpreter whose sys.version_info says 3.10 (a sitecustomize), and
which cannot make a virtualenv, so a Makefile that went on to install would fail loudly here too.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="no make on this machine")
# The targets that install or run something: each is refused on an old Python.
TARGETS = ("preview", "test", "rehearse", "lint", "recommend")


@pytest.fixture
def clone(tmp_path) -> Path:
    folder = tmp_path / "clone"
    folder.mkdir()
    for name in ("Makefile", "requirements.txt", "requirements-dev.txt", "pyproject.toml"):
        shutil.copy(REPO / name, folder / name)
    (folder / "stacks").mkdir()
    return folder


def old_python(folder: Path, name: str = "python3.10") -> Path:
    """An interpreter that reports Python 3.10.12 and refuses `-m venv` / `-m pip`, as a stand-in."""
    (folder / "fake").mkdir(exist_ok=True)
    (folder / "fake" / "sitecustomize.py").write_text(
        "import sys\nsys.version_info = (3, 10, 12, 'final', 0)\n")
    script = folder / "fake" / name
    script.write_text(f'#!/bin/sh\ncase "$1" in -m) echo "stand-in Python 3.10: no $2 here" >&2; exit 1;; esac\n'
                      f'PYTHONPATH={folder / "fake"} exec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return script


def make(folder: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "VIRTUAL_ENV")}
    if path is not None:
        env["PATH"] = path
    return subprocess.run([MAKE, "--no-print-directory", *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("target", TARGETS)
def test_an_old_python_is_refused_in_one_line_before_anything_is_installed(clone, target):
    fake = old_python(clone)
    done = make(clone, target, f"PYTHON_BOOT={fake}")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "needs Python 3.11 or newer" in lines[0] and "Python 3.10.12" in lines[0]
    assert "PYTHON_BOOT=python3.11" in lines[0]  # the fix
    assert not (clone / ".venv").exists()


def test_the_python3_found_on_path_is_the_one_checked(clone):
    """The default PYTHON_BOOT is `python3` from PATH, as a newcomer's shell finds it."""
    fake = old_python(clone, "python3")
    done = make(clone, "preview", path=f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert done.returncode == 2 and "python3 is Python 3.10.12" in done.stderr, done.stdout + done.stderr


def test_a_virtualenv_made_by_an_old_python_is_named_with_the_way_out(clone):
    fake = old_python(clone)
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "python").symlink_to(fake)
    done = make(clone, "preview")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ".venv holds Python 3.10.12" in done.stderr and "make clean" in done.stderr


def test_a_missing_python_is_named(clone):
    done = make(clone, "preview", "PYTHON_BOOT=no-such-python3.11")
    assert done.returncode == 2 and "'no-such-python3.11' does not run" in done.stderr, done.stderr


def test_a_good_python_passes_the_check_and_help_needs_none(clone):
    done = make(clone, "-n", "preview", f"PYTHON_BOOT={sys.executable}")
    assert done.returncode == 0, done.stderr
    assert "needs Python" not in done.stdout + done.stderr
    helped = make(clone, "help", "PYTHON_BOOT=no-such-python")
    assert helped.returncode == 0 and "preview" in helped.stdout, helped.stderr


def test_the_makefiles_minimum_is_pyprojects_requires_python():
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = next(line.split(":=")[1].strip() for line in (REPO / "Makefile").read_text().splitlines()
                   if line.startswith("PYTHON_MIN"))
    assert requires == f">={minimum}"
    assert f"{minimum}.0" in SpecifierSet(requires) and "3.10.12" not in SpecifierSet(requires)
