"""Day 2: the second `pulumi up`. Each stack is planned, then planned again as a later `pulumi up`
would see it (the first plan's state, a later clock) with one change: none, a changed agent file, a
changed `train.command`, a changed `maxHours`. The two plans are diffed the way the engine and the
provider would diff them:

- inputs named in a resource's `ignoreChanges` are not compared (what Pulumi does);
- what the provider reads back is what is compared: a Read quirk recorded in the provider facts
  (components/providers/<cloud>/provider_facts.json, `hand_written`: a list read back as one item, an
  input Read overwrites with the service's differing value) is applied to the first state;
- a changed ForceNew input (provider facts), a changed `replacementTrigger` or `replaceOnChanges`
  input replaces the resource, and a replaced resource's new id reaches every input that holds it;
- an in-place update the provider makes by stopping or reinstalling the machine (`update_stops_instance`,
  `update_reinstalls_instance`) disrupts it.

No resource may be replaced or disrupted unless the change requires it; the ones that must be are
listed in MUST_REPLACE with the reason, and must be replaced (so the list stays true). The same
check serves the conformance suite (`unexpected_replacements`), for every registered provider.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest

from stackcases import vm_stack_names

from components import artifacts, clock, providers
from tools.mockrun import Plan, PlannedResource, provider_answers, run_program
from components.providers import facts
from tools.stackfiles import apply_overrides, load_stack_config

BASE_CLOCK = "2026-12-02T10:00:00Z"
LATER = timedelta(hours=3)  # the second `pulumi up`, while the nodes still run
CHANGED_AGENT_FILE = "monitor.py"  # not in the boot set: it travels through object storage

# A Huawei AS configuration holds the pool's user data, and its instance_config is ForceNew
# (resource_huaweicloud_as_configuration.go:45 at v1.73.3): the nodes the pool starts later get a new
# configuration; the group switches to it in place and its running nodes are untouched.
_HUAWEI_CONFIGURATION = ("instance_config (with the user data) is ForceNew in huaweicloud_as_configuration: a new"
                         " configuration for later pool nodes; the group moves to it in place")

# change -> {resource type: why the change must replace it}. Nothing else may be replaced or disrupted.
MUST_REPLACE: dict[str, dict[str, str]] = {
    "none": {},
    "newer image": {},  # the newest public Ubuntu image the lookup finds changed since the first up
    "agent file": {"huaweicloud:As/configuration:Configuration": _HUAWEI_CONFIGURATION},
    "train.command": {"huaweicloud:As/configuration:Configuration": _HUAWEI_CONFIGURATION},
    "maxHours": {
        "huaweicloud:As/configuration:Configuration": _HUAWEI_CONFIGURATION,
        "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup":
            "valid_until is ForceNew (resource_alicloud_auto_provisioning_group.go) and"
            " ModifyAutoProvisioningGroup cannot change it: the spot pool's TTL moves only with a new pool",
        "tencentcloud:Cvm/actionTimer:ActionTimer":
            "every field is ForceNew (resource_tc_cvm_action_timer.go): a new timer, not a new node",
    },
}


# The boot payload (what the loader in user-data fetches) is keyed by its content's sha256: a change to the node
# config (node.json holds the agent files' digest, the command and the expiry) is a new object, replaced; the
# old one is retained for nodes that still boot from older user data (docs/bootstrap.md, "The loader").
BOOT_PAYLOAD = "-boot-payload"
NODE_CONFIG_CHANGES = {"agent file", "train.command", "maxHours"}


# ---------------------------------------------------------------- planning the two runs

@contextlib.contextmanager
def clock_at(moment: str) -> Iterator[None]:
    before = os.environ.get(clock.CLOCK_ENV)
    os.environ[clock.CLOCK_ENV] = moment
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(clock.CLOCK_ENV, None)
        else:
            os.environ[clock.CLOCK_ENV] = before


@contextlib.contextmanager
def agent_copy() -> Iterator[Path]:
    """The program reads the agent from a copy for both runs (the test changes one file between them)."""
    before = artifacts.AGENT_SRC
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "node_agent"
        shutil.copytree(before, copy, ignore=shutil.ignore_patterns("__pycache__"))
        artifacts.AGENT_SRC = copy
        try:
            yield copy
        finally:
            artifacts.AGENT_SRC = before


def later(moment: str) -> str:
    return clock.rfc3339(clock.parse(moment) + LATER)


def changed_config(stack: str, change: str) -> dict:
    config = load_stack_config(stack)
    if change == "train.command":
        command = config.get("gpu-training:train", {}).get("command", "python train_cnn.py")
        return apply_overrides(config, (f"train.command={command} --lr 0.05",))
    if change == "maxHours":
        hours = float(config.get("gpu-training:maxHours", 24))
        return apply_overrides(config, (f"maxHours={hours + 12:g}",))
    return config


def _with_newer_images(value: Any) -> Any:
    if isinstance(value, str):
        return f"{value} (published after the first up)" if value.startswith("<") and "image" in value else value
    if isinstance(value, dict):
        return {k: _with_newer_images(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_newer_images(v) for v in value]
    return value


def newer_image_answers() -> dict:
    """Every provider's image lookups, answering a different (newer) image than at the first up."""
    calls, _ = provider_answers()
    return {token: (lambda answer: lambda args, answer=answer: _with_newer_images(answer(args)))(answer)
            for token, answer in calls.items() if "image" in token.lower() and callable(answer)}


