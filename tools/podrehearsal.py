"""The rehearsal of a Kubernetes stack (scripts/rehearse.py): the node agent in pod mode.

What differs from a VM rehearsal, and nothing else: each "pod" gets the pod node config the program
puts in its ConfigMap (components/kubernetes/manifests.py pod_node_config), the boot set with the
provider's pod runtime as cloud_runtime.py (as the boot-set ConfigMap carries it), the environment
Kubernetes gives an Indexed Job's pod (JOB_COMPLETION_INDEX, POD_IP, NODE_NAME), and the peers'
names resolve to this machine. The preemption is an eviction: SIGTERM to the agent, the container's
PID 1, as the kubelet sends it; the agent must save, upload, write PREEMPTED and exit with the code
the Job's podFailurePolicy recreates a pod for. The replacement is a new pod with the same index
(the same name) and empty volumes. Pods never ask the cloud to release anything. Bucket credentials
come by RRSA, as ack-pod-identity-webhook sets it up (the role, OIDC provider and token file in the
environment), from the provider's STS stand-in (`Sts` in localcloud/standins/<cloud>.py): never from the node.

The rehearsal class lives in scripts/rehearse.py (a script, not a package): it is passed in.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from components import providers
from localcloud import standins
from components.kubernetes import manifests
from components.kubernetes.training import boot_set, pod_runtime_path


def pod_rehearsal(rehearsal_class, args, stack, spec, base_config: dict, workdir):
    """An instance of a subclass of `rehearsal_class` that rehearses the pods of `spec`'s Job."""
    pod_role = providers.module(spec.provider, "cluster").pod_role_name(spec)
    base = manifests.pod_node_config(base_config, spec, pod_role)

    class PodRehearsal(rehearsal_class):
        releases_per_finished_node = 0

        def __init__(self):
            super().__init__(args, stack, spec, base, workdir)
            self.runtime_file = pod_runtime_path(spec.provider)
            sts = standins.of(spec.provider).Sts
            self.token_file = workdir / "oidc-token"
            self.token_file.write_text("service-account-token-of-trainer")
            self.role_arn, self.oidc_arn = f"acs:ram::1:role/{pod_role}", "acs:ram::1:oidc-provider/ack-rrsa-local"
            self.sts = sts(self.role_arn, self.oidc_arn, self.token_file.read_text())

        def new_id(self, index, replaces):
            # An Indexed Job recreates an evicted pod under its index, so its name comes back.
            return replaces.instance_id if replaces else f"{manifests.JOB}-{index}"

        def adapt(self, node):
            node.config["cluster"]["kubernetes"]["peerHost"] = "127.0.0.1"  # the headless Service's names, here

        def env(self, node):
            env = super().env(node)
            env.update({"JOB_COMPLETION_INDEX": node.instance_id.rsplit("-", 1)[1], "POD_IP": "127.0.0.1",
                        "NODE_NAME": f"node-of-{node.root.name}", "ALIBABA_CLOUD_ROLE_ARN": self.role_arn,
                        "ALIBABA_CLOUD_OIDC_PROVIDER_ARN": self.oidc_arn,
                        "ALIBABA_CLOUD_OIDC_TOKEN_FILE": str(self.token_file),
                        "GPU_TRAINING_STS_ENDPOINT": self.sts.url})
            return env

        def paths(self, node):
            return {"config": str(node.root), "boot": str(node.root / "boot"), "agent": str(node.root / "agent")}

        def boot_set(self, node):
            """The boot-set ConfigMap's files, as the program puts them in it."""
            (node.root / "boot").mkdir(exist_ok=True)
            for name, content in boot_set(spec.provider).items():
                (node.root / "boot" / name).write_text(content, encoding="utf-8")

        def fetch(self, node):
            """The container script's first half: the boot set copied out, the rest fetched and verified."""
            return subprocess.run(["sh", "-c", manifests.prepare_script(self.paths(node), sys.executable)],
                                  env=self.env(node), capture_output=True, text=True, timeout=120)

        def start(self, node):
            """The container script's second half, as the pod's PID 1: the agent under the restart loop."""
            out = open(node.root / "agent.out", "ab")
            node.process = subprocess.Popen(["sh", "-c", manifests.run_script(self.paths(node), sys.executable)],
                                            env=self.env(node), stdout=out, stderr=subprocess.STDOUT,
                                            cwd=node.root, start_new_session=True)

        def preempt(self, victim):
            os.kill(victim.process.pid, signal.SIGTERM)  # the kubelet's eviction: SIGTERM to the container's PID 1
            self.say(f"  eviction: SIGTERM to pod {victim.instance_id}'s container")

        def verify(self, saved_step, stopped_at):
            super().verify(saved_step, stopped_at)
            evicted = [n.process.returncode for n in self.retired]
            finished = [n.process.returncode for n in self.nodes]
            self.check("pod exit codes", evicted == [manifests.EXIT_PREEMPTED] * len(evicted)
                       and finished == [0] * len(finished),
                       f"evicted pod exited {evicted} (the Job recreates it for {manifests.EXIT_PREEMPTED}),"
                       f" finished pods {finished}")
            node_role_reads = [line for n in self.nodes + self.retired for line in n.metadata.log
                               if "security-credentials" in str(line)]
            assumed = [r for r in self.sts.requests if r.get("action") == "AssumeRoleWithOIDC"]
            self.check("pod credentials by RRSA", bool(assumed) and not node_role_reads,
                       f"{len(assumed)} AssumeRoleWithOIDC calls for {pod_role}; {len(node_role_reads)} reads of a"
                       " node role from the metadata service")

        def stop(self):
            super().stop()
            self.sts.stop()

    return PodRehearsal()
