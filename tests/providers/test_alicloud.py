"""Every Alibaba stack, evaluated by the real program on Pulumi's mock engine: the key inputs the
engine would send to Alibaba Cloud, checked against the stack file and the provider's documented values."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from provider_plans import NOW, expiry, node_config_in, node_resources, stack_value, takes_tags
from stackcases import vm_stack_names
import yaml

from components import tags
from components.bootstrap import decode
from tools.stackfiles import load_stack_config

ALICLOUD_STACKS = [s for s in vm_stack_names() if load_stack_config(s).get("gpu-training:provider", "alicloud") == "alicloud"]
EXPECTED_TYPES = {  # what each stack file's header promises
    "entry-t4": "ecs.gn6i-c8g1.2xlarge",
    "entry-a10": "ecs.gn7i-c8g1.2xlarge",
    "medium-a10": "ecs.gn7i-2x.8xlarge",
    "medium-a100": "ecs.gn7-c13g1.13xlarge",
    "large-a100": "ecs.gn7e-c16g1.32xlarge",
    "large-h20": "ecs.gn8v-8x.16xlarge",
}
INSTANCE = "alicloud:ecs/instance:Instance"
TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
POOL = "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup"
RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"


NODE_TYPES = (INSTANCE, TEMPLATE)  # single instances, else the spot pool's launch template
SDK = "pulumi_alicloud"


def decoded_user_data(resource) -> dict:
    return yaml.safe_load(decode(resource.inputs["userData"]))


def test_there_are_the_six_alibaba_stacks():
    assert set(EXPECTED_TYPES) <= set(ALICLOUD_STACKS)


@pytest.mark.parametrize("stack", ALICLOUD_STACKS)
def test_instance_type_billing_and_gpu_count(stack, plan_for):
    plan = plan_for(stack)
    nodes = int(stack_value(stack, "nodes", 1))
    expected = EXPECTED_TYPES.get(stack)
    if stack_value(stack, "billing") == "spot":
        (template,) = plan.of_type(TEMPLATE)
        (pool,) = plan.of_type(POOL)
        assert not plan.of_type(INSTANCE)
        assert template.inputs["instanceChargeType"] == "PostPaid"
        assert template.inputs["spotStrategy"] in ("SpotAsPriceGo", "SpotWithPriceLimit")
        assert pool.inputs["autoProvisioningGroupType"] == "maintain"  # reclaimed nodes are replaced
        assert pool.inputs["totalTargetCapacity"] == str(nodes)
        assert pool.inputs["spotInstanceInterruptionBehavior"] == "terminate"
        types = [c["instanceType"] for c in pool.inputs["launchTemplateConfigs"]]
        assert len(set(types)) >= 2, "the spot pool spans at least two instance types"
        assert all(c["maxPrice"] for c in pool.inputs["launchTemplateConfigs"]), "every pool type is capped"
        if expected:
            assert template.inputs["instanceType"] == expected and types[0] == expected
    else:
        instances = plan.of_type(INSTANCE)
        assert len(instances) == nodes
        for instance in instances:
            assert instance.inputs["instanceChargeType"] == "PostPaid"
            assert instance.inputs["spotStrategy"] == "NoSpot"
            if expected:
                assert instance.inputs["instanceType"] == expected
    config = node_config_in(node_resources(plan, *NODE_TYPES)[0], plan)
    assert config["accelerator"]["count"] == int(stack_value(stack, "gpusPerNode"))
    assert config["stack"] == stack and config["nodeCount"] == nodes


LEVELS = ("PL1", "PL2", "PL3")  # ESSD levels by rising minimum size (ECS doc "ESSDs": 20, 461, 1,261 GiB)
LEVEL_MIN_GIB = {"PL1": 20, "PL2": 461, "PL3": 1261}


# Each stack as it is, and the large tier on a disk too small for PL3 (and for PL2): the level steps down.
@pytest.mark.parametrize("stack,size_override", [(s, None) for s in ALICLOUD_STACKS]
                         + [("large-a100", 1000), ("large-a100", 400)])
def test_disks_are_ssd_sized_and_levelled_by_tier(stack, size_override, plan_for):
    """Encryption is the conformance suite's (tests/test_conformance.py, rule encrypted-disks)."""
    plan = plan_for(stack, *([f"dataDiskGb={size_override}"] if size_override else []))
    tier = stack_value(stack, "tier")
    size = size_override or int(stack_value(stack, "dataDiskGb"))
    wanted = {"entry": "PL1", "medium": "PL2", "large": "PL3"}[tier]
    # The tier's level when the disk is large enough for it, else the highest level the size allows.
    expected = [level for level in LEVELS[:LEVELS.index(wanted) + 1] if size >= LEVEL_MIN_GIB[level]][-1]
    nodes = node_resources(plan, *NODE_TYPES)
    assert nodes
    for node in nodes:
        (disk,) = node.inputs["dataDisks"]
        assert disk["category"] == "cloud_essd"
        assert disk["size"] == size
        assert disk["performanceLevel"] == expected, (size, disk)


