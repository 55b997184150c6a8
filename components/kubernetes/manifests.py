"""The Kubernetes objects of a training run, as plain dicts (apiVersion, kind, metadata, spec).

Pure functions of the validated Spec and a few names the cluster part supplies: the tests check every
object against the OpenAPI (JSON) schemas of the pinned Kubernetes version (tests/kubernetes), and
workload.py hands the same dicts to pulumi-kubernetes.

The mechanism (docs/kubernetes.md, "The training Job"): an Indexed Job of N pods, one per GPU node,
with a headless Service that gives each pod a stable DNS name `<job>-<index>.<service>`; pod 0 is the
torchrun rendezvous host. No CRD and no operator: Job and Service are core APIs (Indexed Jobs GA in
1.24, podFailurePolicy GA in 1.31). The cluster's gang scheduler places all N pods or none (the
provider's gang labels); an evicted pod is recreated with the same index and name, and the
podFailurePolicy keeps evictions and preemptions from counting as failures.

The pod: the node agent is the entrypoint wrapper. Its boot set comes from a ConfigMap, the rest is
fetched and verified from the bucket (as on a VM), and it starts torchrun with the stack's command.
"""
from __future__ import annotations

import json
import shlex
from urllib.parse import urlsplit
from dataclasses import dataclass, field
from typing import Any, Mapping

from components.spec import Spec

JOB = "train"
SERVICE = "train"
SERVICE_ACCOUNT = "trainer"
NODE_CONFIG = "node-config"
BOOT_SET = "agent-boot-set"
CONTAINER = "trainer"
# The label the GPU node pool carries and the pods select (components/providers/<cloud>/cluster.py).
POOL_LABEL = "gpu-training/pool"
STACK_LABEL = "gpu-training/stack"
GPU_RESOURCE = "nvidia.com/gpu"
# The GPU pool's taint: only pods that tolerate it (the training pods) land on GPU nodes.
GPU_TAINT = {"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}
# The agent's exit codes in a pod (components/providers/<cloud>/pod_runtime.py, exit_code): preempted
# (the Job recreates the pod, not counted as a failure), failed (the Job fails; no retry of a failing run).
EXIT_PREEMPTED, EXIT_FAILED = 75, 76
PATHS = {"config": "/etc/gpu-training", "boot": "/etc/gpu-training/boot", "agent": "/opt/gpu-training/agent",
         "data": "/data", "state": "/var/lib/gpu-training", "logs": "/var/log/gpu-training"}
# Seconds the agent needs after SIGTERM: the trainer's grace (agent.maxGraceSeconds) and the final upload.
STOP_ALLOWANCE_SECONDS = 120 + 90
RESTART_SECONDS = 30  # between agent restarts in the pod (systemd's RestartSec on a VM)


@dataclass(frozen=True)
class ClusterBindings:
    """What the provider's cluster part decides for the pods (components/providers/<cloud>/cluster.py)."""
    namespace_labels: Mapping[str, str] = field(default_factory=dict)  # e.g. turning on workload identity
    service_account_annotations: Mapping[str, Any] = field(default_factory=dict)  # e.g. the pod's cloud role


def labels(spec: Spec) -> dict[str, str]:
    return {STACK_LABEL: spec.stack, "app.kubernetes.io/managed-by": "gpu-training"}


def namespace(spec: Spec, bindings: ClusterBindings) -> dict:
    # The pods need nothing privileged: the baseline Pod Security Standard is enforced.
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": spec.kubernetes.namespace,
                         "labels": {**labels(spec), "pod-security.kubernetes.io/enforce": "baseline",
                                    **bindings.namespace_labels}}}


def service_account(spec: Spec, bindings: ClusterBindings) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": spec.kubernetes.namespace, "labels": labels(spec),
                         "annotations": dict(bindings.service_account_annotations)},
            # The pods talk to the bucket, never to the Kubernetes API: no API token in the pod.
            "automountServiceAccountToken": False}


def config_map(spec: Spec, name: str, data: Mapping[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": spec.kubernetes.namespace, "labels": labels(spec)},
            "data": dict(data)}


def headless_service(spec: Spec) -> dict:
    port = 29400
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": spec.kubernetes.namespace, "labels": labels(spec)},
            "spec": {"clusterIP": "None", "selector": {"job-name": JOB, STACK_LABEL: spec.stack},
                     # Names resolve before the pods are ready: torchrun's rendezvous runs before readiness.
                     "publishNotReadyAddresses": True,
                     "ports": [{"name": "rendezvous", "port": port, "targetPort": port, "protocol": "TCP"}]}}


