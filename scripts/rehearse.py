#!/usr/bin/env python3
"""Rehearse a stack's training lifecycle locally on the CPU, preemption drill included.

What runs is what a node runs: the stack's real node config (with local endpoints and paths) rendered
into user-data and its boot payload as `pulumi up` renders them (the payload uploaded to the bucket),
the loader from that user-data fetching the payload with the node role and verifying its sha256
(docs/bootstrap.md, "The loader"; it stops before the bootstrap: no machine to set up here),
`python -m node_agent.fetch` from the boot set it wrote downloading and verifying the rest from
object storage, then the real node agent starting the training command. Around it, on 127.0.0.1 only: a moto S3 server (the checkpoint bucket, holding
the agent and the training code as `pulumi up` uploads them), the cloud's metadata service (a spot
notice can be posted) and its API (records the release requests), and a fake accelerator
(nvidia-smi reporting the stack's GPU count).

The drill: train until a complete checkpoint is in the bucket, post a spot notice to node 0, wait
for its PREEMPTED marker, start a fresh replacement node (new instance id, empty disk), and check:
the trainer saved on the stop signal (a checkpoint file written after it, an exit within the grace,
not of the signal); training resumed from the saved step (not from zero) and finished; the final
checkpoint and the report are in the bucket; the release was requested exactly once per finished node
and never for the preempted one. The example trainer is judged by its summary line; your own command by
what its trainer reports (tools/trainerevidence.py): the `step` of GPU_TRAINING_STATS_FILE, else the
`step N` numbers in its output, must go on from the saved step (the number in the newest checkpoint's
name). A trainer that reports no step is "unverified": not a pass. The launcher is the stack's
(train.launcher): under torchrun each node runs one CPU rank (gloo) per GPU, at most MAX_RANKS on all
nodes. Multi-node stacks rehearse two nodes: when node 0 is reclaimed, node 1's trainer stops at the same step, its agent waits for the cluster
to re-form, and both resume together once the replacement joins.

The example trainer (the stacks' default command) runs a rehearsal-sized job; your own
`train.command` runs as written unless --command replaces it.

The stack's setup (train.requirements, train.setup) runs as on a node: the real agent installs it before
training, into a venv of each node's own that sees this environment (nothing is installed into yours), from
the folder of wheels --wheels names (served on 127.0.0.1) or else from your pip's own index; the replacement
node installs from the wheels the first node cached in the bucket (tools/setuprehearsal.py).

With --keep, the rehearsal's bucket outlives it: every object of the stack (markers, checkpoints,
reports, the nodes' logs) is copied to out/<stack>/rehearsal/ with a record of the stack's outputs, and
`gpu-training status|logs|report STACK --rehearsal` read it offline (docs/cli.md).

Exit status: 0 every check passed, 1 a check failed or could not be verified (the table says which: FAIL or
unverified; a rehearsal claims only what it saw), 2 bad stack or arguments.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from node_agent import layout

from tools import project
from tools.cliargs import FAILED as EXIT_FAILED, OK as EXIT_OK, USAGE as EXIT_INVALID
from tools.trainerevidence import EXAMPLE, runs_the_example

REPO = project.root()  # the current project (tools/project.py): its out/ holds kept rehearsals

# Small enough for a CPU and a one-minute CI budget, big enough to checkpoint several times.
# The model alone runs 50-150 steps/s on one core; unpaced, a fast machine finished the 300 steps
# before the spot notice was read, and the drill failed. Paced at PACE_SECONDS a step, the notice
# (posted once a checkpoint past a quarter of the run is in the bucket) always lands mid-run.
PACE_SECONDS = 0.04
# A short run (`--steps 40`) paced at PACE_SECONDS trains in 1.6 s, less than the trainer's start-up plus two
# of the agent's 1 s syncs: CI saw the whole run finish before the first snapshot reached the bucket, so the
# notice came after the end. The pace stretches a short run to at least this long (the default 300 steps at
# PACE_SECONDS take 12 s and are unchanged).
SYNC_SECONDS = 1.0  # the rehearsal agent's syncIntervalSeconds
MIN_RUN_SECONDS = 10 * SYNC_SECONDS
# The drill's notice names a reclaim this far ahead (the clouds give about 2-5 minutes; a rehearsal is
# shorter): under the rehearsal's maxGraceSeconds (60), so the grace the agent gives is the time left.
NOTICE_LEAD_SECONDS = 45
# How much later than one spot poll the trainer may be signalled on a loaded test machine.
NOTICE_SLACK_SECONDS = 1.0
# The launcher is the stack's own (train.launcher): a multi-GPU stack rehearses under torchrun, one CPU rank (gloo)
# per GPU, so a command that works only as one process fails here and not on the paid node. At most this many ranks
# in all, the rehearsed nodes together (a 2-core CI machine runs them; 4 ranks of the example trainer, paced, take
# about one core).
MAX_RANKS = 4
REHEARSAL_TRAINER_ARGS = ["--steps", "{steps}", "--ckpt-every", "{every}", "--batch-size", "16", "--image-size",
                          "32", "--width", "8", "--depth", "1", "--dataset-size", "1024", "--workers", "0",
                          "--log-every", "10", "--min-step-seconds", "{pace}"]


@dataclass
class Check:
    name: str
    ok: bool | None  # None: unverified, the rehearsal found no evidence either way (not a pass)
    detail: str


@dataclass
class Node:
    """One rehearsed node: its instance id, sandbox folder, metadata stand-in and agent process."""
    index: int
    instance_id: str
    root: Path
    metadata: object
    config: dict = field(default_factory=dict)
    process: subprocess.Popen | None = None
    loader: list[str] = field(default_factory=list)  # user-data's command: python3, the loader, its config
    log_mark: int = 0  # the trainer log's size when the replacement started: later bytes are the resumed run's

    @property
    def config_path(self) -> Path:
        return self.root / "node.json"

    def trainer_log_bytes(self) -> bytes:
        path = Path(self.config["paths"]["logs"]) / "trainer.log"
        return path.read_bytes() if path.exists() else b""

    def trainer_log(self, start: int = 0, end: int | None = None) -> str:
        return self.trainer_log_bytes()[start:end].decode(errors="replace")

    def agent_log(self) -> str:
        path = self.root / "agent.out"
        return path.read_text(errors="replace") if path.exists() else ""


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", help="stack name (stacks/Pulumi.<stack>.yaml)")
    parser.add_argument("--command", help="training command to rehearse instead of the stack's train.command")
    parser.add_argument("--steps", type=int, default=300, help="steps of the example trainer (default 300)")
    parser.add_argument("--nodes", type=int, help="nodes to rehearse (default: 2 for multi-node stacks, else 1)")
    parser.add_argument("--timeout", type=float, default=240, help="seconds each phase may take (default 240)")
    parser.add_argument("--data", type=Path, help="rehearse with this data set staged on every node: a folder made by"
                        " `gpu-training pack`, or an image folder (one subfolder per class), packed first; default:"
                        " the stack's data.localDir")
    parser.add_argument("--example-data", action="store_true",
                        help="rehearse with a small generated image folder (4 classes of 32x32 JPEGs), packed, "
                             "staged and trained on: the whole data path without a data set of your own")
    parser.add_argument("--stock-out", action="store_true",
                        help="first drill `up` against the cloud's API stand-in with the stack's first zone sold out: "
                             "the cloud's documented stock-out code, the failed attempt destroyed, the next zone "
                             "deployed (docs/capacity.md)")
    parser.add_argument("--keep-dir", action="store_true", help="keep the sandbox folder and print its path")
    parser.add_argument("--keep", action="store_true",
                        help="keep the rehearsal's bucket in out/<stack>/rehearsal/ (replacing an earlier one) "
                             "for `gpu-training status|logs|report STACK --rehearsal`")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("GPU_TRAINING_OUT") or REPO / "out"),
                        metavar="DIR", help="where --keep puts <stack>/rehearsal/ (default out/, or $GPU_TRAINING_OUT)")
    parser.add_argument("--wheels", type=Path, metavar="DIR",
                        help="the package index for train.setup and train.requirements: this folder of wheels, served on"
                             " 127.0.0.1 (PEP 503), and nothing else; default: your pip's own configuration")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    args = parser.parse_args(argv)
    if args.steps < 40:
        parser.error("--steps must be at least 40 (a checkpoint must be saved before the spot notice)")
    if args.nodes is not None and args.nodes < 1:
        parser.error("--nodes must be at least 1")
    if args.example_data and args.data is not None:
        parser.error("--example-data and --data: pick one")
    if args.wheels is not None and not args.wheels.is_dir():
        parser.error(f"--wheels: {str(args.wheels)!r} is not a folder; allowed: a folder of wheels (*.whl)")
    return args


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_view(config: dict, root: Path, stack_paths: dict) -> dict:
    """A rehearsed node's config as the node itself sees it, with `root` as its file system's root (the loader
    runs with GPU_TRAINING_ROOT=root, as the sandbox's bootstrap does): each path under root from there
    ("/agent"), a path the rehearsal leaves empty (the venv: the rehearsal's own Python) as the stack has it."""
    view = json.loads(json.dumps(config))
    top = str(root)
    for key, value in view["paths"].items():
        if isinstance(value, str) and value.startswith(top + "/"):
            view["paths"][key] = value[len(top):]
        elif not value and stack_paths.get(key):
            view["paths"][key] = stack_paths[key]
    workdir = view["train"].get("workdir") or ""
    if workdir.startswith(top + "/"):
        view["train"]["workdir"] = workdir[len(top):]
    shared = view["bootstrap"].get("sharedFs") or {}
    if shared.get("type", "none") != "none" and not shared.get("address"):
        # Known at deploy time only. The rehearsal's shared folder is local and the bootstrap that would mount it
        # does not run (--install-only): a reserved name stands in (RFC 2606: .invalid never resolves).
        shared["address"] = "shared-fs.rehearsal.invalid:/share"
    return view


def rehearsal_command(command: str, steps: int) -> str:
    """The example trainer at rehearsal size; any other command as written."""
    words = shlex.split(command)
    if len(words) >= 2 and Path(words[0]).name.startswith("python") and Path(words[1]).name == EXAMPLE:
        every = max(2, steps // 10)
        pace = math.ceil(max(PACE_SECONDS, MIN_RUN_SECONDS / max(1, steps)) * 1000) / 1000  # whole ms, up
        sized = [a.format(steps=steps, every=every, pace=pace) for a in REHEARSAL_TRAINER_ARGS]
        return shlex.join([words[0], words[1], *sized])
    return command


# torchrun's own log lines (torch.distributed.elastic's logger: level letter, date, time, pid, file:line]) and the
# one naming the first rank that failed, after which it prints its traceback and a report of every rank.
TORCHRUN_LOG = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ torch/distributed/")
TORCHRUN_FAILED = re.compile(r"\] failed \(exitcode: (-?\d+)\) local_rank: (\d+)")


def last_words(log: str) -> str:
    """The trainer's last output line; under torchrun that of the ranks before torchrun's failure report (its last
    line is a row of '='), with the rank and exit code the report names."""
    lines = [line for line in log.splitlines() if line.strip()]
    failed = next(((i, m) for i, line in enumerate(lines) if TORCHRUN_LOG.match(line)
                   and (m := TORCHRUN_FAILED.search(line))), None)
    if failed:
        said = [line for line in lines[:failed[0]] if not TORCHRUN_LOG.match(line)]
        code, rank = failed[1].groups()
        return f"{said[-1][:200] if said else '(none)'} (torchrun: local rank {rank} exited {code})"
    return lines[-1][:200] if lines else "(none)"


def rehearsal_ranks(train: dict, nodes: int) -> int:
    """Processes per rehearsed node: one per GPU under torchrun (at most MAX_RANKS on all nodes), else one."""
    if train["launcher"] != "torchrun":
        return 1
    return max(1, min(int(train["gpusPerNode"]), MAX_RANKS // nodes))


def node_config(base: dict, node: Node, *, s3_url: str, api_url: str | None, command: str, nodes: int) -> dict:
    """The stack's node config, pointed at this machine: local endpoints, sandbox paths, short intervals."""
    config = json.loads(json.dumps(base))
    root = node.root
    config["paths"].update({
        "data": str(root / "data"), "checkpoints": str(root / "data" / "checkpoints"),
        "dataset": str(root / "data" / "dataset"),
        "state": str(root / "state"), "logs": str(root / "logs"), "venv": "",
        "agent": str(root / "agent"), "trainEnv": str(root / "train.env"),
        "shared": str(root / "shared") if config["paths"].get("shared") else None,
    })
    config["checkpoint"].update({"endpoint": s3_url, "addressingStyle": "path", "signatureVersion": "s3v4",
                                 "region": "us-east-1"})
    config["endpoints"] = {"metadata": node.metadata.url, "cloudApi": api_url}
    config["nodeCount"] = nodes
    # The fake nvidia-smi reports a fixed utilisation: the report, plot and diagnosis say so (docs/node-config.md).
    config["accelerator"]["simulated"] = True
    config["train"].update({"command": command, "workdir": str(root / "data" / "work"),
                            "gpusPerNode": rehearsal_ranks(config["train"], nodes)})
    config["agent"].update({"syncIntervalSeconds": SYNC_SECONDS, "spotPollSeconds": 0.25, "utilSampleSeconds": 0.5,
                            "idleMinutes": 0, "maxGraceSeconds": 60, "uploadAttempts": 4,
                            "retryBaseSeconds": 0.1, "uploadAllowanceSeconds": 0, "peerWaitMinutes": 2,
                            "bootTime": time.time()})
    return config


class Rehearsal:
    releases_per_finished_node = 1  # a VM releases itself once; a pod asks nobody (PodRehearsal)

    def __init__(self, args, stack: str, spec, base_config: dict, workdir: Path):
        from localcloud import LocalS3

        self.args, self.stack, self.spec, self.base = args, stack, spec, base_config
        self.workdir = workdir
        self.provider = spec.provider
        self.multi = spec.nodes > 1
        self.count = args.nodes or (2 if self.multi else 1)
        self.launcher, self.ranks = base_config["train"]["launcher"], rehearsal_ranks(base_config["train"], self.count)
        command = args.command or spec.train.command
        self.command = rehearsal_command(command, args.steps)
        self.example = runs_the_example(self.command)
        self.port = free_port()
        self.s3 = LocalS3()
        self.client = self.s3.client()
        self.bucket = spec.checkpoint.bucket
        self.root = layout.stack_root(spec.checkpoint.prefix, stack)  # the agent's layout, one copy
        self.api = None
        self.nodes: list[Node] = []
        self.retired: list[Node] = []
        self.checks: list[Check] = []
        self.say = print if not args.json else (lambda *a, **k: print(*a, file=sys.stderr, **k))
        self.runtime_file = None  # None: the provider's node runtime
        from tools.setuprehearsal import SetupRehearsal

        self.setup = SetupRehearsal(spec, args.wheels)  # the user's packages (docs/training-contract.md §6)
        self.first_marker = None  # the preempted node's last marker (a pod's successor takes its name)
        self.newest_saved: dict = {}  # the newest complete snapshot before the replacement started (its manifest)
        self.resumed_at = float("inf")  # when the replacement started: later steps are the resumed run's

    # ------------------------------------------------------------------ set-up, as `pulumi up` and the bootstrap do
    def upload_data(self) -> dict | None:
        """The data set in the bucket as `scripts/pack.py --upload` (or run.py) puts it; an image folder is packed first."""
        from components.dataset import read_manifest
        from tools.datapack import packer, source, upload

        folder = self.args.data or self.spec.data.local_dir
        if self.args.example_data:
            from tools.datapack import example
            folder = self.workdir / "example-images"
            example.make_folder(folder, classes=4, per_class=32, size=32)
        if folder is None:
            return None
        try:
            read_manifest(folder)
        except ValueError:
            images = source.read(folder)  # not packed yet: pack it, as a user would with scripts/pack.py
            folder = self.workdir / "packed"
            packer.pack(images, folder, per_shard=packer.per_shard_for(images, 1), workers=2)
        return upload.upload(folder, self.client, self.bucket, self.root)

    def upload_artifacts(self) -> int:
        from components.artifacts import all_artifacts

        self.client.create_bucket(Bucket=self.bucket)
        uploaded = all_artifacts(self.spec)
        for artifact in uploaded:
            self.client.put_object(Bucket=self.bucket, Key=artifact.key, Body=artifact.path.read_bytes())
        return len(uploaded)

    def adapt(self, node: Node) -> None:
        """What a subclass changes in a node's config before it is written (PodRehearsal)."""

    def boot_set(self, node: Node) -> None:
        """What `pulumi up` and cloud-init do before the loader runs: the node's user-data and boot payload rendered
        (components.bootstrap.render_user_data, with the cloud's limit), the payload put in the bucket, and
        user-data's files (the loader, its config and the cloud runtime) written under the node's root."""
        import yaml

        from components.bootstrap import render_user_data, write_files

        rendered = render_user_data(node_view(node.config, node.root, self.base["paths"]), runtime=self.runtime_file)
        self.client.put_object(Bucket=self.bucket, Key=rendered.payload.key, Body=rendered.payload.content.encode())
        for name, content in write_files(rendered.cloud_config).items():
            path = node.root / name.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        node.loader = [str(word) for word in yaml.safe_load(rendered.cloud_config)["runcmd"][0]]

    def preempt(self, victim: Node) -> datetime | None:
        """The cloud reclaims node 0: a spot notice through its metadata service, in the cloud's own path and
        format (each cloud's Metadata in localcloud/standins/); the reclaim time it names (None: no notice was posted)."""
        reclaim = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=NOTICE_LEAD_SECONDS)
        victim.metadata.notice = reclaim
        self.say(f"  spot notice posted to {victim.instance_id}: reclaim at {reclaim:%H:%M:%S} UTC")
        return reclaim

    def check_notice(self, victim: Node, marker: dict, posted: float, reclaim: datetime) -> None:
        """What the notice bought: the trainer told within the spot poll, a grace the notice leaves (not the
        1 s floor), and the final checkpoint verified in the bucket before the reclaim the notice named."""
        stop = marker.get("stopSignal") or {}
        told = datetime.fromisoformat(stop["at"]).timestamp() if stop.get("at") else None
        poll = victim.config["agent"]["spotPollSeconds"]
        self.check("notice -> trainer signal", told is not None and told - posted <= poll + NOTICE_SLACK_SECONDS,
                   f"the trainer was signalled {told - posted:.2f} s after the notice was posted (spot poll {poll:g} s)"
                   if told else "no stop signal in the marker")
        grace, named = stop.get("graceSeconds"), stop.get("reclaimAt")
        expected = min(victim.config["agent"]["maxGraceSeconds"], reclaim.timestamp() - (told or posted)
                       - victim.config["agent"]["uploadAllowanceSeconds"])
        self.check("grace from the notice", bool(named) and datetime.fromisoformat(named) == reclaim
                   and grace is not None and grace > 1 and abs(grace - expected) < 1,
                   f"grace {grace} s (the notice's reclaim at {named}; expected about {expected:.1f} s)")
        # The node's own final snapshot; a rank that writes no checkpoints (multi-node) has none of its own,
        # and the cluster's newest snapshot, from before this marker, is what a replacement resumes from.
        own = marker.get("lastCheckpoint")
        found = [self.get_json(self.root + layout.manifest(own))] if own else self.manifests()[-1:]
        manifest = found[-1] if found else {}
        whose = "the node's own" if own else "the cluster's newest: this rank writes none"
        saved_at = datetime.fromisoformat(marker["updatedAt"]) if marker.get("updatedAt") else None
        self.check("saved before the reclaim", bool(manifest) and self.verified(manifest) and saved_at is not None
                   and saved_at <= reclaim,
                   f"snapshot {manifest.get('id')} ({whose}) verified; the final marker at {saved_at:%H:%M:%S},"
                   f" {(reclaim - saved_at).total_seconds():.0f} s before the reclaim" if saved_at
                   else "no final marker time")

    def new_id(self, index: int, replaces: Node | None) -> str:
        from localcloud.standins import new_instance_id

        return new_instance_id(self.provider)  # the agent trusts only ids in the cloud's format

    def first_zone(self) -> str | None:
        """The first zone the provider declares for the stack's region (regions.yaml), for a stack that names none."""
        from components.providers import regions

        table = regions.load(self.provider)
        return next(iter((table.regions.get(self.base["region"]) or ()) if table else ()), None)

    def make_node(self, index: int, replaces: Node | None = None) -> Node:
        from localcloud.standins import Metadata

        instance_id = self.new_id(index, replaces)
        root = self.workdir / f"{instance_id}-{index}"
        root.mkdir(parents=True)
        metadata = Metadata(self.provider, instance_id, ip="127.0.0.1", role=self.base["identity"]["roleName"])
        metadata.region = self.base["region"]  # the stack's placement, not the stand-in's default region
        # A region whose zones are not declared gets a zone named for what it is, not another region's.
        metadata.zone = self.spec.zone or self.first_zone() or f"{self.base['region']}-rehearsal"
        node = Node(index, instance_id, root, metadata)
        node.config = node_config(self.base, node, s3_url=self.s3.url, api_url=self.api.url, command=self.command,
                                  nodes=self.count)
        node.config["train"]["rendezvousPort"] = self.port
        node.config["paths"]["venv"] = self.setup.venv(root)  # a new node's empty venv: the setup installs into it
        self.adapt(node)
        node.config_path.write_text(json.dumps(node.config, indent=1))
        (root / "train.env").write_text("GPU_TRAINING_DATALOADER_WORKERS=0\nOMP_NUM_THREADS=1\n")
        (root / "gpu").write_text("85\n")  # the fake accelerator's utilisation
        self.boot_set(node)
        return node

    def env(self, node: Node) -> dict:
        from localcloud import BIN

        from components import providers

        # A node has no keys of the user's: it must get by with its role, as on the cloud.
        env = {k: v for k, v in os.environ.items() if not k.startswith(providers.credential_env_prefixes())}
        env.update({
            "PYTHONPATH": str(node.root / "agent"),
            "PATH": os.pathsep.join((str(BIN), str(Path(sys.executable).parent), env.get("PATH", ""))),
            "FAKE_GPU_FILE": str(node.root / "gpu"),
            "FAKE_GPU_COUNT": str(self.base["accelerator"]["count"]),
            "PYTHONUNBUFFERED": "1",
        })
        return self.setup.env(env)

    def fetch(self, node: Node) -> subprocess.CompletedProcess:
        """The node's boot up to its agent: user-data's command (the loader, with the standard library only, -S:
        as the image's python3 runs it) under the node's root, then node_agent.fetch from the boot set it wrote."""
        env = {**self.env(node), "GPU_TRAINING_ROOT": str(node.root)}
        _, script, config = node.loader  # python3 <agent>/node_agent/loader.py /etc/gpu-training/loader.json
        loaded = subprocess.run([sys.executable, "-S", str(node.root) + script, str(node.root) + config,
                                 "--install-only"], env=env, capture_output=True, text=True, timeout=120)
        if loaded.returncode:
            return loaded
        fetched = subprocess.run([sys.executable, "-m", "node_agent.fetch", "--config", str(node.config_path)],
                                 env=self.env(node), capture_output=True, text=True, timeout=120)
        return subprocess.CompletedProcess(fetched.args, fetched.returncode, loaded.stdout + fetched.stdout,
                                           loaded.stderr + fetched.stderr)

    def start(self, node: Node) -> None:
        out = open(node.root / "agent.out", "ab")
        node.process = subprocess.Popen([sys.executable, "-m", "node_agent", "--config", str(node.config_path)],
                                        env=self.env(node), stdout=out, stderr=subprocess.STDOUT, cwd=node.root,
                                        start_new_session=True)

    # ------------------------------------------------------------------ reading the bucket
    def keys(self, below: str) -> list[str]:
        found, token = [], None
        while True:
            kwargs = {"Bucket": self.bucket, "Prefix": self.root + below}
            if token:
                kwargs["ContinuationToken"] = token
            page = self.client.list_objects_v2(**kwargs)
            found += [item["Key"] for item in page.get("Contents", [])]
            token = page.get("NextContinuationToken")
            if not token:
                return found

    def get_json(self, key: str):
        return json.loads(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def marker(self, node: Node):
        try:
            return self.get_json(self.root + layout.marker(node.instance_id))
        except self.client.exceptions.NoSuchKey:
            return None

    def manifests(self) -> list[dict]:
        return [self.get_json(key) for key in self.keys(layout.MANIFESTS)]

    @staticmethod
    def steps_in(manifest: dict) -> int:
        steps = [int(m.group(1)) for name in manifest.get("files", {}) for m in [re.search(r"(\d+)", name)] if m]
        return max(steps, default=0)

    def verified(self, manifest: dict) -> bool:
        for entry in manifest.get("files", {}).values():
            body = self.client.get_object(Bucket=self.bucket,
                                          Key=self.root + layout.OBJECTS + entry["sha256"])["Body"].read()
            if len(body) != entry["size"] or hashlib.sha256(body).hexdigest() != entry["sha256"]:
                return False
        return True

    # ------------------------------------------------------------------ waiting
    def wait_for(self, what, description: str, nodes: list[Node]):
        deadline = time.time() + self.args.timeout
        while time.time() < deadline:
            value = what()
            if value:
                return value
            for node in nodes:
                if node.process and node.process.poll() not in (None, 0):
                    raise RuntimeError(f"the agent of {node.instance_id} exited with {node.process.returncode}"
                                       f" while waiting for {description}; {self.why(node)}")
            if all(node.process and node.process.poll() is not None for node in nodes):
                value = what()  # one last look: the agents may have finished right after the check
                if value:
                    return value
                raise RuntimeError(f"every agent ended before {description}: "
                                   + "; ".join(self.why(n) for n in nodes))
            time.sleep(0.25)
        raise RuntimeError(f"timed out after {self.args.timeout:g} s waiting for {description}: "
                           + "; ".join(self.why(n) for n in nodes))

    def why(self, node: Node) -> str:
        """One line on how a node ended: its marker's state and reason, and the trainer's last output line
        (the logs themselves are printed under the table, with their paths)."""
        try:
            marker = self.marker(node) or {}
        except Exception:  # the bucket is what failed: the line says so
            marker = {}
        state = f"{marker.get('state')} ({marker.get('reason')})" if marker else "no marker"
        return f"{node.instance_id}: {state}; trainer's last output: {last_words(node.trainer_log())}"

    def wait_exit(self, nodes: list[Node]) -> None:
        deadline = time.time() + self.args.timeout
        for node in nodes:
            left = max(1.0, deadline - time.time())
            try:
                node.process.wait(left)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"the agent of {node.instance_id} is still running after"
                                   f" {self.args.timeout:g} s:\n{node.agent_log()[-3000:]}") from None

    def check(self, name: str, ok: bool | None, detail: str) -> None:
        self.checks.append(Check(name, None if ok is None else bool(ok), detail))
        if ok is None:
            self.say(f"  UNVERIFIED {name}: {detail}")
        elif not ok:
            self.say(f"  FAIL {name}: {detail}")

    # ------------------------------------------------------------------ the drill
    def run(self) -> list[Check]:
        from localcloud.standins import CloudApi

        ranks = f" with {self.ranks} CPU rank(s) (gloo) per node" if self.launcher == "torchrun" else ""
        self.say(f"rehearsing {self.stack} on {self.provider} ({self.count} node(s), launcher {self.launcher}{ranks})"
                 f" in {self.workdir}")
        self.say(f"  training command: {self.command}")
        if self.setup.wanted:
            self.say(f"  setup: {self.setup.describe()}")
        files = self.upload_artifacts()
        self.check("upload", files > 0, f"{files} agent and code files in s3://{self.bucket}/{self.root}")
        self.data = self.upload_data()
        if self.data:
            self.base["data"] = {"stage": True}
            self.say(f"  data set: {self.data['sent']} shards, {self.data['bytes'] / 1e6:.1f} MB in {self.data['prefix']}")

        self.api = CloudApi(self.provider)
        pool = self.base["cluster"].get("poolName")
        if pool:  # `pulumi up` made the spot pool; the agent must retire it before releasing
            self.api.add_pool(pool)
        first = [self.make_node(i) for i in range(self.count)]
        self.api.instances = [(n.instance_id, "127.0.0.1") for n in first]
        self.nodes = list(first)
        fetched = [self.fetch(n) for n in first]
        self.check("fetch", all(r.returncode == 0 for r in fetched),
                   "the loader verified the boot payload and node_agent.fetch the agent on every node"
                   if all(r.returncode == 0 for r in fetched)
                   else "; ".join(r.stderr.strip()[-300:] for r in fetched if r.returncode))
        if any(r.returncode for r in fetched):
            return self.checks
        for node in first:
            self.start(node)
        self.say(f"  agents started on {', '.join(n.instance_id for n in first)}")

        # Phase 1: until a complete checkpoint past the first save is in the bucket, then a spot notice.
        target = max(1, self.args.steps // 4) if self.example else 0

        def saved_enough():
            done = [m for m in self.manifests() if self.steps_in(m) >= target and m.get("files")]
            return done[-1] if done else None

        self.wait_for(saved_enough, "a complete checkpoint in the bucket", first)
        victim = first[0]
        from components import providers

        if providers.profile(self.provider).spot.reclaim_notice:
            noticed = time.time()
            reclaim = self.preempt(victim)
            marker = self.wait_for(lambda: (m := self.marker(victim)) and m["state"] != "RUNNING" and m,
                                   f"the PREEMPTED marker of {victim.instance_id}", first)
            self.check("preempted", marker["state"] == "PREEMPTED",
                       f"{victim.instance_id}: {marker['state']} ({marker.get('reason')}) "
                       f"{time.time() - noticed:.1f} s after the notice")
            if reclaim:
                self.check_notice(victim, marker, noticed, reclaim)
        else:
            # No reclaim notice reaches a node on this cloud (profile.spot.reclaim_notice): the node stops
            # without warning, as if powered off; what was uploaded before is the resume point. Powered off means
            # every process of the node: the trainer runs in a session of its own (node_agent/proc.py) and
            # under torchrun its rendezvous store holds a port the replacement's torchrun binds again.
            from localcloud.processes import kill_tree

            kill_tree(victim.process.pid)
            victim.process.wait(timeout=30)
            self.say(f"  {victim.instance_id} reclaimed without notice (killed)")
            self.check("preempted", victim.process.returncode == -signal.SIGKILL,
                       f"{victim.instance_id}: stopped without notice (this cloud posts none)")
        # The reclaimed node's agent ends; the other nodes' agents wait for the cluster to re-form.
        self.wait_exit([victim])
        self.first_marker = self.marker(victim)
        # Under torchrun only rank 0 logs steps, and rendezvous may make any node rank 0: read them all
        # (the survivors wait for the replacement, so their logs hold no later step yet).
        stopped_at = max((step for n in first if (step := self.last_step(n)) is not None), default=None)
        saved = [m for m in self.manifests() if self.verified(m)]
        saved_step = max((self.steps_in(m) for m in saved), default=0)
        self.check("checkpoint saved", bool(saved), f"{len(saved)} complete snapshot(s), newest at step {saved_step}"
                   if self.example else f"{len(saved)} complete snapshot(s)")
        self.newest_saved = saved[-1] if saved else {}
        self.check_stop_save(first)

        # Phase 2: the pool's replacement for node 0 (new id, empty disk) joins the waiting nodes.
        self.resumed_at = time.time()
        for node in first:  # what the survivors' trainers log from now on is the resumed run's
            node.log_mark = len(node.trainer_log_bytes())
        replacement = self.make_node(self.count, replaces=victim)
        survivors = first[1:]
        self.api.instances = [(n.instance_id, "127.0.0.1") for n in [replacement, *survivors]]
        self.retired = [victim]
        self.nodes = [replacement, *survivors]
        result = self.fetch(replacement)
        if result.returncode:
            self.check("fetch (replacement)", False, result.stderr.strip()[-300:])
            return self.checks
        self.start(replacement)
        self.say(f"  replacement {replacement.instance_id} started; waiting for the run to finish")
        self.wait_exit(self.nodes)
        self.verify(saved_step, stopped_at)
        return self.checks

    def check_stop_save(self, first: list[Node]) -> None:
        """The preempted node's trainer on the stop signal (docs/training-contract.md §4): it wrote a checkpoint into
        CKPT_DIR after the signal (on any node: under torchrun rank 0, the rank that saves, may be on a survivor)
        and exited within the grace, not of the signal itself. No signal, no check: a cloud without a notice kills."""
        from tools.trainerevidence import judge_stop, written_since

        marker = self.first_marker or {}
        told = (marker.get("stopSignal") or {}).get("at")
        if not told:
            return
        at = datetime.fromisoformat(told).timestamp()
        # Until the final marker (to the second, hence + 1 s): a survivor's agent restores the newest snapshot into
        # its CKPT_DIR only after it read that marker (agent.peer_stopped), and a restored file is no save.
        until = datetime.fromisoformat(marker["updatedAt"]).timestamp() + 1 if marker.get("updatedAt") else time.time()
        folders = [Path(n.config["paths"]["checkpoints"]) for n in first]
        signal_name = first[0].config["train"].get("stopSignal") or "SIGTERM"
        ok, detail = judge_stop(marker, signal_name, at, written_since(folders, at, until), self.launcher)
        self.check("saved on the stop signal", ok, detail)

    def reported_steps(self, node: Node, resumed: bool) -> list[int]:
        """The steps `node`'s trainer reported, in order: before the replacement started, or after it (resumed). From
        GPU_TRAINING_STATS_FILE when the trainer writes it (its `step` is the contract's), else from its output."""
        from tools.trainerevidence import logged_steps, stats_steps

        if any(stats_steps(self.loader_csv(n)) for n in self.nodes + self.retired):
            return stats_steps(self.loader_csv(node), **({"since": self.resumed_at} if resumed
                                                         else {"until": self.resumed_at}))
        return logged_steps(node.trainer_log(start=node.log_mark) if resumed else node.trainer_log(end=node.log_mark))

    @staticmethod
    def loader_csv(node: Node) -> Path:
        return Path(node.config["paths"]["state"]) / "loader.csv"  # the agent's samples of the stats file (monitor.py)

    def check_user_resume(self, replacement: Node, saved_step: int) -> None:
        """A command of the user's: resumed is what its trainer reported after the replacement started, compared with
        the step the newest snapshot names (tools/trainerevidence.py); the agent setting RESUME_FROM is no proof."""
        from tools.trainerevidence import judge_resume

        offered = re.findall(r"RESUME_FROM='([^']*)'", replacement.agent_log())
        before = [s for n in self.retired + self.nodes[1:] for s in self.reported_steps(n, resumed=False)]
        after = [seq for n in self.nodes if (seq := self.reported_steps(n, resumed=True))]
        first = min((seq[0] for seq in after), default=None)  # each node's first: the nodes' logs are not interleaved
        reached = max(before + [s for seq in after for s in seq], default=0)
        files = list(self.newest_saved.get("files", {}))
        named = [f for f in files if self.steps_in({"files": {f: None}}) == saved_step] or files or [""]
        verdict = judge_resume(offered[-1] if offered else "", before, first, reached, saved_step, named[0])
        self.check("resumed, not from zero", verdict.ok, verdict.detail)
        self.lost = verdict.lost

    def last_step(self, node: Node) -> int | None:
        steps = [int(m.group(1)) for m in re.finditer(r"\bstep (\d+)", node.trainer_log())]
        summary = self.summaries(node)
        return max(steps + [s.get("step", 0) for s in summary], default=None)

    @staticmethod
    def summaries(node: Node) -> list[dict]:
        found = []
        for line in node.trainer_log().splitlines():
            start = line.find('{"event": "train_cnn.summary"')
            if start >= 0:
                found.append(json.loads(line[start:]))
        return found

    def check_launcher(self) -> None:
        """The stack's launcher ran as on the cloud: under torchrun, one CPU rank per GPU (rehearsal_ranks) in the
        command line each agent logged, and the example trainer's world size."""
        if self.launcher != "torchrun":
            return
        option = f"--nproc_per_node {self.ranks} "
        started = [n.instance_id for n in self.nodes if option in n.agent_log()]
        worlds = sorted({s.get("world_size") for n in self.nodes for s in self.summaries(n)}, key=str)
        self.check("launcher as on the cloud", len(started) == len(self.nodes)
                   and (not self.example or worlds == [self.count * self.ranks]),
                   f"torchrun with {self.ranks} CPU rank(s) (gloo) per node on {len(started)} of {len(self.nodes)}"
                   f" nodes" + (f"; the trainer's world size {', '.join(map(str, worlds)) or 'unknown'}"
                               if self.example else ""))

    def verify(self, saved_step: int, stopped_at: int | None) -> None:
        self.check_launcher()
        markers = {n.instance_id: self.marker(n) for n in self.nodes}
        self.check("finished", all(m and m["state"] == "DONE" for m in markers.values()),
                   ", ".join(f"{i}: {m and m['state']}" for i, m in markers.items()))
        replacement = self.nodes[0]
        if self.example:
            # Rank 0 prints the summary; after a re-formed cluster that may be any of the nodes.
            ends = [s for node in self.nodes for s in self.summaries(node) if s.get("status") == "finished"]
            summary = ends[-1] if ends else {}
            resumed = summary.get("resumed_from_step")
            self.check("resumed, not from zero", bool(resumed) and resumed >= saved_step,
                       f"the replacement resumed at step {resumed} (newest saved: {saved_step})")
            self.check("trained to the end", summary.get("status") == "finished"
                       and summary.get("step") == self.args.steps, f"final step {summary.get('step')} of"
                       f" {self.args.steps}")
            lost = None if stopped_at is None or resumed is None else max(0, stopped_at - resumed)
            self.lost = lost
        else:
            self.check_user_resume(replacement, saved_step)
        if getattr(self, "data", None):
            staged = [json.loads(p.read_text()) if (p := Path(n.config["paths"]["state"]) / "staging.json").exists()
                      else {} for n in self.nodes]
            runs = [(s.get("data"), n.config["paths"]["dataset"]) for n in self.nodes for s in self.summaries(n)]
            trained = not self.example or (bool(runs) and all(read == dataset for read, dataset in runs))
            self.check("data staged and trained on", all(s.get("state") == "staged" for s in staged) and trained,
                       ", ".join(f"{s.get('bytes')} of {s.get('totalBytes')} bytes {s.get('state')}" for s in staged)
                       + ("; the trainer read the staged set" if self.example and trained else ""))
        manifests = self.manifests()
        final = manifests[-1] if manifests else {}
        final_ok = bool(final) and self.verified(final) and (not self.example or self.steps_in(final) == self.args.steps)
        self.check("final checkpoint in the bucket", final_ok,
                   f"newest snapshot verified{f', step {self.steps_in(final)}' if self.example else ''}")
        reports = self.keys(layout.REPORT)
        wanted = [self.root + layout.report(n.instance_id, "summary.json") for n in self.nodes]
        diagnosed = ""
        if wanted and wanted[0] in reports:  # what scripts/report.py would say of the first node (fake GPU here)
            summary = json.loads(self.client.get_object(Bucket=self.bucket, Key=wanted[0])["Body"].read())
            diagnosed = f"; {(summary.get('diagnosis') or {}).get('headline', 'no diagnosis')}"
        self.check("report in the bucket", all(w in reports for w in wanted),
                   f"{len(reports)} report files, summary.json for {sum(w in reports for w in wanted)} of"
                   f" {len(wanted)} finished nodes{diagnosed}")
        releases = {n.instance_id: self.release_requests(n.instance_id) for n in self.nodes + self.retired}
        expected = {n.instance_id: self.releases_per_finished_node for n in self.nodes} | {
            n.instance_id: 0 for n in self.retired}
        if self.base["cluster"].get("poolName"):
            pools = [(markers[n.instance_id] or {}).get("pool") or {} for n in self.nodes]
            self.check("spot pool retired before release", all(p.get("retired") for p in pools),
                       "; ".join(f"{p.get('name')}: retired={p.get('retired')} {p.get('error', '')}".strip()
                                 for p in pools) + " (a live pool would relaunch the finished job)")
        if self.retired:
            self.setup.check(self.check, self.first_marker, markers.get(replacement.instance_id),
                             self.retired[0].instance_id, replacement.instance_id)
        self.check("release once per finished node", releases == expected,
                   ", ".join(f"{i}: {c}" for i, c in releases.items()) + " (the preempted node is reclaimed by"
                   " the cloud, not released)")

    def release_requests(self, instance_id: str) -> int:
        return len(self.api.release_requests(instance_id))

    def keep_bucket(self, out_root: Path, started: float) -> Path:
        """The bucket, copied out before its server stops, with what a real stack's outputs would say."""
        from tools.runlib import localbucket

        from components import billing, clock, cost, targets

        folder = localbucket.rehearsal_dir(out_root, self.stack)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        objects = localbucket.export(self.client, self.bucket, self.root, folder / "bucket")
        created = clock.rfc3339(datetime.fromtimestamp(started, timezone.utc))
        localbucket.write_record(folder, {
            "stack": self.stack, "provider": self.provider, "simulated": True, "objects": objects,
            "keptAt": time.time(), "sandbox": str(self.workdir),
            "nodeCount": self.count, "billing": self.spec.billing, "instanceType": self.spec.instance.name,
            "checkpoint": {"bucket": self.bucket, "prefix": self.spec.checkpoint.prefix},
            "expiresAt": clock.expiry(created, self.spec.max_hours), "startedAt": started,
            "costPerHour": cost.cost_output(self.spec, targets.of(self.spec).data_disks),
            "keepsBilling": billing.as_output(self.spec),
            "instanceIds": [n.instance_id for n in self.nodes]})
        return folder

    def stop(self) -> None:
        for node in self.nodes + self.retired:
            if node.process and node.process.poll() is None:
                os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait()
            node.metadata.stop()
        if self.api:
            self.api.stop()
        self.setup.stop()
        self.s3.stop()


LOG_TAIL_LINES = 8


def print_log_tails(rehearsal: Rehearsal, console) -> None:
    """Under a failed table: each node's last agent-log lines and where the whole log is."""
    if hasattr(rehearsal, "log_tail"):  # a platform job: its log, as the platform would show it
        lines = rehearsal.log_tail().splitlines()[-LOG_TAIL_LINES:]
        if lines:
            console.print(f"job log, last {LOG_TAIL_LINES} lines:", style="bold", highlight=False)
        for line in lines:
            console.print("  " + line[:300], markup=False, highlight=False, soft_wrap=True)
    for node in rehearsal.nodes + rehearsal.retired:
        text = node.agent_log()
        if not text:
            continue
        console.print(f"agent log of {node.instance_id}, last {LOG_TAIL_LINES} lines "
                      f"(all of it: {node.root / 'agent.out'}):", style="bold", highlight=False)
        for line in text.splitlines()[-LOG_TAIL_LINES:]:
            console.print("  " + line[:300], markup=False, highlight=False, soft_wrap=True)


RESULTS = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: "[yellow]unverified[/]"}


def print_table(rehearsal: Rehearsal) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"rehearsal of {rehearsal.stack}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail")
    for check in rehearsal.checks:
        table.add_row(check.name, RESULTS[check.ok], check.detail)
    lost = getattr(rehearsal, "lost", None)
    table.add_row("steps lost to preemption", "", "unknown" if lost is None else str(lost))
    console = Console(stderr=rehearsal.args.json)
    console.print(table)
    if any(c.ok is False for c in rehearsal.checks):
        print_log_tails(rehearsal, console)
    for check in rehearsal.checks:
        if check.ok is None:
            console.print(f"{check.name}: not verified, so the rehearsal does not pass (exit 1)", style="yellow",
                          highlight=False)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from components.nodeconfig import build_node_config
    from components.spec import SpecError
    from tools.stackfiles import StackFileError, stack_spec

    try:
        _, spec = stack_spec(args.stack)
    except (StackFileError, SpecError) as error:
        print(error.render(), file=sys.stderr)
        return EXIT_INVALID
    workdir = Path(tempfile.mkdtemp(prefix=f"rehearse-{args.stack}-"))
    if spec.platform:  # a platform job: its job API stand-in runs it (tools/platformrehearsal.py)
        from tools.platformrehearsal import PlatformRehearsal

        rehearsal = PlatformRehearsal(args, args.stack, spec, workdir, Check, rehearsal_command)
    elif spec.kubernetes:  # the Kubernetes path: the agent in pod mode (tools/podrehearsal.py)
        from tools.podrehearsal import pod_rehearsal

        rehearsal = pod_rehearsal(Rehearsal, args, args.stack, spec, build_node_config(spec, shared_fs_address=None),
                                  workdir)
    else:
        rehearsal = Rehearsal(args, args.stack, spec, build_node_config(spec, shared_fs_address=None), workdir)
    started, kept = time.time(), None
    if args.stock_out:
        from rich.console import Console

        from tools.localstack import failover_drill

        ok, detail = failover_drill(args.stack, Console(stderr=True), REPO)
        rehearsal.check("failover on a stock-out", ok, detail)
    try:
        rehearsal.run()
    except RuntimeError as error:
        rehearsal.check("drill", False, str(error)[:1000])
    except KeyboardInterrupt:
        rehearsal.check("drill", False, "interrupted")
    finally:
        try:
            if args.keep:  # before the S3 server stops: a failed drill's logs matter most
                kept = rehearsal.keep_bucket(args.out, started)
        except Exception as error:  # the checks stand without the copy
            print(f"rehearse: the bucket could not be kept: {type(error).__name__}: {error}", file=sys.stderr)
        rehearsal.stop()
    print_table(rehearsal)
    passed = bool(rehearsal.checks) and all(c.ok is True for c in rehearsal.checks)  # unverified is no pass
    if args.json:
        print(json.dumps({"stack": args.stack, "passed": passed, "nodes": rehearsal.count,
                          "launcher": getattr(rehearsal, "launcher", None), "ranksPerNode": getattr(rehearsal, "ranks", None),
                          "stepsLost": getattr(rehearsal, "lost", None), "workdir": str(workdir),
                          "unverified": [c.name for c in rehearsal.checks if c.ok is None],
                          "checks": [c.__dict__ for c in rehearsal.checks]}, indent=1))
    if kept:
        print(f"bucket kept: {kept} (try: gpu-training status {args.stack} --rehearsal; "
              f"gpu-training logs {args.stack} --rehearsal; gpu-training report {args.stack} --rehearsal)",
              file=sys.stderr)
    if args.keep_dir or not passed:
        print(f"sandbox kept: {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"sandbox {workdir} removed (--keep-dir keeps it)", file=sys.stderr)
    return EXIT_OK if passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
