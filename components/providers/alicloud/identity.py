"""Alibaba Cloud node identity: a RAM role for ECS that may only release this stack's instances,
find its peers, and read/write `<bucket>/<prefix>/<stack>/` in OSS. Nodes get its STS credentials
from the metadata service; no access key ever reaches a node."""
from __future__ import annotations

import json

import pulumi
import pulumi_alicloud as alicloud

from components.nodeconfig import role_name
from components.providers.base import IdentityParts, PartContext
from components.spec import Spec

STACK_TAG = "gpu-training:stack"


def policy_document(spec: Spec) -> dict:
    statements = [
        {"Effect": "Allow", "Action": ["ecs:DeleteInstance"],
         "Resource": [f"acs:ecs:{spec.region}:*:instance/*"],
         "Condition": {"StringEquals": {f"acs:ResourceTag/{STACK_TAG}": [spec.stack]}}},
        {"Effect": "Allow", "Action": ["ecs:DescribeInstances"], "Resource": ["*"],
         "Condition": {"StringEquals": {f"acs:RequestTag/{STACK_TAG}": [spec.stack]}}},
    ]
    bucket = spec.checkpoint.bucket
    if bucket:
        prefix = spec.checkpoint.stack_prefix(spec.stack)
        statements += [
            {"Effect": "Allow",
             "Action": ["oss:GetObject", "oss:PutObject", "oss:DeleteObject", "oss:AbortMultipartUpload",
                        "oss:ListParts", "oss:GetObjectMeta"],
             "Resource": [f"acs:oss:*:*:{bucket}/{prefix}/*"]},
            {"Effect": "Allow", "Action": ["oss:ListObjects"], "Resource": [f"acs:oss:*:*:{bucket}"],
             "Condition": {"StringLike": {"oss:Prefix": [f"{prefix}/*"]}}},
        ]
    return {"Version": "1", "Statement": statements}


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
                                          tags=dict(ctx.tags), opts=child)
        alicloud.ram.RolePolicyAttachment(f"{ctx.name}-node-policy-attachment", policy_name=self.policy.policy_name,
                                          policy_type="Custom", role_name=self.role.role_name, opts=child)
        self.register_outputs({"roleName": self.role.role_name})


def create(spec: Spec, ctx: PartContext) -> IdentityParts:
    return IdentityParts(role_name=NodeIdentity(spec, ctx).role.role_name)
