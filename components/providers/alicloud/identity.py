"""Alibaba Cloud node identity: a RAM role for ECS that may only release this stack's instances,
find its peers, read/write `<bucket>/<prefix>/<stack>/` in OSS and, with spot billing, retire this
stack's spot pool. Nodes get its STS credentials from the metadata service; no access key ever
reaches a node.

Retiring the pool (docs/agent.md, "Spot pools") takes ecs:DescribeAutoProvisioningGroups, which RAM
grants on all resources only, and ecs:DeleteAutoProvisioningGroup, which RAM scopes to one group's
ARN `acs:ecs:<region>:<account>:autoprovisioninggroup/<id>` (ECS API reference, "RAM authorization"
of both actions; no condition key). The id exists only once the pool does, and the pool's launch
template needs the role first, so that grant is a second policy made after the pool:
`grant_pool_retire(spec, ctx, role, pool.id)`, which compute.py's spot branch calls once the pool exists.

Policy versions: every change of a policy document adds a version, and RAM keeps five; the provider
sends RotateStrategy only when it is set (provider facts, ram_policy_change_adds_a_version), so each
policy here sets it and the sixth change does not fail.
"""
from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from components import tags
from components.naming import role_name
from components.providers.part_records import IdentityParts, PartContext
from components.spec import Spec

STACK_TAG = tags.STACK  # the policy conditions name the stack tag the resources carry
# alicloud_ram_policy rotate_strategy: delete the oldest non-default version when a sixth is made.
ROTATE_STRATEGY = "DeleteOldestNonDefaultVersionWhenLimitExceeded"


def policy_document(spec: Spec) -> dict:
    statements = [
        {"Effect": "Allow", "Action": ["ecs:DeleteInstance"],
         "Resource": [f"acs:ecs:{spec.region}:*:instance/*"],
         "Condition": {"StringEquals": {f"acs:ResourceTag/{STACK_TAG}": [spec.stack]}}},
        {"Effect": "Allow", "Action": ["ecs:DescribeInstances"], "Resource": ["*"],
         "Condition": {"StringEquals": {f"acs:RequestTag/{STACK_TAG}": [spec.stack]}}},
    ]
    if spec.spot:
        # Finds the pool's id by its name; the delete itself is granted per pool (pool_policy_document).
        statements.append({"Effect": "Allow", "Action": ["ecs:DescribeAutoProvisioningGroups"], "Resource": ["*"]})
    statements += bucket_statements(spec)
    return {"Version": "1", "Statement": statements}


def bucket_statements(spec: Spec) -> list[dict]:
    """Read/write `<bucket>/<prefix>/<stack>/` and list only below it: all a node (or a pod) needs of OSS."""
    bucket = spec.checkpoint.bucket
    if not bucket:
        return []
    prefix = spec.checkpoint.stack_prefix(spec.stack)
    return [
        {"Effect": "Allow",
         "Action": ["oss:GetObject", "oss:PutObject", "oss:DeleteObject", "oss:AbortMultipartUpload",
                    "oss:ListParts", "oss:GetObjectMeta"],
         "Resource": [f"acs:oss:*:*:{bucket}/{prefix}/*"]},
        {"Effect": "Allow", "Action": ["oss:ListObjects"], "Resource": [f"acs:oss:*:*:{bucket}"],
         "Condition": {"StringLike": {"oss:Prefix": [f"{prefix}/*"]}}},
    ]


def pool_policy_document(spec: Spec, pool_id: str) -> dict:
    """Delete this one auto provisioning group (the agent passes TerminateInstances=false)."""
    return {"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": ["ecs:DeleteAutoProvisioningGroup"],
         "Resource": [f"acs:ecs:{spec.region}:*:autoprovisioninggroup/{pool_id}"]}]}


def grant_pool_retire(spec: Spec, ctx: PartContext, role: pulumi.Input[str], pool_id: pulumi.Output) -> None:
    """The node role's second policy: retire exactly this pool. Call it right after the pool exists."""
    child = ctx.opts()
    name = f"{role_name(spec)}-pool"
    policy = alicloud.ram.Policy(f"{ctx.name}-node-pool-policy", policy_name=name,
                                 policy_document=pulumi.Output.from_input(pool_id).apply(
                                     lambda pool: json.dumps(pool_policy_document(spec, pool), sort_keys=True)),
                                 description=f"gpu-training {spec.stack} nodes: retire the spot pool",
                                 rotate_strategy=ROTATE_STRATEGY, tags=dict(ctx.tags), opts=child)
    alicloud.ram.RolePolicyAttachment(f"{ctx.name}-node-pool-policy-attachment", policy_name=policy.policy_name,
                                      policy_type="Custom", role_name=role, opts=child)


class NodeIdentity(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:alicloud:NodeIdentity", f"{ctx.name}-identity", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        name = role_name(spec)
        trust = {"Version": "1", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": ["ecs.aliyuncs.com"]}}]}
        self.role = alicloud.ram.Role(f"{ctx.name}-node-role", role_name=name,
                                      assume_role_policy_document=json.dumps(trust, sort_keys=True),
                                      description=f"gpu-training {spec.stack} nodes", max_session_duration=3600,
                                      tags=dict(ctx.tags), opts=child)
        self.policy = alicloud.ram.Policy(f"{ctx.name}-node-policy", policy_name=name,
                                          policy_document=json.dumps(policy_document(spec), sort_keys=True),
                                          description=f"least privilege for gpu-training {spec.stack} nodes",
                                          rotate_strategy=ROTATE_STRATEGY, tags=dict(ctx.tags), opts=child)
        alicloud.ram.RolePolicyAttachment(f"{ctx.name}-node-policy-attachment", policy_name=self.policy.policy_name,
                                          policy_type="Custom", role_name=self.role.role_name, opts=child)
        self.register_outputs({"roleName": self.role.role_name})


def create(spec: Spec, ctx: PartContext) -> IdentityParts:
    return IdentityParts(role_name=NodeIdentity(spec, ctx).role.role_name)
