"""__Cloud__ node role: release only this stack's instances, list its peers, its object prefix only.

Contract: components/providers/contract.py IdentityPart; docs/providers.md, the identity.py row.
The resources are placeholders (components/providers/placeholder.py): replace each with its class in the
cloud's Pulumi SDK and the statements with the cloud's policy language, keeping the scope.
"""
from __future__ import annotations

from components.naming import role_name
from components.providers.part_records import IdentityParts, PartContext
from components.providers.placeholder import Placeholder


def bucket_statements(spec) -> list[dict]:
    """The stack's objects only (the nodes' role here, the pods' role in cluster.py)."""
    objects = f"{spec.checkpoint.bucket}/{spec.checkpoint.stack_prefix(spec.stack)}/*"
    return [{"allow": ["object:Get", "object:Put", "object:List"], "on": objects}]


def statements(spec) -> list[dict]:
    """What the node agent may do (node_runtime.py): the stack's objects, its peers, its own release."""
    return [*bucket_statements(spec),
            {"allow": ["instance:Describe"], "on": "instances tagged with this stack"},
            {"allow": ["instance:Release", "pool:Retire"], "on": "instances and the pool tagged with this stack"}]


def create(spec, ctx: PartContext) -> IdentityParts:
    # TODO(__cloud__): a role only the cloud's compute service may assume (the trust), attached to the nodes.
    role = Placeholder("__cloud__:identity:Role", f"{ctx.name}-node-role",
                       {"roleName": role_name(spec), "trustedService": "TODO(__cloud__): the compute service",
                        "tags": dict(ctx.tags)}, ctx.opts())
    Placeholder("__cloud__:identity:Policy", f"{ctx.name}-node-policy",
                {"roleName": role_name(spec), "statements": statements(spec)},
                ctx.opts(depends_on=[role]))
    return IdentityParts(role_name=role.roleName)
