"""Shared fixtures: a pinned clock, cached mock-engine plans of stacks, and a local S3 server."""
from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("GPU_TRAINING_NOW", "2026-12-02T10:00:00Z")
# Subprocesses (the CLIs, the node agent) import this checkout too, like the tests (pytest.ini pythonpath).
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO_ROOT), str(REPO_ROOT / "node")] + [p for p in [os.environ.get("PYTHONPATH")] if p])


@functools.lru_cache(maxsize=None)
def _plan(stack: str, overrides: tuple[str, ...] = ()):
    from tools.mockrun import run_program
    from tools.stackfiles import apply_overrides, load_stack_config

    return run_program(apply_overrides(load_stack_config(stack), overrides), stack)


@pytest.fixture
def plan_for():
    """plan_for(stack, *overrides) -> tools.mockrun.Plan (the real program on the mock engine)."""
    return lambda stack, *overrides: _plan(stack, tuple(overrides))


@pytest.fixture(scope="module")
def moto_url():
    """The URL of a moto S3 server on 127.0.0.1 (localcloud.LocalS3), one per test module."""
    from localcloud import LocalS3

    server = LocalS3()
    yield server.url
    server.stop()
