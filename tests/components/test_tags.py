"""Tags every cloud accepts: each cloud's tag rules are data (components/providers/<cloud>/tags.yaml, with
their sources), and every tag input of every plan (each shipped stack and its what-ifs) keeps them.

The audit of Huawei and Baidu found `gpu-training:stack` keys and RFC 3339 expiry values (both with ':')
sent to APIs whose documented charset has no ':'; these tests fail on that scheme.
"""
from __future__ import annotations

import json
import re

import pytest

from components import providers, tags
from stackcases import node_stack_names, case_id, plan_or_refusal, provider_of, variations

CASES = [(stack, overrides) for stack in node_stack_names() for overrides in variations(stack)]


@pytest.mark.parametrize("provider", providers.names())
def test_each_cloud_states_its_tag_rules_with_their_sources(provider):
    rules = tags.rules(provider)
    for rule in (rules.key, rules.value):
        assert rule.allowed and len(rule.source) > 40 and re.search(r"https?://|@[0-9a-f]{7,}", rule.source), rule
        if rule.characters:
            re.compile(rule.characters)
    assert rules.max_tags is not None or rules.unverified, "an unknown tag count is marked unverified"
    assert rules.max_tags is None or rules.max_tags_source


@pytest.mark.parametrize("provider", providers.names())
def test_the_scheme_is_one_every_cloud_accepts(provider):
    rules = tags.rules(provider)
    sample = tags.standard("gpu-training", "hw-large-a100", "large", tags.expiry_value("2026-12-07T13:48:00Z"))
    assert sample[tags.EXPIRES_AT] == "20261207T134800Z"
    assert tags.violations(rules, sample.items()) == []


@pytest.mark.parametrize("provider", ["huaweicloud", "baiducloud"])
def test_the_rules_refuse_the_colon_scheme_the_audit_found(provider):
    """What the audit's finding B1 (Huawei) and B4 (Baidu) state: ':' is outside both clouds' tag charset."""
    rules = tags.rules(provider)
    assert rules.problems("gpu-training:stack", "s") and rules.problems("k", "2026-12-07T13:48:00Z")


def test_list_shaped_tags_are_found_as_well_as_maps():
    inputs = {"name": "x", "tags": {"a": "1"}, "instanceConfig": {"instanceTags": [{"key": "b", "value": "2"}]},
              "body": {"tags": [{"tagKey": "c", "tagValue": "3"}]}, "etag": "d41d8cd9"}
    found = dict(tags.tag_inputs(inputs))
    assert found == {"tags": [("a", "1")], "instanceConfig.instanceTags": [("b", "2")], "body.tags": [("c", "3")]}


@pytest.mark.parametrize("stack,overrides", CASES, ids=[case_id(s, o) for s, o in CASES])
def test_every_tag_input_of_the_plan_keeps_the_clouds_rules(stack, overrides, plan_for):
    plan = plan_or_refusal(plan_for, stack, overrides)
    provider = provider_of(stack)
    rules, profile = tags.rules(provider), providers.profile(provider)
    checked, broken = 0, []
    for resource in plan.resources:
        if not resource.custom or not profile.owns(resource.type):
            continue
        for path, pairs in tags.tag_inputs(resource.inputs):
            checked += 1
            broken += [f"{resource.type} {resource.name}.{path}: {why}" for why in tags.violations(rules, pairs)]
    assert checked, "no tag input in the plan: the walk checks nothing"
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("stack", ["hw-entry-t4", "bd-large-a100", "entry-t4", "tc-entry-t4"])
def test_a_user_tag_the_cloud_refuses_is_refused_by_its_key_with_exit_2(stack):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    bad = json.dumps({"cost:center": "a/b:c"})
    result = subprocess.run([sys.executable, str(repo / "scripts" / "preview.py"), stack, "--set", f"tags={bad}"],
                            capture_output=True, text=True, timeout=120)
    rules = tags.rules(provider_of(stack))
    if not rules.problems("cost:center", "a/b:c"):  # Alibaba and Tencent take ':' and '/'
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2, result.stdout + result.stderr
    assert "tags.cost:center" in result.stderr and "':'" in result.stderr and "Traceback" not in result.stderr


