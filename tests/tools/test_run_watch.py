"""scripts/run.py's watch-and-decide logic against a real moto S3 server on 127.0.0.1.

Markers come from the real node agent (`python -m node_agent`) running the real example trainer
(examples/cnn/train_cnn.py) wherever the scenario allows; a few fast cases write markers by hand
in the format of docs/node-config.md. Only the Pulumi Automation layer is a recording fake, since
the real one needs the Pulumi CLI and a cloud.
"""
from __future__ import annotations

import _thread
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
import pytest
from rich.console import Console

REPO = Path(__file__).resolve().parents[2]
AGENT_TESTS = REPO / "tests" / "agent"
TRAINER = REPO / "examples" / "cnn" / "train_cnn.py"
STACK = "entry-t4"
PREFIX = "gpu-training"
TINY = ["--batch-size", "16", "--width", "8", "--depth", "1", "--image-size", "16", "--classes", "4",
        "--dataset-size", "256", "--log-every", "50", "--workers", "0"]
# The test process reads moto with AWS_* (boto3's chain, as the library allows); run.py itself takes the
# stack's cloud's own variables (tools/runlib/credentials.py).
CREDS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "ALICLOUD_ACCESS_KEY": "test",
         "ALICLOUD_SECRET_KEY": "test"}

from components import providers
from localcloud import BIN, S3Proxy
from localcloud.standins import CloudApi, Metadata
from tests.tools.run_harness import TEST_BUCKET, FakeStack, run_cli, run_main
from tools.runlib import decide as decide_mod
from tools.runlib import exitcodes
from tools.runlib.markers import assess, current, parse_marker


# --- the bucket and the fakes ----------------------------------------------------------------------------
@pytest.fixture
def s3(moto_url, monkeypatch):
    # The watcher's credentials come from the user's environment, as in real use.
    for key, value in CREDS.items():
        monkeypatch.setenv(key, value)
    return boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1", **{
        "aws_access_key_id": "test", "aws_secret_access_key": "test"})


@pytest.fixture
def bucket(s3):
    name = f"ckpt-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def key(rel: str) -> str:
    return f"{PREFIX}/{STACK}/{rel}"


def outputs_for(endpoint: str, bucket: str, signature: str = "s3v4") -> dict:
    return {"stack": STACK, "nodeCount": 1,
            "costPerHour": {"currency": "CNY", "onDemandPerHour": 10.0, "effectivePerHour": 3.0},
            "checkpoint": {"bucket": bucket, "prefix": PREFIX, "endpoint": endpoint, "region": "us-east-1",
                           "addressingStyle": "path", "signatureVersion": signature}}