def day_two(stack: str, change: str) -> tuple[Plan, Plan]:
    """(first `pulumi up`, a later `pulumi up` with `change`) of `stack`."""
    config = load_stack_config(stack)
    with agent_copy() as agent:
        with clock_at(BASE_CLOCK):
            first = run_program(config, stack)
        if change == "agent file":
            target = agent / CHANGED_AGENT_FILE
            target.write_text(target.read_text() + "\n# day 2: a fix shipped after the first up\n")
        with clock_at(later(BASE_CLOCK)):
            answers = newer_image_answers() if change == "newer image" else None
            second = run_program(changed_config(stack, change), stack, prior=first, call_answers=answers)
    return first, second


# ---------------------------------------------------------------- diffing them as the engine would

def _drop(inputs: dict, paths: list[str]) -> dict:
    """The inputs without the ignoreChanges paths (top level, or `a.b` inside an object)."""
    result = dict(inputs)
    for path in paths:
        head, _, rest = path.partition(".")
        if not rest:
            result.pop(head, None)
        elif isinstance(result.get(head), dict):
            result[head] = _drop(result[head], [rest])
    return result


def read_back(resource: PlannedResource) -> dict:
    """The state the provider's Read leaves for `resource`: its inputs, with the recorded Read quirks."""
    inputs = dict(resource.inputs)
    loaded = facts.for_type(resource.type)
    for quirk in loaded.quirks(resource.type) if loaded else []:
        if quirk["kind"] == "read_collapses_list":
            for name in quirk["inputs"]:
                items = inputs.get(name)
                if isinstance(items, list) and len(items) > 1:
                    inputs[name] = [items[-1]]  # one map, filled by every item in turn: the last wins
        elif quirk["kind"] == "read_overwrites" and facts.read_overwrite_differs(quirk, inputs):
            inputs[quirk["input"]] = f"<what the service returns: {quirk['at']}>"  # not what the program sent
    return inputs


def _mentions(value: Any, needle: str) -> bool:
    if isinstance(value, str):
        return value == needle
    if isinstance(value, dict):
        return any(_mentions(v, needle) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, needle) for v in value)
    return False


def _renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return value


def _replacements(resource: PlannedResource, old: dict, new: dict, before: PlannedResource) -> list[str]:
    why = []
    if resource.type == clock.TIME_STATIC:
        why += [f"{name} (RequiresReplace)" for name in clock.TIME_STATIC_REPLACED_BY if old.get(name) != new.get(name)]
    else:
        loaded = facts.for_type(resource.type)
        if loaded is None or not loaded.knows(resource.type):
            if old != new:
                why.append("changed, and no provider facts say it is updated in place")
        else:
            why += [f"{r.path}: {r.reason}" for r in loaded.replacements(resource.type, old, new)]
    if resource.options.get("replacementTrigger") != before.options.get("replacementTrigger"):
        why.append("replacementTrigger changed")
    why += [f"{p}: replaceOnChanges" for p in resource.options.get("replaceOnChanges", [])
            if old.get(p) != new.get(p)]
    return why


