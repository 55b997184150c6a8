"""Alibaba Cloud ACK: the Kubernetes path's cluster part (components/kubernetes/, docs/kubernetes.md).

A managed Pro cluster (cs.ManagedKubernetes) in the stack's VPC and security group (network.py), a
small CPU system pool for CoreDNS and the controllers, and the GPU pool: the tier's instance types in
fallback order, spot or on-demand, a LowLatency deployment set for multi-node stacks, encrypted ESSD
system and data disks, metadata tokens required, the GPU taint, scaling from zero to `nodes`. The
pods' bucket access is RRSA: a RAM role only this cluster's `trainer` ServiceAccount may assume, with
nothing but read/write on `<bucket>/<prefix>/<stack>/` (identity.bucket_statements).

The kubeconfig comes from cs.get_cluster_credential (a short-lived credential, kept secret) and feeds
the pulumi-kubernetes provider; refresh and destroy must run the program to get a live one. The API server's public endpoint admits only kubernetes.apiAllowCidrs:
an SLB access control list (slb.Acl) with those entries, bound to ACK's listener by api_acl.py.
"""
from __future__ import annotations

import json
import os

import pulumi
import pulumi_alicloud as alicloud

from components.kubernetes import manifests
from components.providers.alicloud import api_acl
from components.providers.alicloud.cpfs_export import credentials_from
from components.providers.alicloud.compute import SYSTEM_DISK_GB, deployment_set, on_demand_price
from components.providers.alicloud.identity import ROTATE_STRATEGY, bucket_statements
from components.providers.part_records import ClusterParts, NetworkParts, PartContext, placement_groups
from components.spec import Spec

# Pod and Service CIDRs: outside the VPC's 10.42.0.0/16 (network.py), as ACK requires (Flannel).
POD_CIDR = "172.20.0.0/16"
SERVICE_CIDR = "172.21.0.0/20"
# RRSA: the namespace label that turns on ack-pod-identity-webhook, and the ServiceAccount annotation
# that names the role (ACK doc "Use RRSA to authorize different pods to access different cloud services").
RRSA_WEBHOOK_ADDON = "ack-pod-identity-webhook"
RRSA_NAMESPACE_LABEL = {"pod-identity.alibabacloud.com/injection": "on"}
RRSA_ROLE_ANNOTATION = "pod-identity.alibabacloud.com/role-name"
SYSTEM_POOL_DISK_GB = 120


def pod_role_name(spec: Spec) -> str:
    return f"gpu-training-{spec.stack}-pod"


def pod_trust(spec: Spec, rrsa) -> dict:
    """Only the training ServiceAccount of this cluster may assume the pod role (OIDC `sub` and `aud`)."""
    subject = f"system:serviceaccount:{spec.kubernetes.namespace}:{manifests.SERVICE_ACCOUNT}"
    return {"Version": "1", "Statement": [{
        "Effect": "Allow", "Action": "sts:AssumeRole",
        "Principal": {"Federated": [rrsa["ram_oidc_provider_arn"]]},
        "Condition": {"StringEquals": {"oidc:aud": "sts.aliyuncs.com", "oidc:iss": rrsa["rrsa_oidc_issuer_url"],
                                       "oidc:sub": subject}}}]}


def _rrsa(metadata) -> dict:
    """The cluster's RRSA metadata as a dict (the engine gives an object when deployed, a dict in previews)."""
    if metadata is None:
        return {"ram_oidc_provider_arn": "<OIDC provider of the cluster>", "rrsa_oidc_issuer_url": "<issuer>"}
    get = metadata.get if isinstance(metadata, dict) else (lambda key: getattr(metadata, key, None))
    return {key: get(key) or get(camel) for key, camel in (("ram_oidc_provider_arn", "ramOidcProviderArn"),
                                                              ("rrsa_oidc_issuer_url", "rrsaOidcIssuerUrl"))}


def spot_settings(spec: Spec) -> dict:
    """The GPU pool's spot inputs: a cap per type (the user's, else on-demand) or none with on-demand billing."""
    if not spec.spot:
        return {"spot_strategy": "NoSpot"}
    limits = [alicloud.cs.NodePoolSpotPriceLimitArgs(instance_type=row.name, price_limit=on_demand_price(spec, row.name))
              for row in spec.pool_types]
    return {"spot_strategy": "SpotWithPriceLimit", "spot_price_limits": limits,
            "spot_instance_pools": min(10, len(spec.pool_types)), "spot_instance_remedy": True,
            "multi_az_policy": "COST_OPTIMIZED" if spec.spot_zones else "PRIORITY"}


