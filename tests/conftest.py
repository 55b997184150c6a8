"""Shared fixtures: the repo on sys.path, a pinned clock, and cached mock-engine plans of stacks."""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("GPU_TRAINING_NOW", "2026-12-02T10:00:00Z")


@functools.lru_cache(maxsize=None)
def _plan(stack: str, overrides: tuple[str, ...] = ()):
    from components.mockrun import run_program
    from components.stackfiles import apply_overrides, load_stack_config

    return run_program(apply_overrides(load_stack_config(stack), overrides), stack)


@pytest.fixture
def plan_for():
    """plan_for(stack, *overrides) -> components.mockrun.Plan (the real program on the mock engine)."""
    return lambda stack, *overrides: _plan(stack, tuple(overrides))
