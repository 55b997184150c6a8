"""A command script of scripts/ run as its own process, from the repository, the way a user runs it; the
environment the price and region tests give it (this machine's, less every cloud's credentials); and the
preview's JSON of a stack read that way."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from components import providers

REPO = Path(__file__).resolve().parents[2]


def run_script(name: str, *args: str, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    """scripts/<name> with `args`, in the repository, under `env`; its output captured as text."""
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)


def without_cloud_credentials(**extra: str) -> dict:
    """This machine's environment less every variable a cloud's credentials are read from, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(providers.credential_env_prefixes())}
    env.update(extra)
    return env


def preview_json(stack: str, env: dict, *args: str) -> dict:
    """`preview <stack> --json <args>` under `env` (this checkout's code first), which must succeed."""
    run = run_script("preview.py", stack, "--json", *args, env={**env, "PYTHONPATH": f"{REPO}:{REPO / 'node'}"},
                     timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)
