"""`gpu-training status` and `logs` for a platform stack (tools/runlib/platformjob.py): the job's state and its
log come from the platform's job API, here its stand-in (a real HTTP server), found from the stack's outputs."""
from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from components.validation import build_spec
from tools.runlib import platformjob, status, targets as run_targets
from tools.stackfiles import load_stack_config
from localcloud import standins

STACK = "large-a100-dlc"


@pytest.fixture
def running_job(tmp_path, monkeypatch):
    from components.providers.alicloud.dlc import job

    config = {**load_stack_config(STACK), "gpu-training:train": {"command": "echo trainer says hello; sleep 30",
                                                         "launcher": "direct"}}
    spec = build_spec(config, stack=STACK)
    (tmp_path / "bucket" / "code").mkdir(parents=True)
    standin = standins.job_api(job.OFFER, tmp_path / "bucket", tmp_path)
    server = standin.serve()
    monkeypatch.setenv("GPU_TRAINING_PLATFORM_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    job_id = job.client(spec.region).submit(job.request(spec))
    outputs = {"target": "platform", "stack": STACK, "provider": "alicloud", "region": spec.region, "platform": "pai-dlc",
               "jobId": job_id}
    yield outputs, standin
    standin.close(server)


def test_status_and_logs_read_the_job_from_its_api(running_job):
    outputs, standin = running_job
    state = platformjob.job_state(outputs)
    assert state == {"jobId": outputs["jobId"], "platform": "pai-dlc", "state": "running", "phase": "Running"}
    end = time.monotonic() + 20
    while "trainer says hello" not in platformjob.job_log(outputs) and time.monotonic() < end:
        time.sleep(0.2)
    assert "trainer says hello" in platformjob.job_log(outputs)
    standin.stop(outputs["jobId"])
    while platformjob.job_state(outputs)["state"] == "running" and time.monotonic() < end:
        time.sleep(0.2)
    out = io.StringIO()
    doc = {"stack": STACK, "state": "NO_MARKERS", "simulated": False, "nodes": [], "source": "oss://b/p/",
           "checkpoint": None, "expiresAt": None, "ttlSeconds": None, "keepsBilling": [], "earlierRunsLeftOut": 0,
           "costSoFar": {"amount": None, "currency": "CNY", "basis": "no node has reported yet"},
           "markers": False, "job": run_targets.for_outputs(outputs).job_state(outputs)}
    status.render(Console(file=out, width=200), doc)
    assert f"platform job {outputs['jobId']} on pai-dlc: stopped (Stopped)" in out.getvalue()


def test_a_job_that_cannot_be_asked_says_why():
    with pytest.raises(platformjob.JobUnreachable, match="no jobId output yet"):
        platformjob.job_state({"provider": "alicloud", "platform": "pai-dlc", "region": "cn-beijing"})
    with pytest.raises(platformjob.JobUnreachable, match="not offered by tencentcloud"):
        platformjob.job_state({"provider": "tencentcloud", "platform": "pai-dlc", "jobId": "j-1"})
    assert run_targets.for_outputs({"target": "vm", "stack": "entry-t4"}).job_state({}) is None  # a VM has no job
    assert run_targets.for_outputs({"target": "kubernetes", "stack": "large-a100-k8s"}).job_state({}) is None
