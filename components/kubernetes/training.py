"""KubernetesTraining: the Kubernetes path's top component, beside components/vm_training.py's VM cluster.

network -> storage (the agent and the code in the bucket) -> the provider's cluster part (managed
cluster, system and GPU pools, the pods' role, the kubeconfig) -> the pulumi-kubernetes provider ->
the training objects (manifests.py) -> outputs (components/stack_outputs.py's, as the VM path's, plus
the cluster's own). The provider's network and storage parts are the VM path's own; identity and
compute are replaced by the cluster part. Nothing here knows a cloud.
"""
from __future__ import annotations

from typing import Optional

import pulumi

from components import providers
from components.artifacts import POD_BOOT_SET
from components.bootstrap.agentfiles import boot_files
from components.vm_training import expires_at, record_creation_time, standard_tags
from components.kubernetes import manifests, workload
from components.nodeconfig import build_node_config
from components.providers.part_records import PartContext
from components.spec import Spec
from components.stack_outputs import node_outputs


def pod_runtime_path(provider: str):
    return providers.package_dir(provider) / "pod_runtime.py"


def boot_set(provider: str) -> dict[str, str]:
    """The ConfigMap's files: the agent's boot set with its pod half (node_agent/pod.py), and the provider's
    pod runtime as cloud_runtime.py."""
    files = boot_files(provider, "/boot", runtime=pod_runtime_path(provider), boot_set=POD_BOOT_SET)
    return {file.path.rsplit("/", 1)[-1]: file.content for file in files}


def objects(spec: Spec, bindings: manifests.ClusterBindings, pod_role: str) -> list[dict]:
    """Every Kubernetes object of the run, as the program registers it (the schema tests read these too)."""
    config = manifests.pod_node_config(build_node_config(spec, shared_fs_address=None), spec, pod_role)
    return manifests.all_objects(spec, bindings, config, boot_set(spec.provider))


class KubernetesTraining(pulumi.ComponentResource):
    def __init__(self, name: str, spec: Spec, opts: Optional[pulumi.ResourceOptions] = None, *, target):
        super().__init__("gpu-training:index:KubernetesTraining", name, None, opts)
        package = providers.parts(spec.provider, "cluster")  # checked against the contract there
        # A cluster has no cloud-side TTL: this expiry is shown and tagged; the Job itself stops at
        # activeDeadlineSeconds (maxHours), and run.py destroys the stack (docs/kubernetes.md, Teardown).
        self.expires_at = expires_at(spec, record_creation_time(spec, name, self))
        ctx = PartContext(parent=self, name=name, tags=standard_tags(spec, self.expires_at))

        network = package.network.create(spec, ctx)
        package.storage.create(spec, ctx, network)  # the agent and the code in the bucket, as for VMs
        cluster = package.cluster.create(spec, ctx, network)
        k8s_provider = workload.provider(name, cluster.kubeconfig, self)
        if spec.kubernetes.gpu_operator:
            workload.gpu_operator(spec, name, k8s_provider, self)
        bindings = manifests.ClusterBindings(cluster.namespace_labels, cluster.service_account_annotations)
        # The objects wait for what the cluster part names (pools, webhook, autoscaler). The Job's pods stay
        # Pending until the autoscaler brings GPU nodes; the agent's fetch retries while the uploads finish.
        workload.register(name, objects(spec, bindings, cluster.pod_role_name), k8s_provider, parent=self,
                          after=cluster.workload_depends_on)

        # A cluster's GPU nodes are the pool's: no instance ids or addresses to list, no SSH, no shared FS.
        self.outputs = node_outputs(spec, target, instance_ids=[], private_ips=[], pool_id=cluster.gpu_pool_id,
                                    shared_fs_address=None, expires_at=self.expires_at, ssh_command=None)
        self.outputs.update({
            "clusterId": cluster.cluster_id,
            "gpuPoolId": cluster.gpu_pool_id,
            "kubeconfig": cluster.kubeconfig,  # secret: `pulumi stack output kubeconfig --show-secrets`
            "apiServerAccess": cluster.api_endpoint_note,
            # run.py fails the Job when no pod runs this long after `up` (tools/runlib/startcheck.py).
            "job": {"namespace": spec.kubernetes.namespace, "name": manifests.JOB, "pods": spec.nodes,
                    "startDeadlineMinutes": spec.kubernetes.start_deadline_minutes},
            # What run.py prints when a pod's final upload failed: the pod retries by itself (its container
            # script restarts the agent every manifests.RESTART_SECONDS); its log says why it fails.
            "restartAgent": f"kubectl -n {spec.kubernetes.namespace} logs -l job-name={manifests.JOB} --tail 100"
                            f"  (the pod retries the upload every {manifests.RESTART_SECONDS} s by itself)",
        })
        self.register_outputs(self.outputs)