class AckCluster(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext, network: NetworkParts):
        super().__init__("gpu-training:alicloud:AckCluster", f"{ctx.name}-ack", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        k8s, tags = spec.kubernetes, dict(ctx.tags)
        switches = list(network.subnet_ids.values())
        # The API server's whitelist first: the cluster depends on it, so a destroy removes the cluster
        # (and the listener using the list) before the list (api_acl.py binds it once the cluster exists).
        self.acl = alicloud.slb.Acl(f"{ctx.name}-api-acl", name=f"gpu-training-{spec.stack}-api",
                                    ip_version="ipv4", tags=tags, opts=child)
        entries = [alicloud.slb.AclEntryAttachment(f"{ctx.name}-api-acl-{index}", acl_id=self.acl.id, entry=cidr,
                                                   comment="kubernetes.apiAllowCidrs", opts=child)
                   for index, cidr in enumerate(k8s.api_allow_cidrs)]
        self.cluster = alicloud.cs.ManagedKubernetes(
            f"{ctx.name}-cluster", name=f"gpu-training-{spec.stack}", cluster_spec=k8s.offer.cluster_spec,
            version=k8s.version, vswitch_ids=[switches[0]], pod_cidr=POD_CIDR, service_cidr=SERVICE_CIDR,
            security_group_id=network.security_group_id, new_nat_gateway=True, slb_internet_enabled=True,
            enable_rrsa=True, deletion_protection=False, tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.acl, *entries]))
        self.api_access = bind_api_whitelist(spec, self.cluster.slb_id, self.acl.id)
        self.webhook = alicloud.cs.KubernetesAddon(f"{ctx.name}-rrsa-webhook", cluster_id=self.cluster.id,
                                                   name=RRSA_WEBHOOK_ADDON, opts=child)
        common = dict(cluster_id=self.cluster.id, security_group_ids=[network.security_group_id],
                      instance_charge_type="PostPaid", image_type="AliyunLinux3", system_disk_category="cloud_essd",
                      system_disk_encrypted=True, install_cloud_monitor=False,
                      instance_metadata_options=alicloud.cs.NodePoolInstanceMetadataOptionsArgs(http_tokens="required"),
                      tags=tags)
        self.system_pool = alicloud.cs.NodePool(
            f"{ctx.name}-system-pool", node_pool_name=f"{spec.stack}-system", vswitch_ids=[switches[0]],
            instance_types=[k8s.system_instance_type], desired_size=str(k8s.system_nodes),
            system_disk_size=SYSTEM_POOL_DISK_GB,
            labels=[alicloud.cs.NodePoolLabelArgs(key=manifests.POOL_LABEL, value="system")], opts=child, **common)
        # The node pool takes one deployment set: none past the 20 nodes one holds (profile.PLACEMENT).
        placement = next(iter(placement_groups(spec, True, lambda g: deployment_set(
            spec, ctx, g, child, "keep the GPU nodes close for NCCL"))), None)
        disk = spec.data_disk
        self.gpu_pool = alicloud.cs.NodePool(
            f"{ctx.name}-gpu-pool", node_pool_name=f"{spec.stack}-gpu", vswitch_ids=switches,
            instance_types=[row.name for row in spec.pool_types], system_disk_size=SYSTEM_DISK_GB,
            # From zero: nodes exist while the Job's pods need them; the autoscaler removes idle ones.
            scaling_config=alicloud.cs.NodePoolScalingConfigArgs(enable=True, min_size=0, max_size=spec.nodes),
            deployment_set_id=placement,
            data_disks=[alicloud.cs.NodePoolDataDiskArgs(category=disk.category, size=disk.size_gb,
                                                         performance_level=disk.performance_level, encrypted="true")],
            labels=[alicloud.cs.NodePoolLabelArgs(key=manifests.POOL_LABEL, value="gpu")],
            taints=[alicloud.cs.NodePoolTaintArgs(**manifests.GPU_TAINT)],
            opts=child, **spot_settings(spec), **common)
        # The pool's autoscaler: GPU nodes come when the Job's pods wait for them and go 10 minutes after
        # no pod needs them (the training pods say safe-to-evict: false, so a running one is never moved).
        self.autoscaler = alicloud.cs.AutoscalingConfig(
            f"{ctx.name}-autoscaler", cluster_id=self.cluster.id, scale_down_enabled=True, scale_up_from_zero=True,
            unneeded_duration="10m", skip_nodes_with_local_storage=False, opts=child)
        self.pod_role = self._pod_role(spec, ctx, child)
        # A temporary kubeconfig (profile.ACK.credential_minutes): every program run reads a new one, and
        # refresh and destroy run the program too (run.py; docs/kubernetes.md), so teardown never uses an
        # expired one from state.
        credential = alicloud.cs.get_cluster_credential_output(
            cluster_id=self.cluster.id, temporary_duration_minutes=k8s.offer.credential_minutes)
        self.kubeconfig = pulumi.Output.secret(credential.kube_config)
        self.register_outputs({"clusterId": self.cluster.id})

    def _pod_role(self, spec: Spec, ctx: PartContext, child: pulumi.ResourceOptions):
        name = pod_role_name(spec)
        trust = self.cluster.rrsa_metadata.apply(lambda meta: json.dumps(pod_trust(spec, _rrsa(meta)), sort_keys=True))
        role = alicloud.ram.Role(f"{ctx.name}-pod-role", role_name=name, assume_role_policy_document=trust,
                                 description=f"gpu-training {spec.stack} training pods (RRSA)",
                                 max_session_duration=3600, tags=dict(ctx.tags), opts=child)
        policy = alicloud.ram.Policy(f"{ctx.name}-pod-policy", policy_name=name, rotate_strategy=ROTATE_STRATEGY,
                                     policy_document=json.dumps({"Version": "1", "Statement": bucket_statements(spec)},
                                                                sort_keys=True),
                                     description=f"gpu-training {spec.stack} pods: the stack's bucket prefix only",
                                     tags=dict(ctx.tags), opts=child)
        alicloud.ram.RolePolicyAttachment(f"{ctx.name}-pod-policy-attachment", policy_name=policy.policy_name,
                                          policy_type="Custom", role_name=role.role_name, opts=child)
        return role

    def parts(self, spec: Spec) -> ClusterParts:
        return ClusterParts(cluster_id=self.cluster.id, kubeconfig=self.kubeconfig, gpu_pool_id=self.gpu_pool.id,
                            pod_role_name=pod_role_name(spec), namespace_labels=dict(RRSA_NAMESPACE_LABEL),
                            service_account_annotations={RRSA_ROLE_ANNOTATION: pod_role_name(spec)},
                            api_endpoint_note=self.api_access,
                            # Pods need the webhook (their RRSA variables), the pools and the autoscaler first.
                            workload_depends_on=[self.webhook, self.system_pool, self.gpu_pool, self.autoscaler])


