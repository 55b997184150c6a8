"""A folder of the user's project that would hide one of gpu-training's own packages from its Pulumi program.

`pulumi up` runs the program with the project's folder first on sys.path, so a `components/` (or
`node_agent/`, or a `components.py`) of the user's own is imported instead of ours and the program fails far
from the cause. The program refuses it when it starts (gpu_training/__init__.py); `gpu-training up` asks the
same question of the project folder before it runs anything (scripts/run.py preflight). A folder without
`__init__.py` is only a namespace portion: a package later on the path wins over it, so it hides nothing.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

PACKAGES = ("components", "node_agent")  # what the program imports (tools/ and localcloud/ it does not)


def message(name: str, where: Path) -> str:
    return (f"{where} hides gpu-training's own package {name!r} (a folder of that name in your project comes first"
            " on sys.path when `pulumi up` runs the program); rename that folder")


def ours(name: str) -> Path | None:
    """The folder (or module file) of gpu-training's own package `name`, as this interpreter imports it."""
    found = importlib.util.find_spec(name)
    return Path(found.origin).resolve().parent if found is not None and found.origin else None


def hidden_in(folder: Path) -> list[str]:
    """A message per package of ours that `folder`, first on sys.path, would hide (none in a clone: there the
    folder's packages are ours)."""
    problems = []
    for name in PACKAGES:
        found = importlib.machinery.PathFinder.find_spec(name, [str(folder)])
        if found is None or not found.origin:
            continue
        where = Path(found.origin).resolve()
        where = where.parent if found.submodule_search_locations else where
        if where != ours(name):
            problems.append(message(name, where))
    return problems
