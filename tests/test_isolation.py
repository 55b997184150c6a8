"""`make test` leaves the user's files alone (issue 33; newcomer trial 3, finding 7): nothing a command under
test writes lands in the checkout's out/, and a stack file of the user's own in stacks/ (untracked, maybe
half-edited) is never loaded by a test: the tests loop over the shipped stacks (`git ls-files stacks/`)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_commands_run_by_the_tests_write_out_outside_the_checkout():
    done = subprocess.run([sys.executable, "-c", "from components import project; print(project.out_dir())"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    out = Path(done.stdout.strip()).resolve()
    assert not out.is_relative_to(REPO), out


def test_run_records_go_where_gpu_training_out_says(tmp_path, monkeypatch):
    """scripts/run.py (`gpu-training up`) wrote its run record and report under the checkout's out/ whatever
    GPU_TRAINING_OUT said; docs/cli.md says out/ moves with it."""
    import importlib.util

    monkeypatch.setenv("GPU_TRAINING_OUT", str(tmp_path))
    spec = importlib.util.spec_from_file_location("run_for_isolation", REPO / "scripts" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    assert run.options(["entry-t4", "--watch-only"]).out_dir == tmp_path / "entry-t4"


def test_a_users_broken_stack_file_beside_the_shipped_ones_does_not_break_collection(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(REPO / "stacks", project / "stacks")
    shutil.copy(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks" / "Pulumi.my-half-edited.yaml").write_text("config:\n  gpu-training:tier: [entry\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GPU_TRAINING_PROJECT": str(project)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-1000:]
    assert "my-half-edited" not in done.stdout
