"""Names and their limits (issue 10 item 7): every name the program gives fits the cloud's limit, or
validation refuses the stack naming the key and the stack name (the usual cause), before anything is
created. The limits are data in each provider profile (`naming.limits`, with their source); here they
are checked against the provider facts, against the names the plan really carries, and at the edge."""
from __future__ import annotations

import re

import pytest

from components import providers, tags
from tools.mockrun import ProgramExit, run_program
from components.providers import facts
from tools.stackfiles import apply_overrides, load_stack_config
from stackcases import SPOT_CAPPED, plan_or_refusal, stacks_of, variations

PROVIDERS = [p for p in providers.names() if providers.profile(p).naming.limits]
CASES = [(stack, overrides) for provider in PROVIDERS for stack in stacks_of(provider)
         for overrides in variations(stack)]


def test_every_provider_with_facts_declares_name_limits():
    assert set(facts.clouds()) <= set(PROVIDERS)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_limits_agree_with_the_provider_facts(provider):
    """Where the provider's schema has a length rule for the input, the profile states the same one."""
    loaded = facts.load(provider)
    for limit in providers.profile(provider).naming.limits:
        assert limit.source, limit
        field = loaded.inputs(limit.type)[limit.input]
        rules = [field.get("validate", {})] + field.get("validate", {}).get("of", [])
        lengths = [r for r in rules if r.get("kind") == "length"]
        for rule in lengths:
            assert (rule["min"], rule["max"]) == (limit.min, limit.max), (limit.type, limit.input)


@pytest.mark.parametrize("stack,overrides", CASES, ids=[f"{s}+{'+'.join(o)[:30]}" for s, o in CASES])
def test_the_plan_gives_exactly_the_names_the_limits_check(stack, overrides, plan_for):
    plan = plan_or_refusal(plan_for, stack, overrides)
    profile = providers.profile(load_stack_config(stack).get("gpu-training:provider", "alicloud"))
    allowed: dict[tuple[str, str], set[str]] = {}
    for limit in profile.naming.limits:
        allowed.setdefault((limit.type, limit.input), set()).update(limit.render(stack, i) for i in range(8))
    for (type_, input_), names in allowed.items():
        for resource in plan.of_type(type_):
            assert resource.inputs.get(input_) in names, (type_, input_, resource.inputs.get(input_))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_name_one_character_too_long_is_refused_naming_the_stack(provider):
    """The tightest limit decides: at it the stack plans, one character over validation refuses it."""
    stack = stacks_of(provider)[0]
    profile = providers.profile(provider)
    # Spot with a cap plans the most names; a cloud that cannot take a cap (Huawei's pool) plans spot without.
    spot = SPOT_CAPPED if "spotMaxPricePerHour" not in profile.rules.unsupported else ("billing=spot",)
    config = apply_overrides(load_stack_config(stack), spot)
    tightest = min(profile.naming.limits, key=lambda l: l.max - len(l.render("")))
    longest, source = tightest.max - len(tightest.render("")), tightest.source
    # The stack name is also the value of the stack tag (components/tags.py): the cloud's tag rule may be tighter.
    tag_value = tags.rules(provider).value
    if tag_value.max_length is not None and tag_value.max_length < longest:
        longest, source = tag_value.max_length, re.search(r"https?://[^\s),]+", tag_value.source).group(0)
    fits = "s" * longest
    run_program(config, fits)  # plans: every name fits
    with pytest.raises(ProgramExit) as stop:
        run_program(config, fits + "x")
    assert stop.value.code == 2 and "Traceback" not in stop.value.stderr
    assert "stack:" in stop.value.stderr and f"at most {longest} characters" in stop.value.stderr
    assert source in stop.value.stderr
