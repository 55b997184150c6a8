"""The rehearsal of a Kubernetes stack (scripts/rehearse.py): the node agent in pod mode.

What differs from a VM rehearsal, and nothing else: each "pod" gets the pod node config the program
puts in its ConfigMap (components/kubernetes/manifests.py pod_node_config), the boot set with the
provider's pod runtime as cloud_runtime.py (as the boot-set ConfigMap carries it), the environment
Kubernetes gives an Indexed Job's pod (JOB_COMPLETION_INDEX, POD_IP, NODE_NAME), and the peers'
names resolve to this machine. The preemption is an eviction: SIGTERM to the agent, the container's
PID 1, as the kubelet sends it; the agent must save, upload, write PREEMPTED and exit with the code
the Job's podFailurePolicy recreates a pod for. The replacement is a new pod with the same index
(the same name) and empty volumes. Pods never ask the cloud to release anything.

The rehearsal class lives in scripts/rehearse.py (a script, not a package): it is passed in.
"""
from __future__ import annotations

import os
import signal

from components import providers
from components.kubernetes import manifests
from components.kubernetes.cluster import pod_runtime_path


def pod_rehearsal(rehearsal_class, args, stack, spec, base_config: dict, workdir):
    """An instance of a subclass of `rehearsal_class` that rehearses the pods of `spec`'s Job."""
    pod_role = providers.module(spec.provider, "cluster").pod_role_name(spec)
    base = manifests.pod_node_config(base_config, spec, pod_role)

    class PodRehearsal(rehearsal_class):
        releases_per_finished_node = 0

        def __init__(self):
            super().__init__(args, stack, spec, base, workdir)
            self.runtime_file = pod_runtime_path(spec.provider)
            self.exit_codes: dict[str, list[int]] = {}

        def new_id(self, index, replaces):
            # An Indexed Job recreates an evicted pod under its index, so its name comes back.
            return replaces.instance_id if replaces else f"{manifests.JOB}-{index}"

        def adapt(self, node):
            node.config["cluster"]["kubernetes"]["peerHost"] = "127.0.0.1"  # the headless Service's names, here

        def env(self, node):
            env = super().env(node)
            env.update({"JOB_COMPLETION_INDEX": node.instance_id.rsplit("-", 1)[1], "POD_IP": "127.0.0.1",
                        "NODE_NAME": f"node-of-{node.root.name}"})
            return env

        def preempt(self, victim):
            os.kill(victim.process.pid, signal.SIGTERM)  # the kubelet's eviction: SIGTERM to PID 1
            self.say(f"  eviction: SIGTERM to the agent of pod {victim.instance_id}")

        def verify(self, saved_step, stopped_at):
            super().verify(saved_step, stopped_at)
            evicted = [n.process.returncode for n in self.retired]
            finished = [n.process.returncode for n in self.nodes]
            self.check("pod exit codes", evicted == [manifests.EXIT_PREEMPTED] * len(evicted)
                       and finished == [0] * len(finished),
                       f"evicted pod exited {evicted} (the Job recreates it for {manifests.EXIT_PREEMPTED}),"
                       f" finished pods {finished}")

    return PodRehearsal()
