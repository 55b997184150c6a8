"""The platform rehearsal: the ModelArts and PAI-DLC job API stand-ins as real local HTTP servers, the job the
stack declares submitted through the same client the dynamic resource uses, the example trainer run under
the contract, killed (a lost worker) and restarted by the stand-in, resuming from its newest checkpoint."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.platforms.jobapi import JobApiError
from components.validation import build_spec
from tools.stackfiles import load_stack_config
from localcloud import standins

REPO = Path(__file__).resolve().parents[2]
SMALL = ("python train_cnn.py --steps 40 --ckpt-every 5 --dataset-size 256 --batch-size 8 --image-size 16"
         " --width 4 --depth 1 --device cpu --min-step-seconds 0.05 --log-every 5")


def _job(spec):
    """The platform package's job module (its request, client, logs and stand-in), as the program finds it."""
    import importlib

    return importlib.import_module(f"{spec.platform.offer.package}.job")


def _wait(predicate, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("stack", ["hw-large-910b-modelarts", "large-a100-dlc"])
def test_job_resumes_after_restart_and_stops(stack, tmp_path, monkeypatch):
    config = {**load_stack_config(stack), "gpu-training:train": {"command": SMALL}}
    spec = build_spec(config, stack=stack)
    job = _job(spec)
    body = job.request(spec)
    shutil.copytree(REPO / "examples" / "cnn", tmp_path / "bucket" / "code")
    # The platform's field names and phase names come from its package (localcloud/standins/, api.yaml).
    standin = standins.job_api(job.OFFER, tmp_path / "bucket", tmp_path)
    server = standin.serve()
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    client = job.client(spec.region, base_url=f"http://127.0.0.1:{server.server_address[1]}")
    try:
        # A malformed request is refused with the rule from the data.
        with pytest.raises(JobApiError) as refused:
            client.submit({k: v for k, v in body.items() if k not in ("kind", "DisplayName")})
        assert refused.value.status == 400

        job_id = client.submit(body)
        checkpoints = tmp_path / "bucket" / "platform" / "checkpoints"
        assert _wait(lambda: len(list(checkpoints.glob("*.pt"))) >= 2), job.logs(job_id, spec.region,
                                                                                  base_url=client.base_url)
        standin.restart(job_id)  # a lost worker: SIGKILL, no chance to save; the platform starts it again
        assert _wait(lambda: client.state(job_id)["state"] != "running", 180)
        assert client.state(job_id)["state"] == "succeeded"
        log = client.logs(job_id, **({"task_id": "worker-0"} if stack.startswith("hw-") else
                                     {"PodId": f"{job_id}-worker-0"}))
        summaries = [json.loads(line) for line in log.splitlines() if '"train_cnn.summary"' in line]
        assert summaries and summaries[-1]["status"] == "finished" and summaries[-1]["step"] == 40
        assert summaries[-1]["resumed_from_step"] and summaries[-1]["resumed_from_step"] > 0

        second = client.submit(job.API.named(body, "2"))  # a name per submit, as the dynamic resource gives
        _wait(lambda: standin.jobs[second].process is not None)
        client.stop(second)
        assert _wait(lambda: client.state(second)["state"] == "stopped", 60)
    finally:
        standin.close(server)


@pytest.mark.slow
def test_rehearse_on_a_platform_stack_runs_the_job_drill_and_the_fault_kills_every_worker():
    """`gpu-training rehearse` on a platform stack rehearses the job (tools/platformrehearsal.py), not VM nodes;
    the lost worker is really lost: torchrun's workers run in sessions of their own, and a fault that killed
    only the job's process group left the first run training to the end beside its restart."""
    import subprocess

    done = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), "large-a100-dlc", "--steps", "80",
                           "--json", "--keep-dir"], capture_output=True, text=True, cwd=REPO, timeout=600)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"], done.stdout + done.stderr[-3000:]
    names = [c["name"] for c in report["checks"]]
    assert names == ["submitted", "checkpoint saved", "worker lost and restarted", "finished",
                     "resumed, not from zero", "trained to the end", "stop through the API"]
    log = (Path(report["workdir"]) / "job-1.log").read_text()
    shutil.rmtree(report["workdir"], ignore_errors=True)
    summaries = [json.loads(line) for line in log.splitlines() if '"train_cnn.summary"' in line]
    assert len(summaries) == 1, "only the restarted run may finish: the killed one must not write a summary"
    assert summaries[0]["resumed_from_step"] and summaries[0]["step"] == 80


@pytest.mark.parametrize("stack", ["hw-large-910b-modelarts", "large-a100-dlc"])
def test_the_stand_in_sets_the_launcher_variables_the_job_reads_with_a_free_master_port(stack, tmp_path):
    """The platform sets the launcher's variables in a job (platform.yaml launcherEnv); the stand-in does too,
    so a job never falls back to the command's default master port (29500), which two jobs on one machine
    would both bind."""
    from components.platforms.training_contract import command

    config = {**load_stack_config(stack), "gpu-training:train": {"command": SMALL, "launcher": "torchrun"}}
    spec = build_spec(config, stack=stack)
    from components.platforms.training_contract import MASTER_PORT_ENV

    env = standins.job_api(_job(spec).OFFER, tmp_path / "bucket", tmp_path).platform_env()
    names = spec.platform.offer.data["launcherEnv"]
    port = names.get("masterPort") or MASTER_PORT_ENV  # ModelArts sets none: the contract's fixed default
    assert set(env) == set(names.values()) | {port}
    assert env[names["nnodes"]] == "1" and env[names["nodeRank"]] == "0"
    assert env[names.get("masterHosts") or names["masterAddr"]] == "127.0.0.1" and 1024 <= int(env[port]) <= 65535
    rendered = command(spec, _job(spec).paths(spec))
    assert all(f"${{{variable}:-" in rendered for variable in env), rendered


@pytest.mark.slow
@pytest.mark.parametrize("mode, resumed", [("good", True), ("noresume", False)])
def test_a_users_own_command_is_judged_by_the_steps_its_trainer_reports(mode, resumed):
    """The example trainer's summary line is the example's only: a user's command on a platform stack was failed
    "resumed" for lacking it (a false red), and a trainer that started over could not be told from one that resumed.
    Now, as on VMs (tools/trainerevidence.py): the first step the restarted worker reports against the saved one."""
    trainer = REPO / "tests" / "tools" / "trainers" / "user_trainer.py"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), "large-a100-dlc", "--steps", "40",
                           "--command", f"{sys.executable} {trainer} --mode {mode} --steps 200", "--json"],
                          capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'node'}"})
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["resumed, not from zero"]["ok"] is resumed, checks["resumed, not from zero"]
    assert "trained to the end" not in checks  # --steps is the example trainer's; a user's command has its own
    assert done.returncode == (0 if resumed else 1), done.stderr[-2000:]
    if not resumed:
        assert "reported step 1 first" in checks["resumed, not from zero"]["detail"]
