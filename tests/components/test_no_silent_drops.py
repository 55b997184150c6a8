"""Nothing a stack asks for is dropped without a word (issue 10, item 6).

- large-h20 runs on an eRDMA-capable type, but no stack sets eRDMA up (no Elastic RDMA interface, no
  driver): the node config must not claim it (the bootstrap would look for RDMA devices) and the
  preview must say that NCCL uses TCP between nodes.
- A Tencent spot pool cannot buy the extreme class's extra disk throughput (as_.ScalingConfig data
  disks have no throughput_performance): the preview must say so; on-demand nodes keep it.
"""
from __future__ import annotations

import pytest

from tools.stackfiles import stack_spec


def warnings_of(stack: str, *overrides: str, key: str) -> list[str]:
    _, spec = stack_spec(stack, tuple(overrides))
    return [f.message for f in spec.findings if f.level == "warning" and f.key == key]


def test_an_rdma_capable_type_without_rdma_set_up_is_not_claimed_and_the_tcp_fallback_is_said():
    from components.bootstrap.config import bootstrap_values
    from tools.stackfiles import node_config_for_stack

    said = warnings_of("large-h20", key="nodes")
    assert any("supports erdma" in m and "NCCL between nodes uses TCP at 32 Gbit/s" in m for m in said), said
    config = node_config_for_stack("large-h20")
    assert config["host"]["rdma"] == "none"
    assert bootstrap_values(config)["rdma"] == "none"  # the bootstrap writes NCCL_IB_DISABLE=1


def test_a_single_node_needs_no_rdma_warning():
    assert not [m for m in warnings_of("large-h20", "nodes=1", key="nodes") if "erdma" in m]


def test_tencent_spot_on_the_extreme_class_says_the_extra_throughput_is_dropped(plan_for):
    said = warnings_of("tc-large-a100", "billing=spot", "spotMaxPricePerHour=50", key="billing")
    assert said and "not +650 MB/s" in said[0] and "billing: on-demand" in said[0]
    config = plan_for("tc-large-a100", "billing=spot", "spotMaxPricePerHour=50").of_type(
        "tencentcloud:As/scalingConfig:ScalingConfig")[0]
    assert "throughputPerformance" not in config.inputs["dataDisks"][0]  # what the warning is about


@pytest.mark.parametrize("overrides", [(), ("dataDiskGb=400",)])
def test_no_throughput_warning_where_nothing_is_dropped(plan_for, overrides):
    assert not warnings_of("tc-large-a100", *overrides, key="billing")
    if not overrides:
        (node, *_) = plan_for("tc-large-a100").of_type("tencentcloud:Instance/instance:Instance")
        assert node.inputs["dataDisks"][0]["throughputPerformance"] == 650
