"""The platform job's life through the dynamic resource `pulumi up` and `pulumi destroy` run (components/platforms/
training.py JobProvider), against each platform's job API stand-in: a real HTTP server whose phases, stop
refusals, name rule and account come from the platform's api.yaml and platform.yaml, each with its source.

- destroy stops a job in every state that bills, waits until it bills no more, and never sends a stop the API
  refuses (ModelArts' Terminating); ModelArts' job is then deleted, so its name is free again;
- every submit has a name of its own: up, destroy, up (and a replacement) are accepted where names are unique;
- integers reach the API as integers after Pulumi's own round trip, which turns every number into a float;
- a ModelArts account without the one-time authorization is stopped before anything is submitted;
- a multi-node ModelArts job rendezvouses on the variables ModelArts sets (VC_WORKER_HOSTS's first host);
- under torchrun every rank runs train.command through a shell (cd, &&, VAR=x, a pipe), on both platforms.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from node_agent import launch

from components.platforms.training import JobProvider
from components.validation import build_spec
from tools.stackfiles import load_stack_config
from localcloud import standins
from localcloud.standins import huaweicloud_modelarts

STACKS = {"modelarts": "hw-large-910b-modelarts", "pai-dlc": "large-a100-dlc"}
RUNNING = {"command": "echo started; sleep 60", "launcher": "direct"}


def _spec(stack, **overrides):
    config = {**load_stack_config(stack), **{f"gpu-training:{k}": v for k, v in overrides.items()}}
    return build_spec(config, stack=stack)


@pytest.fixture(params=sorted(STACKS))
def platform(request, tmp_path, monkeypatch):
    """(job module, spec, stand-in, a JobProvider as `pulumi up` builds it) with the stand-in's endpoint set."""
    import importlib

    spec = _spec(STACKS[request.param], train=RUNNING)
    job = importlib.import_module(f"{spec.platform.offer.package}.job")
    (tmp_path / "bucket" / "code").mkdir(parents=True)
    standin = standins.job_api(job.OFFER, tmp_path / "bucket", tmp_path)
    server = standin.serve()
    monkeypatch.setenv("GPU_TRAINING_PLATFORM_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    provider = JobProvider(spec.platform.offer.package, spec.region)
    provider.poll_s, provider.wait_s = 0.1, 30.0
    yield job, spec, standin, provider
    standin.close(server)


def _create(provider, spec, job) -> str:
    return provider.create({"request": job.request(spec), "jobId": None}).id


def _billing_phases(job) -> list[str]:
    return [name for name, row in job.API.data["states"]["phases"].items() if row["bills"]]


def test_the_state_tables_list_every_state_the_sdks_document():
    """The tables are the SDKs' own lists (their model docstrings), with nothing left out: a state missing from
    the table reads "unknown" and a destroy would not know whether to stop it."""
    from alibabacloud_pai_dlc20201203.models import _get_job_response_body as dlc_model
    from huaweicloudsdkmodelarts.v1.model import status as modelarts_model

    from components.providers.alicloud.dlc import job as dlc
    from components.providers.huaweicloud.modelarts import job as modelarts

    import inspect
    dlc_doc = inspect.getsource(dlc_model).split("The running status of the job. Valid values:")[1].split("self.status")[0]
    dlc_states = [line.strip("# -").split(" (")[0] for line in dlc_doc.splitlines() if line.strip("# -")]
    assert sorted(dlc.API.data["states"]["phases"]) == sorted(dlc_states)
    phase_doc = inspect.getsource(modelarts_model.Status.__init__).split(":param phase:")[1].split(":type")[0]
    modelarts_states = [part.split("：")[0].strip() for part in phase_doc.split(" - ")[1:]]
    assert sorted(modelarts.API.data["states"]["phases"]) == sorted(modelarts_states)


def test_destroy_stops_the_job_in_every_state_that_bills_and_never_sends_a_refused_stop(platform):
    job, spec, standin, provider = platform
    for phase in _billing_phases(job):
        job_id = _create(provider, spec, job)
        standin.set_phase(job_id, phase)
        provider.delete(job_id, {})
        asked = [p for j, p in standin.stops if j == job_id]
        assert asked == ([phase] if job.API.phase(phase)["stop"] else []), (phase, asked)
        if "delete" in job.API.data["operations"]:
            assert job_id not in standin.jobs, phase  # deleted: its name is free again
        else:
            assert not job.API.phase(standin.jobs[job_id].phase)["bills"], (phase, standin.jobs[job_id].phase)


def test_a_job_that_ended_is_not_stopped(platform):
    job, spec, standin, provider = platform
    job_id = _create(provider, spec, job)
    standin.stop(job_id)
    end = time.monotonic() + 20
    while job.API.phase(standin.jobs[job_id].phase)["bills"] and time.monotonic() < end:
        time.sleep(0.1)
    standin.stops.clear()
    provider.delete(job_id, {})
    assert standin.stops == []


def test_up_destroy_up_is_accepted_and_each_submit_has_its_own_name(platform):
    """ModelArts creates a job only under a name that does not exist (the stand-in refuses it, with the source);
    a fixed name made every second `pulumi up` of a stack, and every replacement, fail."""
    job, spec, standin, provider = platform
    first = _create(provider, spec, job)
    second = _create(provider, spec, job)  # a replacement is submitted before or after the old job is gone
    provider.delete(first, {})
    third = _create(provider, spec, job)
    names = [standin.jobs[j].name for j in (second, third)]
    assert len(set(names)) == 2 and all(n.startswith(f"gpu-training-{spec.stack}-") for n in names), names
    for job_id in (second, third):
        provider.delete(job_id, {})


def test_integers_reach_the_api_as_integers_after_pulumis_round_trip(platform):
    """Pulumi hands a dynamic provider every number as a float (its RPC's number_value); the SDKs type
    node_count, PodCount and JobMaxRunningTimeMinutes int."""
    import asyncio

    from pulumi.runtime import rpc

    job, spec, standin, provider = platform
    declared = {"request": job.request(spec), "jobId": None}
    loop = asyncio.new_event_loop()  # its own: asyncio.run would leave the mock engine's tests without one
    try:
        wire = loop.run_until_complete(rpc.serialize_properties(declared, {}))
    finally:
        loop.close()
    props = rpc.deserialize_properties(wire)
    assert "1.0" in repr(props["request"]), "the round trip turns integers into floats"
    job_id = provider.create(props).id
    body = standin.jobs[job_id].body
    assert job.API.problems("submit", body) == []
    count = body["spec"]["resource"]["node_count"] if "spec" in body else body["JobSpecs"][0]["PodCount"]
    assert count == 1 and type(count) is int


@pytest.mark.parametrize("platform", ["modelarts"], indirect=True)
def test_an_account_without_the_modelarts_authorization_is_stopped_before_a_submit(platform):
    job, spec, standin, provider = platform
    standin.facts["authorizations"] = []
    with pytest.raises(RuntimeError, match="lists no ModelArts authorization") as stopped:
        _create(provider, spec, job)
    assert "modelarts_03_0405" in str(stopped.value) and standin.jobs == {}
    standin.facts["authorizations"] = [huaweicloud_modelarts.AUTHORIZED]
    assert _create(provider, spec, job) in standin.jobs


@pytest.mark.parametrize("platform", ["modelarts"], indirect=True)
def test_a_public_pool_flavor_the_region_does_not_list_is_stopped_before_a_submit(platform):
    """The 910B flavor id is not documented as a public training flavor: `pulumi up` checks it against the
    region's list (ShowTrainingJobFlavors) and names the ones it has."""
    job, spec, standin, provider = platform
    standin.facts["flavors"] = ["modelarts.bm.npu.arm.8snt9b.other"]
    with pytest.raises(RuntimeError, match="is not a training flavor of this region's public pool") as stopped:
        _create(provider, spec, job)
    assert "modelarts.bm.npu.arm.8snt9b.other" in str(stopped.value) and standin.jobs == {}


def test_a_multi_node_modelarts_job_rendezvouses_on_the_variables_modelarts_sets(tmp_path):
    """ModelArts sets MA_NUM_HOSTS, VC_TASK_INDEX and VC_WORKER_HOSTS (the master first) and no port: the
    command's torchrun (a shim here that prints its arguments) gets the second worker's place from them."""
    from components.providers.huaweicloud.modelarts import job

    spec = _spec("hw-large-910b-modelarts", nodes=2, train={"command": "python train_cnn.py", "launcher": "torchrun"})
    command = job.request(spec)["algorithm"]["command"]
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "torchrun").write_text('#!/bin/sh\necho "$@"\n')
    (shim / "torchrun").chmod(0o755)
    code = tmp_path / "job" / "code"
    code.mkdir(parents=True)
    env = {"PATH": f"{shim}:{os.environ['PATH']}", "MA_JOB_DIR": str(tmp_path / "job"), "MA_NUM_HOSTS": "2",
           "VC_TASK_INDEX": "1", "VC_WORKER_HOSTS": "job-abc-worker-0.job-abc,job-abc-worker-1.job-abc"}
    command = command.replace("/home/ma-user/modelarts/outputs", str(tmp_path / "outputs"))
    done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("--no-python")[0].split() == [
        "--nnodes", "2", "--node_rank", "1", "--master_addr", "job-abc-worker-0.job-abc", "--master_port", "29500",
        "--nproc_per_node", "8"]
    assert done.stdout.rstrip().endswith("--no-python /bin/sh -c " + launch.STOP_TRAPS + "python train_cnn.py")


