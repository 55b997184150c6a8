"""The `gpu-training` command line (tools/cli): each subcommand as a user runs it, as a subprocess, against
real local servers (moto S3 behind a recording proxy) and a real kept rehearsal; no cloud."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import boto3
import pytest

from localcloud import LocalS3, S3Proxy

REPO = Path(__file__).resolve().parents[2]
STACK = "entry-t4"
ROOT = "gpu-training/entry-t4/"  # the stack file's checkpoint.prefix and the stack
ALI = {"ALICLOUD_ACCESS_KEY": "alikey-for-tests", "ALICLOUD_SECRET_KEY": "alisecret"}
CLOUD_VARS = ("ALICLOUD_", "ALIBABA_CLOUD_", "TENCENTCLOUD_", "HW_", "HUAWEICLOUD_", "BAIDUCLOUD_", "AWS_")


def env(**extra) -> dict:
    """The user's environment without any cloud key: each test adds the ones it means."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(CLOUD_VARS)}
    clean["PATH"] = os.pathsep.join(p for p in clean["PATH"].split(os.pathsep) if "pulumi" not in p)
    return {**clean, **extra}


def cli(*args, timeout=120, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env(**extra))


# --- the command line itself ------------------------------------------------------------------------
SUBCOMMANDS = ("init", "preview", "up", "status", "logs", "report", "down", "rehearse", "recommend", "pack", "prices",
               "regions", "ssh")


def test_the_console_script_is_declared_and_importable():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, attr = scripts["gpu-training"].partition(":")
    assert module == "tools.cli.main" and attr == "main"
    assert "click>=8.1" in (REPO / "requirements.txt").read_text()


def test_help_lists_every_subcommand_and_each_explains_itself():
    top = cli("--help")
    assert top.returncode == 0
    for name in SUBCOMMANDS:
        assert f"\n  {name} " in top.stdout, name
    assert "_GPU_TRAINING_COMPLETE" in top.stdout and "ALICLOUD_ACCESS_KEY" in top.stdout
    for name in SUBCOMMANDS:
        done = cli(name, "--help")
        assert done.returncode == 0, (name, done.stderr)
        assert f"gpu-training {name}" in done.stdout, (name, done.stdout[:300])
        assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("typed, ours", [("advise", "recommend"), ("launch", "up"), ("destroy", "down"),
                                          ("gpus", "prices show"), ("show-gpus", "prices show")])
def test_another_tools_word_for_a_command_names_ours(typed, ours):
    """Newcomer trial: `gpu-training advise` said only "No such command" (click's did-you-mean catches typos, not
    the words SkyPilot, dstack or Pulumi users bring)."""
    done = cli(typed, "x")
    assert done.returncode == 2 and f"gpu-training's is `gpu-training {ours}`" in done.stderr, done.stderr
    assert ours.split()[0] in SUBCOMMANDS


def test_the_synonyms_never_shadow_a_command():
    from tools.cli.main import SYNONYMS, cli as group

    assert not set(SYNONYMS) & set(group.commands)
    assert {target.split()[0] for target in SYNONYMS.values()} <= set(group.commands)


def test_completion_offers_the_stack_names():
    done = subprocess.run([sys.executable, "-m", "tools.cli"], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env=env(_GPU_TRAINING_COMPLETE="bash_complete", COMP_WORDS="gpu-training status tc-",
                                  COMP_CWORD="2"))
    offered = {line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line}
    assert {"tc-entry-t4", "tc-medium-a100", "tc-large-a100"} <= offered and "entry-t4" not in offered


@pytest.mark.parametrize("args", [("status", "no-such-stack"), ("logs", "nope"), ("up", "nope"), ("down", "nope")])
def test_an_unknown_stack_is_exit_2_naming_the_stacks(args):
    done = cli(*args)
    assert done.returncode == 2 and "entry-t4" in done.stderr and "Traceback" not in done.stderr


