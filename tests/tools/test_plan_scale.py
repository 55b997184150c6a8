"""A plan's cost per node (issue 25): many nodes plan as the two-node plan with more of the same node, and
the garbage collector, paused while the program runs (tools/mockrun.py collector_paused, the cause of
most of a node's cost), is back as it was afterwards, also when the program fails.

The timings themselves are bench/preview_scale.py's (medians and ratios), never asserted here.
"""
from __future__ import annotations

import gc
import json
import re

import pytest

from tools.mockrun import run_program
from tools.stackfiles import load_stack_config

NODE = re.compile(r"-node-(\d+)$")
# The placement groups past the first: a group holds Placement.members nodes (components/providers/profile_records.py),
# so more nodes take more groups, node i in group i // members.
EXTRA_GROUP = re.compile(r"-placement-(\d+)$")
STACK = "large-a100"


def split(plan) -> tuple[dict, dict, dict]:
    """(the resources that are not nodes by (type, name), the nodes by index, the extra groups by number)."""
    others, nodes, groups = {}, {}, {}
    for resource in plan.resources:
        found, group = NODE.search(resource.name), EXTRA_GROUP.search(resource.name)
        if found:
            nodes[int(found.group(1))] = resource
        elif group:
            groups[int(group.group(1))] = resource
        else:
            others[(resource.type, resource.name)] = resource.as_dict()
    return others, nodes, groups


def as_node(resource, index: int, group_id=None) -> dict:
    """Node 0's resource as node `index` would be: its names carry the index, and past the first group's
    members it names its own group; nothing else changes."""
    text = json.dumps(resource.as_dict(), sort_keys=True)
    for old, new in (("-node-0", f"-node-{index}"), (f"{STACK}-0\"", f"{STACK}-{index}\"")):
        text = text.replace(old, new)
    node = json.loads(text)
    if group_id is not None:
        node["inputs"]["deploymentSetId"] = group_id
    return node


def test_a_64_node_plan_is_the_2_node_plan_with_more_of_the_same_node(plan_for):
    """The same resources besides the nodes and the node count in the boot payload; every node is node 0
    renamed (its user data, the loader, is the same on every node: the agent finds its rank among its peers,
    node/node_agent/agent.py)."""
    from components import providers

    members = providers.profile("alicloud").interconnect.placement.members
    small_others, small_nodes, small_groups = split(plan_for(STACK, "nodes=2"))
    large_others, large_nodes, large_groups = split(plan_for(STACK, "nodes=64"))
    # The boot payload the loader fetches (one object for the stack, components/bootstrap) holds node.json and
    # so the node count; with it the object's digest, hence its key and MD5. Nothing else in it may differ.
    payload = next(key for key in small_others if key[1] == f"{STACK}-boot-payload")
    small_payload, large_payload = small_others.pop(payload)["inputs"], large_others.pop(payload)["inputs"]
    assert large_payload["content"].count('\\"nodeCount\\": 64') == 1
    assert large_payload["content"].replace('\\"nodeCount\\": 64', '\\"nodeCount\\": 2') == small_payload["content"]
    assert large_others == small_others and not small_groups
    assert sorted(large_groups) == list(range(1, -(-64 // members)))
    assert sorted(large_nodes) == list(range(64)) and sorted(small_nodes) == [0, 1]
    first = large_nodes[0]
    assert first.inputs["userData"] and first.inputs["instanceName"] == f"gpu-training-{STACK}-0"
    for index, node in large_nodes.items():
        group = index // members
        expected = as_node(first, index, large_groups[group].outputs.get("id", f"{large_groups[group].name}-id")
                           if group else None)
        assert node.as_dict() == expected, index
    assert small_nodes[1].as_dict() == as_node(small_nodes[0], 1)


def test_the_collector_is_paused_while_the_program_runs_and_restored_after():
    seen = []

    def zones(args):  # a data-source call: answered while the program runs
        seen.append(gc.isenabled())
        return {"zones": [{"id": "cn-hangzhou-k"}], "ids": ["cn-hangzhou-k"]}

    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            run_program(load_stack_config("entry-t4"), "entry-t4",
                        call_answers={"alicloud:index/getZones:getZones": zones})
            assert gc.isenabled() is enabled
        assert seen == [False, False]
    finally:
        (gc.enable if was else gc.disable)()


def test_a_program_that_stops_gives_the_collector_back():
    """A stack the program refuses (it exits 2 with the problems listed): the collector is on again."""
    from tools.mockrun import ProgramExit
    from tools.stackfiles import apply_overrides

    assert gc.isenabled()
    with pytest.raises(ProgramExit) as stopped:
        run_program(apply_overrides(load_stack_config("entry-t4"), ("nodes=0",)), "entry-t4")
    assert stopped.value.code == 2 and "nodes" in stopped.value.stderr
    assert gc.isenabled()
