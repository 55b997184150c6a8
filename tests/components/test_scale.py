"""Scale is checked before anything is created: the subnets are sized from `nodes` (components/cidrs.py),
a 64-node plan of every multi-node stack is valid, and the preview names the quota a plan needs.

Placement groups (issue 22 review): each cloud's member limit is data in its profile (`interconnect.placement`,
base.Placement, with its source, or None where no primary source states one). Past a known limit
on-demand nodes take several groups, node i in group i // members, and a pool takes none; the
preview warns with the limit and its source. An unknown limit keeps one group and the preview's
quota note says where the account's own limit is read.

The newcomer trial found `nodes=500` on large-a100 planned into one /24 vswitch (about 250 addresses).
"""
from __future__ import annotations

import ipaddress
import json
import re

import pytest

from components import cidrs, providers
from components.tiers import tiers
from stackcases import node_stack_names, provider_of
from tools.stackfiles import load_stack_config, stack_spec

LARGE = [s for s in node_stack_names() if tiers()[load_stack_config(s).get("gpu-training:tier", "entry")].multi_node]


def allows_several_nodes(stack: str) -> bool:
    """The cloud takes more than one node for this stack (Baidu refuses: no parallel FS is built for it)."""
    from components.spec import SpecError

    try:
        stack_spec(stack, ("nodes=2",))
    except SpecError as refused:
        assert [f for f in refused.errors if f.key == "nodes"], refused
        return False
    return True


MULTI_NODE = [s for s in LARGE if allows_several_nodes(s)]


def subnets_of(plan) -> list[tuple[str, str]]:
    """(resource name, CIDR) of every subnet the plan cuts from the stack's VPC."""
    vpc = ipaddress.ip_network(cidrs.STACK_VPC)
    found = []
    for resource in plan.resources:
        for name in ("cidr", "cidrBlock"):
            value = resource.inputs.get(name)
            if isinstance(value, str) and cidrs.network(value) is not None:
                network = ipaddress.ip_network(value)
                if network != vpc and network.subnet_of(vpc):
                    found.append((resource.name, value))
    return found


def test_the_multi_node_stacks_are_found():
    assert len(MULTI_NODE) >= 4 and {provider_of(s) for s in MULTI_NODE} >= {"alicloud", "tencentcloud", "huaweicloud"}


@pytest.mark.parametrize("stack", MULTI_NODE)
def test_a_64_node_plan_is_valid_and_every_subnet_holds_its_nodes(stack, plan_for):
    plan = plan_for(stack, "nodes=64")
    subnets = subnets_of(plan)
    assert subnets, "no subnet in the plan"
    small = [(name, cidr) for name, cidr in subnets if cidrs.usable_addresses(cidr) < 64]
    assert not small, small


def test_500_nodes_get_a_subnet_that_holds_them_and_the_quota_is_named():
    from tools.mockrun import run_program
    from tools.stackfiles import apply_overrides

    plan = run_program(apply_overrides(load_stack_config("large-a100"), ("nodes=500",)), "large-a100")
    (subnet,) = subnets_of(plan)
    assert cidrs.usable_addresses(subnet[1]) >= 500 and subnet[1] == "10.42.0.0/22"
    _, spec = stack_spec("large-a100", ("nodes=500",))
    (note,) = [f for f in spec.findings if f.key == "nodes" and "quota" in f.message]
    assert "500 GPU instance(s)" in note.message and "4,000 A100-80G GPUs" in note.message
    assert "64,000 vCPUs" in note.message and "500 public IP" in note.message


def test_a_stack_whose_nodes_fit_a_24_keeps_its_subnets():
    assert [cidrs.subnet(cidrs.STACK_VPC, i, n) for i, n in ((0, 1), (1, 2), (2, 208))] == \
        ["10.42.0.0/24", "10.42.1.0/24", "10.42.2.0/24"]
    assert cidrs.subnet(cidrs.STACK_VPC, 1, 209) == "10.42.2.0/23"
    assert cidrs.subnet(cidrs.STACK_VPC, 3, 512) == "10.42.12.0/22"


def test_subnets_that_cannot_fit_the_vpc_are_refused_on_nodes():
    assert not cidrs.subnets_fit(cidrs.STACK_VPC, 65, 512) and cidrs.subnets_fit(cidrs.STACK_VPC, 64, 512)


# The placement group's resource type on each multi-node cloud: what the plan is searched for.
GROUP_TYPES = {"alicloud": "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet",
               "tencentcloud": "tencentcloud:Placement/group:Group",
               "huaweicloud": "huaweicloud:Ecs/servergroup:Servergroup"}


def placement_of(stack: str) -> object:
    return providers.profile(provider_of(stack)).interconnect.placement


def is_k8s(stack: str) -> bool:
    return "gpu-training:kubernetes" in load_stack_config(stack)


def groups_and_nodes(plan, stack: str) -> tuple[list[str], dict[int, list[str]]]:
    """(ids of the plan's placement groups in creation order, node index -> the group ids its inputs name)."""
    groups = [f"{r.name}-id" for r in plan.of_type(GROUP_TYPES[provider_of(stack)])]
    nodes = {}
    for resource in plan.resources:
        found = re.fullmatch(rf"{re.escape(stack)}-node-(\d+)", resource.name)
        if found and resource.custom:
            text = json.dumps(resource.inputs)
            nodes[int(found.group(1))] = [g for g in groups if f'"{g}"' in text]
    return groups, nodes


