"""examples/cnn/train_paddle.py on PaddlePaddle's CPU build: the training contract, run as real processes.

SIGTERM mid-run saves and exits 75, and the resumed run ends with exactly the parameters, optimizer
and BatchNorm state of an uninterrupted run; a truncated newest checkpoint falls back to the one
before; bad input exits 2 naming it. PaddlePaddle is in requirements-dev.txt (the CPU wheel).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("paddle")

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "cnn" / "train_paddle.py"
SMALL = ["--batch-size", "8", "--image-size", "8", "--width", "4", "--depth", "2", "--log-every", "5"]


def run(tmp_path: Path, *args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    full = {**os.environ, "CKPT_DIR": str(tmp_path / "ckpt"), **(env or {})}
    return subprocess.run([sys.executable, str(SCRIPT), *SMALL, *args], env=full, capture_output=True, text=True,
                          timeout=180, **kwargs)


def summary(output: str) -> dict:
    return json.loads(next(line for line in reversed(output.splitlines()) if line.startswith("{")))


def arrays(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if k != "meta"}


def test_help_documents_the_contract():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for word in ("CKPT_DIR", "RESUME_FROM", "GPU_TRAINING_AMP", "SIGTERM", "75"):
        assert word in out.stdout, word


@pytest.mark.parametrize("args,env,named", [(("--steps", "0"), {}, "--steps"),
                                            ((), {"RESUME_FROM": "/nonexistent/ckpt"}, "RESUME_FROM"),
                                            ((), {"GPU_TRAINING_AMP": "maybe"}, "GPU_TRAINING_AMP")])
def test_bad_input_exits_2_naming_it(tmp_path, args, env, named):
    out = run(tmp_path, *args, env=env)
    assert out.returncode == 2 and named in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_sigterm_mid_run_then_resume_is_exact(tmp_path):
    whole = run(tmp_path / "a", "--steps", "40", "--ckpt-every", "10")
    assert whole.returncode == 0, whole.stderr
    expected = arrays(tmp_path / "a" / "ckpt" / "ckpt-00000040.npz")

    env = {**os.environ, "CKPT_DIR": str(tmp_path / "b" / "ckpt")}
    proc = subprocess.Popen([sys.executable, str(SCRIPT), *SMALL, "--steps", "40", "--ckpt-every", "10",
                             "--min-step-seconds", "0.15"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 120
    while not (tmp_path / "b" / "ckpt" / "ckpt-00000010.npz").exists():
        assert time.time() < deadline and proc.poll() is None, "no checkpoint before the signal"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err
    stopped = summary(out)
    assert stopped["status"] == "stopped" and 10 <= stopped["step"] < 40
    assert (tmp_path / "b" / "ckpt" / f"ckpt-{stopped['step']:08d}.npz").exists(), "saved on the way out"

    resumed = run(tmp_path / "b", "--steps", "40", "--ckpt-every", "10")
    assert resumed.returncode == 0, resumed.stderr
    assert summary(resumed.stdout)["resumed_from_step"] == stopped["step"]
    got = arrays(tmp_path / "b" / "ckpt" / "ckpt-00000040.npz")
    assert got.keys() == expected.keys() and any(k.startswith("opt/") for k in got)
    assert all(np.array_equal(got[k], expected[k]) for k in got), [k for k in got if not np.array_equal(got[k], expected[k])]


def test_a_truncated_newest_checkpoint_falls_back_to_the_previous(tmp_path):
    first = run(tmp_path, "--steps", "20", "--ckpt-every", "10")
    assert first.returncode == 0, first.stderr
    newest = tmp_path / "ckpt" / "ckpt-00000020.npz"
    newest.write_bytes(newest.read_bytes()[:100])
    again = run(tmp_path, "--steps", "30", "--ckpt-every", "10")
    assert again.returncode == 0, again.stderr
    assert summary(again.stdout)["resumed_from_step"] == 10 and "skipping unusable checkpoint" in again.stdout


def test_checkpoints_that_exist_but_none_loads_stop_the_run(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "ckpt-00000010.npz").write_bytes(b"not an npz")
    out = run(tmp_path, "--steps", "20")
    assert out.returncode == 1 and "none loads" in out.stderr
