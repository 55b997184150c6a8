"""The project's folders and the installed package's, found without importing the project (the CLI's
start-up must stay light).

The project (its Pulumi.yaml, stack files and out/) is the current one, tools/project.py: `--project
DIR` / GPU_TRAINING_PROJECT, else Pulumi.yaml found from the working directory upward, else the
installed checkout. REPO, STACKS and OUT are looked up on each use (after `--project` has been read);
the scripts are the installed package's code (components/shipped.py: the clone's scripts/ or the wheel's copy).
"""
from __future__ import annotations

from pathlib import Path

from components import project, shipped


def scripts() -> Path:
    """The folder of the command scripts the CLI runs."""
    return shipped.folder("scripts")


def current() -> project.Project:
    """The current project; project.ProjectError where none is named or found."""
    return project.locate()


def __getattr__(name: str):
    if name == "REPO":  # the project folder: Pulumi's work directory
        return current().root
    if name == "STACKS":
        return current().stacks
    if name == "OUT":  # run records, reports and kept rehearsals; GPU_TRAINING_OUT moves them (tests)
        return project.out_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def stack_names() -> list[str]:
    try:
        stacks = current().stacks
    except project.ProjectError:
        return []
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stacks.glob("Pulumi.*.yaml"))
