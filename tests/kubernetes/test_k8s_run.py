"""scripts/run.py on the Kubernetes stack: it watches the pods' markers (an evicted pod's replacement
writes under the same name) and destroys the cluster only once every pod's marker says its data is
saved; a pod whose final upload failed keeps the cluster up, with the pod's own advice.

The stack's outputs are the program's own (the mock engine's plan of large-a100-k8s), pointed at a
local moto S3; the markers are written in the documented format (docs/node-config.md), as the agent in
a pod writes them (tests/kubernetes/test_pod_agent.py rehearses the real agent).

Teardown and the start check run against the ACK stand-in (localcloud/standins/alicloud.py AckCluster): its
kubeconfigs expire as ACK's do, and EngineOverAck plays Pulumi's engine as Pulumi documents it.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import datetime, timezone

import boto3
import pytest

from localcloud.standins.alicloud import AckCluster
from components.providers.alicloud.profile import ACK
from tests.tools.run_harness import FakeStack, run_main  # run.py and its recorded Automation layer
from tools.runlib import exitcodes
from tools.runlib.kubeapi import KubeApi, KubeApiError
from tools.runlib.startcheck import StartCheck

STACK = "large-a100-k8s"


@pytest.fixture
def store(moto_url, monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(key, value)
    client = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1", aws_access_key_id="test",
                          aws_secret_access_key="test")
    bucket = f"ckpt-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return client, bucket


def program_outputs(plan_for, endpoint: str, bucket: str) -> dict:
    outputs = json.loads(json.dumps(plan_for(STACK).outputs, default=str))
    outputs["checkpoint"].update({"bucket": bucket, "endpoint": endpoint, "region": "us-east-1",
                                  "addressingStyle": "path", "signatureVersion": "s3v4"})
    return outputs


def marker(client, bucket, pod, state, **fields):
    body = {"state": state, "node": pod, "stack": STACK, "exitCode": None, "reason": None, "durationSeconds": 60.0,
            "gpuHours": 0.1, "estimatedCost": None, "currency": "CNY", "utilisation": {"gpuUtilMean": 90.0},
            "lastCheckpoint": None, "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
    client.put_object(Bucket=bucket, Key=f"gpu-training/{STACK}/markers/{pod}.json", Body=json.dumps(body).encode())


def states(client, bucket) -> dict:
    found = client.list_objects_v2(Bucket=bucket, Prefix=f"gpu-training/{STACK}/markers/").get("Contents", [])
    return {o["Key"].rsplit("/", 1)[-1]: json.loads(client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())[
        "state"] for o in found}


def test_the_cluster_is_destroyed_only_after_every_pod_saved_its_data(tmp_path, plan_for, store, moto_url):
    client, bucket = store

    def pods():
        time.sleep(1.1)  # markers written after `up` started
        marker(client, bucket, "train-0", "RUNNING")
        marker(client, bucket, "train-1", "RUNNING")
        time.sleep(0.5)
        marker(client, bucket, "train-0", "PREEMPTED", reason="agent got SIGTERM: node stopping")
        time.sleep(0.5)
        marker(client, bucket, "train-0", "RUNNING")  # the Job's new pod, same index, same name
        time.sleep(0.5)
        marker(client, bucket, "train-1", "DONE")
        time.sleep(0.5)
        marker(client, bucket, "train-0", "DONE")

    at_destroy = {}
    stack = FakeStack(program_outputs(plan_for, moto_url, bucket), stack=STACK,
                      on_up=lambda: threading.Thread(target=pods, daemon=True).start(),
                      on_destroy=lambda: at_destroy.update(states(client, bucket)))
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.01")
    assert code == exitcodes.DONE, out
    assert stack.calls == ["up", "refresh", "destroy"]
    assert at_destroy == {"train-0.json": "DONE", "train-1.json": "DONE"}
    # What bills until the destroy is said right after `up`: the control plane and the system pool.
    assert "ACK control plane" in out and "ACK system node pool" in out


def test_a_pod_whose_upload_failed_keeps_the_cluster_with_the_pods_advice(tmp_path, plan_for, store, moto_url):
    client, bucket = store

    def pods():
        time.sleep(1.1)
        marker(client, bucket, "train-0", "DONE")
        marker(client, bucket, "train-1", "SYNC_FAILED", reason="AccessDenied")

    stack = FakeStack(program_outputs(plan_for, moto_url, bucket), stack=STACK,
                      on_up=lambda: threading.Thread(target=pods, daemon=True).start())
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.01")
    assert code == exitcodes.NOT_SAVED, out
    assert stack.calls == ["up"], "nothing may be destroyed while a pod's data is only on its volume"
    assert "kubectl -n gpu-training logs -l job-name=train" in out and "systemctl" not in out


NAMESPACE = "gpu-training"


class EngineOverAck(FakeStack):
    """Pulumi's engine over the ACK stand-in, as Pulumi documents it ("Running your program on refresh and
    destroy", https://www.pulumi.com/docs/iac/operations/stack-management/run-program/): `up` runs the
    program, whose cs.get_cluster_credential reads a temporary kubeconfig, and records it in state as the
    Kubernetes provider's input; refresh and destroy reuse that recorded input unless run_program, when the
    program runs first and the provider gets a new one. Through that provider refresh reads the Job's
    objects and destroy deletes them; then the cluster goes (DeleteCluster needs no kubeconfig)."""

    def __init__(self, outputs: dict, ack: AckCluster, pods=(), on_up=None):
        super().__init__(outputs, on_up=on_up, stack=STACK)
        self.ack, self.pods = ack, list(pods)
        self.state_kubeconfig = self.kubeconfig_at_up = None

    def _program_kubeconfig(self) -> str:
        return self.ack.user_config(ACK.credential_minutes)["config"]

    def up(self, on_output):
        self.state_kubeconfig = self.kubeconfig_at_up = self._program_kubeconfig()
        self.ack.add_job(NAMESPACE, "train", self.pods)
        self._outputs["kubeconfig"] = self.state_kubeconfig
        return super().up(on_output)

    def _provider(self, run_program: bool) -> KubeApi:
        if run_program:
            self.state_kubeconfig = self._program_kubeconfig()
        return KubeApi.from_kubeconfig(self.state_kubeconfig)

    def refresh(self, on_output, run_program=False):
        super().refresh(on_output, run_program)
        try:
            self._provider(run_program).pods(NAMESPACE, "job-name=train")
        except KubeApiError as exc:  # what `pulumi refresh` fails with: the provider's call refused
            raise RuntimeError(f"error: kubernetes:batch/v1:Job train: refresh failed: {exc}") from None

    def destroy(self, on_output, run_program=False):
        super().destroy(on_output, run_program)
        try:
            api = self._provider(run_program)
            if (NAMESPACE, "train") in self.ack.jobs:
                api.delete_job(NAMESPACE, "train")
        except KubeApiError as exc:
            raise RuntimeError(f"error: kubernetes:batch/v1:Job train: delete failed: {exc}") from None
        self.ack.deleted = True


@pytest.fixture
def ack():
    cluster = AckCluster()
    yield cluster
    cluster.stop()


def test_a_destroy_after_the_kubeconfig_expired_still_reaches_the_cluster(tmp_path, plan_for, store, moto_url, ack):
    """Issue 22 (audit-2 W1): a run longer than the kubeconfig from `up` (ACK.credential_minutes) is torn down."""
    client, bucket = store

    def pods():
        time.sleep(1.1)
        ack.advance(ACK.credential_minutes + 1)  # the training outlived the credential recorded at `up`
        marker(client, bucket, "train-0", "DONE")
        marker(client, bucket, "train-1", "DONE")

    stack = EngineOverAck(program_outputs(plan_for, moto_url, bucket), ack,
                          on_up=lambda: threading.Thread(target=pods, daemon=True).start())
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.01")
    assert code == exitcodes.DONE, out
    assert stack.calls == ["up", "refresh", "destroy"] and stack.run_program == [True, True]
    assert ack.deleted and not ack.jobs, "the Job and then the cluster are gone"
    # The stand-in does refuse the kubeconfig recorded at `up` (the rule the teardown had to get around) ...
    with pytest.raises(KubeApiError) as refused:
        KubeApi.from_kubeconfig(stack.kubeconfig_at_up).pods(NAMESPACE, "job-name=train")
    assert refused.value.status == 401
    # ... and the command printed for a destroy by hand runs the program too.
    assert "pulumi destroy --stack large-a100-k8s --run-program" in out
    # After the destroy, only what outlives it is still said to bill (the bucket's checkpoints).
    after = out.split("Still billing after destroy")[1]
    assert "checkpoints, markers and reports" in after and "ACK control plane" not in after


PULL_STALL = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
              "containerStatuses": [{"name": "trainer", "ready": False, "restartCount": 0, "image": "x",
                                     "imageID": "", "state": {"waiting": {"reason": "ImagePullBackOff",
                                                              "message": "Back-off pulling image"}}}]}
UNSCHEDULABLE = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                     "reason": "Unschedulable",
                                                     "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu"}]}


def _pods(status: dict) -> list[dict]:
    return [{"metadata": {"name": f"train-{i}-abcde", "labels": {"job-name": "train"}}, "status": status}
            for i in range(2)]


class Clock:
    """run.py's clock and sleep, so that 30 minutes of watching take no time."""

    def __init__(self):
        self.t = time.time()

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


