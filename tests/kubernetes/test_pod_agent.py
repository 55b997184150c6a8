"""The node agent in pod mode: the pod runtime on its own (RRSA, the Job's names, exit codes), and the
rehearsal of the Kubernetes stack: an eviction (SIGTERM) mid-run, resume on a new pod, against local S3."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.kubernetes import manifests
from localcloud.standins.alicloud import Sts

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "components" / "providers" / "alicloud" / "pod_runtime.py"


def pod_runtime(cfg):
    spec = importlib.util.spec_from_file_location("pod_runtime_under_test", RUNTIME)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Runtime(cfg, metadata=lambda *a, **k: pytest.fail("the node's metadata was read"))


def config(nodes=3):
    return {"region": "cn-beijing", "nodeCount": nodes, "identity": {"roleName": "pod-role"}, "endpoints": {},
            "cluster": {"kubernetes": {"job": "train", "service": "train", "namespace": "ns",
                                       "peerHost": "{job}-{index}.{service}"}}}


def test_pod_identity_and_peers_come_from_the_indexed_job(monkeypatch):
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "2")
    runtime = pod_runtime(config())
    assert runtime.instance_id() == "train-2"
    assert runtime.peers() == [("train-0", "train-0.train"), ("train-1", "train-1.train"), ("train-2", "train-2.train")]
    assert runtime.release() is None
    # The codes the Job's podFailurePolicy acts on: recreate a preempted pod, fail the Job on a failed run.
    assert runtime.exit_code("PREEMPTED") == manifests.EXIT_PREEMPTED
    assert runtime.exit_code("FAILED") == manifests.EXIT_FAILED and runtime.exit_code("DONE") == 0


def test_a_pod_reads_its_nodes_spot_notice_and_stops_asking_where_it_cannot(monkeypatch):
    """ACK: the pod reads the node's own notice (instance/spot/termination-time, hardened token) as the node
    agent does; a pod that cannot reach the node's metadata service stops asking after NOTICE_MISSES."""
    from datetime import datetime, timezone

    from localcloud.standins import Metadata
    from node_agent.s3 import Metadata as Reader

    metadata = Metadata("alicloud")
    try:
        spec = importlib.util.spec_from_file_location("pod_runtime_notice", RUNTIME)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        runtime = module.Runtime(config(), lambda token_header=None, formats=None: Reader(metadata.url, token_header))
        assert runtime.spot_notice() is None
        metadata.notice = datetime(2026, 12, 6, 10, 0, tzinfo=timezone.utc)
        assert runtime.spot_notice() == metadata.notice
        assert not [p for _, p, _ in metadata.log if "security-credentials" in p], "the notice only, never a role"
        metadata.fail_spot = True
        for _ in range(module.NOTICE_MISSES + 2):
            assert runtime.spot_notice() is None
        asked = [p for _, p, _ in metadata.log if "spot" in p]
        assert len(asked) == 2 + module.NOTICE_MISSES, "no more reads once the pod gave up"
    finally:
        metadata.stop()


def test_rrsa_credentials_come_from_sts_for_the_pods_token_only(tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text("the-service-account-token\n")
    sts = Sts("acs:ram::1:role/pod-role", "acs:ram::1:oidc-provider/ack-rrsa-c1", "the-service-account-token")
    try:
        monkeypatch.setenv("ALIBABA_CLOUD_ROLE_ARN", sts.role_arn)
        monkeypatch.setenv("ALIBABA_CLOUD_OIDC_PROVIDER_ARN", sts.provider_arn)
        monkeypatch.setenv("ALIBABA_CLOUD_OIDC_TOKEN_FILE", str(token))
        monkeypatch.setenv("GPU_TRAINING_STS_ENDPOINT", sts.url)
        got = pod_runtime(config()).credentials()
        assert got["access_key"].startswith("STS.pod-") and got["token"] and got["expiry_time"].endswith("Z")
        assert sts.requests[-1]["params"]["RoleSessionName"] == "gpu-training-train-0"
        token.write_text("someone-elses-token")  # the kubelet rotated it to a token STS does not take
        with pytest.raises(OSError):
            pod_runtime(config()).credentials()
    finally:
        sts.stop()


@pytest.mark.slow
def test_the_kubernetes_stack_rehearses_an_eviction_and_a_resume_on_a_new_pod():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "rehearse.py"), "large-a100-k8s", "--steps", "120",
                           "--json"], capture_output=True, text=True, timeout=600)
    document = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    checks = {c["name"]: c for c in document.get("checks", [])}
    assert done.returncode == 0, done.stderr[-4000:]
    assert document["nodes"] == 2
    for name in ("preempted", "resumed, not from zero", "trained to the end", "final checkpoint in the bucket",
                 "pod exit codes", "pod credentials by RRSA", "saved on the stop signal"):
        assert checks[name]["ok"], checks[name]
    assert "SIGTERM" in checks["preempted"]["detail"]
    assert checks["release once per finished node"]["detail"].startswith("train-0: 0, train-1: 0")


def test_the_container_script_passes_shellcheck_and_restarts_the_agent_like_systemd(tmp_path):
    """Exit 3 (final upload failed) and 1 start the agent again in the same pod; 75 ends the pod with 75."""
    script = manifests.entrypoint()
    (tmp_path / "entry.sh").write_text(script)
    check = subprocess.run([str(Path(sys.executable).parent / "shellcheck"), "-s", "sh", str(tmp_path / "entry.sh")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    codes = tmp_path / "codes"
    codes.write_text("3\n1\n75\n0\n")
    fake = tmp_path / "fake-python"  # each run of "the agent" exits with the next code and logs its argv
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\ncode=$(head -n1 {codes})\n'
                    f'sed -i 1d {codes}\nexit "$code"\n')
    fake.chmod(0o755)
    paths = {"config": str(tmp_path), "boot": str(tmp_path), "agent": str(tmp_path / "agent")}
    done = subprocess.run(["sh", "-c", manifests.run_script(paths, str(fake), restart_seconds=0)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == manifests.EXIT_PREEMPTED
    assert (tmp_path / "calls").read_text().count("-m node_agent --config") == 3
    assert "node agent exited 3: starting it again" in done.stdout


@pytest.mark.slow  # two pods, an eviction and four pip runs: about 3 minutes on a busy 2-core machine
def test_the_pods_install_the_setup_before_training_and_the_recreated_pod_from_the_bucket(tmp_path):
    """issue 33 on Kubernetes: the agent, the pod's entrypoint, installs train.requirements and train.setup in the
    pod before the trainer (from --wheels on 127.0.0.1); the pod the Job recreates after the eviction (empty
    volumes) installs from the wheels the first pod cached in the bucket."""
    from tests.tools.setup_project import make_project, rehearse_in

    project, wheels = make_project(tmp_path, "mine-k8s", {"command": "python train_cnn.py --steps 2000", "setup": [
        "pip install gtextra", "python -c 'import gtdemo, gtextra'"]}, "gtdemo==1.0\n", base="large-a100-k8s")
    code, document, stderr = rehearse_in(project, "mine-k8s", "--steps", "120", "--wheels", str(wheels), timeout=900)
    checks = {c["name"]: c for c in document.get("checks", [])}
    assert code == 0, (checks, stderr[-4000:])
    detail = checks["setup before training"]["detail"]
    assert "s from the index, 3 wheels" in detail and "s from the cache, 3 wheels" in detail, detail
    assert checks["pod exit codes"]["ok"] and checks["resumed, not from zero"]["ok"]