def _disruptions(resource: PlannedResource, old: dict, new: dict) -> list[str]:
    loaded = facts.for_type(resource.type)
    found = []
    for quirk in loaded.quirks(resource.type) if loaded else []:
        if quirk["kind"] in DISRUPTIVE_UPDATES:
            changed = [n for n in quirk["inputs"] if old.get(n) != new.get(n)]
            if changed:
                found.append(f"{', '.join(changed)}: {quirk['effect']} ({quirk['at']})")
    return found


Key = tuple[str, str]  # (type, name)
DISRUPTIVE_UPDATES = ("update_stops_instance", "update_reinstalls_instance")  # hand-written quirk kinds


def diff(first: Plan, second: Plan) -> dict[Key, dict]:
    """{(type, name): {"changed": [inputs], "replaced": [why], "disrupted": [why]}} for every resource
    that a `pulumi up` from `first`'s state to `second` would touch; created and deleted ones included."""
    before = {(r.type, r.name): r for r in first.resources}
    after = {(r.type, r.name): r for r in second.resources}
    report: dict[Key, dict] = {}
    for key in before.keys() - after.keys():
        report[key] = {"changed": ["deleted"], "replaced": ["deleted"], "disrupted": []}
    for key in after.keys() - before.keys():
        report[key] = {"changed": ["created"], "replaced": [], "disrupted": []}
    old_inputs = {key: read_back(before[key]) for key in before.keys() & after.keys()}
    new_inputs = {key: dict(after[key].inputs) for key in old_inputs}
    replaced: set[Key] = set()
    while True:  # until no replaced resource's new id reaches another resource
        for key in sorted(old_inputs):
            ignored = after[key].options.get("ignoreChanges", [])
            old, new = _drop(old_inputs[key], ignored), _drop(new_inputs[key], ignored)
            changed = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
            replacing = _replacements(after[key], old, new, before[key])
            disrupting = _disruptions(after[key], old, new)
            if changed or replacing or disrupting:
                report[key] = {"changed": changed, "replaced": replacing, "disrupted": disrupting}
        newly = {key for key in old_inputs if report.get(key, {}).get("replaced")} - replaced
        if not newly:
            return report
        replaced |= newly
        for _, name in newly:
            old_id, new_id = f"{name}-id", f"{name}-id (replaced)"
            for key, inputs in new_inputs.items():
                if _mentions(inputs, old_id):
                    new_inputs[key] = _renamed(inputs, old_id, new_id)


def unexpected(report: dict[Key, dict], change: str) -> list[str]:
    """Replacements the change does not require (MUST_REPLACE), and every disruption."""
    found = []
    for (type_, name), entry in sorted(report.items()):
        payload = name.endswith(BOOT_PAYLOAD) and change in NODE_CONFIG_CHANGES
        if entry["replaced"] and type_ not in MUST_REPLACE[change] and not payload:
            found.append(f"{change}: {type_} {name} replaced: {'; '.join(entry['replaced'])}")
        if entry["disrupted"]:
            found.append(f"{change}: {type_} {name} disrupted: {'; '.join(entry['disrupted'])}")
    return found


def unexpected_replacements(stack: str) -> list[str]:
    """The conformance suite's hook: every change, every resource replaced or disrupted without need."""
    return [problem for change in MUST_REPLACE for problem in unexpected(diff(*day_two(stack, change)), change)]


# ---------------------------------------------------------------- the tests

STACKS = vm_stack_names()


@functools.lru_cache(maxsize=None)
def planned(stack: str, change: str) -> tuple[Plan, Plan]:
    return day_two(stack, change)


@pytest.mark.parametrize("stack", STACKS)
def test_a_second_up_without_a_change_changes_nothing(stack):
    """A later clock alone: no input of any resource differs (no churn of tags, timers or pools)."""
    report = diff(*planned(stack, "none"))
    assert report == {}, {f"{t} {n}": e for (t, n), e in report.items()}


