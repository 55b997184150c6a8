"""The training contract (docs/training-contract.md) as a platform job keeps it, for every platform.

The platform job runs the trainer directly (no node agent: the platform owns the machine, its restarts and
its end). Where the job finds the stack's files in its container is the platform's (its job.py `paths`):

    code         the training code (uploaded by `pulumi up` to <prefix>/<stack>/code/, as for VM nodes)
    data         the packed data set (<prefix>/<stack>/data/: scripts/pack.py --upload; docs/data.md)
    checkpoints  CKPT_DIR and RESUME_FROM (<prefix>/<stack>/platform/checkpoints/): the trainer writes
                 atomically and, after a restart, resumes from the newest checkpoint that loads (§3 there)

PAI-DLC mounts the whole stack prefix (DataSources), so the three are folders of one mount; a ModelArts job
on a public pool gets its code through algorithm.code_dir (downloaded to ${MA_JOB_DIR}/<last folder>), its
data through an input and its checkpoints through an output channel (components/providers/huaweicloud/
modelarts/job.py).

What the agent adds on VM nodes and a platform job does without: content-addressed snapshots with a
manifest, markers, the utilisation report and self-release (the platform ends the job at its max
running time instead). docs/platforms.md says so.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from node_agent import launch, layout
from node_agent import setup as node_setup

CHECKPOINTS = "platform/checkpoints/"
LOGS = "platform/logs/"
# The master's port when the platform sets no variable for it (launcherEnv without masterPort): a fixed default,
# which train.env may change (ModelArts sets none: its guides fix one in the boot script).
MASTER_PORT_ENV, MASTER_PORT = "GPU_TRAINING_MASTER_PORT", 29500
# Where the job's setup keeps the framework's versions as pip constraints (a file of the container's, not the mount).
SETUP_CONSTRAINTS = "/tmp/gpu-training-constraints.txt"
# Prints the framework's installed versions as pip constraints (name==version), as node_agent/setup.py keeps them.
PINS = ("import importlib.metadata as m\n"
        f"for n in {json.dumps(node_setup.FRAMEWORK)}:\n"
        '    try:\n        print(n + "==" + m.version(n))\n'
        "    except m.PackageNotFoundError:\n        pass\n")


@dataclass(frozen=True)
class JobPaths:
    """Where the job's command finds the stack's files in its container. `code` may use the platform's own
    variables (it appears in the command only); `checkpoints` and `data` go into the environment as they are."""
    code: str
    checkpoints: str
    data: str


def mounted(mount: str) -> JobPaths:
    """The paths of a job that mounts the whole <prefix>/<stack>/ at `mount`."""
    return JobPaths(f"{mount}/{layout.CODE}".rstrip("/"), f"{mount}/{CHECKPOINTS}".rstrip("/"),
                    f"{mount}/{layout.DATA}".rstrip("/"))


def stack_root(spec) -> str:
    """'<prefix>/<stack>/' in the bucket (node_agent.layout)."""
    return layout.stack_root(spec.checkpoint.prefix, spec.stack)


def environment(spec, paths: JobPaths) -> dict[str, str]:
    """The contract's environment (§1) for a job whose files are at `paths`."""
    env = {"CKPT_DIR": paths.checkpoints, "RESUME_FROM": paths.checkpoints,
           "GPU_TRAINING_PLATFORM": spec.platform.offer.kind, "GPU_TRAINING_STACK": spec.stack}
    if spec.data.stage:
        env["GPU_TRAINING_DATA"] = paths.data
    if spec.train.launcher == "torchrun":
        env.update(launch.ENV)  # as the agent sets them for its ranks
    return {**env, **dict(spec.train.env)}


def command(spec, paths: JobPaths) -> str:
    """The job's command: create the checkpoint folder, then the user's train.command in the code folder.
    With train.launcher torchrun it runs under torchrun as the agent does (node/node_agent/launch.py: every
    rank runs the command through /bin/sh -c), its node count, rank and master read from the variables the
    platform sets (platform.yaml launcherEnv: the master is the first of `masterHosts`, a comma-separated
    list, or `masterAddr`)."""
    run = spec.train.command
    if spec.train.launcher == "torchrun":
        # Each rank runs the whole command through sh, as on a VM or a pod (node_agent/launch.py).
        words = launch.per_rank(run)
        names = spec.platform.offer.data["launcherEnv"]
        hosts = names.get("masterHosts") or names["masterAddr"]
        port = names.get("masterPort") or MASTER_PORT_ENV
        # The first host of the list (sh: ${VAR%%,*}), 127.0.0.1 where the platform sets none (one node).
        master = f"GPU_TRAINING_MASTER=${{{hosts}:-127.0.0.1}} && "
        run = (f"{master}torchrun --nnodes ${{{names['nnodes']}:-1}} --node_rank ${{{names['nodeRank']}:-0}}"
               f" --master_addr ${{GPU_TRAINING_MASTER%%,*}} --master_port ${{{port}:-{MASTER_PORT}}}"
               f" --nproc_per_node {spec.gpus_per_node} {shlex.join(words)}")
    steps = setup(spec)
    return (f"mkdir -p {shlex.quote(paths.checkpoints)} && cd {_quote_path(paths.code)} && "
            + (f"{steps} && " if steps else "") + run)


def setup(spec) -> str:
    """The stack's setup as shell text the job runs in the code folder before train.command (training-contract.md
    §6): the framework's installed versions as pip constraints (as the agent keeps them), `python -m pip install
    -r <train.requirements>`, then each train.setup command through `sh -c`, each step announced on the job's
    log; the first that fails ends the job (exit 1) with a line naming it, so nothing trains half-installed and
    the platform ends the job (it stops billing). "" when the stack names none. No agent runs on a platform, so
    there is no wheel cache in the bucket: a restarted worker installs again."""
    train = spec.train
    if not (train.setup or train.requirements):
        return ""
    steps = [("train.requirements", train.requirements, f"python -m pip install -r {shlex.quote(train.requirements)}")
             ] if train.requirements else []
    steps += [(f"train.setup[{i}]", command, f"sh -c {shlex.quote(command)}") for i, command in enumerate(train.setup)]
    lines = ["gpu_training_t0=$(date +%s)",
             f"{{ python -c {shlex.quote(PINS)} > {SETUP_CONSTRAINTS} || : > {SETUP_CONSTRAINTS}; }}",
             f"export PIP_CONSTRAINT={SETUP_CONSTRAINTS} PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1"]
    for key, text, shell in steps:
        label = f"{key} ({_short(text)})"
        failed = shlex.quote(f"gpu-training: setup failed: {label} exited")
        lines.append(f"echo {shlex.quote('gpu-training: setup: ' + label)}")
        lines.append(f"{{ {shell} </dev/null || {{ rc=$?; echo {failed} \"$rc: not training\" >&2; exit 1; }}; }}")
    lines.append('echo "gpu-training: setup: done in $(( $(date +%s) - gpu_training_t0 )) s"')
    return " && ".join(lines)


def _short(text: str, width: int = 120) -> str:
    """A command on one line of the log: newlines as '; ', cut at `width`."""
    one = "; ".join(line.strip() for line in text.splitlines() if line.strip())
    return one if len(one) <= width else one[:width - 3] + "..."


def _quote_path(path: str) -> str:
    """A path for sh that may hold ${VAR:-default} expansions (a platform's own variables): double quotes keep
    them expanding, and the characters that stay special there are escaped."""
    if "$" not in path:
        return shlex.quote(path)
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
