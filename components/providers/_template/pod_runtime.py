"""__Cloud__ side of the node agent in a pod of the training Job (the Kubernetes path): the pod runtime.

The same contract as node_runtime.py (components/providers/contract.py, NodeRuntime), seen from a pod
(components/kubernetes/manifests.py) instead of an instance. Only credentials() is the cloud's:
- identity: the pod's stable name `<job>-<index>` (an Indexed Job recreates an evicted pod under the
  same index), its IP from the downward API (POD_IP), the region from the node config;
- credentials: the pods' role through the cloud's workload identity (cluster.py's ServiceAccount
  annotation); TODO(__cloud__): the token exchange its doc describes;
- eviction: the kubelet's SIGTERM (the agent saves and uploads), so no spot notice is polled;
- peers: the Job's N pod names, resolvable through the headless Service; pod 0 hosts the rendezvous;
- release and pool: nothing. The Job ends when its pods do; the autoscaler removes idle GPU nodes;
- exit_code(outcome): how the pod ends, read by the Job's podFailurePolicy (manifests.EXIT_*).

Self-contained like node_runtime.py: the ConfigMap of the boot set carries it as node_agent/cloud_runtime.py.
"""
import os
import socket

# The Job's podFailurePolicy (components/kubernetes/manifests.py): 75 recreate, 76 fail the Job.
EXIT_CODES = {'DONE': 0, 'PREEMPTED': 75, 'FAILED': 76}


class Runtime:
    """One pod of the training Job."""

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
        raise NotImplementedError('__cloud__: pod_runtime.credentials is not written yet (docs/kubernetes.md)')

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
