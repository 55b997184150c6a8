"""Every instance type a spot pool may draw obeys the tier (issue 10 item 5): the pool launches the
lowest-priced type it may, so an under-spec alternative is the one usually launched. Checked on the
plan the real program makes (the types the pool resources receive), for every stack made spot."""
from __future__ import annotations

import pytest

from components import providers
from tools.stackfiles import stack_spec
from stackcases import SPOT_CAPPED, plan_or_refusal, provider_of, vm_stack_names

# Stacks of clouds whose spot nodes a pool draws (profile.spot.pool; Baidu's bid instances have none).
POOL_STACKS = [stack for stack in vm_stack_names() if providers.profile(provider_of(stack)).spot.pool]

# Where each cloud's pool resource lists the types it may draw: type -> (its inputs -> the type names).
POOL_TYPE_INPUTS = {
    "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup":
        lambda inputs: [item["instanceType"] for item in inputs.get("launchTemplateConfigs") or []],
    "tencentcloud:As/scalingConfig:ScalingConfig": lambda inputs: inputs.get("instanceTypes") or [],
    "huaweicloud:As/configuration:Configuration":  # up to ten flavors, comma-separated
        lambda inputs: inputs["instanceConfig"]["flavor"].split(","),
}


def drawn_types(plan) -> set[str]:
    found = set()
    for type_, names in POOL_TYPE_INPUTS.items():
        for resource in plan.of_type(type_):
            found |= set(names(resource.inputs))
    return found


def pooled_spot(stack: str) -> tuple[str, ...]:
    """Spot with a price cap, or without one where a cap means single capped instances, not the pool (Huawei)."""
    _, spec = stack_spec(stack, SPOT_CAPPED)
    return SPOT_CAPPED if spec.profile.spot.has_pool(spec) else ("billing=spot",)


@pytest.mark.parametrize("stack", POOL_STACKS)
def test_every_type_the_pool_may_draw_passes_the_tiers_rules(stack, plan_for):
    overrides = pooled_spot(stack)
    plan = plan_or_refusal(plan_for, stack, overrides)
    _, spec = stack_spec(stack, overrides)
    rows = {row.name: row for row in spec.pool_types}
    drawn = drawn_types(plan)
    assert drawn and drawn <= set(rows), (drawn, set(rows))
    tier = spec.tier
    for name in drawn:
        row = rows[name]
        assert tier.accepts(row.gpu) and row.gpu_count == spec.instance.gpu_count, name
        assert 8 <= row.vcpus_per_gpu <= max(16, spec.instance.vcpus_per_gpu), (name, row.vcpus_per_gpu)
        assert row.vcpus >= tier.vcpus[0], (name, row.vcpus)
        assert row.memory_gb >= tier.memory_gb[0], (name, row.memory_gb)


def test_the_entry_pool_refuses_the_4_vcpu_type_and_says_why(plan_for):
    """The audit's case: entry-t4 spot drew ecs.gn6i-c4g1.xlarge (4 vCPU, 15 GiB)."""
    plan = plan_for("entry-t4", *SPOT_CAPPED)
    assert "ecs.gn6i-c4g1.xlarge" not in drawn_types(plan)
    _, spec = stack_spec("entry-t4", SPOT_CAPPED)
    (refusal,) = [f for f in spec.findings if "ecs.gn6i-c4g1.xlarge" in f.message]
    assert refusal.key == "billing" and "vCPU per GPU" in refusal.message and "RAM" in refusal.message
