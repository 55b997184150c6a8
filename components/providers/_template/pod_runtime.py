"""__Cloud__ side of the node agent in a pod of the training Job (the Kubernetes path): the pod's credentials.

Everything else a pod runtime does is Kubernetes' own (node/node_agent/pod.py, PodRuntime: the pod's name
and IP, SIGTERM for eviction, the Job's peers, the exit codes). The credentials: the pods' role through the
cloud's workload identity (cluster.py's ServiceAccount annotation); TODO(__cloud__): the token exchange its
doc describes.

The boot-set ConfigMap carries it as node_agent/cloud_runtime.py, beside node_agent/pod.py.
"""
from node_agent.pod import PodRuntime


class Runtime(PodRuntime):
    """One pod of the training Job."""

    def credentials(self):
        raise NotImplementedError('__cloud__: pod_runtime.credentials is not written yet (docs/kubernetes.md)')
