"""`make rehearse`: the real node agent and trainer through a preemption drill on local servers."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def rehearse(*args: str, timeout: int = 300) -> tuple[int, dict, str]:
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), *args, "--json"],
                            capture_output=True, text=True, timeout=timeout)
    document = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.returncode, document, result.stderr


# One drill per provider at least: Alibaba on-demand, spot and multi-node; Tencent spot (its pool is a
# scaling group the finished node disables); Huawei spot (the notice at /openstack/latest/spot/instance-action,
# its AS pool paused); Baidu spot (no reclaim notice: the node is killed; no pool; the release is signed
# with the role's STS credentials and checked by the stand-in).
@pytest.mark.slow
@pytest.mark.parametrize("stack", ["entry-t4", "medium-a100", "large-h20", "tc-medium-a100", "hw-medium-v100",
                                   "bd-large-a100-spot"])
def test_preemption_drill_passes(stack):
    code, document, stderr = rehearse(stack)
    assert code == 0, stderr[-4000:]
    checks = {c["name"]: c for c in document["checks"]}
    assert all(c["ok"] for c in checks.values()), checks
    assert {"preempted", "resumed, not from zero", "trained to the end", "final checkpoint in the bucket",
            "report in the bucket", "release once per finished node"} <= set(checks)
    assert document["nodes"] == (2 if stack.startswith("large") else 1)
    if "medium-a100" in stack:  # spot: the finished node retires its pool before releasing itself
        assert checks["spot pool retired before release"]["ok"]
    assert document["stepsLost"] is not None and document["stepsLost"] >= 0
    if not stack.startswith("bd-"):  # a notice in the cloud's own format: what it bought, checked
        assert {"notice -> trainer signal", "grace from the notice", "saved before the reclaim"} <= set(checks)


def test_a_trainer_that_fails_fails_the_rehearsal():
    code, document, stderr = rehearse("entry-t4", "--command", f"{sys.executable} -c 'import sys; sys.exit(3)'",
                                      "--timeout", "60")
    assert code == 1
    assert not all(c["ok"] for c in document["checks"])


def test_unknown_stack_is_exit_2():
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), "nope"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "no stack 'nope'" in result.stderr


def test_an_image_folder_is_packed_staged_and_trained_on(tmp_path):
    """Issue 16's path for a new user: a generated image folder in, a rehearsed run that trains on it."""
    from tools.datapack import example

    example.make_folder(tmp_path / "images", classes=3, per_class=24, size=32)
    code, document, stderr = rehearse("entry-t4", "--data", str(tmp_path / "images"), "--steps", "120")
    checks = {c["name"]: c for c in document.get("checks", [])}
    assert code == 0, stderr[-4000:]
    assert checks["data staged and trained on"]["ok"] and "trainer read the staged set" in checks["data staged and trained on"]["detail"]
    assert checks["resumed, not from zero"]["ok"] and checks["trained to the end"]["ok"]


@pytest.mark.slow  # the image-folder test above covers staging in the fast suite
def test_example_data_rehearses_the_whole_data_path_and_the_report_diagnoses():
    """`make rehearse ARGS=--example-data`: a generated image folder packed, staged, trained on, reported."""
    code, document, stderr = rehearse("entry-t4", "--example-data", "--steps", "120")
    checks = {c["name"]: c for c in document.get("checks", [])}
    assert code == 0, stderr[-4000:]
    assert checks["data staged and trained on"]["ok"], checks["data staged and trained on"]
    assert "mean GPU utilisation" in checks["report in the bucket"]["detail"], checks["report in the bucket"]


def test_example_data_and_data_together_exit_2():
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), "entry-t4", "--example-data",
                             "--data", "x"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--example-data and --data: pick one" in result.stderr


@pytest.mark.parametrize("steps", [40, 120, 300, 2000])
def test_a_short_rehearsal_is_paced_to_span_several_syncs(steps):
    """`rehearse --steps 40` trained in 1.6 s, before the agent's first sync put a snapshot in the bucket, so
    the spot notice came after the run had ended (CI, test_packaging's wheel rehearsal). The example run is
    paced to last at least ten of the rehearsal agent's syncs, whatever --steps is."""
    sys.path.insert(0, str(REPO / "scripts"))
    import rehearse as script

    words = script.rehearsal_command("python train_cnn.py --steps 5", steps).split()
    pace = float(words[words.index("--min-step-seconds") + 1])
    assert int(words[words.index("--steps") + 1]) == steps
    assert steps * pace >= 10 * script.SYNC_SECONDS - 0.01
    assert pace >= script.PACE_SECONDS  # a long run keeps its per-step pace