class AgentNode:
    """One simulated node: the real agent with the real example trainer, Alibaba's metadata and ECS
    API stand-ins (the API records the release request)."""

    def __init__(self, tmp: Path, name: str, bucket: str, endpoint: str, steps: int, util: int = 87):
        self.dir = tmp / name
        self.dir.mkdir(parents=True)
        self.meta = Metadata("alicloud")  # a new id in the cloud's format: the agent trusts no other
        self.id = self.meta.instance_id
        self.api = CloudApi("alicloud", [(self.id, "127.0.0.1")])
        (self.dir / "gpu").write_text(str(util))
        command = shlex.join([sys.executable, str(TRAINER), *TINY, "--steps", str(steps), "--ckpt-every", "20"])
        self.cfg = {
            "version": 1, "project": "gpu-training", "stack": STACK, "provider": "alicloud", "region": "cn-hangzhou",
            "nodeCount": 1, "accelerator": {"kind": "nvidia", "model": "T4", "count": 1},
            "paths": {"checkpoints": str(self.dir / "ckpt"), "state": str(self.dir / "state"),
                      "logs": str(self.dir / "logs"), "venv": "", "trainEnv": str(self.dir / "train.env")},
            "checkpoint": {"bucket": bucket, "prefix": PREFIX, "endpoint": endpoint, "region": "us-east-1",
                           "addressingStyle": "path", "signatureVersion": "s3v4"},
            "train": {"command": command, "env": {"OMP_NUM_THREADS": "1"}, "workdir": str(self.dir / "work"),
                      "launcher": "direct", "stopSignal": "SIGTERM"},
            "agent": {"syncIntervalSeconds": 0.5, "spotPollSeconds": 0.2, "utilSampleSeconds": 0.2,
                      "idleMinutes": 0, "maxHours": 1, "ttlMarginMinutes": 0, "maxGraceSeconds": 30,
                      "bootTime": time.time(),
                      "uploadAttempts": 3, "retryBaseSeconds": 0.05, "uploadAllowanceSeconds": 0},
            "endpoints": {"metadata": self.meta.url, "cloudApi": self.api.url},
            "cost": {"currency": "CNY", "onDemandPerNodeHour": 10.0, "effectivePerNodeHour": 3.0},
            "identity": {"roleName": "node-role"},
        }
        self.proc = None

    def start(self):
        config = self.dir / "node.json"
        config.write_text(json.dumps(self.cfg))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}  # nodes use their role
        env.update(PYTHONPATH=str(REPO / "node"), PATH=os.pathsep.join((str(AGENT_TESTS / 'bin'), str(BIN), env['PATH'])),
                   FAKE_GPU_FILE=str(self.dir / "gpu"),
                   GPU_TRAINING_RUNTIME_FILE=str(providers.node_runtime_path(self.cfg["provider"])))
        self.proc = subprocess.Popen([sys.executable, "-m", "node_agent", "--config", str(config)], env=env,
                                     stdout=open(self.dir / "agent.out", "wb"), stderr=subprocess.STDOUT,
                                     cwd=self.dir)
        return self

    def log(self) -> str:
        return (self.dir / "agent.out").read_text(errors="replace")

    def trainer_log(self) -> str:
        path = self.dir / "logs" / "trainer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def state(self, s3, bucket):
        try:
            body = s3.get_object(Bucket=bucket, Key=key(f"markers/{self.id}.json"))["Body"].read()
        except s3.exceptions.NoSuchKey:
            return None
        return json.loads(body)["state"]

    def until(self, what, timeout=60.0):
        end = time.time() + timeout
        while time.time() < end:
            if what():
                return
            time.sleep(0.05)
        raise AssertionError(f"node {self.id}: timed out waiting\n{self.log()}")

    def stop(self):
        """Leave nothing running: SIGTERM makes the agent stop the trainer gracefully."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        state_file = self.dir / "state" / "agent-state.json"
        if state_file.exists():
            pid = json.loads(state_file.read_text()).get("pid")
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        self.meta.stop()
        self.api.stop()

    def released(self) -> bool:
        return bool(self.api.release_requests(self.id))


@pytest.fixture
def nodes(tmp_path, bucket, moto_url):
    made = []

    def make(name, steps, endpoint=None, **kw):
        node = AgentNode(tmp_path / "nodes", name, bucket, endpoint or moto_url, steps, **kw)
        made.append(node)
        return node
    yield make
    for node in made:
        node.stop()


def put_marker(s3, bucket, node, state, **fields):
    """A marker in the documented format (docs/node-config.md), for the cases no real agent can stage fast."""
    body = {"state": state, "node": node, "stack": STACK, "exitCode": None, "reason": None,
            "durationSeconds": 60.0, "gpuHours": 0.0167, "estimatedCost": 0.05, "currency": "CNY",
            "utilisation": {"samples": 3, "gpuUtilMean": 80.0}, "lastCheckpoint": None,
            "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
    s3.put_object(Bucket=bucket, Key=key(f"markers/{node}.json"), Body=json.dumps(body).encode())


def in_background(fn):
    errors = []

    def target():
        try:
            fn()
        except BaseException as exc:  # surfaced by the test through the list
            errors.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, errors


# --- with the real agent --------------------------------------------------------------------------
def test_done_downloads_the_report_then_refreshes_and_destroys(tmp_path, s3, bucket, moto_url, nodes):
    # An earlier run of the same stack left a DONE marker: it must not end this run's watch.
    earlier = (datetime.now(timezone.utc) - timedelta(hours=3)).isoformat(timespec="seconds")
    put_marker(s3, bucket, "i-earlier-run", "DONE", updatedAt=earlier)
    node = nodes("a", steps=40)
    seen_at_destroy = {}
    stack = FakeStack(outputs_for(moto_url, bucket), on_up=node.start,
                      on_destroy=lambda: seen_at_destroy.update(state=node.state(s3, bucket)))

    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.05")

    assert code == exitcodes.DONE, out + node.log()
    assert stack.calls == ["up", "refresh", "destroy"]
    assert seen_at_destroy == {"state": "DONE"}, "destroyed before the new node's own DONE marker"
    report = tmp_path / "out" / "report" / node.id
    names = sorted(p.name for p in report.iterdir())
    assert {"summary.json", "utilisation.csv"} <= set(names), names
    for name in names:
        remote = s3.get_object(Bucket=bucket, Key=key(f"report/{node.id}/{name}"))["Body"].read()
        assert (report / name).read_bytes() == remote
    assert not (tmp_path / "out" / "report" / "i-earlier-run").exists()
    assert "i-earlier-run" not in out
    assert "preemptions seen: 0" in out and "DONE" in out
    assert not (tmp_path / "out" / "run.json").exists(), "the run record goes with the stack"


@pytest.mark.slow  # two real agents and trainers; make rehearse drills the same path
def test_preemption_is_counted_and_the_replacement_resumes_and_finishes(tmp_path, s3, bucket, moto_url, nodes):
    first, second = nodes("a", steps=150), nodes("b", steps=150)

    def play():
        first.start()
        first.until(lambda: first.state(s3, bucket) == "RUNNING" and "step 50/" in first.trainer_log())
        first.meta.notice = datetime.now(timezone.utc) + timedelta(seconds=60)
        first.until(lambda: first.proc.poll() is not None)
        second.start()

    stack = FakeStack(outputs_for(moto_url, bucket))
    stack.on_up = lambda: in_background(play)
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.05")

    assert code == exitcodes.DONE, out + first.log() + second.log()
    assert stack.calls == ["up", "refresh", "destroy"]
    assert first.state(s3, bucket) == "PREEMPTED" and second.state(s3, bucket) == "DONE"
    assert "preemptions seen: 1" in out
    assert "resumed from" in second.trainer_log(), "the replacement started from zero"
    # DONE is written before the release request (the marker must be in the bucket first): wait for it.
    second.until(second.released, timeout=30)
    assert not first.released()


def test_sync_failed_refuses_to_destroy_until_forced(tmp_path, s3, bucket, moto_url, nodes):
    proxy = S3Proxy(moto_url)
    node = nodes("a", steps=20, endpoint=proxy.url)

    def play():
        node.start()
        node.until(lambda: node.state(s3, bucket) == "RUNNING")
        proxy.match, proxy.down = "/checkpoints/", True  # checkpoint uploads fail for good; markers pass

    stack = FakeStack(outputs_for(moto_url, bucket))
    stack.on_up = lambda: in_background(play)
    try:
        code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.05")
        assert code == exitcodes.NOT_SAVED, out + node.log()
        assert stack.calls == ["up"], "nothing may be destroyed while data is only on a node"
        assert node.state(s3, bucket) == "SYNC_FAILED"
        assert "refusing to destroy" in out and "sudo systemctl restart gpu-training-agent" in out
        assert f"gpu-training down {STACK} --force" in out  # the command a wheel install has
        assert not node.released()

        code, out = run_main(tmp_path / "out", stack, "--destroy-only")
        assert code == exitcodes.NOT_SAVED and stack.calls == ["up", "outputs"], out

        code, out = run_main(tmp_path / "out", stack, "--destroy-only", "--force", "--yes")
        assert code == exitcodes.FAILED, out
        assert stack.calls == ["up", "outputs", "outputs", "refresh", "destroy"]
        assert stack.created == [True, False, False], "--destroy-only must not create a stack"
    finally:
        proxy.stop()


def test_a_node_still_running_at_the_timeout_is_not_destroyed(tmp_path, s3, bucket, moto_url, nodes):
    node = nodes("a", steps=100000)
    stack = FakeStack(outputs_for(moto_url, bucket), on_up=node.start)
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.0012")  # 4.3 s
    assert node.state(s3, bucket) == "RUNNING", node.log()
    assert code == exitcodes.NOT_SAVED, out
    assert stack.calls == ["up"]
    assert f"no final marker from node(s) {node.id}" in out and "--watch-only" in out


# --- markers written by hand in the documented format -------------------------------------------------
def test_no_marker_at_all_at_the_timeout_refuses(tmp_path, s3, bucket, moto_url):
    stack = FakeStack(outputs_for(moto_url, bucket))
    code, out = run_main(tmp_path / "out", stack, "--yes", "--timeout", "0.0002")
    assert code == exitcodes.NOT_SAVED and stack.calls == ["up"], out
    assert "no node has reported" in out


def test_ctrl_c_leaves_the_stack_running_and_watch_only_picks_up(tmp_path, s3, bucket, moto_url):
    # OSS settings (SigV2 signing, path style) on the watcher's side.
    stack = FakeStack(outputs_for(moto_url, bucket, signature="s3"))
    stack.on_up = lambda: put_marker(s3, bucket, "i-1", "RUNNING")
    timer = threading.Timer(1.0, _thread.interrupt_main)  # what Ctrl-C does to the main thread
    timer.start()
    code, out = run_main(tmp_path / "out", stack, "--yes")
    timer.cancel()
    assert code == exitcodes.INTERRUPTED, out
    assert stack.calls == ["up"]
    assert f"gpu-training up {STACK} --watch-only --out {tmp_path / 'out'}" in out
    assert f"pulumi refresh --stack {STACK} --yes && pulumi destroy --stack {STACK}" in out

    put_marker(s3, bucket, "i-1", "DONE", exitCode=0)
    s3.put_object(Bucket=bucket, Key=key("report/i-1/summary.json"), Body=b'{"gpuUtilMean": 80.0}')
    code, out = run_main(tmp_path / "out", stack, "--watch-only", "--yes")
    assert code == exitcodes.DONE, out
    assert stack.calls == ["up", "outputs", "refresh", "destroy"] and stack.created == [True, False]
    assert (tmp_path / "out" / "report" / "i-1" / "summary.json").read_bytes() == b'{"gpuUtilMean": 80.0}'


KEEPS_BILLING = [
    {"what": "CPFS file system (advance_100)", "type": "alicloud:nas/fileSystem:FileSystem", "size": "3,600 GiB",
     "basis": "provisioned capacity per GiB-hour", "rate": None, "until": "pulumi destroy"},
    {"what": "checkpoints, markers and reports the nodes wrote", "type": None, "size": "b/p/s/",
     "basis": "object storage", "rate": None, "until": "you delete them"},
]


def test_what_keeps_billing_is_shown_after_up_when_left_running_and_after_destroy(tmp_path, s3, bucket, moto_url):
    stack = FakeStack({**outputs_for(moto_url, bucket), "keepsBilling": KEEPS_BILLING})
    stack.on_up = lambda: put_marker(s3, bucket, "i-1", "FAILED", exitCode=1, reason="trainer exit code 1")
    code, out = run_main(tmp_path / "out", stack, "--yes", "--keep")
    assert code == exitcodes.FAILED, out
    assert out.count("CPFS file system (advance_100): 3,600 GiB") == 2, out  # after up, and when left running
    assert "rate unknown; until pulumi destroy" in out
    code, out = run_main(tmp_path / "out", stack, "--destroy-only", "--yes")
    assert stack.calls[-2:] == ["refresh", "destroy"], out
    after = out.split("destroyed")[-1]
    assert "Still billing after destroy" in after and "checkpoints, markers" in after and "CPFS" not in after


def test_an_item_that_may_bill_past_the_destroy_is_still_listed_after_it(tmp_path, s3, bucket, moto_url):
    """A key in a pending-deletion window whose billing is not documented (Baidu KMS) is named after the destroy
    even though the destroy is what ends it (Lingering.bills_after_destroy)."""
    from components.providers.baiducloud.profile import keeps_billing
    from components.validation import build_spec
    from tools.stackfiles import load_stack_config

    kms = [i.as_dict() for i in keeps_billing(build_spec(load_stack_config("bd-large-a100"), stack="bd-large-a100"))
           if "KMS" in i.what]
    assert kms and kms[0]["billsAfterDestroy"] and kms[0]["until"].startswith("pulumi destroy")
    stack = FakeStack({**outputs_for(moto_url, bucket), "keepsBilling": [*KEEPS_BILLING, *kms]})
    put_marker(s3, bucket, "i-1", "DONE")
    code, out = run_main(tmp_path / "out", stack, "--destroy-only", "--yes")
    assert stack.calls[-2:] == ["refresh", "destroy"], out
    after = out.split("Still billing after destroy")[1]
    assert "KMS key of the data disk" in after and "CPFS" not in after


def test_no_terminal_and_no_yes_declines_and_keeps_the_stack(tmp_path, s3, bucket, moto_url):
    stack = FakeStack(outputs_for(moto_url, bucket))
    stack.on_up = lambda: put_marker(s3, bucket, "i-1", "DONE", exitCode=0)
    code, out = run_main(tmp_path / "out", stack, confirm=lambda question: None)
    assert code == exitcodes.DECLINED and stack.calls == ["up"], out
    assert "pass --yes" in out
    code, out = run_main(tmp_path / "out", stack, "--watch-only", confirm=lambda question: True)
    assert code == exitcodes.DONE and stack.calls[-2:] == ["refresh", "destroy"], out


def test_failed_node_with_saved_data_is_destroyed_with_its_own_exit_code(tmp_path, s3, bucket, moto_url):
    stack = FakeStack(outputs_for(moto_url, bucket))
    stack.on_up = lambda: put_marker(s3, bucket, "i-1", "FAILED", exitCode=1, reason="trainer exit code 1")
    code, out = run_main(tmp_path / "out", stack, "--yes", "--keep")
    assert code == exitcodes.FAILED and stack.calls == ["up"], out
    assert "trainer exit code 1" in out and "stack kept (--keep)" in out


# --- the pure rules ------------------------------------------------------------------------------------
def markers(*states):
    return [parse_marker(key(f"markers/n{i}.json"), f'"{i}"', json.dumps({"state": s, "node": f"n{i}"}).encode())
            for i, s in enumerate(states)]


@pytest.mark.parametrize("states, nodes, state, saved", [
    ((), 1, "NO_MARKERS", False),
    (("RUNNING",), 1, "RUNNING", False),
    (("PREEMPTED",), 1, "PREEMPTED", True),
    (("PREEMPTED", "DONE"), 1, "DONE", True),
    (("PREEMPTED", "RUNNING"), 1, "RUNNING", False),
    (("DONE",), 2, "WAITING", False),            # a node that never reported may be training
    (("DONE", "RUNNING"), 2, "RUNNING", False),
    (("FAILED", "RUNNING"), 2, "FAILED", False),  # not settled: its peer's work is not saved
    (("DONE", "SYNC_FAILED"), 2, "SYNC_FAILED", False),
    (("DONE", "DONE"), 2, "DONE", True),
])
def test_assess(states, nodes, state, saved):
    verdict = assess(markers(*states), nodes)
    assert (verdict.state, verdict.data_saved) == (state, saved)


def test_current_leaves_out_earlier_runs_only():
    up = datetime(2026, 12, 2, 10, 0, 0, tzinfo=timezone.utc)

    def marker(name, etag, updated):
        body = {"state": "DONE", "node": name, "updatedAt": updated.isoformat(timespec="seconds")}
        return parse_marker(key(f"markers/{name}.json"), etag, json.dumps(body).encode())

    old = marker("old", '"1"', up - timedelta(hours=2))              # an earlier run's, unchanged
    during_up = marker("early", '"2"', up + timedelta(seconds=40))    # written before the baseline was listed
    rewritten = marker("again", '"9"', up - timedelta(hours=2))       # rewritten since (clock behind)
    baseline = {old.key: '"1"', during_up.key: '"2"', rewritten.key: '"3"'}
    assert [m.node for m in current([old, during_up, rewritten], baseline, up)] == ["again", "early"]
    assert [m.node for m in current([old, during_up], None, up)] == ["early"]


def test_unreadable_marker_is_never_saved():
    bad = parse_marker(key("markers/x.json"), '"1"', b"{not json")
    verdict = assess([bad], 1)
    assert bad.state == "UNREADABLE" and not verdict.data_saved and not verdict.settled


@pytest.mark.parametrize("states, timed_out, keep, force, destroy, code", [
    (("DONE",), False, False, False, True, exitcodes.DONE),
    (("DONE",), False, True, False, False, exitcodes.DONE),
    (("SYNC_FAILED",), False, False, False, False, exitcodes.NOT_SAVED),
    (("SYNC_FAILED",), False, False, True, True, exitcodes.FAILED),
    (("RUNNING",), True, False, False, False, exitcodes.NOT_SAVED),
    (("PREEMPTED",), True, False, False, True, exitcodes.TIMED_OUT),
    (("FAILED",), False, False, False, True, exitcodes.FAILED),
])
def test_decide(states, timed_out, keep, force, destroy, code):
    cmd = decide_mod.Commands("w", "d", "fd", "pd", "ra")
    decision = decide_mod.decide(assess(markers(*states), 1), timed_out, keep, force, cmd)
    assert (decision.destroy, decision.exit_code) == (destroy, code)


# --- the command line ----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, named", [
    (["no-such-stack"], "no stack 'no-such-stack': stacks/Pulumi.no-such-stack.yaml does not exist; stacks: "),
    (["entyr-t4"], "Did you mean entry-t4?"),
    ([STACK, "--timeout", "0"], "--timeout 0"),
    ([STACK, "--timeout", "soon"], "--timeout"),
    ([STACK, "--keep", "--destroy-only"], "--keep with --destroy-only"),
    ([STACK, "--watch-only", "--destroy-only"], "not allowed with"),
])
def test_bad_arguments_exit_2(args, named):
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "run.py"), *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr


def test_without_the_pulumi_cli_it_says_so_and_starts_nothing(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": os.environ["PYTHONPATH"], **CREDS}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "run.py"), STACK, "--out", str(tmp_path / "out"),
                           "--set", "checkpoint.bucket=my-own-bucket"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == exitcodes.ERROR, done.stdout + done.stderr
    assert "the Pulumi CLI is not installed" in done.stdout and "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "out").exists()


def test_help_lists_the_exit_codes():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "run.py"), "--help"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0
    for code in (exitcodes.DONE, exitcodes.NOT_SAVED, exitcodes.DECLINED, exitcodes.INTERRUPTED):
        assert f"\n  {code} " in done.stdout


def run_with_data(tmp_path, stack: FakeStack, checkpoint: dict, from_stack: bool, *args: str):
    """run.py's driver with a data set to upload, as options() gives it for a stack with data.localDir."""
    import dataclasses

    from tools.datapack import example, packer, source
    from tools.runlib.driver import Driver

    example.make_folder(tmp_path / "images", classes=2, per_class=6, size=16)
    packer.pack(source.read(tmp_path / "images"), tmp_path / "packed", per_shard=4)
    opts = run_cli.options([STACK, "--poll", "0.1", "--out", str(tmp_path / "out"), "--set", TEST_BUCKET, *args])
    opts = dataclasses.replace(opts, data_dir=tmp_path / "packed", data_bucket=checkpoint,
                               data_bucket_from_stack=from_stack)
    out = io.StringIO()
    code = Driver(opts, stack.factory, console=Console(file=out, width=220, force_terminal=False)).run()
    manifest = json.loads((tmp_path / "packed" / "manifest.json").read_text())
    return code, out.getvalue(), {key("data/manifest.json")} | {key("data/" + s["name"]) for s in manifest["shards"]}


