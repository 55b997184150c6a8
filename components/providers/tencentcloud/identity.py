"""Tencent Cloud node identity: a CAM role for CVM that may only terminate this stack's instances, list
instances (peers), read/write `<bucket>/<prefix>/<stack>/` in COS and, with spot billing, disable this
stack's auto scaling group (the pool retire, docs/agent.md "Spot pools"). Nodes get its temporary keys
from the metadata service (`cam/security-credentials/<role>`); no SecretId/SecretKey ever reaches a node.

Policy syntax: CVM doc 213/10313 (CAM policy grammar), CAM doc 598/47827 (authorization by tag: `qcs:resource_tag`
with "key&value"), 213/10314 (CVM resource paths), 436/30580 (COS actions, `qcs::cos:<region>:uid/<APPID>:
<bucket>/<path>`), 436/46205 (COS condition keys: `cos:prefix` for GetBucket), 598/57063 (Auto Scaling in CAM: resource-level
and tag authorization, `qcs::as:<region>:<account>:auto-scaling-group/<id>`). The scaling group carries the
stack tag (compute.py), so one statement scopes DisableAutoScalingGroup to this stack's pool without its id.
"""
from __future__ import annotations

import json

import pulumi
from tencentcloud_iac_pulumi import cam

from components import tags
from components.naming import role_name
from components.providers.part_records import IdentityParts, PartContext
from components.providers.tencentcloud.profile import bucket_appid
from components.spec import Spec

STACK_TAG = tags.STACK  # the policy conditions name the stack tag the resources carry
COS_OBJECT_ACTIONS = ("GetObject", "HeadObject", "PutObject", "DeleteObject", "InitiateMultipartUpload",
                      "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload", "ListParts",
                      "ListMultipartUploads")


def trust_document() -> dict:
    return {"version": "2.0", "statement": [{"action": "name/sts:AssumeRole", "effect": "allow",
                                             "principal": {"service": ["cvm.qcloud.com"]}}]}


def policy_document(spec: Spec) -> dict:
    statements = [
        {"effect": "allow", "action": ["name/cvm:TerminateInstances"],
         "resource": [f"qcs::cvm:{spec.region}::instance/*"],
         "condition": {"for_any_value:string_equal": {"qcs:resource_tag": [f"{STACK_TAG}&{spec.stack}"]}}},
        # Describe* has no resource-level scope on CVM: read-only, used to find this stack's peers.
        {"effect": "allow", "action": ["name/cvm:DescribeInstances"], "resource": ["*"]},
    ]
    if spec.spot:
        statements += [
            {"effect": "allow", "action": ["name/as:DisableAutoScalingGroup"],
             "resource": [f"qcs::as:{spec.region}::auto-scaling-group/*"],
             "condition": {"for_any_value:string_equal": {"qcs:resource_tag": [f"{STACK_TAG}&{spec.stack}"]}}},
            # Read-only, to find the pool's id by its name.
            {"effect": "allow", "action": ["name/as:DescribeAutoScalingGroups"], "resource": ["*"]},
        ]
    bucket = spec.checkpoint.bucket
    appid = bucket_appid(bucket) if bucket else None
    if bucket and appid:
        prefix = spec.checkpoint.stack_prefix(spec.stack)
        base = f"qcs::cos:{spec.checkpoint.region}:uid/{appid}:{bucket}"
        statements += [
            {"effect": "allow", "action": [f"name/cos:{a}" for a in COS_OBJECT_ACTIONS],
             "resource": [f"{base}/{prefix}/*"]},
            {"effect": "allow", "action": ["name/cos:GetBucket"], "resource": [f"{base}/*"],
             "condition": {"string_like": {"cos:prefix": [f"{prefix}/*"]}}},
        ]
    return {"version": "2.0", "statement": statements}


class NodeIdentity(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:tencentcloud:NodeIdentity", f"{ctx.name}-identity", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        name = role_name(spec)
        self.role = cam.Role(f"{ctx.name}-node-role", name=name, document=json.dumps(trust_document(), sort_keys=True),
                             description=f"gpu-training {spec.stack} nodes", console_login=False,
                             session_duration=3600, tags=dict(ctx.tags), opts=child)
        self.policy = cam.Policy(f"{ctx.name}-node-policy", name=name,
                                 document=json.dumps(policy_document(spec), sort_keys=True),
                                 description=f"least privilege for gpu-training {spec.stack} nodes", opts=child)
        cam.RolePolicyAttachmentByName(f"{ctx.name}-node-policy-attachment", role_name=self.role.name,
                                       policy_name=self.policy.name, opts=child)
        self.register_outputs({"roleName": self.role.name})


def create(spec: Spec, ctx: PartContext) -> IdentityParts:
    return IdentityParts(role_name=NodeIdentity(spec, ctx).role.name)