@pytest.mark.parametrize("stack", ALICLOUD_STACKS)
def test_release_time_and_role(stack, plan_for):
    """When the cloud releases each node, and how the role reaches it. Metadata tokens and the
    presence of a release time are the conformance suite's (metadata-tokens-required, cloud-side-ttl)."""
    plan = plan_for(stack)
    for node in node_resources(plan, *NODE_TYPES):
        release = datetime.strptime(node.inputs["autoReleaseTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        assert timedelta(0) <= release - expiry(stack) <= timedelta(minutes=1)
        assert release - NOW >= timedelta(minutes=30)  # Alibaba's minimum lead time
    if plan.of_type(INSTANCE):
        # At creation (RunInstances RamRoleName), not by a RamRoleAttachment after boot, when the
        # node's first credential reads could find no role (issue 10 item 7).
        (role,) = plan.of_type("alicloud:ram/role:Role")
        assert all(node.inputs["roleName"] == role.inputs["roleName"] for node in plan.of_type(INSTANCE))
        assert not plan.of_type("alicloud:ecs/ramRoleAttachment:RamRoleAttachment")
    else:
        assert plan.of_type(TEMPLATE)[0].inputs["ramRoleName"]


def node_policies(plan):
    """(role name, {policy name: policy document}) of the node role."""
    (role,) = plan.of_type("alicloud:ram/role:Role")
    return role.inputs["roleName"], {p.inputs["policyName"]: p.inputs.get("policyDocument")
                                     for p in plan.of_type("alicloud:ram/policy:Policy")}


@pytest.mark.parametrize("stack", ALICLOUD_STACKS)
def test_node_role_is_least_privilege(stack, plan_for):
    role, policies = node_policies(plan_for(stack))
    document = json.loads(policies[role])
    actions = {a for s in document["Statement"] for a in s["Action"]}
    assert "ecs:DeleteInstance" in actions  # no wildcard, object prefix: conformance, least-privilege-node-role
    delete = next(s for s in document["Statement"] if "ecs:DeleteInstance" in s["Action"])
    assert delete["Condition"]["StringEquals"] == {f"acs:ResourceTag/{tags.STACK}": [stack]}
    # The spot pool retire (docs/agent.md): only spot stacks may look pools up; the role policy itself
    # never grants a change to any pool (that is the second, per-pool policy).
    pool = [s for s in document["Statement"] if any("AutoProvisioningGroup" in a for a in s["Action"])]
    if stack_value(stack, "billing") == "spot":
        assert pool == [{"Effect": "Allow", "Action": ["ecs:DescribeAutoProvisioningGroups"], "Resource": ["*"]}]
    else:
        assert not pool and list(policies) == [role], "an on-demand stack has no pool to retire"


def test_the_pool_policy_allows_deleting_exactly_one_group():
    from types import SimpleNamespace

    from components.providers.alicloud.identity import pool_policy_document

    document = pool_policy_document(SimpleNamespace(region="cn-hangzhou"), "apg-123")
    assert document["Statement"] == [{"Effect": "Allow", "Action": ["ecs:DeleteAutoProvisioningGroup"],
                                      "Resource": ["acs:ecs:cn-hangzhou:*:autoprovisioninggroup/apg-123"]}]


@pytest.mark.parametrize("overrides", [(), ("billing=spot",)], ids=["medium-a100", "entry-t4-spot"])
def test_spot_node_role_may_retire_exactly_its_own_pool(overrides, plan_for):
    stack = "entry-t4" if overrides else "medium-a100"
    plan = plan_for(stack, *overrides)
    role, policies = node_policies(plan)
    (pool,) = plan.of_type(POOL)
    (attachment,) = [a for a in plan.of_type("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")
                     if a.inputs["policyName"] == f"{role}-pool"]
    assert attachment.inputs["roleName"] == role
    statements = json.loads(policies[f"{role}-pool"])["Statement"]
    region = load_stack_config(stack)["alicloud:region"]
    assert statements == [{"Effect": "Allow", "Action": ["ecs:DeleteAutoProvisioningGroup"],
                           "Resource": [f"acs:ecs:{region}:*:autoprovisioninggroup/{pool.name}-id"]}]


@pytest.mark.parametrize("stack", ALICLOUD_STACKS)
def test_cpfs_only_in_the_large_tier(stack, plan_for):
    plan = plan_for(stack)
    file_systems = plan.of_type("alicloud:nas/fileSystem:FileSystem")
    if stack_value(stack, "tier") == "large":
        (fs,) = file_systems
        assert fs.inputs["fileSystemType"] == "cpfs" and fs.inputs["protocolType"] == "cpfs"
        assert fs.inputs["storageType"] in ("advance_100", "advance_200")
        assert fs.inputs["capacity"] >= 3600
        # NFS export of a protocol service, not a POSIX mount target (issue 10: wrong client, quorum ECS billed).
        assert not plan.of_type("alicloud:nas/mountTarget:MountTarget")
        assert plan.of_type("alicloud:nas/protocolMountTarget:ProtocolMountTarget")
        assert plan.outputs["sharedFsAddress"]
        assert len(plan.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")) == 1
    else:
        assert not file_systems
        assert not plan.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")


@pytest.mark.parametrize("stack", ALICLOUD_STACKS)
def test_no_ssh_ingress_by_default_and_expiry_tags(stack, plan_for):
    """Stack, tier and user tags on every taggable input are the conformance suite's."""
    plan = plan_for(stack)
    rules = plan.of_type(RULE)
    assert not [r for r in rules if r.inputs.get("portRange") == "22/22"]
    (members,) = [r for r in rules if r.inputs.get("sourceSecurityGroupId")]
    assert members.inputs["ipProtocol"] == "all"
    for node in node_resources(plan, *NODE_TYPES):
        # An outbound-only public address, pay-by-traffic (the CUDA repository, issue 10): no rule admits inbound.
        assert node.inputs["internetMaxBandwidthOut"] == 100
        assert node.inputs["internetChargeType"] == "PayByTraffic"
    taggable = [r for r in plan.resources if r.custom and r.type.startswith("alicloud:") and takes_tags(SDK, r.type)]
    assert {INSTANCE, TEMPLATE} & {r.type for r in taggable}
    for resource in taggable:
        assert resource.inputs["tags"][tags.EXPIRES_AT]


def test_ssh_opens_only_the_listed_cidrs(plan_for):
    plan = plan_for("entry-t4", 'sshAllowCidrs=["203.0.113.7/32"]', "sshPublicKey=ssh-ed25519 AAAAC3 me")
    ssh = [r for r in plan.of_type(RULE) if r.inputs.get("portRange") == "22/22"]
    assert [r.inputs["cidrIp"] for r in ssh] == ["203.0.113.7/32"]
    assert plan.outputs["sshCommand"].startswith("ssh ubuntu@")
    assert plan.of_type("alicloud:ecs/ecsKeyPair:EcsKeyPair")


def test_a_64_node_what_if_previews(plan_for):
    plan = plan_for("large-h20", "nodes=64")
    assert len(plan.of_type(INSTANCE)) == 64
    assert len(plan.outputs["privateIps"]) == 64


def test_spot_what_if_on_an_on_demand_stack(plan_for):
    plan = plan_for("entry-t4", "billing=spot")
    (pool,) = plan.of_type(POOL)
    assert pool.inputs["spotTargetCapacity"] == "1" and pool.inputs["payAsYouGoTargetCapacity"] == "0"


def test_agent_and_training_code_are_uploaded_under_the_stack_prefix(plan_for):
    plan = plan_for("entry-t4")
    objects = plan.of_type("alicloud:oss/bucketObject:BucketObject")
    keys = {o.inputs["key"] for o in objects}
    assert "gpu-training/entry-t4/code/train_cnn.py" in keys
    listed = node_config_in(node_resources(plan, *NODE_TYPES)[0], plan)["artifacts"]["agent"]
    assert listed["files"], "the fetcher needs the agent's file list"
    assert {listed["prefix"] + name for name in listed["files"]} <= keys
    assert all(o.inputs["contentMd5"] and o.inputs["bucket"] == "my-gpu-training-checkpoints" for o in objects)


def test_checkpoint_bucket_is_retained_when_the_stack_creates_it(plan_for):
    plan = plan_for("entry-t4", "checkpoint.create=true")
    (bucket,) = plan.of_type("alicloud:oss/bucket:Bucket")
    assert bucket.inputs["serverSideEncryptionRule"]["sseAlgorithm"] == "AES256"
    assert bucket.retain_on_delete, "pulumi destroy must leave the checkpoint bucket and its data"
