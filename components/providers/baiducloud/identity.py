"""Baidu AI Cloud node identity: an IAM role that BCC instances assume, with one policy that reaches only
`<bucket>/<prefix>/<stack>/` in BOS. The permission to release the stack's own instances is a second
policy that names each instance (compute.py's `grant_release`, made once the instances exist): BCC
has no tag condition in the IAM sources read here, so the role names the instances themselves.

Policy format: IAM "accessControlList" documents (bce-python-sdk 0.9.79 iam_client create_policy takes
the document as a string). Two things no source read settles, so the preview says them as findings
(profile.rules.warnings): the trust document's grantee for the BCC service (Baidu documents the console's
"carrier: BCC" only, BCC "Set IAM Role", https://intl.cloud.baidu.com/en/doc/BCC/s/jm4bbrdmn-intl-en),
and which permission level releasing an instance needs (BCC's IAM page names full control, operation
and maintenance and read-only without the table: https://intl.cloud.baidu.com/en/doc/BCC/s/mjxkcdfp8-intl-en).
"""
from __future__ import annotations

import json

import pulumi

from components.naming import role_name
from components.providers.baiducloud import dynamic
from components.providers.part_records import IdentityParts, PartContext
from components.spec import Spec

TRUST = {"version": "v1", "accessControlList": [
    {"service": "bce:iam", "region": "*", "effect": "Allow", "permission": ["AssumeRole"],
     "grantee": [{"service": "bce:bcc"}]}]}


def storage_policy(spec: Spec) -> dict:
    """READ/WRITE/LIST on the stack's own object prefix only."""
    bucket, prefix = spec.checkpoint.bucket, spec.checkpoint.stack_prefix(spec.stack)
    return {"accessControlList": [
        {"service": "bce:bos", "region": spec.region, "effect": "Allow", "permission": ["READ", "WRITE", "LIST"],
         "resource": [f"{bucket}/{prefix}/*"]}]}


def release_policy(spec: Spec, instance_ids: list[str]) -> dict:
    """OPERATE on exactly the stack's instances. Whether OPERATE includes the release is unverified (module
    docstring); without it the node bills until its auto release, and a preview finding says so."""
    return {"accessControlList": [
        {"service": "bce:bcc", "region": spec.region, "effect": "Allow", "permission": ["OPERATE"],
         "resource": [f"instance/{i}" for i in instance_ids]}]}


class NodeIdentity(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:baiducloud:NodeIdentity", f"{ctx.name}-identity", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        self.role = dynamic.IamRole(f"{ctx.name}-node-role", {
            "name": role_name(spec), "description": f"gpu-training {spec.stack} nodes",
            "assumeRolePolicyDocument": json.dumps(TRUST, sort_keys=True)}, spec.region, child)
        dynamic.IamRolePolicy(f"{ctx.name}-node-policy", {
            "roleName": self.role.id, "policyName": f"{role_name(spec)}-storage",
            "document": json.dumps(storage_policy(spec), sort_keys=True)}, spec.region, child)
        self.register_outputs({"roleName": self.role.id})


def grant_release(spec: Spec, ctx: PartContext, role: pulumi.Input[str], instance_ids: list) -> None:
    """The role's second policy: release exactly these instances (the agent's self-release)."""
    document = pulumi.Output.all(*instance_ids).apply(lambda ids: json.dumps(release_policy(spec, ids), sort_keys=True))
    dynamic.IamRolePolicy(f"{ctx.name}-node-release-policy", {
        "roleName": role, "policyName": f"{role_name(spec)}-release", "document": document},
        spec.region, ctx.opts())


def create(spec: Spec, ctx: PartContext) -> IdentityParts:
    return IdentityParts(role_name=NodeIdentity(spec, ctx).role.id)