@pytest.mark.parametrize("change", [c for c in MUST_REPLACE if c != "none"])
@pytest.mark.parametrize("stack", STACKS)
def test_a_change_replaces_only_what_it_must(stack, change):
    provider = load_stack_config(stack).get("gpu-training:provider", "alicloud")
    if change == "newer image" and not any("image" in token.lower() for token in
                                           getattr(providers.preview_module(provider), "CALL_ANSWERS", {})):
        pytest.skip(f"{provider} looks its image up at deploy time only: no lookup in the plan to change")
    first, second = planned(stack, change)
    report = diff(first, second)
    inputs = {(r.type, r.name): r.inputs for r in first.resources}
    assert any(inputs.get((r.type, r.name)) != r.inputs for r in second.resources), \
        f"{change} changed no input at all: the test would not see a defect"
    assert unexpected(report, change) == []
    for type_, why in MUST_REPLACE[change].items():
        for resource in second.of_type(type_):
            assert report.get((type_, resource.name), {}).get("replaced"), \
                f"MUST_REPLACE says {type_} is replaced ({why}), but it is not: update the list"
    payloads = [r for r in second.resources if r.name.endswith(BOOT_PAYLOAD)]
    assert payloads and all(bool(report.get((r.type, r.name), {}).get("replaced")) == (change in NODE_CONFIG_CHANGES)
                            for r in payloads), (change, [report.get((r.type, r.name)) for r in payloads])
    assert all(r.options.get("retainOnDelete") for r in payloads), [r.options for r in payloads]


def user_data_input(inputs: dict) -> str | None:
    """The top-level input that carries the user data: userData itself, or the object holding it (a
    Huawei AS configuration's instanceConfig.userData)."""
    if "userData" in inputs:
        return "userData"
    return next((name for name, value in inputs.items() if isinstance(value, dict) and "userData" in value), None)


@pytest.mark.parametrize("stack", STACKS)
def test_agent_and_command_changes_reach_the_nodes_created_after_them(stack):
    """What new nodes boot with changes: the user data a pool's template or configuration holds, and
    the uploaded objects; a running node's own user data is left alone (ignoreChanges)."""
    for change in ("agent file", "train.command"):
        first, second = planned(stack, change)
        report = diff(first, second)
        carriers = [(r, user_data_input(r.inputs)) for r in second.resources if user_data_input(r.inputs)]
        assert carriers
        for resource, holder in carriers:
            if "userData" in resource.options.get("ignoreChanges", []):
                continue  # a running node: the change is for its successors
            assert holder in report[(resource.type, resource.name)]["changed"], (change, resource.name)
        if change == "agent file":  # the agent's files update in place; the boot payload is a new object (above)
            objects = [key for key, entry in report.items() if "BucketObject" in key[0]
                       and not key[1].endswith(BOOT_PAYLOAD)]
            assert objects and all(not report[key]["replaced"] for key in objects)


@pytest.mark.parametrize("stack", STACKS)
def test_max_hours_moves_the_ttl_from_the_recorded_creation_time(stack):
    first, second = planned(stack, "maxHours")
    created = clock.parse(BASE_CLOCK)
    hours = float(load_stack_config(stack).get("gpu-training:maxHours", 24))
    assert first.outputs["expiresAt"] == clock.expiry(BASE_CLOCK, hours)
    assert second.outputs["expiresAt"] == clock.expiry(clock.rfc3339(created), hours + 12)
    assert diff(*planned(stack, "none")) == {} and planned(stack, "none")[1].outputs["expiresAt"] == \
        first.outputs["expiresAt"], "a later clock must not move the TTL"


def test_a_node_replacing_change_records_a_new_creation_time():
    """A larger data disk replaces the node (dataDisks size is ForceNew on both clouds): the time:Static
    is renewed, so the new node gets a whole maxHours."""
    stack = "entry-t4"
    with clock_at(BASE_CLOCK):
        first = run_program(load_stack_config(stack), stack)
    with clock_at(later(BASE_CLOCK)):
        second = run_program(apply_overrides(load_stack_config(stack), ("dataDiskGb=400",)),
                             stack, prior=first)
    report = diff(first, second)
    (static,) = second.of_type(clock.TIME_STATIC)
    assert report[(clock.TIME_STATIC, static.name)]["replaced"]
    hours = float(load_stack_config(stack).get("gpu-training:maxHours", 24))
    assert second.outputs["expiresAt"] == clock.expiry(later(BASE_CLOCK), hours)


