"""Folders gpu-training ships that are not packages of its own code: the bootstrap templates
(node/bootstrap), the example trainer (examples/cnn), the command scripts (scripts/), and the example
stacks (stacks/: `gpu-training init --from NAME` copies one into a project).

In a clone they are the repository's own folders. A wheel holds packages only, so pyproject.toml maps each
into gpu_training/_shipped/ ([tool.setuptools.package-dir]); this module finds the one that exists, the
clone's first, so a clone never reads a stale installed copy.
"""
from __future__ import annotations

from pathlib import Path

CLONE = Path(__file__).resolve().parent.parent
WHEEL = CLONE / "gpu_training" / "_shipped"
# name -> (the folder in a clone, relative to it; the folder in a wheel, relative to gpu_training/_shipped)
FOLDERS = {
    "bootstrap": ("node/bootstrap", "bootstrap"),
    "example-trainer": ("examples/cnn", "examples/cnn"),
    "scripts": ("scripts", "scripts"),
    "stacks": ("stacks", "stacks"),
}


def folder(name: str) -> Path:
    """The shipped folder `name` (a key of FOLDERS): the clone's, else the wheel's copy; FileNotFoundError
    naming both places when neither exists (a wheel built without it)."""
    in_clone, in_wheel = FOLDERS[name]
    for candidate in (CLONE / in_clone, WHEEL / in_wheel):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"gpu-training's {name} folder is missing: neither {CLONE / in_clone} (a clone) nor"
                            f" {WHEEL / in_wheel} (an installed wheel) exists; reinstall gpu-training")
