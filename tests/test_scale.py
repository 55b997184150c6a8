"""Scale is checked before anything is created: the subnets are sized from `nodes` (components/cidrs.py),
a 64-node plan of every multi-node stack is valid, and the preview names the quota a plan needs.

The newcomer trial found `nodes=500` on large-a100 planned into one /24 vswitch (about 250 addresses).
"""
from __future__ import annotations

import ipaddress

import pytest

from components import cidrs
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
