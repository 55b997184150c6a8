"""The policy pack (policy/): the safety rules of components/safety.py as pulumi_policy policies, run
through pulumi_policy's own validation API on every stack's recorded plan, on mutated plans, with
values unknown during preview, and end to end over the analyzer gRPC protocol the Pulumi CLI speaks
(the pack started as `pulumi preview --policy-pack policy` starts it)."""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components import safety, tags
from stackcases import SPOT_CAPPED, SSH, case_id, dedupe, plan_or_refusal, strings_in, vm_stack_names

REPO = Path(__file__).resolve().parents[2]
PACK_DIR = REPO / "policy"
CASES = [(stack, overrides) for stack in vm_stack_names() for overrides in dedupe(stack, [(), SPOT_CAPPED, SSH])]


def load_pack():
    spec = importlib.util.spec_from_file_location("gpu_training_policy_pack", PACK_DIR / "pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def urn(stack: str, resource) -> str:
    return f"urn:pulumi:{stack}::gpu-training::{resource.type}::{resource.name}"


def dependencies(resource, by_id: dict) -> dict[str, list[str]]:
    """The engine's property dependencies, rebuilt from the mock's ids ("<name>-id") inside each input."""
    return {key: sorted({by_id[i] for i in strings_in(value) if i in by_id}) for key, value in resource.inputs.items()
            if any(i in by_id for i in strings_in(value))}


def run_pack(stack: str, resources) -> list[tuple[str, str, str]]:
    """(policy, urn, message) for every violation the pack's policies report on a recorded plan."""
    from pulumi_policy import PolicyResource, PolicyResourceOptions, ResourceValidationArgs, StackValidationArgs
    from pulumi_policy.policy import PolicyCustomTimeouts, ResourceValidationPolicy
    from pulumi_policy.proxy import unknown_checking_proxy

    custom = [r for r in resources if r.custom]
    by_id = {f"{r.name}-id": urn(stack, r) for r in custom}
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)
    reported: list[tuple[str, str, str]] = []
    policy_resources = {urn(stack, r): PolicyResource(r.type, unknown_checking_proxy(copy.deepcopy(r.inputs)),
                                                      urn(stack, r), r.name, options, None, None, [], {})
                        for r in custom}
    for r in custom:
        policy_resources[urn(stack, r)].property_dependencies = {
            key: [policy_resources[u] for u in urns] for key, urns in dependencies(r, by_id).items()}
    for policy in load_pack().policies():
        def report(message, at=None, name=policy.name):
            reported.append((name, at or "", message))
        if isinstance(policy, ResourceValidationPolicy):
            for r in custom:
                args = ResourceValidationArgs(r.type, unknown_checking_proxy(copy.deepcopy(r.inputs)), urn(stack, r),
                                              r.name, options, None)
                policy.validate(args, lambda message, at=None, u=args.urn: report(message, u))
        else:
            policy.validate(StackValidationArgs(list(policy_resources.values())), report)
    return reported


def test_the_pack_is_the_rule_table():
    """One table: a policy per rule, same names, descriptions and scope; nothing restated."""
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

    policies = load_pack().policies()
    assert [p.name for p in policies] == [r.name for r in safety.RULES]
    for policy, rule in zip(policies, safety.RULES):
        assert policy.description == rule.description
        assert isinstance(policy, ResourceValidationPolicy) == (rule.scope == "resource")
        assert policy.enforcement_level == EnforcementLevel.MANDATORY


@pytest.mark.parametrize("stack,overrides", CASES, ids=[case_id(s, o) for s, o in CASES])
def test_every_stack_passes_the_policy_pack(stack, overrides, plan_for):
    plan = plan_or_refusal(plan_for, stack, overrides)
    assert run_pack(stack, plan.resources) == []


def mutated(plan, type_suffix, change):
    resources = copy.deepcopy(plan.resources)
    hits = [r for r in resources if r.type.endswith(type_suffix)]
    assert hits, type_suffix
    for resource in hits:
        change(resource.inputs)
    return resources


def _open_ssh(inputs):
    if inputs.get("cidrIp"):
        inputs["cidrIp"] = "0.0.0.0/0"


def _wildcard_policy(inputs):
    document = json.loads(inputs["policyDocument"])
    document["Statement"][0]["Action"] = ["ecs:*"]
    inputs["policyDocument"] = json.dumps(document)


def _open_tencent(inputs):
    inputs["ingresses"].append({"action": "ACCEPT", "cidrBlock": "0.0.0.0/0", "port": "ALL", "protocol": "ALL"})