def test_more_tags_than_huawei_takes_are_refused_naming_how_many_may_be_given():
    from components.spec import SpecError
    from tools.stackfiles import stack_spec

    room = tags.rules("huaweicloud").max_tags - len(tags.STANDARD)
    given = {f"team{i}": "ml" for i in range(room + 1)}
    with pytest.raises(SpecError) as refused:
        stack_spec("hw-entry-t4", (f"tags={json.dumps(given)}",))
    (error,) = [f for f in refused.value.errors if f.key == "tags"]
    assert f"at most {room}" in error.message
    _, spec = stack_spec("hw-entry-t4", (f"tags={json.dumps(dict(list(given.items())[:room]))}",))
    assert len(spec.tags) == room


def test_a_user_key_in_the_programs_namespace_is_refused():
    from components.spec import SpecError
    from tools.stackfiles import stack_spec

    with pytest.raises(SpecError) as refused:
        stack_spec("entry-t4", (f'tags={{"{tags.STACK}": "x"}}',))
    assert [f for f in refused.value.errors if f.key == f"tags.{tags.STACK}" and "set by gpu-training" in f.message]


# ---------------------------------------------------------------- the stand-ins refuse what the rules refuse

def test_the_baidu_stand_in_refuses_a_create_with_a_tag_outside_the_rules(monkeypatch):
    """The dynamic provider against the BCE stand-in (a local server): the old scheme's CreateVpc fails as
    Baidu's tag service answers (TagExceptions.TagKeyInvalid), the scheme in components/tags.py passes."""
    from components.providers.baiducloud import bceapi, dynamic
    from components.providers.baiducloud.bceapi import BceApiError
    from localcloud.standins.baiducloud import ACCESS_KEY, SECRET_KEY, CloudApi

    stand_in = CloudApi()
    monkeypatch.setenv(bceapi.ENDPOINT_ENV, stand_in.url)
    monkeypatch.setenv(bceapi.ACCESS_KEY_ENV, ACCESS_KEY)
    monkeypatch.setenv(bceapi.SECRET_KEY_ENV, SECRET_KEY)
    monkeypatch.delenv(bceapi.TOKEN_ENV, raising=False)
    try:
        vpcs = dynamic.PROVIDERS["Vpc"]("bj", first_wait_s=0.01, poll_s=0.01)
        with pytest.raises(BceApiError) as refused:
            vpcs.create({"region": "bj", "name": "v", "cidr": "10.42.0.0/16", "tags": {"gpu-training:stack": "s"}})
        assert "TagKeyInvalid" in str(refused.value)
        assert not stand_in.created("vpc")
        made = vpcs.create({"region": "bj", "name": "v", "cidr": "10.42.0.0/16",
                            "tags": tags.standard("gpu-training", "s", "large", "20261207T134800Z")})
        assert made.id and len(stand_in.created("vpc")) == 1
    finally:
        stand_in.stop()


def test_the_huawei_stand_in_refuses_a_tag_filter_outside_the_rules():
    """The node runtime's peer lookup (ECS ListServersDetails ?tags=key=value) against the Huawei stand-in:
    the old key is refused with HTTP 400, the scheme's key lists the stack's node."""
    import importlib.util

    from node_agent.s3 import Metadata as Reader

    from localcloud.standins import huaweicloud as standin

    spec = importlib.util.spec_from_file_location("hw_runtime_tags", providers.node_runtime_path("huaweicloud"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    metadata = standin.Metadata(ip="10.42.0.7")
    api = standin.CloudApi(instances=[(metadata.instance_id, "10.42.0.7")])
    try:
        def runtime(key):
            cfg = {"region": "cn-north-4", "endpoints": {"metadata": metadata.url, "cloudApi": api.url},
                   "identity": {"roleName": "gpu-training-s-node"},
                   "cluster": {"tagKey": key, "tagValue": "s", "poolName": "gpu-training-s"}}
            return module.Runtime(cfg, lambda token_header=None, formats=None: Reader(metadata.url, token_header, formats))

        with pytest.raises(Exception) as refused:
            runtime("gpu-training:stack").peers()
        assert "tags" in str(refused.value) or "400" in str(refused.value), refused.value
        assert runtime(tags.STACK).peers() == [(metadata.instance_id, "10.42.0.7")]
    finally:
        metadata.stop()
        api.stop()
