"""The training contract (docs/training-contract.md) as a platform job keeps it, for every platform.

The platform job runs the trainer directly (no node agent: the platform owns the machine, its restarts and
its end). The stack's bucket prefix `<prefix>/<stack>/` is mounted in the job's container at one path, so:

    <mount>/code/                    the training code (uploaded by `pulumi up`, as for VM nodes)
    <mount>/data/                    the packed data set (scripts/pack.py --upload; docs/data.md)
    <mount>/platform/checkpoints/    CKPT_DIR and RESUME_FROM: the trainer writes atomically and, after a
                                     restart, resumes from the newest checkpoint that loads (§3 there)
    <mount>/platform/logs/           the job's exported logs, where the platform offers an export

What the agent adds on VM nodes and a platform job does without: content-addressed snapshots with a
manifest, markers, the utilisation report and self-release (the platform ends the job at its max
running time instead). docs/platforms.md says so.
"""
from __future__ import annotations

import shlex

from node_agent import layout

CHECKPOINTS = "platform/checkpoints/"
LOGS = "platform/logs/"


def stack_root(spec) -> str:
    """'<prefix>/<stack>/' in the bucket (node_agent.layout)."""
    return layout.stack_root(spec.checkpoint.prefix, spec.stack)


def environment(spec, mount: str) -> dict[str, str]:
    """The contract's environment (§1) for a job whose stack prefix is mounted at `mount`."""
    checkpoints = f"{mount}/{CHECKPOINTS}".rstrip("/")
    env = {"CKPT_DIR": checkpoints, "RESUME_FROM": checkpoints, "GPU_TRAINING_PLATFORM": spec.platform.offer.kind,
           "GPU_TRAINING_STACK": spec.stack}
    if spec.data.stage:
        env["GPU_TRAINING_DATA"] = f"{mount}/{layout.DATA}".rstrip("/")
    return {**env, **dict(spec.train.env)}


def command(spec, mount: str) -> str:
    """The job's command: create the checkpoint folder, then the user's train.command in the code folder.
    With train.launcher torchrun it runs under torchrun as the agent does (node/node_agent/agent.py), its
    node count, rank and master read from the variables the platform sets (platform.yaml launcherEnv)."""
    code = f"{mount}/{layout.CODE}".rstrip("/")
    checkpoints = f"{mount}/{CHECKPOINTS}".rstrip("/")
    run = spec.train.command
    if spec.train.launcher == "torchrun":
        words = shlex.split(run)
        # torchrun takes the script itself; a command that is not python runs with --no-python.
        words = words[1:] if words[0].rsplit("/", 1)[-1].startswith("python") else ["--no-python", *words]
        names = spec.platform.offer.data["launcherEnv"]
        run = (f"torchrun --nnodes ${{{names['nnodes']}:-1}} --node_rank ${{{names['nodeRank']}:-0}}"
               f" --master_addr ${{{names['masterAddr']}:-127.0.0.1}} --master_port ${{{names['masterPort']}:-29500}}"
               f" --nproc_per_node {spec.gpus_per_node} {shlex.join(words)}")
    return f"mkdir -p {shlex.quote(checkpoints)} && cd {shlex.quote(code)} && {run}"