@pytest.mark.parametrize("status,reason", [(PULL_STALL, "ImagePullBackOff"), (UNSCHEDULABLE, "Unschedulable")],
                         ids=["image-pull", "unschedulable"])
def test_a_job_that_never_starts_is_failed_with_its_reason_and_its_pods_removed(tmp_path, plan_for, store, moto_url,
                                                                              ack, status, reason):
    """Issue 22 (audit-2 G2): no pod Running startDeadlineMinutes after `up`: the Job is deleted, so the GPU
    pool scales to zero, the run ends FAILED with the pods' reason, and the stack is destroyed."""
    client, bucket = store
    stack = EngineOverAck(program_outputs(plan_for, moto_url, bucket), ack, pods=_pods(status))
    at_destroy = {}
    stack.on_destroy = lambda: at_destroy.update(jobs=dict(ack.jobs))
    clock = Clock()
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "2", "--poll", "60", now=clock.now, sleep=clock.sleep)
    assert code == exitcodes.FAILED, out
    assert reason in out and "kubernetes.startDeadlineMinutes" in out and "scales back to zero" in out
    deletes = [r for r in ack.requests if r[0] == "DELETE"]
    assert deletes[0][1] == f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/train" and deletes[0][2] == 200
    assert at_destroy == {"jobs": {}}, "the Job was gone before the destroy"
    assert stack.calls == ["up", "refresh", "destroy"]


