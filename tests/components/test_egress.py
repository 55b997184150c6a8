"""Egress: every endpoint a node uses has a route in the plan, read from what the nodes really get.

For every stack (and the spot variants), the real program runs on the mock engine; the test decodes
the user-data each node resource carries, collects every URL in it (node.json, the bootstrap, the
embedded agent files) plus the cloud API the agent calls, and checks that a route the provider
declares for that host is made by the plan's resources (components/egress.py routes_in_plan: e.g. an
Alibaba node with internetMaxBandwidthOut > 0). Then: the preview lists the endpoints and routes, a
stack whose nodes would lose an endpoint is refused with the endpoint named, and nodes use the
in-VPC endpoints while scripts/run.py keeps the public one.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from stackcases import vm_stack_names

from components import safety
from components.bootstrap import decode, loader_config_of, node_config_in_plan, payload_files

REPO = Path(__file__).resolve().parents[2]
URL = re.compile(r"https?://[A-Za-z0-9._~%+:/@-]+")
# Every registered cloud's node types, as its conformance adapter names them.
NODE_TYPES = tuple(t for adapter in safety.adapters().values() for t in adapter.get("nodes", []))
VARIANTS = [(stack, ()) for stack in vm_stack_names()] + [
    ("entry-t4", ("billing=spot", "checkpoint.bucket=my-bucket")),
    ("large-a100", ("billing=spot",)),
    ("tc-large-a100", ("billing=spot", "spotMaxPricePerHour=50")),
    ("tc-medium-a100", ("billing=on-demand",)),
]


def user_data_of(resource) -> str:
    """The node's encoded user data: an input, or inside one object (a Huawei AS configuration's instanceConfig)."""
    inputs = resource.inputs
    return inputs.get("userData") or next(v["userData"] for v in inputs.values() if isinstance(v, dict) and "userData" in v)


def boot_text(user_data: str, plan) -> str:
    """Everything the node boots with: the loader (user data) and the boot payload it fetches."""
    key = loader_config_of(decode(user_data))["payload"]["key"]
    payload = next(r.inputs["content"] for r in plan.resources if r.inputs.get("key") == key)
    return "\n".join([decode(user_data), *payload_files(payload).values()])


@pytest.mark.parametrize("stack,overrides", VARIANTS, ids=[f"{s}{'+' if o else ''}{'+'.join(o)}" for s, o in VARIANTS])
def test_every_endpoint_a_node_uses_has_a_route_in_the_plan(plan_for, stack, overrides):
    from components import egress
    from tools.stackfiles import stack_spec

    _, spec = stack_spec(stack, overrides)
    plan = plan_for(stack, *overrides)
    made = egress.routes_in_plan(spec.profile.egress.routes(spec), plan.resources)
    nodes = [r for r in plan.resources if r.type in NODE_TYPES]
    assert nodes, "the plan creates no node"
    rules = spec.profile.egress.endpoint_rules(spec.region)
    unreachable = []
    for node in nodes:
        text = boot_text(user_data_of(node), plan)
        urls = set(URL.findall(text))
        api = node_config_in_plan(user_data_of(node), plan.resources)["endpoints"]["cloudApi"]
        urls |= {api} if api else {f"https://{host}" for host in spec.profile.egress.cloud_api_default(spec)}
        for url in sorted(urls):
            host = urlsplit(url).hostname
            rule = next((r for r in rules if re.match(r.pattern, host)), None)
            reached_by = rule.routes if rule else ("internet",)
            if not any(made.get(route) is not None for route in reached_by):
                unreachable.append(f"{node.name}: {url} needs {' or '.join(reached_by)};"
                                   f" the plan makes {sorted(r for r, v in made.items() if v is not None)}")
    assert not unreachable, "\n".join(unreachable)


def run_preview(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z", "COLUMNS": "240"}
    return subprocess.run([sys.executable, str(REPO / "scripts" / "preview.py"), *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_preview_json_lists_each_endpoint_and_the_route_that_reaches_it():
    result = run_preview("large-h20", "--json")
    assert result.returncode == 0, result.stderr
    section = json.loads(result.stdout)["egress"]
    by_name = {e["name"]: e for e in section["endpoints"]}
    assert by_name["cloud API"]["url"] == "https://ecs-vpc.cn-beijing.aliyuncs.com"
    assert by_name["cloud API"]["route"] == "vpc" and by_name["cloud API"]["usedBy"] == "agent"
    assert by_name["object storage"]["url"] == "https://s3.oss-cn-beijing-internal.aliyuncs.com"
    assert by_name["object storage"]["route"] == "vpc"
    assert by_name["CUDA repository"]["route"] == "internet"
    assert all(e["route"] for e in section["endpoints"])
    routes = {r["name"]: r for r in section["routes"]}
    assert routes["internet"]["inPlan"] and sorted(routes["internet"]["resources"]) == ["large-h20-node-0", "large-h20-node-1"]
    assert "per GB of outbound traffic" in routes["internet"]["cost"]


def test_preview_human_output_shows_the_endpoints_routes_and_cost():
    result = run_preview("tc-medium-a100")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "node endpoints" in out and "cvm.tencentcloudapi.com" in out and "as.tencentcloudapi.com" in out
    assert "route internet" in out and "cost:" in out and "tc-medium-a100-spot-config" in out


def test_a_stack_whose_nodes_lose_an_endpoint_is_refused_naming_it():
    alibaba = run_preview("entry-t4", "--set", "publicEgress=false")
    assert alibaba.returncode == 2
    assert "error: image: CUDA repository https://developer.download.nvidia.com" in alibaba.stderr
    assert "Traceback" not in alibaba.stderr
    tencent = run_preview("tc-entry-t4", "--set", "publicEgress=false")
    assert tencent.returncode == 2
    assert "error: publicEgress: cloud API https://cvm.tencentcloudapi.com" in tencent.stderr
    assert "cannot release itself" in tencent.stderr


def test_an_image_with_the_driver_makes_the_cuda_repository_a_warning_and_the_rest_stays_in_the_vpc():
    from tools.stackfiles import stack_spec

    _, spec = stack_spec("entry-t4", ("publicEgress=false", "image=m-bp1withdriver0001"))
    warned = [f for f in spec.findings if "CUDA repository" in f.message]
    assert [f.level for f in warned] == ["warning"]


def test_nodes_use_in_vpc_endpoints_and_run_py_keeps_the_public_one(plan_for):
    from tools.stackfiles import node_config_for_stack

    config = node_config_for_stack("medium-a100")
    assert config["checkpoint"]["endpoint"] == "https://s3.oss-cn-hangzhou-internal.aliyuncs.com"
    assert config["endpoints"]["cloudApi"] == "https://ecs-vpc.cn-hangzhou.aliyuncs.com"
    outputs = plan_for("medium-a100").outputs
    assert outputs["checkpoint"]["endpoint"] == "https://s3.oss-cn-hangzhou.aliyuncs.com"
    # A user's own endpoint is used by everyone.
    mine = node_config_for_stack("medium-a100", ("checkpoint.endpoint=https://oss.example.com",))
    assert mine["checkpoint"]["endpoint"] == "https://oss.example.com"


@pytest.mark.parametrize("host,routes", [
    ("s3.oss-cn-beijing-internal.aliyuncs.com", ("vpc",)),
    ("bucket.s3.oss-cn-beijing-internal.aliyuncs.com", ("vpc",)),
    ("s3.oss-cn-beijing.aliyuncs.com", ("internet",)),
    ("s3.oss-cn-hangzhou-internal.aliyuncs.com", ("internet",)),  # another region's internal endpoint
    ("ecs-vpc.cn-beijing.aliyuncs.com", ("vpc",)),
    ("ecs.cn-beijing.aliyuncs.com", ("internet",)),
])
def test_alibaba_rules_put_only_the_regions_internal_endpoints_in_the_vpc(host, routes):
    from components.providers.alicloud.profile import endpoint_rules

    rule = next(r for r in endpoint_rules("cn-beijing") if re.match(r.pattern, host))
    assert rule.routes == routes


@pytest.mark.parametrize("stack,node_type,keys", [
    ("entry-t4", "alicloud:ecs/instance:Instance", ("internetMaxBandwidthOut",)),
    ("medium-a100", "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", ("internetMaxBandwidthOut",)),
    ("tc-entry-t4", "tencentcloud:Instance/instance:Instance", ("internetMaxBandwidthOut", "allocatePublicIp")),
    ("tc-medium-a100", "tencentcloud:As/scalingConfig:ScalingConfig", ("internetMaxBandwidthOut", "publicIpAssigned")),
])
def test_public_egress_off_gives_nodes_no_public_address(plan_for, stack, node_type, keys):
    # An image of the stack's own cloud, with the GPU driver (the default public image has none).
    overrides = ("publicEgress=false", "image=img-withdrvr" if stack.startswith("tc-") else "image=m-bp1withdriver0001")
    if stack.startswith("tc-"):  # Tencent's agent needs the public API: refused without an address
        from components.spec import SpecError
        from tools.stackfiles import stack_spec

        with pytest.raises(SpecError, match="cloud API"):
            stack_spec(stack, overrides)
        return
    plan = plan_for(stack, *overrides)
    for node in plan.of_type(node_type):
        assert not any(node.inputs.get(key) for key in keys), node.inputs
