"""Shared fixtures: a pinned clock, cached mock-engine plans of stacks, a local S3 server, and the user's out/ left
alone."""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("GPU_TRAINING_NOW", "2026-12-02T10:00:00Z")
# Subprocesses (the CLIs, the node agent) import this checkout too, like the tests (pytest.ini pythonpath).
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO_ROOT), str(REPO_ROOT / "node")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
# What the commands write to out/ (run records, downloaded reports, kept rehearsals) goes to a folder of the
# test run's own, never to the checkout's out/, which is the user's (issue 33); a test that reads what a
# command wrote sets GPU_TRAINING_OUT to its own tmp_path. The session fails if out/ changed anyway (below).
_TEST_OUT = tempfile.mkdtemp(prefix="gpu-training-tests-out-")
os.environ["GPU_TRAINING_OUT"] = _TEST_OUT
atexit.register(shutil.rmtree, _TEST_OUT, True)
USER_OUT = REPO_ROOT / "out"
_OUT_BEFORE = pytest.StashKey[dict]()


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    if not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def pytest_sessionstart(session):
    session.config.stash[_OUT_BEFORE] = _files(USER_OUT)


def pytest_sessionfinish(session, exitstatus):
    """The checkout's out/ as it was before the run: a test that wrote there fails the run, naming the files."""
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller checks once, at the end
        return
    before = session.config.stash.get(_OUT_BEFORE, {})
    changed = sorted(name for name, stamp in _files(USER_OUT).items() if before.get(name) != stamp)
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (f"the tests wrote into the user's {USER_OUT} ({len(changed)} files: {', '.join(changed[:5])}); a"
                   " command under test must write where GPU_TRAINING_OUT says")
        (reporter.write_line if reporter else print)(f"ERROR: {message}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