def test_the_diff_sees_the_defects_it_guards_against():
    """The checker on its own: a ForceNew change, a Read that collapses a list, a stopping update."""
    pool = PlannedResource("alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup", "p", None,
                           {"validUntil": "a", "launchTemplateConfigs": [{"instanceType": "x"}, {"instanceType": "y"}]},
                           True)
    node = PlannedResource("alicloud:ecs/instance:Instance", "n", None, {"userData": "a"}, True)
    timer = PlannedResource("tencentcloud:Cvm/actionTimer:ActionTimer", "t", None, {"instanceId": "n-id"}, True)
    first = Plan("s", [pool, node, timer])
    same_pool = PlannedResource(pool.type, "p", None, dict(pool.inputs), True)
    new_node = PlannedResource(node.type, "n", None, {"userData": "b", "availabilityZone": "z"}, True)
    report = diff(first, Plan("s", [same_pool, new_node, timer]))
    assert report[(pool.type, "p")]["replaced"], "the pool reads back one config: ForceNew diff"
    assert report[(node.type, "n")]["disrupted"] and report[(node.type, "n")]["replaced"]
    assert report[(timer.type, "t")]["replaced"], "a replaced node's new id reaches its timer"
    ignoring = PlannedResource(node.type, "n", None, {"userData": "b"}, True, options={"ignoreChanges": ["userData"]})
    assert (node.type, "n") not in diff(first, Plan("s", [same_pool, ignoring, timer]))


@pytest.mark.parametrize("stack", [s for s in STACKS if load_stack_config(s).get("gpu-training:provider",
                                                                                     "alicloud") == "alicloud"])
def test_every_ram_policy_rotates_its_versions(stack):
    """RAM keeps five versions of a policy; without rotateStrategy the sixth change fails (audit A1)."""
    for billing in ("on-demand", "spot"):
        plan = run_program(apply_overrides(load_stack_config(stack), (f"billing={billing}", "spotMaxPricePerHour=50")),
                           stack)
        for policy in plan.of_type("alicloud:ram/policy:Policy"):
            assert policy.inputs.get("rotateStrategy") == "DeleteOldestNonDefaultVersionWhenLimitExceeded", policy.name


HUAWEI_POOL = "huaweicloud:As/group:Group"


@pytest.mark.parametrize("change", ["none", "train.command"])
def test_a_pool_the_agent_retired_stays_retired_on_a_later_refreshed_up(change):
    """W4: the agent pauses the Huawei AS pool when training ends. After a refresh the state holds
    enable=false (resourceASGroupRead: enable = status == "INSERVICE", terraform-provider-huaweicloud
    v1.73.3); the next `pulumi up` must not send enable=true (its default), which resumes the group and
    starts `nodes` spot GPUs again."""
    first, second = planned("hw-medium-v100", change)
    (group,) = first.of_type(HUAWEI_POOL)
    refreshed = {**read_back(group), "enable": False}
    (again,) = second.of_type(HUAWEI_POOL)
    ignored = again.options.get("ignoreChanges", [])
    default = facts.for_type(HUAWEI_POOL).inputs(HUAWEI_POOL)["enable"].get("default")
    assert default is True, "the provider's default is what an input left out sends"
    sent = _drop({"enable": default, **again.inputs}, ignored).get("enable", refreshed["enable"])
    assert sent is False, f"{change}: the later up resumes the retired pool (enable {sent})"
    assert group.inputs.get("enable", default) is True, "the first up starts the pool"


def test_the_preview_says_a_retired_pool_starts_no_nodes():
    from tools.stackfiles import stack_spec

    _, spec = stack_spec("hw-medium-v100", ())
    said = " ".join(message for _, message in spec.profile.rules.warnings(spec))
    assert "a retired pool starts no nodes" in said and "gpu-training down" in said