def data_keys(s3, bucket):
    return {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=key("data/")).get("Contents", [])}


def test_the_data_set_goes_to_the_users_bucket_before_up(tmp_path, s3, bucket, moto_url):
    """The nodes find the set when they boot: shards, then the manifest, before `pulumi up`."""
    seen = {}
    stack = FakeStack(outputs_for(moto_url, bucket), on_up=lambda: seen.update(keys=data_keys(s3, bucket)))
    code, out, want = run_with_data(tmp_path, stack, outputs_for(moto_url, bucket)["checkpoint"], False,
                                    "--yes", "--timeout", "0.001")
    assert seen["keys"] == want, out
    assert "data set uploaded: 3 shards sent, 0 already there" in out and out.index("data set uploaded") < \
        out.index("pulumi up"), out


def test_a_failed_upload_before_up_creates_nothing(tmp_path, s3, moto_url):
    stack = FakeStack(outputs_for(moto_url, "no-such-bucket"))
    code, out, _ = run_with_data(tmp_path, stack, outputs_for(moto_url, "no-such-bucket")["checkpoint"], False,
                                 "--yes")
    assert code == exitcodes.ERROR and stack.calls == [], out
    assert "uploading the data set" in out and "Nothing was created" in out


def test_a_bucket_the_stack_creates_gets_the_data_set_after_up(tmp_path, s3, bucket, moto_url):
    seen = {}
    stack = FakeStack(outputs_for(moto_url, bucket), on_up=lambda: seen.update(keys=data_keys(s3, bucket)))
    code, out, want = run_with_data(tmp_path, stack, outputs_for(moto_url, bucket)["checkpoint"], True,
                                    "--yes", "--timeout", "0.001")
    assert seen["keys"] == set() and data_keys(s3, bucket) == want, out
    assert out.index("pulumi up") < out.index("data set uploaded") < out.index("watching"), out


@pytest.mark.parametrize("args, says", [
    (["--data", "/nonexistent"], "stack entry-t4 has no data config, so its nodes stage nothing"),
    (["--watch-only", "--data", "."], "--data is uploaded with `up`"),
])
def test_bad_data_arguments_exit_2(tmp_path, args, says, capsys):
    code = run_cli.main([STACK, *args], stack_factory=lambda *a, **k: pytest.fail("nothing may start"))
    assert code == exitcodes.USAGE and says in capsys.readouterr().err