def entrypoint(paths: Mapping[str, str] = PATHS, python: str = "python") -> str:
    """The container's script, the pod's stand-in for the VM's systemd unit (docs/kubernetes.md):
    the boot set into a writable folder, fetch and verify the rest of the agent, then run the agent.

    The agent runs as the shell's child, and the shell passes the kubelet's SIGTERM on to it. As
    systemd's Restart=on-failure does on a VM, the agent is started again in the same pod (same
    volumes, so its state and unsaved checkpoints are still there) when it exits 1 (the store or the
    metadata unreachable beyond its retries) or 3 (the final upload failed: data only on this disk);
    any other code is the pod's (0 done, 75 preempted, 76 failed: the Job's podFailurePolicy)."""
    return prepare_script(paths, python) + run_script(paths, python)


def prepare_script(paths: Mapping[str, str] = PATHS, python: str = "python") -> str:
    """The boot set from its ConfigMap into the writable agent folder, then the rest fetched and verified."""
    return "\n".join([
        "set -u",
        f"mkdir -p {paths['agent']}/node_agent",
        f"cp {paths['boot']}/*.py {paths['agent']}/node_agent/ || exit 1",
        f"export PYTHONPATH={paths['agent']}",
        f"{python} -m node_agent.fetch --config {paths['config']}/node.json || exit 1",
    ]) + "\n"


def run_script(paths: Mapping[str, str] = PATHS, python: str = "python", restart_seconds: float = RESTART_SECONDS) -> str:
    """The agent as the shell's child: SIGTERM passed on, restarted on 1 and 3, any other code the pod's."""
    config = f"{paths['config']}/node.json"
    return "\n".join([
        f"export PYTHONPATH={paths['agent']}",
        "child=",
        "trap '[ -n \"$child\" ] && kill -TERM \"$child\" 2>/dev/null' TERM",
        "while :; do",
        f"  {python} -m node_agent --config {config} &",
        "  child=$!",
        "  wait \"$child\"; rc=$?",
        "  while kill -0 \"$child\" 2>/dev/null; do wait \"$child\"; rc=$?; done",  # woken by the trap
        f"  case $rc in 1|3) echo \"node agent exited $rc: starting it again in {restart_seconds:g} s\"; "
        f"sleep {restart_seconds:g};; *) exit $rc;; esac",
        "done",
    ]) + "\n"


def _install_step(spec: Spec) -> str:
    """The agent's Python packages, installed before the entrypoint (the training image may lack them)."""
    packages = [p for p in spec.profile.node.requirements if not p.startswith("alibabacloud_ecs")]
    index = spec.profile.node.pip_index
    options = f" --index-url {shlex.quote(index)}" if index else ""
    if index and index.startswith("http://"):  # an in-VPC mirror over plain HTTP: pip ignores it unless trusted,
        options += f" --trusted-host {shlex.quote(urlsplit(index).hostname)}"  # as the VM bootstrap's pip.conf does
    return f"python -m pip install --quiet --no-cache-dir{options} {shlex.join(packages)}"


