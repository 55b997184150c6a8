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

import shlex
from dataclasses import dataclass

from node_agent import launch, layout

CHECKPOINTS = "platform/checkpoints/"
LOGS = "platform/logs/"
# The master's port when the platform sets no variable for it (launcherEnv without masterPort): a fixed default,
# which train.env may change (ModelArts sets none: its guides fix one in the boot script).
MASTER_PORT_ENV, MASTER_PORT = "GPU_TRAINING_MASTER_PORT", 29500


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
    return f"mkdir -p {shlex.quote(paths.checkpoints)} && cd {_quote_path(paths.code)} && {run}"


def _quote_path(path: str) -> str:
    """A path for sh that may hold ${VAR:-default} expansions (a platform's own variables): double quotes keep
    them expanding, and the characters that stay special there are escaped."""
    if "$" not in path:
        return shlex.quote(path)
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