def bind_api_whitelist(spec: Spec, load_balancer_id: pulumi.Output, acl_id: pulumi.Output) -> pulumi.Output:
    """Once the cluster exists: its API server's listener admits only the whitelist (api_acl.py)."""
    config = pulumi.Config("alicloud")
    secrets = [config.get_secret(key) for key in ("accessKey", "secretKey", "securityToken")]

    def bind(values) -> str:
        slb, acl, access_key, secret_key, token = values
        if pulumi.runtime.is_dry_run():
            return api_acl.PLANNED
        found = credentials_from(os.environ, {"access_key_id": access_key, "access_key_secret": secret_key,
                                              "security_token": token})
        if found is None:
            raise pulumi.RunError("binding the API server's whitelist (SetLoadBalancerTCPListenerAttribute) needs the"
                                  " credentials pulumi-alicloud uses: set ALICLOUD_ACCESS_KEY and ALICLOUD_SECRET_KEY")
        try:
            return api_acl.bind_whitelist(spec.region, slb, acl, found, os.environ.get(api_acl.SLB_ENDPOINT_ENV))
        except api_acl.BindError as error:
            raise pulumi.RunError(str(error)) from None

    return pulumi.Output.unsecret(pulumi.Output.all(load_balancer_id, acl_id, *secrets).apply(bind))


def create(spec: Spec, ctx: PartContext, network: NetworkParts) -> ClusterParts:
    cluster = AckCluster(spec, ctx, network)
    return cluster.parts(spec)
