"""`make rehearse`: the real node agent and trainer through a preemption drill on local servers."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from stackcases import vm_stack_names

from tests.tools.setup_project import make_project, rehearse_in

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
    if stack != "entry-t4":  # several GPUs: the cloud's launcher, torchrun, with a CPU rank per GPU (at most 4 in all)
        assert (document["launcher"], document["ranksPerNode"]) == ("torchrun", 2 if stack.startswith("large") else 4)
        assert checks["launcher as on the cloud"]["ok"], checks["launcher as on the cloud"]
    if "medium-a100" in stack:  # spot: the finished node retires its pool before releasing itself
        assert checks["spot pool retired before release"]["ok"]
    assert document["stepsLost"] is not None and document["stepsLost"] >= 0
    if not stack.startswith("bd-"):  # a notice in the cloud's own format: what it bought, checked
        assert {"notice -> trainer signal", "grace from the notice", "saved before the reclaim",
                "saved on the stop signal"} <= set(checks)


def test_a_trainer_that_fails_fails_the_rehearsal():
    code, document, stderr = rehearse("entry-t4", "--command", f"{sys.executable} -c 'import sys; sys.exit(3)'",
                                      "--timeout", "60")
    assert code == 1
    assert not all(c["ok"] for c in document["checks"])
    # The node booted as on the cloud: user-data's loader fetched and verified the boot payload first.
    fetch = next(c for c in document["checks"] if c["name"] == "fetch")
    assert fetch["ok"] and fetch["detail"].startswith("the loader verified the boot payload"), fetch


@pytest.mark.parametrize("command, why", [
    ("true && echo no training on rank $RANK", "FAILED (finished without training: the command exited 0 but left no"
                                               " checkpoint in CKPT_DIR"),
    ("cd src && python train.py", "FAILED (trainer exit code 1); trainer's last output: /bin/sh: 1: cd: can't cd to src"
                                  " (torchrun: local rank")])
def test_a_4_gpu_stack_rehearses_under_torchrun_and_a_command_that_does_not_train_fails_saying_why(command, why):
    """medium-a100 has 4 GPUs, so its nodes run the command under torchrun: the rehearsal does too, with 4 CPU ranks,
    not once as a single process. A command that ends without training (at once, or failing) fails the drill
    with the node's marker and the ranks' own last words, not torchrun's report."""
    code, document, stderr = rehearse("medium-a100", "--command", command, "--timeout", "60")
    assert code == 1 and (document["launcher"], document["ranksPerNode"]) == ("torchrun", 4), stderr[-3000:]
    assert "launcher torchrun with 4 CPU rank(s) (gloo) per node" in stderr
    (drill,) = [c for c in document["checks"] if c["name"] == "drill"]
    assert not drill["ok"] and why in drill["detail"], drill


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


@pytest.mark.slow  # a whole drill with two pip installs: about 85 s on a busy 2-core machine
def test_the_rehearsal_installs_the_setup_from_a_local_index_and_the_replacement_from_the_cache(tmp_path):
    """issue 33: the stack's requirements file and setup commands run through the real agent before training,
    from a package index on 127.0.0.1, into the node's own venv; the replacement node installs from the
    bucket's wheels; the times are in the checks. Nothing lands in this environment."""
    import importlib.util

    project, wheels = make_project(tmp_path, "mine", {"setup": ["pip install gtextra",
                                                               "python -c 'import gtdemo, gtextra'"]}, "gtdemo==1.0\n")
    code, document, stderr = rehearse_in(project, "mine", "--steps", "60", "--wheels", str(wheels))
    checks = {c["name"]: c for c in document.get("checks", [])}
    assert code == 0, (checks, stderr[-3000:])
    detail = checks["setup before training"]["detail"]
    assert " s from the index, 3 wheels" in detail and " s from the cache, 3 wheels" in detail, detail
    assert checks["setup packages from the local index only"]["ok"]
    assert checks["resumed, not from zero"]["ok"] and checks["trained to the end"]["ok"]
    assert importlib.util.find_spec("gtdemo") is None, "the rehearsal installed into this environment"


def test_a_failing_setup_fails_the_rehearsal_naming_the_command(tmp_path):
    project, wheels = make_project(tmp_path, "mine", {"setup": ["pip install no-such-package-here"]}, "")
    code, document, stderr = rehearse_in(project, "mine", "--steps", "60", "--wheels", str(wheels), "--timeout", "90")
    assert code == 1, stderr[-3000:]
    drill = {c["name"]: c for c in document["checks"]}["drill"]
    assert "FAILED (setup failed: train.setup[0] (pip install no-such-package-here) exited 1" in drill["detail"], drill
    assert "Traceback" not in stderr


