"""gpu-training for Pulumi programs: `from gpu_training import TrainingCluster, TrainingArgs`.

    import gpu_training as gt

    cluster = gt.TrainingCluster("cnn", gt.TrainingArgs(
        provider="alicloud", tier="entry", gpu="T4",
        checkpoint=gt.Checkpoint(bucket="my-gpu-training-checkpoints"),
        train=gt.Train(command="python train.py --epochs 30", code_dir="trainer")))
    cluster.export()

docs/api.md has the whole example and what each field means. `main()` is the program a project that
`gpu-training init` wrote runs: the stack file's config, validated, as one training.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path


def _check_not_shadowed() -> None:
    """Refuse, with the folder to rename, a project folder that hides one of gpu-training's packages
    (gpu_training/shadowing.py says why)."""
    from gpu_training.shadowing import PACKAGES, message

    installed = Path(__file__).resolve().parent.parent
    for name in PACKAGES:
        found = importlib.util.find_spec(name)
        origin = Path(found.origin).resolve() if found is not None and found.origin else None
        if origin is not None and not origin.is_relative_to(installed):
            raise ImportError(f"gpu-training: {message(name, origin.parent)}")


_check_not_shadowed()

from gpu_training.args import (  # noqa: E402 (after the check: these import the packages it checks)
    Bootstrap, Checkpoint, Data, Failover, Kubernetes, Platform, Train, TrainingArgs,
)
from gpu_training.training import ConfigError, TrainingCluster  # noqa: E402


def main():
    """The stack program (components/program.py): the stack file's config, validated, as one training,
    its outputs exported. What the __main__.py that `gpu-training init` writes runs."""
    from components.program import main as program_main

    return program_main()


__all__ = ["Bootstrap", "Checkpoint", "ConfigError", "Data", "Failover", "Kubernetes", "Platform", "Train",
           "TrainingArgs", "TrainingCluster", "main"]