def test_the_start_check_leaves_a_job_whose_pods_run(ack):
    running = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    ack.add_job(NAMESPACE, "train", _pods(running))
    config = ack.user_config(ACK.credential_minutes)["config"]
    said = []
    check = StartCheck(api=lambda: KubeApi.from_kubeconfig(config), namespace=NAMESPACE, job="train",
                       deadline_s=1800, say=said.append)
    assert check(60) is None and not [r for r in ack.requests if "/pods" in r[1]], "nothing read before the deadline"
    assert check(1800) is None and (NAMESPACE, "train") in ack.jobs
    assert [r for r in ack.requests if "/pods" in r[1]] == [
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=job-name%3Dtrain", 200)]
    assert not [r for r in ack.requests if r[0] == "DELETE"]


def test_the_stand_in_refuses_a_kubeconfig_duration_ack_refuses(ack):
    low, high = ACK.credential_minutes_range
    assert low <= ACK.credential_minutes <= high
    for minutes in (low - 1, high + 1):
        with pytest.raises(ValueError, match="TemporaryDurationMinutes"):
            ack.user_config(minutes)


class AutomationStackRecorder:
    """pulumi.automation.Stack's refresh and destroy, recorded, with the workspace's CLI version."""

    def __init__(self, cli_version: str):
        self.workspace = type("Workspace", (), {"pulumi_version": cli_version})()
        self.calls: list[tuple[str, dict]] = []

    def refresh(self, **options):
        self.calls.append(("refresh", options))

    def destroy(self, **options):
        self.calls.append(("destroy", options))


def test_the_automation_layer_runs_the_program_on_teardown_and_needs_a_cli_that_can():
    import inspect

    from pulumi import automation
    from tools.runlib.automation import RUN_PROGRAM_SINCE, AutomationError, PulumiStack

    # The pinned SDK takes the option (pulumi/automation/_stack.py: refresh and destroy, run_program).
    for method in (automation.Stack.refresh, automation.Stack.destroy):
        assert "run_program" in inspect.signature(method).parameters
    layer = PulumiStack.__new__(PulumiStack)  # the real methods over a recorded automation Stack
    layer._stack = AutomationStackRecorder("3.272.0")
    layer.refresh(print, run_program=True)
    layer.destroy(print, run_program=True)
    layer.destroy(print)
    assert [(name, options.get("run_program")) for name, options in layer._stack.calls] == [
        ("refresh", True), ("destroy", True), ("destroy", None)]
    # The program Pulumi runs for them knows it is a teardown (components/teardown.py).
    assert layer._stack.workspace.env_vars == {"GPU_TRAINING_TEARDOWN": "1"}
    layer._stack = AutomationStackRecorder("3.150.0")
    with pytest.raises(AutomationError, match="--run-program came in " + ".".join(map(str, RUN_PROGRAM_SINCE))):
        layer.destroy(print, run_program=True)
    assert layer._stack.calls == [], "nothing is started with a CLI that would reuse the expired credential"


def test_the_destroy_by_hand_tells_the_program_it_is_a_teardown(tmp_path):
    """The printed fallback command sets GPU_TRAINING_TEARDOWN, as run.py's own teardown does (components/teardown.py)."""
    from tools.runlib.driver import RunOptions, commands_for

    by_hand = commands_for(RunOptions(stack=STACK, work_dir=tmp_path, out_dir=tmp_path / "out",
                                      teardown_runs_program=True)).pulumi_destroy
    assert by_hand == (f"GPU_TRAINING_TEARDOWN=1 pulumi refresh --stack {STACK} --yes --run-program && "
                       f"GPU_TRAINING_TEARDOWN=1 pulumi destroy --stack {STACK} --run-program")
    vm = commands_for(RunOptions(stack="medium-a100", work_dir=tmp_path, out_dir=tmp_path / "out")).pulumi_destroy
    assert "GPU_TRAINING_TEARDOWN" not in vm and "--run-program" not in vm