# --- one credential convention per cloud -----------------------------------------------------------------
@pytest.mark.parametrize("args, names", [
    (("status", "entry-t4"), ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY")),
    (("logs", "tc-entry-t4"), ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")),
    (("status", "hw-entry-t4"), ("HW_ACCESS_KEY", "HW_SECRET_KEY")),
    (("status", "bd-large-a100"), ("BAIDUCLOUD_ACCESS_KEY", "BAIDUCLOUD_SECRET_KEY")),
    (("report", "entry-t4"), ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY")),
    (("up", "entry-t4", "--set", "checkpoint.bucket=my-own-bucket"), ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY")),
    (("prices", "refresh", "--provider", "alicloud", "--region", "cn-hangzhou", "--signed"), ("ALICLOUD_ACCESS_KEY",
                                                                                 "ALICLOUD_SECRET_KEY")),
    (("regions", "refresh", "--provider", "tencentcloud"), ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")),
])
def test_a_missing_credential_is_one_line_naming_the_clouds_variables_exit_2(args, names):
    # AWS_* keys do not count: object storage is reached with the cloud's own.
    done = cli(*args, AWS_ACCESS_KEY_ID="aws", AWS_SECRET_ACCESS_KEY="aws")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and all(n in lines[0] for n in names), done.stderr
    assert "AWS_" not in done.stderr and "Traceback" not in done.stderr
    if args[0] == "report":  # a kept rehearsal's report needs no credentials: say how to read it
        assert "--rehearsal" in lines[0], done.stderr


# --- status, logs and report against a real S3 server -------------------------------------------------
class Recording(S3Proxy):
    """The S3 server, remembering each request's Authorization header (whose key signed it)."""

    def __init__(self, target):
        self.auth = []
        super().__init__(target)

    def answer(self, method, path, headers, body):
        self.auth.append(headers.get("Authorization") or headers.get("authorization") or "")
        return super().answer(method, path, headers, body)


@pytest.fixture
def s3():
    server = LocalS3()
    proxy = Recording(server.url)
    client = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id="t",
                          aws_secret_access_key="t")
    from tools.stackfiles import stack_spec

    bucket = stack_spec(STACK)[1].checkpoint.bucket
    client.create_bucket(Bucket=bucket)
    # moto's backend outlives one server object: start from an empty bucket.
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=item["Key"])
    yield proxy, client, bucket
    proxy.stop()
    server.stop()


def put(client, bucket, rel, body):
    client.put_object(Bucket=bucket, Key=ROOT + rel, Body=body if isinstance(body, bytes) else body.encode())


def marker(state, node="i-bp1", **extra):
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    return json.dumps({"state": state, "node": node, "stack": STACK, "startedAt": now, "updatedAt": now,
                       "estimatedCost": 1.5 if state != "RUNNING" else None, "currency": "CNY", **extra})


def test_status_reads_markers_checkpoint_and_cost_with_the_clouds_own_key(s3):
    proxy, client, bucket = s3
    put(client, bucket, "markers/i-bp1.json", marker("FAILED", reason="trainer exit code 3", exitCode=3))
    put(client, bucket, "checkpoints/manifests/20261204T101500.000000001Z-i-bp1.json",
        json.dumps({"id": "20261204T101500.000000001Z-i-bp1", "node": "i-bp1",
                    "files": {"ckpt-00000120.pt": {"sha256": "0" * 64, "size": 1}}}))
    put(client, bucket, "logs/i-bp1/trainer.log.0000", "boom\n")
    done = cli("status", STACK, "--endpoint", proxy.url, "--json", **ALI)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["state"] == "FAILED" and doc["nodes"][0]["reason"] == "trainer exit code 3"
    assert doc["nodes"][0]["log"] is True
    assert doc["checkpoint"]["step"] == 120 and doc["costSoFar"]["amount"] == 1.5
    assert doc["keepsBilling"], "what keeps billing after the nodes are gone"
    # Signed with the cloud's key (OSS takes signature V2 here: "AWS <key>:<signature>"), never an AWS_* one.
    assert proxy.auth and all("alikey-for-tests" in a for a in proxy.auth), proxy.auth[:2]
    table = cli("status", STACK, "--endpoint", proxy.url, **ALI)
    assert table.returncode == 0 and "i-bp1" in table.stdout and "FAILED" in table.stdout
    assert "trainer exit code 3" in table.stdout, "a piped table keeps whole cells (no 80-column wrap)"


def test_status_shows_each_nodes_setup_time_and_source(s3):
    """The user's setup (train.setup, train.requirements): how long it took on each node and from where."""
    proxy, client, bucket = s3
    put(client, bucket, "markers/i-bp1.json", marker("DONE", setup={"seconds": 41.2, "source": "index", "wheels": 3}))
    put(client, bucket, "markers/i-bp2.json", marker("RUNNING", node="i-bp2", setup={"seconds": 3.1, "source": "cache"}))
    put(client, bucket, "markers/i-bp3.json", marker("FAILED", node="i-bp3", reason="setup failed: train.setup[0]",
                                                     setup={"failed": "train.setup[0] (x) exited 1"}))
    put(client, bucket, "markers/i-bp4.json", marker("RUNNING", node="i-bp4",
                                                     setup={"running": True, "since": "2026-12-07T13:40:02+00:00"}))
    done = cli("status", STACK, "--endpoint", proxy.url, "--json", **ALI)
    assert done.returncode == 0, done.stderr
    setups = {n["node"]: n["setup"] for n in json.loads(done.stdout)["nodes"]}
    assert setups["i-bp1"]["seconds"] == 41.2 and setups["i-bp2"]["source"] == "cache" and setups["i-bp3"]["failed"]
    table = cli("status", STACK, "--endpoint", proxy.url, **ALI).stdout
    assert "41.2 s from the index" in table and "3.1 s from the cache" in table, table
    assert "failed" in table.split("i-bp3")[1].split("\n")[0], table
    assert "installing since 13:40:02 UTC" in table, table


def test_status_says_when_a_preempted_node_has_no_successor(s3):
    """A spot pool that finds no stock starts no replacement: status says so, with how long it has been."""
    proxy, client, bucket = s3
    put(client, bucket, "markers/i-bp1.json", marker("PREEMPTED", reason="spot notice"))
    done = cli("status", STACK, "--endpoint", proxy.url, "--json", **ALI)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["state"] == "PREEMPTED" and doc["noSuccessor"]["nodes"] == ["i-bp1"]
    table = cli("status", STACK, "--endpoint", proxy.url, **ALI)
    assert "no successor yet: i-bp1 preempted" in table.stdout and "finds no stock" in table.stdout


def test_logs_joins_the_segments_and_picks_a_node(s3):
    proxy, client, bucket = s3
    put(client, bucket, "markers/i-bp1.json", marker("DONE"))
    put(client, bucket, "logs/i-bp1/trainer.log.0000", "first half of a li")
    put(client, bucket, "logs/i-bp1/trainer.log.0001", "ne\nlast line\n")
    put(client, bucket, "logs/i-bp1/agent.log.0000", "agent INFO marker DONE\n")
    done = cli("logs", STACK, "--endpoint", proxy.url, "--node", "0", "--trainer", **ALI)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "first half of a line\nlast line\n"
    both = cli("logs", STACK, "--endpoint", proxy.url, **ALI)
    assert "==> i-bp1 agent.log <==" in both.stdout and "marker DONE" in both.stdout
    wrong = cli("logs", STACK, "--endpoint", proxy.url, "--node", "i-zz", **ALI)
    assert wrong.returncode == 2 and "0=i-bp1" in wrong.stderr


def test_logs_follow_prints_new_lines_and_ends_with_the_run(s3):
    proxy, client, bucket = s3
    put(client, bucket, "markers/i-bp1.json", marker("RUNNING"))
    put(client, bucket, "logs/i-bp1/trainer.log.0000", "step 1\n")
    p = subprocess.Popen([sys.executable, "-m", "tools.cli", "logs", STACK, "--endpoint", proxy.url, "--follow",
                          "--poll", "0.3", "--trainer"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env(**ALI))
    try:
        def later():
            time.sleep(2)
            put(client, bucket, "logs/i-bp1/trainer.log.0000", "step 1\nstep 2\n")
            time.sleep(1)
            put(client, bucket, "markers/i-bp1.json", marker("DONE"))
        threading.Thread(target=later, daemon=True).start()
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert out == "step 1\nstep 2\n"


def test_report_reads_the_bucket_with_the_clouds_key_not_aws(s3, tmp_path):
    proxy, client, bucket = s3
    summary = {"gpuUtilMean": 40.0, "samples": 3, "firstSample": 1.0, "lastSample": 3.0}
    put(client, bucket, "report/i-bp1/summary.json", json.dumps(summary))
    done = cli("report", STACK, "--endpoint", proxy.url, "--json", GPU_TRAINING_OUT=str(tmp_path), **ALI)
    assert done.returncode == 0, done.stderr
    assert "i-bp1" in json.loads(done.stdout)["nodes"]
    # Downloaded where GPU_TRAINING_OUT says, never into the project's own out/ (a user's reports).
    assert (tmp_path / STACK / "report" / "i-bp1" / "summary.json").is_file()


def test_ssh_on_a_closed_stack_says_how_to_open_it():
    done = cli("ssh", STACK)
    assert done.returncode == 1 and "sshAllowCidrs" in done.stderr and "sshPublicKey" in done.stderr, done.stderr


def test_down_without_the_pulumi_cli_says_so(tmp_path):
    done = cli("down", STACK, "--out", str(tmp_path / "out"), **ALI)
    assert done.returncode == 1 and "the Pulumi CLI is not installed" in done.stdout, done.stdout + done.stderr


# --- the whole loop offline: rehearse --keep, then status, logs and report on what it left ------------------
@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    crash = ("python -c \"import sys, time; print('step 1', flush=True); time.sleep(2); "
             "sys.exit('boom: CUDA out of memory')\"")
    started = time.time()
    done = cli("rehearse", STACK, "--keep", "--command", crash, timeout=300, GPU_TRAINING_OUT=str(out))
    return out, done, started


def test_rehearse_keep_leaves_a_bucket_that_status_logs_and_report_read_offline(kept):
    out, done, started = kept
    assert done.returncode == 1, "the crashing trainer fails the drill"
    assert "bucket kept:" in done.stderr, done.stderr[-2000:]
    # Short: the failing check names the marker and the trainer's last line; the log's tail and path under it.
    assert "FAILED (trainer exit code 1); trainer's last output: boom: CUDA out of memory" in done.stdout, done.stdout
    assert "agent log of" in done.stdout and "agent.out" in done.stdout
    assert '"gpuUtilPerGpu"' not in done.stdout.split("agent log of")[0], "no JSON blob in the table"
    status = cli("status", STACK, "--rehearsal", "--json", GPU_TRAINING_OUT=str(out))
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["simulated"] and doc["state"] == "FAILED"
    assert doc["nodes"][0]["reason"].startswith("trainer exit code"), doc["nodes"]
    assert doc["ttlSeconds"] > 0 and doc["keepsBilling"]
    logs = cli("logs", STACK, "--rehearsal", "--trainer", GPU_TRAINING_OUT=str(out))
    assert logs.returncode == 0 and "boom: CUDA out of memory" in logs.stdout, logs.stdout + logs.stderr
    agent = cli("logs", STACK, "--rehearsal", "--agent", "--tail", "3", GPU_TRAINING_OUT=str(out))
    assert "releasing this node" in agent.stdout or "marker FAILED" in agent.stdout, agent.stdout
    report = cli("report", STACK, "--rehearsal", GPU_TRAINING_OUT=str(out))
    assert report.returncode == 0, report.stdout + report.stderr
    assert "simulated" in report.stdout and "plot:" in report.stdout
    # The run's cost: the node's hours from its marker times the stack's list price, with the price's source.
    assert "cost of the run (on-demand):" in report.stdout and "from its marker" in report.stdout, report.stdout
    assert "total:" in report.stdout and "CNY" in report.stdout


def test_without_a_kept_rehearsal_it_says_how_to_make_one(tmp_path):
    done = cli("status", STACK, "--rehearsal", GPU_TRAINING_OUT=str(tmp_path))
    assert done.returncode == 2 and "gpu-training rehearse entry-t4 --keep" in done.stderr



# The test set (requirements-dev.txt) and the extras; boto3 and pulumi are the runtime.
HEAVY = {"torch", "paddle", "moto", "hypothesis", "matplotlib", "PIL", "pulumi", "boto3"}


@pytest.mark.parametrize("args, allowed", [
    (("--help",), set()),
    (("status", STACK, "--rehearsal", "--json"), set()),
    (("logs", STACK, "--rehearsal", "--tail", "1"), set()),
    (("report", STACK, "--rehearsal", "--json"), {"matplotlib", "PIL", "pulumi", "boto3"}),  # PIL: matplotlib's
])
def test_commands_load_only_what_they_need(kept, args, allowed):
    """status and logs need the runtime only, report adds matplotlib (the `report` extra): never the test set
    (torch, PaddlePaddle, moto); --help and a kept rehearsal's status and logs not even boto3 or pulumi."""
    out, _, _ = kept
    probe = ("import sys, atexit\n"
             f"heavy = {sorted(HEAVY)!r}\n"
             "atexit.register(lambda: print('LOADED', sorted({m.split('.')[0] for m in sys.modules} & set(heavy)),"
             " file=sys.stderr))\n"
             "from tools.cli.main import cli\n"
             f"cli({list(args)!r}, prog_name='gpu-training')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=env(GPU_TRAINING_OUT=str(out)))
    assert done.returncode == 0, done.stderr[-1500:]
    loaded = set(eval(done.stderr.rsplit("LOADED", 1)[1].strip()))
    assert loaded <= allowed, loaded
