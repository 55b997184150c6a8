"""The Kubernetes path under the mock engine: the ACK parts, the training objects against the pinned
Kubernetes schemas, the validation of the `kubernetes:` section, and what the preview says bills.

Schemas: kubernetes-validate (requirements-dev.txt, pinned) ships the strict JSON schemas of each
Kubernetes minor version (additionalProperties: false), so a misspelt field is an error, not a field
the API server drops. SCHEMA_VERSION is the oldest minor the manifests may use (the ACK offer's
min_minor is below it only where the fields are the same).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest

from components.kubernetes import manifests

REPO = Path(__file__).resolve().parents[2]
STACK = "large-a100-k8s"
SCHEMA_VERSION = "1.33.0"
JOB = "kubernetes:batch/v1:Job"


def as_manifest(resource) -> dict:
    """A planned pulumi-kubernetes resource as the object the API server receives. The engine carries
    numbers as doubles (protobuf Struct), so whole numbers come back as ints, as kubectl would send them."""
    def ints(value):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {k: ints(v) for k, v in value.items()}
        if isinstance(value, list):
            return [ints(v) for v in value]
        return value

    obj = ints(copy.deepcopy(resource.inputs))
    group, version, kind = resource.type.removeprefix("kubernetes:").split(":")[0].split("/") + [
        resource.type.split(":")[-1]]
    obj.setdefault("apiVersion", version if group == "core" else f"{group}/{version}")
    obj.setdefault("kind", kind)
    return obj


def k8s_objects(plan) -> list[dict]:
    return [as_manifest(r) for r in plan.resources if r.type.startswith("kubernetes:")]


def validate(obj: dict) -> None:
    kubernetes_validate.validate(obj, SCHEMA_VERSION, strict=True)


def test_every_kubernetes_object_the_program_creates_matches_the_pinned_schema(plan_for):
    objects = k8s_objects(plan_for(STACK))
    assert {o["kind"] for o in objects} == {"Namespace", "ServiceAccount", "ConfigMap", "Service", "Job"}
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize("mutate", [
    lambda job: job["spec"]["template"]["spec"].__setitem__("restartPolicyy", "Never"),  # a misspelt field
    lambda job: job["spec"].__setitem__("completions", "two"),  # a wrong type
    lambda job: job["spec"]["template"]["spec"]["containers"][0]["resources"].__setitem__("limit", {}),
], ids=["typo", "type", "nested-typo"])
def test_the_schema_check_catches_a_broken_job(plan_for, mutate):
    """The check can fail: the same Job with one field broken is refused by the strict schema."""
    job = next(o for o in k8s_objects(plan_for(STACK)) if o["kind"] == "Job")
    mutate(job)
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(job)


def test_the_gpu_operator_option_adds_a_pinned_release_that_leaves_the_managed_parts_alone(plan_for):
    plan = plan_for(STACK, "kubernetes.gpuOperator=true")
    release = plan.of_type("kubernetes:helm.sh/v3:Release")
    assert len(release) == 1
    inputs = release[0].inputs
    assert inputs["chart"] == "gpu-operator" and inputs["version"].startswith("v")
    values = inputs["values"]
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert values["devicePlugin"]["enabled"] is False
    namespaces = [as_manifest(r) for r in plan.of_type("kubernetes:core/v1:Namespace")]
    for obj in namespaces:
        validate(obj)
    assert not plan_for(STACK).of_type("kubernetes:helm.sh/v3:Release")


def test_the_job_is_gang_scheduled_over_the_nodes_with_their_gpus(plan_for):
    plan = plan_for(STACK)
    job = as_manifest(plan.of_type(JOB)[0])
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 2
    labels = job["spec"]["template"]["metadata"]["labels"]
    # The autoscaler never moves a running training pod (it would look idle while it uploads a checkpoint).
    assert job["spec"]["template"]["metadata"]["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    assert labels["pod-group.scheduling.sigs.k8s.io/min-available"] == "2"
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert any(m["mountPath"] == "/dev/shm" for m in container["volumeMounts"])
    assert pod["subdomain"] == manifests.SERVICE and pod["restartPolicy"] == "Never"
    service = as_manifest(plan.of_type("kubernetes:core/v1:Service")[0])
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    # Evictions recreate the pod (not a failure); a FAILED run fails the Job; the run is bounded by maxHours.
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    assert spec["activeDeadlineSeconds"] == 72 * 3600
    # The agent is the entrypoint: it fetches and verifies itself, then runs under the script that passes it
    # the SIGTERM and restarts it like systemd (test_pod_agent.py runs that script).
    assert container["command"][-1].endswith(manifests.entrypoint())
    # The agent's packages from the in-VPC mirror, which serves plain HTTP: pip needs it trusted.
    assert "--index-url http://mirrors.cloud.aliyuncs.com/pypi/simple/ --trusted-host mirrors.cloud.aliyuncs.com" \
        in container["command"][-1]


def test_the_pod_node_config_names_the_job_and_the_pod_role(plan_for):
    plan = plan_for(STACK)
    config_map = next(r for r in plan.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "node-config")
    config = json.loads(config_map.inputs["data"]["node.json"])
    assert config["identity"]["roleName"] == "gpu-training-large-a100-k8s-pod"
    assert config["cluster"]["kubernetes"] == {"namespace": "gpu-training", "job": "train", "service": "train",
                                               "peerHost": "{job}-{index}.{service}"}
    assert config["nodeCount"] == 2 and config["train"]["launcher"] == "torchrun"
    boot = next(r for r in plan.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "agent-boot-set")
    # The cloud's pod runtime (credentials) rides beside the neutral Kubernetes half it subclasses.
    assert "from node_agent.pod import PodRuntime" in boot.inputs["data"]["cloud_runtime.py"]
    assert "def exit_code" in boot.inputs["data"]["pod.py"]


def test_the_pods_get_the_stacks_setup_and_keep_its_cache_on_the_node_disk(plan_for):
    """issue 33: train.setup and train.requirements reach the pods through the node config the agent (the pod's
    entrypoint) reads, so the pod installs them before the trainer, as a VM node does; /data, where the agent keeps
    pip's cache and the wheels, is the emptyDir on the node's data disk."""
    plan = plan_for(STACK, 'train.setup=["pip install timm", "apt-get install -y libgl1"]')
    config_map = next(r for r in plan.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "node-config")
    config = json.loads(config_map.inputs["data"]["node.json"])
    assert config["train"]["setup"] == ["pip install timm", "apt-get install -y libgl1"]
    assert config["paths"]["data"] == manifests.PATHS["data"] and config["paths"]["venv"] == ""
    job = next(o for o in k8s_objects(plan) if o["kind"] == "Job")
    mounts = {m["name"]: m["mountPath"] for m in job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert mounts["data"] == config["paths"]["data"] and "emptyDir" in volumes["data"]


def test_the_ack_parts(plan_for):
    plan = plan_for(STACK)
    cluster = plan.of_type("alicloud:cs/managedKubernetes:ManagedKubernetes")[0].inputs
    assert cluster["clusterSpec"] == "ack.pro.small" and cluster["enableRrsa"] is True
    pools = {p.inputs["nodePoolName"]: p.inputs for p in plan.of_type("alicloud:cs/nodePool:NodePool")}
    system, gpu = pools["large-a100-k8s-system"], pools["large-a100-k8s-gpu"]
    assert system["desiredSize"] == "2" and not system.get("taints")
    assert gpu["instanceTypes"][0] == "ecs.gn7e-c16g1.32xlarge"
    assert gpu["scalingConfig"]["minSize"] == 0 and gpu["scalingConfig"]["maxSize"] == 2
    assert gpu["spotStrategy"] == "SpotWithPriceLimit" and gpu["spotPriceLimits"]
    assert gpu["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert gpu["deploymentSetId"] and gpu["dataDisks"][0]["encrypted"] == "true"
    for pool in (system, gpu):
        assert pool["systemDiskEncrypted"] is True and pool["instanceMetadataOptions"]["httpTokens"] == "required"
    on_demand = {p.inputs["nodePoolName"]: p.inputs for p in plan_for(STACK, "billing=on-demand").of_type(
        "alicloud:cs/nodePool:NodePool")}["large-a100-k8s-gpu"]
    assert on_demand["spotStrategy"] == "NoSpot" and "spotPriceLimits" not in on_demand
    # The GPU pool scales to zero when idle: the cluster's autoscaler scales down, and up from zero.
    (autoscaler,) = plan.of_type("alicloud:cs/autoscalingConfig:AutoscalingConfig")
    assert autoscaler.inputs["scaleDownEnabled"] is True and autoscaler.inputs["scaleUpFromZero"] is True
    acl = plan.of_type("alicloud:slb/aclEntryAttachment:AclEntryAttachment")
    assert [a.inputs["entry"] for a in acl] == ["198.51.100.7/32"]


def test_the_pod_role_is_for_the_training_service_account_and_the_stack_prefix_only(plan_for):
    plan = plan_for(STACK)
    role = next(r for r in plan.of_type("alicloud:ram/role:Role") if r.name.endswith("pod-role"))
    trust = json.loads(role.inputs["assumeRolePolicyDocument"])["Statement"][0]
    assert trust["Principal"]["Federated"] and trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"]["StringEquals"]["oidc:sub"] == "system:serviceaccount:gpu-training:trainer"
    policy = next(r for r in plan.of_type("alicloud:ram/policy:Policy") if r.name.endswith("pod-policy"))
    statements = json.loads(policy.inputs["policyDocument"])["Statement"]
    actions = {a for s in statements for a in s["Action"]}
    assert actions and all(a.startswith("oss:") for a in actions)
    assert all(res.startswith("acs:oss:*:*:my-gpu-training-checkpoints") for s in statements for res in s["Resource"])
    account = as_manifest(plan.of_type("kubernetes:core/v1:ServiceAccount")[0])
    assert account["metadata"]["annotations"] == {"pod-identity.alibabacloud.com/role-name": role.inputs["roleName"]}
    # A VM stack's node role (it may release instances) is not made for the Kubernetes path.
    assert not [r for r in plan.of_type("alicloud:ram/role:Role") if r.name.endswith("node-role")]


def test_the_kubeconfig_is_a_secret_output_and_the_preview_names_what_bills(plan_for):
    from components.kubernetes.training import KubernetesTraining  # noqa: F401 - the program's component

    plan = plan_for(STACK)
    assert plan.outputs["kubeconfig"].startswith("<kubeconfig")
    assert plan.outputs["apiServerAccess"].startswith("planned: the whitelist is bound")
    env = {**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"}
    done = subprocess.run([sys.executable, "scripts/preview.py", STACK, "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    billing = {item["type"]: item for item in document["keepsBilling"]}
    assert "USD 0.09" in billing["alicloud:cs/managedKubernetes:ManagedKubernetes"]["rate"]
    assert "2 x ecs.g7.xlarge" == billing["alicloud:cs/nodePool:NodePool"]["size"]
    assert "pulumi destroy" in billing["alicloud:cs/nodePool:NodePool"]["until"]
    assert document["unclassifiedResourceTypes"] == []
    internet = next(r for r in document["egress"]["routes"] if r["name"] == "internet")
    assert internet["inPlan"] and internet["resources"] == ["large-a100-k8s-cluster"] and "NAT" in internet["description"]


def run_preview(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"}
    return subprocess.run([sys.executable, "scripts/preview.py", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_bad_kubernetes_settings_are_all_listed_by_key_with_exit_2():
    done = run_preview(STACK, "--set", "kubernetes.apiAllowCidrs=[]", "--set", "kubernetes.version=1.29.1-aliyun.1",
                       "--set", "kubernetes.namespace=Bad_Name", "--set", "sharedStorage=cpfs",
                       "--set", 'sshAllowCidrs=["203.0.113.7/32"]', "--set", "kubernetes.systemNodes=0",
                       "--set", "kubernetes.image=not an image")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    for key in ("kubernetes.apiAllowCidrs", "kubernetes.version", "kubernetes.namespace", "sharedStorage",
                "sshAllowCidrs", "kubernetes.systemNodes", "kubernetes.image"):
        assert f"error: {key}:" in done.stderr, (key, done.stderr)


def test_a_world_open_api_server_and_an_unknown_field_are_refused():
    done = run_preview(STACK, "--set", 'kubernetes.apiAllowCidrs=["0.0.0.0/0"]', "--set", "kubernetes.sytemNodes=3")
    assert done.returncode == 2
    assert "error: kubernetes.apiAllowCidrs[0]:" in done.stderr and "whole Internet" in done.stderr
    assert "error: kubernetes.sytemNodes: unknown field; did you mean 'systemNodes'" in done.stderr


def test_the_kubernetes_path_is_refused_on_tencent_with_the_reason():
    done = run_preview("tc-large-a100", "--set", 'kubernetes={"apiAllowCidrs": ["198.51.100.7/32"]}')
    assert done.returncode == 2
    assert "error: kubernetes: Tencent Cloud does not support kubernetes:" in done.stderr
    assert "TKE" in done.stderr


def test_pulumi_up_binds_the_whitelist_to_the_api_servers_listener(monkeypatch):
    """At deploy time (not in a preview) the API server's listener gets the stack's whitelist, signed with
    the deploying credentials, against a local stand-in of the SLB API."""
    from localcloud.standins import CloudApi
    from tools.mockrun import run_program
    from tools.stackfiles import apply_overrides, load_stack_config

    slb = CloudApi("alicloud")
    try:
        monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "AK")
        monkeypatch.setenv("ALICLOUD_SECRET_KEY", "SK")
        monkeypatch.setenv("GPU_TRAINING_SLB_ENDPOINT", slb.url)
        # A spot cap: the catalog has no price, and at deploy time the cap would be read from the cloud.
        config = apply_overrides(load_stack_config(STACK), ("spotMaxPricePerHour=50",))
        plan = run_program(config, STACK, preview=False)
        (request,) = slb.calls("SetLoadBalancerTCPListenerAttribute")
        params = request["params"]
        assert request["headers"]["authorization"].startswith("ACS3-HMAC-SHA256 Credential=AK")  # signed
        assert params["LoadBalancerId"] == "<API server load balancer of large-a100-k8s-cluster>"
        assert (params["ListenerPort"], params["AclStatus"], params["AclType"]) == ("6443", "on", "white")
        assert params["AclId"] == "large-a100-k8s-api-acl-id"
        assert "admits only whitelist" in plan.outputs["apiServerAccess"]
        cluster = plan.of_type("alicloud:cs/managedKubernetes:ManagedKubernetes")[0]
        assert cluster.inputs["slbInternetEnabled"] is True
    finally:
        slb.stop()
    slb = CloudApi("alicloud")
    try:  # a preview never calls it
        monkeypatch.setenv("GPU_TRAINING_SLB_ENDPOINT", slb.url)
        assert run_program(load_stack_config(STACK), STACK).outputs["apiServerAccess"].startswith("planned")
        assert not slb.requests
    finally:
        slb.stop()


@pytest.mark.parametrize("overrides", [(), ("billing=on-demand",), ("nodes=3",), ("spotMaxPricePerHour=50",),
                                       ("kubernetes.gpuOperator=true",)], ids=lambda o: "+".join(o) or "as-is")
def test_every_cloud_input_passes_the_providers_schema(plan_for, overrides):
    """The ACK, SLB and RAM inputs against what terraform-provider-alicloud accepts (provider_facts.json, with
    the cs and slb types added to bridge.yaml): a misspelt or out-of-range input fails here, not at `pulumi up`."""
    from components.billing import INSIDE_THE_CLUSTER, STATE_ONLY
    from components.providers import facts

    plan = plan_for(STACK, *overrides)
    cloud = [r for r in plan.resources if r.custom and r.type not in STATE_ONLY
             and not r.type.startswith(INSIDE_THE_CLUSTER)]
    unknown = sorted({r.type for r in cloud if facts.for_type(r.type) is None or not facts.for_type(r.type).knows(r.type)})
    assert not unknown, unknown
    problems = facts.stack_problems(cloud)
    assert not problems, "\n".join(f"{t}.{n}: {p} [{p.kind}]" for t, n, p in problems)


@pytest.mark.parametrize("overrides", [(), ("billing=on-demand",), ("nodes=3",)], ids=lambda o: "+".join(o) or "as-is")
def test_the_kubernetes_stack_keeps_the_safety_rules(plan_for, overrides):
    """components/safety.py's rules (the conformance suite's and the policy pack's) over the Kubernetes plan:
    encrypted node pool disks and metadata tokens (conformance.yaml lists cs/nodePool), the pod role's least
    privilege, the stack tag on every taggable resource, the provider's schema. The cloud-side TTL rule has
    nothing to check: a cluster has no cloud-side expiry (docs/kubernetes.md, Teardown)."""
    from components import safety

    plan = plan_for(STACK, *overrides)
    violations = safety.check(safety.from_plan(plan.resources), STACK)
    assert not violations, "\n".join(map(str, violations))


def test_the_safety_rules_catch_an_unencrypted_pool_and_optional_tokens(plan_for):
    from components import safety

    plan = copy.deepcopy(plan_for(STACK))
    gpu = next(r for r in plan.of_type("alicloud:cs/nodePool:NodePool") if r.name.endswith("gpu-pool"))
    gpu.inputs["dataDisks"][0]["encrypted"] = "false"
    gpu.inputs["instanceMetadataOptions"]["httpTokens"] = "optional"
    rules = {v.rule for v in safety.check(safety.from_plan(plan.resources), STACK)}
    assert {"encrypted-disks", "metadata-tokens-required"} <= rules


@pytest.mark.parametrize("value,key", [
    (5, "kubernetes"), ("[1, 2]", "kubernetes"), ({"apiAllowCidrs": "nonsense"}, "kubernetes.apiAllowCidrs[0]"),
    ({"apiAllowCidrs": [None]}, "kubernetes.apiAllowCidrs[0]"),
    ({"apiAllowCidrs": ["198.51.100.7/32", "10.0.0.300/32"]}, "kubernetes.apiAllowCidrs[1]"),
    ({"apiAllowCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}, "kubernetes.apiAllowCidrs"), ({"apiAllowCidrs": {"a": 1}}, "kubernetes.apiAllowCidrs"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "systemNodes": "many"}, "kubernetes.systemNodes"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "systemNodes": 1e400}, "kubernetes.systemNodes"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "gpuOperator": "maybe"}, "kubernetes.gpuOperator"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "version": "1.33"}, "kubernetes.version"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "namespace": "x" * 64}, "kubernetes.namespace"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "image": "pytorch\n:latest"}, "kubernetes.image"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "startDeadlineMinutes": 5}, "kubernetes.startDeadlineMinutes"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "startDeadlineMinutes": 239}, "kubernetes.startDeadlineMinutes"),
    ({"apiAllowCidrs": ["198.51.100.7/32"], "startDeadlineMinutes": 12.5}, "kubernetes.startDeadlineMinutes"),
], ids=lambda v: str(v)[:30])
def test_bad_values_of_the_section_are_refused_by_key(value, key):
    from components.validation import SpecError, build_spec
    from tools.stackfiles import load_stack_config

    config = {**load_stack_config(STACK), "gpu-training:kubernetes": value}
    with pytest.raises(SpecError) as refused:
        build_spec(config, stack=STACK)
    assert key in {f.key for f in refused.value.errors}, refused.value.render()


# The training image (issue 22, B3). The rule is the provider's data: components/providers/alicloud/registry.py
# (which hosts are Docker Hub, which regions are mainland China, with the ACK doc it rests on).
DOCKER_HUB_IMAGES = [None, "pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime", "docker.io/pytorch/pytorch:2.4.1",
                     "index.docker.io/library/python:3.12", "library/python:3.12", "python:3.12"]


def _section(image, region="cn-beijing"):
    from tools.stackfiles import load_stack_config

    config = load_stack_config(STACK)
    section = {k: v for k, v in config["gpu-training:kubernetes"].items() if k != "image"}
    if image is not None:
        section["image"] = image
    return {**config, "alicloud:region": region, "gpu-training:kubernetes": section}


@pytest.mark.parametrize("image", DOCKER_HUB_IMAGES, ids=lambda i: str(i))
def test_a_mainland_stack_never_pulls_the_training_image_from_docker_hub(image):
    from components.providers.alicloud import registry
    from components.kubernetes.spec import image_registry
    from components.validation import SpecError, build_spec

    assert registry.mainland("cn-beijing") and image_registry(image or "pytorch/pytorch:x") == "docker.io"
    with pytest.raises(SpecError) as refused:
        build_spec(_section(image), stack=STACK)
    found = [f for f in refused.value.errors if f.key == "kubernetes.image"]
    assert found, refused.value.render()
    assert "Docker Hub" in found[0].message and "Container Registry (ACR)" in found[0].message
    assert "cn-beijing" in found[0].message


@pytest.mark.parametrize("image", ["nvcr.io/nvidia/pytorch:24.08-py3", "ghcr.io/team/trainer:1.0",
                                   "registry-1.docker.io/pytorch/pytorch:2.4.1"])
def test_a_mainland_stack_refuses_other_overseas_registries_too(image):
    """Review of issue 22: Docker Hub is not the only registry behind the border (NGC, GHCR, ...)."""
    from components.validation import SpecError, build_spec

    with pytest.raises(SpecError) as refused:
        build_spec(_section(image), stack=STACK)
    found = [f for f in refused.value.errors if f.key == "kubernetes.image"]
    assert found and "Container Registry (ACR)" in found[0].message, refused.value.render()
    assert build_spec(_section(image, "ap-southeast-1"), stack=STACK).kubernetes.image == image


def test_a_stack_made_before_the_image_rule_can_still_be_torn_down(monkeypatch, caplog):
    """Review of issue 22: a stack from before the mainland image rule (its image the Docker Hub default) must
    still run for `destroy --run-program`, or its cluster cannot be torn down; `up` still refuses it."""
    from components.teardown import TEARDOWN_ENV
    from tools.mockrun import ProgramExit, run_program

    config = _section(None)
    with pytest.raises(ProgramExit) as refused:
        run_program(config, STACK)
    assert refused.value.code == 2 and "kubernetes.image" in refused.value.stderr
    assert f"is torn down with {TEARDOWN_ENV}=1" in " ".join(refused.value.stderr.split())
    monkeypatch.setenv(TEARDOWN_ENV, "1")
    plan = run_program(config, STACK)  # the real program on the mock engine, as Pulumi runs it for the destroy
    assert plan.of_type("pulumi:providers:kubernetes"), "the provider the destroy needs is built"
    warned = [r for r in caplog.records if "kubernetes.image" in r.getMessage()]
    assert warned and warned[-1].levelname == "WARNING" and "not enforced" in warned[-1].getMessage()
    # Only the rules about what `up` creates are relaxed: a broken namespace is still an error.
    broken = {**config, "gpu-training:kubernetes": {**config["gpu-training:kubernetes"], "namespace": "Bad_Name"}}
    with pytest.raises(ProgramExit, match="kubernetes.namespace"):
        run_program(broken, STACK)


@pytest.mark.parametrize("image,region", [
    ("registry.cn-beijing.aliyuncs.com/team/pytorch:2.4.1-cuda12.4-cudnn9-runtime", "cn-beijing"),
    ("mirror.example.internal/pytorch/pytorch:2.4.1", "cn-shanghai"),
    (None, "cn-hongkong"), (None, "ap-southeast-1")])
def test_an_image_the_nodes_reach_is_accepted(image, region):
    from components.validation import build_spec

    spec = build_spec(_section(image, region), stack=STACK)
    assert spec.kubernetes.image == (image or "pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime")


def test_the_shipped_stack_pulls_from_acr_in_its_region_and_bounds_the_start(plan_for):
    plan = plan_for(STACK)
    job = next(as_manifest(r) for r in plan.resources if r.type == JOB)
    image = job["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("registry.cn-beijing.aliyuncs.com/"), image
    assert plan.outputs["job"]["startDeadlineMinutes"] == 30



def test_the_preview_says_how_to_tear_down_after_the_kubeconfig_expires():
    done = run_preview(STACK)
    assert done.returncode == 0, done.stderr
    text = " ".join((done.stdout + done.stderr).split())
    assert "info kubernetes: the Kubernetes provider's kubeconfig from `up` expires after 240 minutes" in text
    assert "`GPU_TRAINING_TEARDOWN=1 pulumi destroy --run-program`" in text