def job(spec: Spec) -> dict:
    """The Indexed Job: N pods, all or none, each with the node's GPUs."""
    nodes, instance = spec.nodes, spec.instance
    gang = spec.kubernetes.offer.gang_labels
    pod_labels = {**labels(spec), gang["name"]: f"{spec.stack}-{JOB}", gang["min"]: str(nodes)}
    # Most of the node for the pod; the rest is the kubelet's, the system daemons' and ACK's agents'.
    cpu, memory = max(1, int(instance.vcpus * 0.75)), max(1, int(instance.memory_gb * 0.75))
    shm = max(1, min(64, int(instance.memory_gb * 0.25)))
    container = {
        "name": CONTAINER, "image": spec.kubernetes.image,
        "command": ["/bin/sh", "-c", f"{_install_step(spec)} || exit 1\n{entrypoint()}"],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
        "resources": {"limits": {GPU_RESOURCE: str(spec.gpus_per_node)},
                      "requests": {GPU_RESOURCE: str(spec.gpus_per_node), "cpu": str(cpu), "memory": f"{memory}Gi"}},
        "ports": [{"name": "rendezvous", "containerPort": 29400, "protocol": "TCP"}],
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "data", "mountPath": PATHS["data"]},
            {"name": "state", "mountPath": PATHS["state"]},
            {"name": "logs", "mountPath": PATHS["logs"]},
            {"name": "agent", "mountPath": PATHS["agent"]},
            {"name": NODE_CONFIG, "mountPath": PATHS["config"] + "/node.json", "subPath": "node.json",
             "readOnly": True},
            {"name": BOOT_SET, "mountPath": PATHS["boot"], "readOnly": True},
        ],
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    pod = {
        # The cluster autoscaler never moves a running training pod to free a node (its GPU use dips while
        # it stages data or uploads a checkpoint); nodes go once the pods are done.
        "metadata": {"labels": pod_labels, "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}},
        "spec": {
            "subdomain": SERVICE,  # <job>-<index>.<service>: the stable names the rendezvous uses
            "serviceAccountName": SERVICE_ACCOUNT,
            "restartPolicy": "Never",  # podFailurePolicy needs it; the Job recreates the pod instead
            "terminationGracePeriodSeconds": STOP_ALLOWANCE_SECONDS,
            "nodeSelector": {POOL_LABEL: "gpu"},
            "tolerations": [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}],
            "containers": [container],
            "volumes": [
                # DataLoader workers share batches through /dev/shm; the container default is 64 MiB.
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Gi"}},
                # On the node's encrypted data disk (the node pool's, where the kubelet keeps emptyDirs).
                {"name": "data", "emptyDir": {"sizeLimit": f"{max(10, spec.data_disk.size_gb - 50)}Gi"}},
                {"name": "state", "emptyDir": {}},
                {"name": "logs", "emptyDir": {}},
                {"name": "agent", "emptyDir": {}},
                {"name": NODE_CONFIG, "configMap": {"name": NODE_CONFIG}},
                {"name": BOOT_SET, "configMap": {"name": BOOT_SET}},
            ],
        },
    }
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": JOB, "namespace": spec.kubernetes.namespace, "labels": labels(spec)},
        "spec": {
            "completionMode": "Indexed", "completions": nodes, "parallelism": nodes,
            # A run that ends FAILED fails the Job at once; an upload that failed (exit 3) is retried.
            "backoffLimit": 3,
            "activeDeadlineSeconds": int(spec.max_hours * 3600),
            "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "Ignore", "onExitCodes": {"containerName": CONTAINER, "operator": "In",
                                                     "values": [EXIT_PREEMPTED]}},
                {"action": "FailJob", "onExitCodes": {"containerName": CONTAINER, "operator": "In",
                                                      "values": [EXIT_FAILED]}},
            ]},
            "template": pod,
        },
    }


def pod_node_config(base: dict, spec: Spec, pod_role: str) -> dict:
    """The VM node config (components/nodeconfig.py) as a pod reads it: pod paths, the pod's role, the
    Job's names for rank and rendezvous, no spot pool to retire and no machine to release."""
    config = json.loads(json.dumps(base))
    config["paths"].update({"data": PATHS["data"], "checkpoints": PATHS["data"] + "/checkpoints",
                            "dataset": PATHS["data"] + "/dataset", "state": PATHS["state"], "logs": PATHS["logs"],
                            "venv": "", "agent": PATHS["agent"], "shared": None})
    config["train"]["workdir"] = PATHS["data"] + "/work"
    config["identity"] = {"roleName": pod_role}
    config["cluster"] = {"tagKey": STACK_LABEL, "tagValue": spec.stack, "poolName": None,
                         "kubernetes": {"namespace": spec.kubernetes.namespace, "job": JOB, "service": SERVICE,
                                        "peerHost": "{job}-{index}.{service}"}}
    config["runtime"] = "pod"
    return config


def all_objects(spec: Spec, bindings: ClusterBindings, node_config: dict, boot_files: Mapping[str, str]) -> list[dict]:
    """Every object, in the order they must exist: namespace first, the Job last."""
    return [namespace(spec, bindings), service_account(spec, bindings),
            config_map(spec, NODE_CONFIG, {"node.json": json.dumps(node_config, indent=1, sort_keys=True)}),
            config_map(spec, BOOT_SET, boot_files), headless_service(spec), job(spec)]
