"""The user's project: the folder holding Pulumi.yaml, its stack files, its out/ folder, and the folder the
paths a stack names (train.codeDir, data.localDir) are relative to.

gpu-training is installed into a user's own training repository (`gpu-training init` writes the project
there) or run from a clone of this repository, whose stacks/ are the examples. The project is, in order:
  1. GPU_TRAINING_PROJECT, a folder holding Pulumi.yaml (`gpu-training --project DIR` sets it, so the
     commands it runs and their subprocesses see the same project);
  2. the working directory or the nearest folder above it holding a Pulumi.yaml, as `pulumi` finds
     its project (https://www.pulumi.com/docs/iac/concepts/projects/: "searches for Pulumi.yaml in
     the current directory and its parents"); `pulumi up` runs the program there;
  3. the clone the package runs from, when neither names one (a note says so); an installed wheel
     has none, so outside a project a command says to run `gpu-training init`.
The code (components/, the commands, node/) is always the installed package's: only the project's files
come from the project. Standard library only: the CLI's start-up imports this.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ENV = "GPU_TRAINING_PROJECT"
OUT_ENV = "GPU_TRAINING_OUT"
PROJECT_FILE = "Pulumi.yaml"
INSTALL_ROOT = Path(__file__).resolve().parent.parent
# Pulumi.yaml's stackConfigDir: the folder of the stack files, relative to the project (the project
# folder itself when unset; https://www.pulumi.com/docs/iac/concepts/projects/project-file/).
_STACK_CONFIG_DIR = re.compile(r"^stackConfigDir:\s*['\"]?([^'\"#\s]+)", re.MULTILINE)


class ProjectError(Exception):
    """GPU_TRAINING_PROJECT (or --project) names no project, or no project can be found at all."""


@dataclass(frozen=True)
class Project:
    root: Path
    how: str  # "env" (GPU_TRAINING_PROJECT / --project), "upward" (from the working directory), "install"

    @property
    def stacks(self) -> Path:
        return stacks_dir(self.root)

    def note(self) -> Optional[str]:
        """What a person is told when the project is not the one they stand in, else None."""
        if self.how != "install":
            return None
        return (f"no {PROJECT_FILE} in {Path.cwd()} or any folder above it: using the installed checkout's"
                f" project, {self.root} (--project DIR or {ENV} picks another)")


def find_upward(start: Path) -> Optional[Path]:
    """The nearest folder at or above `start` that holds a Pulumi.yaml, or None."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder
    return None


def locate(cwd: Optional[Path] = None, environ: Optional[dict] = None) -> Project:
    """The project (see the module's docstring); ProjectError when the environment names a folder that
    is not one, or when no folder has a Pulumi.yaml, not even the installed package's."""
    environ = os.environ if environ is None else environ
    named = environ.get(ENV)
    if named:
        folder = Path(named).expanduser().resolve()
        if not (folder / PROJECT_FILE).is_file():
            raise ProjectError(f"{ENV}: {named!r} holds no {PROJECT_FILE}; allowed: a gpu-training project folder"
                               f" (one `gpu-training init` wrote, or a clone)")
        return Project(folder, "env")
    here = cwd if cwd is not None else Path.cwd()
    found = find_upward(here)
    if found is not None:
        return Project(found, "upward")
    if (INSTALL_ROOT / PROJECT_FILE).is_file():
        return Project(INSTALL_ROOT, "install")
    raise ProjectError(f"no {PROJECT_FILE} in {here} or any folder above it: run `gpu-training init` to make a"
                       f" project here, run from one, or name one with --project DIR or {ENV}")


def root() -> Path:
    """The project folder, for library callers (the stack files, the program's relative paths): the
    working directory when no project is found (an installed package outside any project, a Pulumi program
    of the user's own run by a test); the CLI reports that case as ProjectError instead. A
    GPU_TRAINING_PROJECT that names no project stops the process (exit 2, the message on stderr): reading
    another project's stacks would be worse."""
    try:
        return locate().root
    except ProjectError as error:
        if os.environ.get(ENV):
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(2) from None
        return Path.cwd()


def out_dir() -> Path:
    """Where run records, downloaded reports and kept rehearsals go: the project's out/, or
    GPU_TRAINING_OUT (the tests point it at a temporary folder, so a test never writes a user's out/)."""
    named = os.environ.get(OUT_ENV)
    return Path(named).expanduser().resolve() if named else root() / "out"


def stacks_dir(folder: Path) -> Path:
    """The folder of the project's stack files: Pulumi.yaml's stackConfigDir, else the project folder."""
    try:
        text = (folder / PROJECT_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return folder / "stacks"
    found = _STACK_CONFIG_DIR.search(text)
    return folder / found.group(1) if found else folder