@pytest.mark.parametrize("stack", sorted(STACKS.values()))
def test_a_platform_job_runs_the_command_through_a_shell_on_every_rank_of_the_real_torchrun(stack, tmp_path):
    """train.command is shell text on a platform too: the job's command, run by sh as the platform runs it,
    starts the real torchrun, and each rank runs `cd`, `&&`, a VAR=x assignment and a pipe (the stack's
    8 ranks cut to 2 for the test machine; the launcher's variables as the platform sets them for one node)."""
    import shutil
    import socket
    import sys
    from pathlib import Path

    from components.platforms import training_contract

    torchrun = Path(sys.executable).parent / "torchrun"
    if not torchrun.exists():
        pytest.skip("no torchrun beside the test interpreter (torch not installed)")
    train = {"command": "cd src && WANDB_MODE=offline python train.py --epochs 1 | tee -a out-$RANK.log",
             "launcher": "torchrun", "env": {"RECORD_DIR": str(tmp_path)}}
    spec = _spec(stack, train=train)
    paths = training_contract.JobPaths(str(tmp_path / "code"), str(tmp_path / "ckpt"), str(tmp_path / "data"))
    (tmp_path / "code" / "src").mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parents[1] / "rank_trainer.py", tmp_path / "code" / "src" / "train.py")
    command = training_contract.command(spec, paths)
    assert f"--nproc_per_node {spec.gpus_per_node} " in command
    command = command.replace(f"--nproc_per_node {spec.gpus_per_node} ", "--nproc_per_node 2 ")
    names = spec.platform.offer.data["launcherEnv"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    env = {**os.environ, **training_contract.environment(spec, paths), "PATH": f"{torchrun.parent}:{os.environ['PATH']}",
           names["nnodes"]: "1", names["nodeRank"]: "0", names.get("masterHosts") or names["masterAddr"]: "127.0.0.1",
           names.get("masterPort") or training_contract.MASTER_PORT_ENV: port}
    done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        record = json.loads((tmp_path / f"rank-{rank}.json").read_text())
        assert (record["RANK"], record["WORLD_SIZE"], record["WANDB_MODE"]) == (str(rank), "2", "offline"), record
        assert record["cwd"] == str(tmp_path / "code" / "src") and record["argv"] == ["--epochs", "1"], record
        assert (tmp_path / "code" / "src" / f"out-{rank}.log").read_text() == f"step 1 on rank {rank}\n"
    assert (tmp_path / "ckpt" / "ckpt-1.pt").exists()
