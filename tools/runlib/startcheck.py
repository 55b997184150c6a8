"""run.py's bound on a Kubernetes Job that never starts: the image cannot be pulled, or the pods cannot
be scheduled, and GPU nodes wait (and bill) until activeDeadlineSeconds (maxHours).

Once `job.startDeadlineMinutes` (the stack's kubernetes.startDeadlineMinutes) have passed since `up`
with no marker from any pod, run.py lists the Job's pods. If none is Running (or done), it deletes the
Job: its pods go, the autoscaler removes the idle GPU nodes (the pool scales back to zero), and the
run ends FAILED with the pods' own reason. Nothing can be lost: no pod ever ran the agent.

This check lives in run.py, so it needs run.py to be watching; without it, the Job's
activeDeadlineSeconds (maxHours) is the bound (docs/kubernetes.md, "Teardown").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .kubeapi import KubeApi, KubeApiError

# Why a pod is not running, as the API server reports it. A waiting container's reason (Kubernetes docs,
# "Images", ImagePullBackOff: https://kubernetes.io/docs/concepts/containers/images/#imagepullbackoff; the
# kubelet's image errors, kubernetes/kubernetes pkg/kubelet/images/types.go: ImagePullBackOff, ErrImagePull,
# ImageInspectError, ErrImageNeverPull, RegistryUnavailable, InvalidImageName) and the PodScheduled condition's reason (Kubernetes docs, "Pod
# Lifecycle", Pod conditions: PodScheduled False with reason Unschedulable).
STALL_REASONS = ("ImagePullBackOff", "ErrImagePull", "ImageInspectError", "ErrImageNeverPull", "RegistryUnavailable",
                 "InvalidImageName")
UNSCHEDULABLE = "Unschedulable"
STARTED_PHASES = ("Running", "Succeeded", "Failed")


def pod_stall(pod: dict) -> Optional[str]:
    """Why this pod has not started ("ImagePullBackOff: <message>"), or None when it has or no reason shows."""
    status = pod.get("status") or {}
    if status.get("phase") in STARTED_PHASES:
        return None
    for container in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STALL_REASONS:
            return f"{waiting['reason']}: {waiting.get('message') or 'no message'}"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"{condition.get('reason') or UNSCHEDULABLE}: {condition.get('message') or 'no message'}"
    return f"{status.get('phase') or 'Pending'}: no reason reported yet"


@dataclass
class StartCheck:
    """Called by the watcher on each poll while no pod has written a marker; returns why the Job was failed."""
    api: Callable[[], KubeApi]  # built lazily: a stack without the output never needs it
    namespace: str
    job: str
    deadline_s: float
    say: Callable[[str], None]
    done: bool = False

    def __call__(self, elapsed_s: float) -> Optional[str]:
        if self.done or elapsed_s < self.deadline_s:
            return None
        self.done = True  # one look: a failing API is reported once, and activeDeadlineSeconds stays the bound
        try:
            api = self.api()
            pods = api.pods(self.namespace, f"job-name={self.job}")
        except KubeApiError as exc:
            self.say(f"start check: the Job's pods cannot be read ({exc}); the Job keeps its own limit "
                     "(activeDeadlineSeconds = maxHours). Look with: "
                     f"kubectl -n {self.namespace} describe pods -l job-name={self.job}")
            return None
        if any((p.get("status") or {}).get("phase") in STARTED_PHASES for p in pods):
            return None
        reasons = sorted({f"{p.get('metadata', {}).get('name', '?')}: {pod_stall(p)}" for p in pods}) \
            or ["no pod was created (the Job's quota or admission refused them)"]
        minutes = self.deadline_s / 60
        why = (f"no pod of Job {self.namespace}/{self.job} is Running {minutes:g} minutes after `up` "
               f"(kubernetes.startDeadlineMinutes): " + "; ".join(reasons))
        try:
            api.delete_job(self.namespace, self.job)
        except KubeApiError as exc:
            return why + f". Deleting the Job failed ({exc}): destroy the stack, or delete it with kubectl"
        return why + ". The Job was deleted: its pods are gone and the GPU pool scales back to zero"