def placement_warnings(stack: str, overrides: tuple[str, ...]) -> list[str]:
    _, spec = stack_spec(stack, overrides)
    placement = spec.profile.interconnect.placement
    return [f.message for f in spec.findings
            if f.level == "warning" and f.key == "nodes" and placement.construct in f.message]


KNOWN = [s for s in MULTI_NODE if placement_of(s).members is not None]
UNKNOWN = [s for s in MULTI_NODE if placement_of(s).members is None]
ON_DEMAND_KNOWN = [s for s in KNOWN if not is_k8s(s)]


def test_every_multi_node_cloud_states_its_placement_limit_with_a_source_or_says_it_is_unknown():
    for provider in {provider_of(s) for s in MULTI_NODE}:
        placement = providers.profile(provider).interconnect.placement
        assert placement is not None and placement.construct and placement.keeps, provider
        assert "https://" in placement.source, provider
        assert placement.members is None and placement.source.startswith("not published") or placement.members > 1
    assert KNOWN and UNKNOWN


@pytest.mark.parametrize("stack", ON_DEMAND_KNOWN)
def test_on_demand_nodes_fill_one_group_to_the_limit_then_take_another(stack, plan_for):
    members = placement_of(stack).members
    groups, nodes = groups_and_nodes(plan_for(stack, "billing=on-demand", f"nodes={members}"), stack)
    assert len(groups) == 1 and len(nodes) == members and all(v == groups for v in nodes.values())
    assert not placement_warnings(stack, ("billing=on-demand", f"nodes={members}"))

    groups, nodes = groups_and_nodes(plan_for(stack, "billing=on-demand", f"nodes={members + 1}"), stack)
    assert len(groups) == 2 and nodes[members] == [groups[1]]
    assert all(nodes[i] == [groups[0]] for i in range(members))
    (warning,) = placement_warnings(stack, ("billing=on-demand", f"nodes={members + 1}"))
    assert f"at most {members} nodes" in warning and "in 2 of them" in warning
    assert placement_of(stack).source in warning and f"nodes: {members} or fewer" in warning


@pytest.mark.parametrize("stack", ON_DEMAND_KNOWN)
def test_64_on_demand_nodes_take_groups_of_at_most_the_limit_and_no_node_moves(stack, plan_for):
    members = placement_of(stack).members
    groups, nodes = groups_and_nodes(plan_for(stack, "billing=on-demand", "nodes=64"), stack)
    assert len(groups) == -(-64 // members) and len(nodes) == 64
    assert all(nodes[i] == [groups[i // members]] for i in range(64))


@pytest.mark.parametrize("stack", KNOWN)
def test_a_pool_takes_one_group_to_the_limit_and_none_past_it(stack, plan_for):
    """A spot pool's template (a Kubernetes node pool) names one group: past the limit, none, with a warning."""
    billing = () if is_k8s(stack) else ("billing=spot",)
    members = placement_of(stack).members
    at = plan_for(stack, *billing, f"nodes={members}")
    (group,) = groups_and_nodes(at, stack)[0]
    assert [r for r in at.resources if f'"{group}"' in json.dumps(r.inputs)], "no pool names the group"
    assert not placement_warnings(stack, (*billing, f"nodes={members}"))

    past = plan_for(stack, *billing, f"nodes={members + 1}")
    assert groups_and_nodes(past, stack)[0] == []
    (warning,) = placement_warnings(stack, (*billing, f"nodes={members + 1}"))
    assert "gets none" in warning and placement_of(stack).keeps in warning and placement_of(stack).source in warning
    assert plan_for(stack, *billing, "nodes=64").of_type(GROUP_TYPES[provider_of(stack)]) == []


@pytest.mark.parametrize("stack", UNKNOWN)
def test_an_unknown_limit_keeps_one_group_and_the_preview_says_where_the_account_limit_is_read(stack, plan_for):
    groups, nodes = groups_and_nodes(plan_for(stack, "billing=on-demand", "nodes=64"), stack)
    assert len(groups) == 1 and len(nodes) == 64 and all(v == groups for v in nodes.values())
    _, spec = stack_spec(stack, ("billing=on-demand", "nodes=64"))
    (note,) = [f.message for f in spec.findings if f.key == "nodes" and "quota" in f.message]
    assert "member limit is not known here" in note and spec.profile.interconnect.placement.source in note
    assert not placement_warnings(stack, ("billing=on-demand", "nodes=64"))


def test_the_quota_note_names_the_known_limit_and_its_source():
    _, spec = stack_spec("large-a100", ("billing=on-demand", "nodes=64"))
    (note,) = [f.message for f in spec.findings if f.key == "nodes" and "quota" in f.message]
    assert "placement: 4 x LowLatency deployment set (ecs.EcsDeploymentSet), at most 20 nodes each" in note
    assert "https://www.alibabacloud.com/help/zh/doc-detail/91258.htm" in note
