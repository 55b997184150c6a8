"""The node agent's runtime in a pod of the training Job (the Kubernetes path), minus the cloud's credentials.

The same contract as a cloud's node_runtime.py (components/providers/contract.py, NodeRuntime), seen from a
pod (components/kubernetes/manifests.py) instead of an instance. All of it is Kubernetes', not a cloud's,
so a cloud's pod_runtime.py subclasses PodRuntime and writes only credentials():
- identity: the pod's stable name `<job>-<index>` (an Indexed Job recreates an evicted pod under the
  same index: JOB_COMPLETION_INDEX), its IP from the downward API (POD_IP), the region from the node config;
- eviction: the kubelet's SIGTERM (the agent saves and uploads); a cloud whose pods can read their node's
  spot notice overrides spot_notice() (Alibaba's), for the notice's grace as on a VM;
- peers: the Job's N pod names, resolvable through the headless Service; pod 0 hosts the rendezvous;
- release and pool: nothing. The Job ends when its pods do; the autoscaler removes idle GPU nodes;
- exit_code(outcome): how the pod ends, read by the Job's podFailurePolicy (manifests.EXIT_*).

Rides in the pods' boot set (components/artifacts.POD_BOOT_SET) beside the cloud's file, which the boot
set carries as node_agent/cloud_runtime.py; standard library only, as the rest of the boot set.
"""
import os
import socket

# The Job's podFailurePolicy (components/kubernetes/manifests.py): 75 recreate, 76 fail the Job.
EXIT_CODES = {'DONE': 0, 'PREEMPTED': 75, 'FAILED': 76}


class PodRuntime:
    """One pod of the training Job; a cloud's Runtime adds credentials()."""

    def __init__(self, cfg, metadata):
        self.cfg, self.metadata = cfg, metadata
        self.k8s = cfg['cluster']['kubernetes']
        self.index = int(os.environ.get('JOB_COMPLETION_INDEX', '0'))  # set by Kubernetes for Indexed Jobs

    def _name(self, index):
        return f"{self.k8s['job']}-{index}"

    def instance_id(self):
        return self._name(self.index)

    def placement(self):
        return self.cfg['region'], os.environ.get('NODE_NAME') or 'unknown-node'

    def private_ip(self):
        return os.environ.get('POD_IP') or socket.gethostbyname(socket.gethostname())

    def credentials(self):
        raise NotImplementedError('the cloud\'s pod_runtime.py writes credentials()')

    def spot_notice(self):
        return None  # a reclaimed spot node is drained: the agent gets SIGTERM with the grace period

    def release(self):
        return None  # the pod exits; the Job completes and the autoscaler removes the idle node

    def retire_pool(self):
        return 'a pod has no pool to retire: the GPU node pool scales to zero when idle'

    def peers(self):
        """(pod name, DNS name) of every pod of the Job; the same list on every pod."""
        host = self.k8s['peerHost']
        return [(self._name(i), host.format(job=self.k8s['job'], index=i, service=self.k8s['service']))
                for i in range(int(self.cfg['nodeCount']))]

    def exit_code(self, outcome):
        return EXIT_CODES.get(outcome, 1)
