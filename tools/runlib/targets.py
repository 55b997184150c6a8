"""The run side of the target seam: how `up`, `status`, `logs`, `report` and `down` follow a stack's run, by the
run style its target declares (components/targets/base.py RUN_STYLES), found from the stack's `target` output
with one registry lookup (components.targets.of_outputs). No tool reads other output names to decide.

    nodes  the node agent's markers, logs and report in the bucket: up watches the markers for nodeCount nodes
    pods   the same agent in a Kubernetes Job's pods; plus the Job's start deadline and how a pod retries
    job    a platform job: up watches the job's state through the platform's job API, status shows it, logs
           come from it, down stops it; no markers and no utilisation report (the platform runs no agent)
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional


class RunStyle:
    """VM nodes with the agent (`nodes`): everything is in the bucket."""
    name = "nodes"
    markers = True          # the agent writes markers, logs and reports to <bucket>/<prefix>/<stack>/
    report = True           # the utilisation report exists (report.py reads it)

    def __init__(self, target):
        self.target = target

    def job_state(self, outputs: Mapping) -> Optional[dict]:
        """status: the run's state from elsewhere than the markers (None: the markers say it all)."""
        return None

    def log(self, outputs: Mapping) -> Optional[str]:
        """logs: the run's log from elsewhere than the bucket (None: read the bucket)."""
        return None

    def start_check(self, outputs: Mapping, say: Callable[[str], None]):
        """up: what ends a watch on a run that never starts (None: the timeout and the TTL)."""
        return None

    def restart_agent(self, outputs: Mapping) -> Optional[str]:
        """What run.py prints to retry a node's final upload (None: the node's systemd unit)."""
        return None


class PodsRun(RunStyle):
    """The agent in a Kubernetes Job's pods (`pods`)."""
    name = "pods"

    def start_check(self, outputs: Mapping, say: Callable[[str], None]):
        from .kubeapi import KubeApi
        from .startcheck import StartCheck

        job, kubeconfig = outputs.get("job"), outputs.get("kubeconfig")
        if not isinstance(job, Mapping) or not job.get("startDeadlineMinutes") or not isinstance(kubeconfig, str):
            return None
        return StartCheck(api=lambda: KubeApi.from_kubeconfig(kubeconfig), namespace=str(job["namespace"]),
                          job=str(job["name"]), deadline_s=float(job["startDeadlineMinutes"]) * 60, say=say)

    def restart_agent(self, outputs: Mapping) -> Optional[str]:
        value = outputs.get("restartAgent")
        return value if isinstance(value, str) else None


class JobRun(RunStyle):
    """A platform job (`job`): its job API knows its state and its log."""
    name = "job"
    markers = False
    report = False

    def job_state(self, outputs: Mapping) -> Optional[dict]:
        from . import platformjob

        try:
            return platformjob.job_state(outputs)
        except platformjob.JobUnreachable as error:
            return {"error": str(error)}

    def log(self, outputs: Mapping) -> Optional[str]:
        from . import platformjob

        return platformjob.job_log(outputs)  # JobUnreachable says why not


STYLES: dict[str, type[RunStyle]] = {"nodes": RunStyle, "pods": PodsRun, "job": JobRun}


def for_outputs(outputs: Mapping) -> RunStyle:
    """The run style of a deployed stack (or of its offline outputs), from its `target` output."""
    from components import targets

    target = targets.of_outputs(outputs)
    return STYLES[target.run](target)