def test_wheels_that_are_no_folder_exit_2(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), "entry-t4", "--wheels",
                             str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--wheels:" in result.stderr and "is not a folder" in result.stderr


@pytest.mark.slow  # a whole drill under torchrun with 4 ranks and two pip installs: about 4 minutes on 2 busy cores
def test_issue_33_a_users_shell_command_and_setup_rehearse_on_medium_a100_under_torchrun_and_resume(tmp_path):
    """Issue 33, done when: medium-a100 with a command that uses `cd`, `&&`, a VAR=x assignment and a pipe, and a
    train.setup list, rehearses under torchrun with 4 CPU ranks (one per GPU), resumes after the preemption drill
    with no step lost to the pipe (tee ends with the trainer at the stop), and the setup time is in the checks and
    in `gpu-training status --rehearsal`. Each rank's shell ran the whole command: the 4 ranks' logs are in the
    folder it went to, and the setup's package imported in it."""
    import os
    import shutil

    sys.path.insert(0, str(REPO / "scripts"))
    import rehearse as script

    sized = script.rehearsal_command("python ../train_cnn.py", 300)
    command = (f"python -c 'import gtextra' && mkdir -p runs && cd runs && WANDB_MODE=offline {sized}"
               " | tee -a log-$RANK.txt")
    project, wheels = make_project(tmp_path, "mine", {"command": command, "setup": [
        "pip install gtextra", "python -c 'import gtdemo, gtextra'"]}, "gtdemo==1.0\n", base="medium-a100")
    code, document, stderr = rehearse_in(project, "mine", "--wheels", str(wheels), "--keep", "--keep-dir")
    try:
        checks = {c["name"]: c for c in document.get("checks", [])}
        assert code == 0, (checks, stderr[-3000:])
        assert (document["launcher"], document["ranksPerNode"]) == ("torchrun", 4)
        assert checks["launcher as on the cloud"]["detail"].endswith("world size 4"), checks
        assert checks["resumed, not from zero"]["ok"] and checks["trained to the end"]["ok"], checks
        assert document["stepsLost"] == 0, "the trainer saved at the stop, behind the pipe"
        detail = checks["setup before training"]["detail"]
        assert " s from the index" in detail and " s from the cache" in detail, detail
        for node in Path(document["workdir"]).glob("i-*"):
            logs = sorted(p.name for p in (node / "data" / "work" / "runs").glob("log-*.txt"))
            assert logs == [f"log-{rank}.txt" for rank in range(4)], (node, logs)
        status = subprocess.run([sys.executable, "-m", "tools.cli", "status", "mine", "--rehearsal"], cwd=REPO,
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "GPU_TRAINING_PROJECT": str(project), "COLUMNS": "250",
                                     "GPU_TRAINING_OUT": str(project / "out")})
        assert status.returncode == 0 and " s from the index" in status.stdout, status.stdout + status.stderr
    finally:
        shutil.rmtree(document.get("workdir") or tmp_path / "none", ignore_errors=True)


@pytest.mark.parametrize("stack", vm_stack_names())
def test_every_vm_stacks_rehearsed_node_renders_the_user_data_a_node_boots_with(stack, tmp_path, monkeypatch):
    """What the drill's nodes boot through (the loader in user-data, the boot payload): rendered from each stack's
    rehearsed node config, seen from the node's root; the drill itself is slow and covers a few stacks."""
    import importlib.util

    from components.bootstrap import node_config_of, render_user_data
    from components.nodeconfig import build_node_config
    from tools.stackfiles import stack_spec

    loader = importlib.util.spec_from_file_location("rehearse_views", REPO / "scripts" / "rehearse.py")
    rehearse = importlib.util.module_from_spec(loader)
    monkeypatch.setitem(sys.modules, "rehearse_views", rehearse)  # dataclasses look their module up
    loader.loader.exec_module(rehearse)
    _, spec = stack_spec(stack)
    base = build_node_config(spec, shared_fs_address=None)
    config = json.loads(json.dumps(base))
    root = tmp_path / "node"
    config["paths"].update(agent=str(root / "agent"), logs=str(root / "logs"), venv="",
                           shared=str(root / "shared") if base["paths"].get("shared") else None)
    rendered = render_user_data(rehearse.node_view(config, root, base["paths"]))
    seen = node_config_of(rendered.payload.content)
    assert seen["paths"]["agent"] == "/agent" and seen["paths"]["logs"] == "/logs"
    assert seen["paths"]["venv"] == base["paths"]["venv"]