MUTATIONS = [  # (stack, overrides, type, change, policy that must report it)
    ("entry-t4", SSH, "securityGroupRule:SecurityGroupRule", _open_ssh, "no-world-open-ingress"),
    ("entry-t4", (), "ecs/instance:Instance", lambda i: i.update(httpTokens="optional"), "metadata-tokens-required"),
    ("entry-t4", (), "ecs/instance:Instance", lambda i: i["dataDisks"][0].update(encrypted=False), "encrypted-disks"),
    ("entry-t4", (), "ecs/instance:Instance", lambda i: i.pop("autoReleaseTime"), "cloud-side-ttl"),
    ("entry-t4", (), "ram/policy:Policy", _wildcard_policy, "least-privilege-node-role"),
    ("entry-t4", (), "vpc/network:Network", lambda i: i["tags"].update({tags.STACK: "other"}), "stack-tags"),
    ("entry-t4", (), "ecs/instance:Instance", lambda i: i.update(instanceChargeType="Hourly"), "provider-schema"),
    ("tc-medium-a100", (), "Cbs/storage:Storage", lambda i: i.update(encrypt=False), "encrypted-disks"),
    ("tc-medium-a100", (), "As/schedule:Schedule", lambda i: i.update(maxSize=2), "cloud-side-ttl"),
    ("tc-entry-t4", (), "Security/groupRuleSet:GroupRuleSet", _open_tencent, "no-world-open-ingress"),
    ("tc-entry-t4", (), "Cvm/actionTimer:ActionTimer", lambda i: i.update(instanceId="ins-of-someone-else"),
     "cloud-side-ttl"),
]


@pytest.mark.parametrize("stack,overrides,type_suffix,change,policy", MUTATIONS,
                         ids=[f"{m[4]}:{m[0]}:{m[2].split(':')[-1]}" for m in MUTATIONS])
def test_each_policy_reports_a_mutated_plan(stack, overrides, type_suffix, change, policy, plan_for):
    plan = plan_for(stack, *overrides)
    reported = run_pack(stack, mutated(plan, type_suffix, change))
    assert {name for name, _, _ in reported} == {policy}, reported
    assert all(at.startswith(f"urn:pulumi:{stack}::") for _, at, _ in reported)


def test_values_unknown_during_preview_are_skipped_not_guessed(plan_for):
    """In a real preview ids and generated names are unknown: the policies judge what is known."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    plan = plan_for("tc-medium-a100")

    def unknown_ids(inputs):
        for disk in inputs.get("dataDisks", []):
            disk["snapshotId"] = UNKNOWN_STRING_VALUE
    resources = mutated(plan, "As/scalingConfig:ScalingConfig", unknown_ids)
    assert run_pack("tc-medium-a100", resources) == []
    # Known values next to unknown ones are still judged.
    for resource in resources:
        if resource.type.endswith("As/scalingConfig:ScalingConfig"):
            resource.inputs["tags"][tags.STACK] = "someone-else"
    assert {name for name, _, _ in run_pack("tc-medium-a100", resources)} == {"stack-tags"}


# ---------------------------------------------------------------- the pack as the CLI runs it

def struct(value: dict):
    from google.protobuf import struct_pb2

    message = struct_pb2.Struct()
    message.update(json.loads(json.dumps(value)))
    return message


@pytest.fixture
def analyzer(tmp_path):
    """The pack started the way the CLI starts it (runpy on the directory), and a gRPC stub to it."""
    import grpc
    from pulumi.runtime.proto import analyzer_pb2_grpc

    env = {**os.environ, "PULUMI_STACK": "tc-entry-t4", "PYTHONPATH": ""}
    process = subprocess.Popen([sys.executable, "-u", "-c", f"import runpy; runpy.run_path({str(PACK_DIR)!r},"
                                " run_name='__main__')"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, cwd=tmp_path)
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read() if process.poll() is not None else port
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.wait(timeout=10)


def test_the_pack_answers_the_cli_over_grpc(analyzer, plan_for):
    from google.protobuf import empty_pb2
    from pulumi.runtime.proto import analyzer_pb2

    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "gpu-training-safety"
    assert [p.name for p in info.policies] == [r.name for r in safety.RULES]

    stack = "tc-entry-t4"
    plan = plan_for(stack, *SSH)
    (rules,) = [r for r in plan.resources if r.type.endswith("groupRuleSet:GroupRuleSet")]
    bad = copy.deepcopy(rules.inputs)
    _open_tencent(bad)
    answer = analyzer.Analyze(analyzer_pb2.AnalyzeRequest(type=rules.type, properties=struct(bad),
                                                          urn=urn(stack, rules), name=rules.name))
    assert [(d.policyName, "0.0.0.0/0" in d.message) for d in answer.diagnostics] == [("no-world-open-ingress", True)]
    answer = analyzer.Analyze(analyzer_pb2.AnalyzeRequest(type=rules.type, properties=struct(rules.inputs),
                                                          urn=urn(stack, rules), name=rules.name))
    assert list(answer.diagnostics) == []

    custom = [r for r in plan.resources if r.custom]
    by_id = {f"{r.name}-id": urn(stack, r) for r in custom}

    def request(resources):
        return analyzer_pb2.AnalyzeStackRequest(resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type, properties=struct(r.inputs), urn=urn(stack, r), name=r.name,
                propertyDependencies={k: analyzer_pb2.AnalyzerPropertyDependencies(urns=v)
                                      for k, v in dependencies(r, by_id).items()})
            for r in resources])

    assert list(analyzer.AnalyzeStack(request(custom)).diagnostics) == []
    without_timer = [r for r in custom if not r.type.endswith("Cvm/actionTimer:ActionTimer")]
    answer = analyzer.AnalyzeStack(request(without_timer))
    assert {(d.policyName, d.urn.rsplit("::", 1)[1]) for d in answer.diagnostics} == \
        {("cloud-side-ttl", "tc-entry-t4-node-0")}
