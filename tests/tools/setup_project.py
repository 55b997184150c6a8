"""A user's project with packages to install (train.setup, train.requirements; issue 33), for the rehearsal tests
of every target: a copy of a shipped stack under a name of its own, the example trainer as its code folder with a
requirements file, a folder of small wheels for the rehearsal's local index (--wheels), and `rehearse` run in it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from localcloud.pyindex import make_wheel
from tools.stackfiles import load_stack_config

REPO = Path(__file__).resolve().parents[2]
# gtdemo needs gtdep: the requirements file pulls a dependency the cache must hold too.
WHEELS = (("gtdemo", "1.0", ("gtdep==1.0",)), ("gtdep", "1.0", ()), ("gtextra", "2.0", ()))


def make_project(tmp_path: Path, name: str, train: dict, requirements: str, base: str = "") -> tuple[Path, Path]:
    """(project folder, wheels folder): stack `name` is `base` (an entry stack when empty) with `train` over its own,
    its codeDir the example trainer plus `requirements` as requirements.txt."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "cnn", project / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "src" / "requirements.txt").write_text(requirements)
    shutil.copy(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    config = load_stack_config(base) if base else {"alicloud:region": "cn-hangzhou", "gpu-training:tier": "entry",
                                                   "gpu-training:checkpoint": {"bucket": "team-ckpt-1"}}
    config["gpu-training:train"] = {"codeDir": "src", **train}
    (project / "stacks").mkdir()
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    wheels = tmp_path / "wheels"
    for wheel, version, requires in WHEELS:
        make_wheel(wheels, wheel, version, requires=requires)
    return project, wheels


def rehearse_in(project: Path, *args: str, timeout: int = 600) -> tuple[int, dict, str]:
    """`rehearse ... --json` with the project as the current one; (exit status, document, stderr)."""
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), *args, "--json"],
                            capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "GPU_TRAINING_PROJECT": str(project),
                                 "GPU_TRAINING_OUT": str(project / "out")})
    document = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.returncode, document, result.stderr
