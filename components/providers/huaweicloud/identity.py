"""Huawei Cloud node identity: an IAM agency for ECS (`op_svc_ecs`) with two custom policies, the least
privilege classic IAM can express. Nodes get the agency's temporary AK/SK/token from the metadata
service (`/openstack/latest/securitykey`, ECS user guide ecs_03_0166); no AK/SK ever reaches a node.

- Region project (type XA, this region's project only): delete an ECS (self-release), list and read
  ECSs (peers, the node's own status for reclaim detection) and, with a spot pool, pause the pool's
  AS group and list groups (the pool retire).
- Global (type AX, OBS is a global service): objects under `<bucket>/<prefix>/<stack>/` only, and
  listing the bucket for that prefix only.

What classic IAM cannot express: limiting ecs:cloudServers:delete (and the AS pause) to the instances
and group tagged gpu-training-stack=<stack>. Tag conditions (`g:ResourceTag/<key>`) belong to IAM 5.0
identity policies (IAM user guide iam_01_1229), and pulumi-huaweicloud 0.0.12 maps neither
huaweicloud_identityv5_policy nor its agency attachment. The grant is therefore the region's project
only, the node agent deletes only its own instance id, and conformance.yaml names these actions with
the reason (docs/huaweicloud.md, "Node agency").

Policy grammar: IAM user guide iam_01_0017 "Custom policy" (Version 1.1, Statement, Effect, Action,
Resource "OBS:*:*:object:<bucket>/<path>", Condition operators such as StringStartWith); the example
in terraform-provider-huaweicloud v1.73.3 docs/resources/identity_role.md.
"""
from __future__ import annotations

import json

import pulumi

from components.naming import role_name
from components.providers.part_records import IdentityParts, PartContext
from components.providers.huaweicloud.sdk import iam
from components.spec import Spec

# Read-back maps op_svc_* to delegated_service_name (resource_huaweicloud_identity_agency.go:387 at
# v1.73.3): set it there, not in delegated_domain_name, or every `pulumi up` would show a change.
ECS_SERVICE = "op_svc_ecs"
OBS_OBJECT_ACTIONS = ("obs:object:GetObject", "obs:object:PutObject", "obs:object:DeleteObject",
                      "obs:object:AbortMultipartUpload", "obs:object:ListMultipartUploadParts")
RELEASE_ACTIONS = ("ecs:cloudServers:delete",)
POOL_ACTIONS = ("as:groups:pause",)


def project_policy(spec: Spec) -> dict:
    statements = [
        {"Effect": "Allow", "Action": list(RELEASE_ACTIONS)},
        {"Effect": "Allow", "Action": ["ecs:cloudServers:list", "ecs:cloudServers:get"]},
    ]
    if spec.profile.spot.has_pool(spec):  # capped spot nodes have no pool to retire
        statements += [{"Effect": "Allow", "Action": list(POOL_ACTIONS)},
                       {"Effect": "Allow", "Action": ["as:groups:list", "as:groups:get"]}]
    return {"Version": "1.1", "Statement": statements}


def storage_policy(spec: Spec) -> dict:
    bucket = spec.checkpoint.bucket
    prefix = spec.checkpoint.stack_prefix(spec.stack)
    return {"Version": "1.1", "Statement": [
        {"Effect": "Allow", "Action": list(OBS_OBJECT_ACTIONS), "Resource": [f"OBS:*:*:object:{bucket}/{prefix}/*"]},
        {"Effect": "Allow", "Action": ["obs:bucket:ListBucket"], "Resource": [f"OBS:*:*:bucket:{bucket}"],
         "Condition": {"StringStartWith": {"obs:prefix": [f"{prefix}/"]}}},
    ]}


class NodeIdentity(pulumi.ComponentResource):
    def __init__(self, spec: Spec, ctx: PartContext):
        super().__init__("gpu-training:huaweicloud:NodeIdentity", f"{ctx.name}-identity", None, ctx.opts())
        child = pulumi.ResourceOptions(parent=self)
        name = role_name(spec)
        compute = iam.Role(f"{ctx.name}-node-policy", name=f"{name}-ecs", type="XA",
                           description=f"gpu-training {spec.stack} nodes: self-release, peers",
                           policy=json.dumps(project_policy(spec), sort_keys=True), opts=child)
        storage = iam.Role(f"{ctx.name}-node-storage-policy", name=f"{name}-obs", type="AX",
                           description=f"gpu-training {spec.stack} nodes: their OBS prefix only",
                           policy=json.dumps(storage_policy(spec), sort_keys=True), opts=child)
        self.agency = iam.Agency(
            f"{ctx.name}-node-agency", name=name, delegated_service_name=ECS_SERVICE, duration="FOREVER",
            description=f"gpu-training {spec.stack} nodes",
            project_roles=[iam.AgencyProjectRoleArgs(project=spec.region, roles=[compute.name])],
            domain_roles=[storage.name], opts=child)
        self.register_outputs({"roleName": self.agency.name})


def create(spec: Spec, ctx: PartContext) -> IdentityParts:
    return IdentityParts(role_name=NodeIdentity(spec, ctx).agency.name)
