"""A spot pool's TTL on the clouds where it is a scheduled action (Huawei AS, Tencent AS): the action fires
once and sets the group to zero, so a `pulumi up` after it must keep the group at zero (audit W4), or it would
start spot GPUs that nothing stops. The real program on the mock engine, with the clock moved past the TTL."""
from __future__ import annotations

import logging
import os
from datetime import timedelta

import pytest

from components import clock
from tools.mockrun import run_program
from tools.stackfiles import load_stack_config

# (spot stack, the scaling group's type, the input that is its wanted size)
POOLS = [("hw-medium-v100", "huaweicloud:As/group:Group", "desireInstanceNumber"),
         ("tc-medium-a100", "tencentcloud:As/scalingGroup:ScalingGroup", "desiredCapacity")]


@pytest.mark.parametrize("stack,group_type,size_input", POOLS, ids=[p[0] for p in POOLS])
def test_an_up_after_the_pools_ttl_keeps_it_at_zero_instances(stack, group_type, size_input, caplog, monkeypatch):
    config = load_stack_config(stack)
    assert config["gpu-training:billing"] == "spot", "the case must be a spot pool"
    nodes = int(config.get("gpu-training:nodes", 1))
    first = run_program(config, stack)
    (group,) = first.of_type(group_type)
    assert group.inputs[size_input] == nodes
    expires = clock.parse(first.outputs["expiresAt"])
    for moment, wanted in ((expires - timedelta(hours=1), nodes), (expires - timedelta(minutes=10), 0),
                           (expires + timedelta(hours=2), 0)):
        monkeypatch.setenv(clock.CLOCK_ENV, clock.rfc3339(moment))
        caplog.clear()
        with caplog.at_level(logging.WARNING):  # the mock engine logs pulumi.log.warn here
            later = run_program(config, stack, prior=first)
        assert later.outputs["expiresAt"] == first.outputs["expiresAt"], "the TTL counts from the first up"
        (group,) = later.of_type(group_type)
        assert group.inputs[size_input] == wanted, moment
        if not wanted:
            assert "spot pool is kept at 0 instances" in caplog.text
    assert os.environ[clock.CLOCK_ENV]  # monkeypatch restores the pinned clock afterwards
