"""Every Huawei Cloud stack, evaluated by the real program on Pulumi's mock engine: the key inputs the engine
would send to Huawei Cloud, checked against the stack files and what terraform-provider-huaweicloud
v1.73.3 and Huawei's docs allow; bad Huawei configs refused with the key named; the node runtime as
a real client of the local stand-ins (metadata, ECS and AS APIs, requests signed by the Huawei SDK); the
SFS Turbo mount run in the bootstrap sandbox."""
from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from components import safety, tags
from provider_plans import expiry, one, refusal_of, stack_value
from stackcases import SSH, shipped_stack_names
from components.bootstrap import node_config_in_plan
from components.providers.huaweicloud import profile
from localcloud.standins import huaweicloud as standin
from tools.stackfiles import load_stack_config

REPO = Path(__file__).resolve().parents[2]
# The VM stacks (a `platform:` stack submits a ModelArts job instead: tests/platforms/).
HW_STACKS = [s for s in shipped_stack_names() if load_stack_config(s).get("gpu-training:provider") == "huaweicloud"
             and "gpu-training:platform" not in load_stack_config(s)]
EXPECTED_FLAVORS = {"hw-entry-t4": "pi2.2xlarge.4", "hw-medium-v100": "p2s.8xlarge.8", "hw-large-a100": "p3.16xlarge.8"}
INSTANCE = "huaweicloud:Ecs/instance:Instance"
CONFIG = "huaweicloud:As/configuration:Configuration"
GROUP = "huaweicloud:As/group:Group"
POLICY = "huaweicloud:As/policy:Policy"
KEY = "huaweicloud:Dew/key:Key"
RULE = "huaweicloud:Vpc/secgroupRule:SecgroupRule"
TURBO = "huaweicloud:Sfs/turbo:Turbo"
ROLE = "huaweicloud:Iam/role:Role"
AGENCY = "huaweicloud:Iam/agency:Agency"
DISK_TYPES = {"entry": "GPSSD", "medium": "ESSD", "large": "GPSSD2"}


def test_the_three_huawei_stacks_exist_each_with_a_header():
    assert sorted(HW_STACKS) == sorted(EXPECTED_FLAVORS)
    for stack in HW_STACKS:
        lines = (REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text().splitlines()
        header = [line for line in lines[:15] if line.startswith("#")]
        assert header and header[0].startswith(f"# {stack} ") and len(" ".join(header)) > 300, stack


@pytest.mark.parametrize("stack", HW_STACKS)
def test_flavor_disks_encryption_and_agency_of_every_node(stack, plan_for):
    plan = plan_for(stack)
    key = one(plan, KEY)
    agency = one(plan, AGENCY)
    tier = stack_value(stack, "tier")
    for node in plan.of_type(INSTANCE):
        i = node.inputs
        assert i["flavorId"] == EXPECTED_FLAVORS[stack] and i["chargingMode"] == "postPaid"
        assert i["systemDiskKmsKeyId"] == f"{key.name}-id"
        (disk,) = i["dataDisks"]
        assert disk["kmsKeyId"] == f"{key.name}-id" and disk["type"] == DISK_TYPES[tier]
        assert disk["size"] == stack_value(stack, "dataDiskGb")
        assert i["agencyName"] == agency.inputs["name"]
        assert i["deleteDisksOnTermination"] is True
        assert node_config_in_plan(i["userData"], plan.resources)["provider"] == "huaweicloud"
    for config in plan.of_type(CONFIG):
        c = config.inputs["instanceConfig"]
        assert c["flavor"] == EXPECTED_FLAVORS[stack] and c["chargingMode"] == "spot"
        assert {d["diskType"] for d in c["disks"]} == {"SYS", "DATA"}
        assert all(d["kmsId"] == f"{key.name}-id" for d in c["disks"])
        assert one(plan, GROUP).inputs["agencyName"] == agency.inputs["name"]


def test_extreme_disks_buy_iops_and_throughput_within_the_documented_bounds(plan_for):
    """GPSSD2 (TF compute_instance.md): iops 3,000-128,000 and <= 500 x GiB; throughput 125-1,000 MiB/s and <= iops/4."""
    for node in plan_for("hw-large-a100").of_type(INSTANCE):
        (disk,) = node.inputs["dataDisks"]
        assert disk["type"] == "GPSSD2" and disk["iops"] == 128000 and disk["throughput"] == 1000
    for size in (10, 100, 500, 2000, 32768):
        iops, mibs = profile.disk_iops("GPSSD2", size), profile.disk_throughput("GPSSD2", size)
        assert 3000 <= iops <= 128000 and (iops <= 500 * size or iops == 3000)
        assert 125 <= mibs <= 1000 and (mibs <= iops / 4)
        essd2 = profile.disk_iops("ESSD2", size)
        assert 100 <= essd2 <= min(256000, 1000 * size)
    assert profile.disk_iops("ESSD", 500) is None and profile.disk_throughput("ESSD2", 500) is None


@pytest.mark.parametrize("stack", HW_STACKS)
def test_cloud_side_ttl_at_expires_at(stack, plan_for):
    plan = plan_for(stack)
    moment = datetime.strptime(plan.outputs["expiresAt"], "%Y-%m-%dT%H:%M:%SZ")
    assert abs(moment.replace(tzinfo=timezone.utc) - expiry(stack)) <= timedelta(minutes=1)
    for node in plan.of_type(INSTANCE):
        assert node.inputs["autoTerminateTime"] == moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    for group in plan.of_type(GROUP):
        (policy,) = plan.of_type(POLICY)
        i = policy.inputs
        assert i["scalingGroupId"] == f"{group.name}-id" and i["scalingPolicyType"] == "SCHEDULED"
        assert i["scheduledPolicy"]["launchTime"] == moment.strftime("%Y-%m-%dT%H:%MZ")  # no seconds (as_policy.md)
        assert i["scalingPolicyAction"] == {"operation": "SET", "instanceNumber": 0}
        g = group.inputs
        assert (g["minInstanceNumber"], g["desireInstanceNumber"]) == (0, stack_value(stack, "nodes", 1))
        assert g["deleteInstances"] == "yes" and g["deletePublicip"] is True and g["deleteVolume"] is True


def test_the_spot_pool_spans_its_zones_and_preview_names_the_ttl_gap(plan_for):
    from tools.stackfiles import stack_spec

    plan = plan_for("hw-medium-v100")
    group = one(plan, GROUP)
    assert len(group.inputs["networks"]) == 2 and "cn-north-4b" in group.inputs["availabilityZones"]
    _, spec = stack_spec("hw-medium-v100", ())
    warnings = {f.key: f.message for f in spec.findings if f.level == "warning"}
    assert "no auto_terminate_time" in warnings["billing"] and "scripts/run.py" in warnings["billing"]
    assert "reclaim section" in warnings["billing"]


def test_the_pools_internet_route_is_its_configurations_public_ip(plan_for):
    """The egress evidence reads instanceConfig.publicIp: a configuration without one makes no route."""
    import dataclasses

    from components import egress
    from tools.stackfiles import stack_spec

    plan = plan_for("hw-medium-v100")
    _, spec = stack_spec("hw-medium-v100", ())
    routes = spec.profile.egress.routes(spec)
    assert egress.routes_in_plan(routes, plan.resources)["internet"] == ["hw-medium-v100-spot-config"]
    config = one(plan, CONFIG)
    bare = {k: v for k, v in config.inputs["instanceConfig"].items() if k != "publicIp"}
    without = [dataclasses.replace(r, inputs={**r.inputs, "instanceConfig": bare}) if r is config else r
               for r in plan.resources]
    assert egress.routes_in_plan(routes, without)["internet"] is None


def test_multi_node_stacks_spread_with_an_anti_affinity_group_and_say_so(plan_for):
    from tools.stackfiles import stack_spec

    plan = plan_for("hw-large-a100")
    (group,) = plan.of_type("huaweicloud:Ecs/servergroup:Servergroup")
    assert group.inputs["policies"] == ["anti-affinity"]
    assert all(n.inputs["schedulerHints"] == [{"group": f"{group.name}-id"}] for n in plan.of_type(INSTANCE))
    _, spec = stack_spec("hw-large-a100", ())
    assert any(f.key == "nodes" and "anti-affinity" in f.message for f in spec.findings)
    assert not plan_for("hw-entry-t4").of_type("huaweicloud:Ecs/servergroup:Servergroup")


def test_sfs_turbo_hpc_only_in_the_large_tier(plan_for):
    (turbo,) = plan_for("hw-large-a100").of_type(TURBO)
    i = turbo.inputs
    assert (i["shareType"], i["hpcBandwidth"], i["shareProto"], i["size"]) == ("HPC", "250M", "NFS", 4915)
    assert i["securityGroupId"] == "hw-large-a100-sg-id" and i["chargingMode"] == "postPaid"
    assert not plan_for("hw-entry-t4").of_type(TURBO)


def test_sfs_turbo_hpc_sizes_are_multiples_of_1_2_tib_rounded_down():
    """TF docs/resources/sfs_turbo.md:97-98: 3.6 TiB -> 3686, 4.8 TiB -> 4915, 8.4 TiB -> 8601."""
    assert [s for s in range(1, 9000) if profile.is_turbo_size(s)][:8] == [1228, 2457, 3686, 4915, 6144, 7372, 8601]
    assert profile.turbo_sizes_near(5000) == (4915, 6144)


def test_security_group_admits_members_and_listed_ssh_only(plan_for):
    rules = plan_for("hw-entry-t4").of_type(RULE)
    ingress = [r.inputs for r in rules if r.inputs["direction"] == "ingress"]
    assert ingress == [{"securityGroupId": "hw-entry-t4-sg-id", "direction": "ingress", "ethertype": "IPv4",
                        "remoteGroupId": "hw-entry-t4-sg-id",
                        "description": "members: NCCL, torchrun rendezvous, SFS Turbo"}]
    ssh = [r.inputs for r in plan_for("hw-entry-t4", 'sshAllowCidrs=["203.0.113.7/32"]').of_type(RULE)
           if r.inputs.get("ports") == "22"]
    assert [(r["remoteIpPrefix"], r["protocol"]) for r in ssh] == [("203.0.113.7/32", "tcp")]
    assert one(plan_for("hw-entry-t4"), "huaweicloud:Vpc/secgroup:Secgroup").inputs["deleteDefaultRules"] is True


def test_the_agency_is_for_ecs_and_its_policies_stay_in_the_stack(plan_for):
    plan = plan_for("hw-medium-v100")
    agency = one(plan, AGENCY).inputs
    assert agency["delegatedServiceName"] == "op_svc_ecs" and "delegatedDomainName" not in agency
    assert agency["projectRoles"] == [{"project": "cn-north-4", "roles": ["gpu-training-hw-medium-v100-node-ecs"]}]
    policies = {r.inputs["type"]: json.loads(r.inputs["policy"]) for r in plan.of_type(ROLE)}
    obs = policies["AX"]["Statement"]
    assert obs[0]["Resource"] == ["OBS:*:*:object:my-gpu-training/gpu-training/hw-medium-v100/*"]
    assert obs[1]["Condition"] == {"StringStartWith": {"obs:prefix": ["gpu-training/hw-medium-v100/"]}}
    actions = [a for s in policies["XA"]["Statement"] for a in s["Action"]]
    assert set(actions) == {"ecs:cloudServers:delete", "ecs:cloudServers:list", "ecs:cloudServers:get",
                            "as:groups:pause", "as:groups:list", "as:groups:get"}


def test_an_unscopable_action_passes_only_while_the_adapter_names_it_with_its_reason(plan_for):
    """The least-privilege rule accepts Huawei's unscoped ECS delete only because conformance.yaml lists
    it with the reason; without the entry the same plan violates the rule."""
    adapter = safety.adapter("huaweicloud")
    unscopable = adapter["role_policies"]["unscopable"]
    assert set(unscopable) == {"ecs:cloudServers:delete", "as:groups:pause"}
    assert all(len(reason) > 150 and "IAM" in reason for reason in unscopable.values())
    resources = safety.from_plan(plan_for("hw-medium-v100").resources)
    rule = [r for r in safety.RULES if r.name == "least-privilege-node-role"]
    assert safety.check(resources, "hw-medium-v100", rule) == []
    try:
        adapter["role_policies"]["unscopable"] = {}
        found = safety.check(resources, "hw-medium-v100", rule)
    finally:
        adapter["role_policies"]["unscopable"] = unscopable
    named = {action for v in found for action in unscopable if action in v.message}
    assert named == {"ecs:cloudServers:delete", "as:groups:pause"}, found


def test_buckets_and_uploads_are_encrypted_and_retained(plan_for):
    plan = plan_for("hw-entry-t4", "checkpoint.create=true")
    bucket = one(plan, "huaweicloud:Obs/bucket:Bucket")
    assert bucket.inputs["encryption"] is True and bucket.options["retainOnDelete"] is True
    objects = plan.of_type("huaweicloud:Obs/bucketObject:BucketObject")
    assert objects and all(o.inputs["encryption"] is True for o in objects)
    assert all(o.inputs["key"].startswith("gpu-training/hw-entry-t4/") for o in objects)


def test_an_encrypted_upload_keys_its_re_upload_on_the_files_hash_not_on_etag(plan_for):
    """W3: Read stores OBS's ETag, which is not the MD5 of an SSE-KMS object (provider facts
    `obs_object_etag_read_back`); the file's SHA-256 rides in content_type, which Read keeps as sent."""
    import hashlib

    from components.providers import facts

    objects = plan_for("hw-entry-t4").of_type("huaweicloud:Obs/bucketObject:BucketObject")
    for o in objects:
        assert "etag" not in o.inputs
        # A file, or the boot payload's text (what the loader in user-data fetches).
        body = (REPO / o.inputs["source"]).read_bytes() if "source" in o.inputs else o.inputs["content"].encode()
        digest = hashlib.sha256(body).hexdigest()
        assert o.inputs["contentType"] == f"application/octet-stream; sha256={digest}"
    loaded = facts.load("huaweicloud")
    old_way = {**objects[0].inputs, "etag": "53ef80d5ccdd4ae3d78a6805426616d4"}
    assert [p.kind for p in loaded.check(objects[0].type, old_way)] == ["read_overwritten"]
    assert loaded.check(objects[0].type, {**old_way, "encryption": False}) == []


KEYPAIR = "huaweicloud:Ecs/keypair:Keypair"
SPOT_VARIANTS = [(stack, extra) for stack in HW_STACKS for extra in ((), ("billing=spot",), ("billing=spot", *SSH))]


@pytest.mark.parametrize("stack,extra", SPOT_VARIANTS, ids=[f"{s}{'+' + '+'.join(e) if e else ''}" for s, e in SPOT_VARIANTS])
def test_a_spot_pool_boots_with_a_key_pair_and_no_private_key_anywhere(stack, extra, plan_for):
    """B2: the AS configuration always names a key pair (the user's public key, or one made at the first
    `pulumi up` whose private half is discarded); SSH stays closed unless sshAllowCidrs opens it."""
    from components.generated_key import TYPE as GENERATED

    plan = plan_for(stack, *extra)
    for config in plan.of_type(CONFIG):
        (pair,) = plan.of_type(KEYPAIR)
        assert config.inputs["instanceConfig"]["keyName"] == pair.inputs["name"]
        if "sshPublicKey" in " ".join(extra):
            assert pair.inputs["publicKey"].startswith("ssh-ed25519") and not plan.of_type(GENERATED)
        else:
            (generated,) = plan.of_type(GENERATED)
            assert pair.inputs["publicKey"] == generated.outputs["public_key"]
    everything = json.dumps([r.inputs for r in plan.resources]) + json.dumps(plan.outputs)
    assert "PRIVATE KEY" not in everything and "privateKey" not in everything and "keyFile" not in everything
    ssh = [r for r in plan.of_type(RULE) if r.inputs.get("ports") == "22"]
    assert bool(ssh) == ("sshAllowCidrs" in " ".join(extra))


def test_the_generated_key_keeps_only_a_public_key_and_the_same_one_across_ups():
    from cryptography.hazmat.primitives import serialization

    from components import generated_key

    provider = generated_key._Provider()
    made = provider.create({"comment": "gpu-training-t-no-private-key"})
    key = made.outs["public_key"]
    assert serialization.load_ssh_public_key(key.rsplit(" ", 1)[0].encode()).key_size == generated_key.RSA_BITS
    assert set(made.outs) == {"comment", "public_key"} and "PRIVATE" not in json.dumps(made.outs)
    assert provider.create({"comment": "x"}).outs["public_key"] != key  # a fresh key each creation
    same = provider.diff(made.id, {**made.outs, "__provider": "old code"}, {"comment": made.outs["comment"],
                                                                          "public_key": None, "__provider": "new"})
    assert same.changes is False and not same.replaces
    assert provider.diff(made.id, made.outs, {"comment": "other"}).replaces == ["comment"]


def test_an_up_past_the_ttl_refuses_to_start_capped_spot_ecss_again():
    """Capped spot ECSs have no cloud-side TTL: a later up past expiresAt (which would recreate a node its
    agent released) stops with the reason instead."""
    import os

    from components import clock
    from tools.mockrun import run_program
    from tools.stackfiles import apply_overrides

    config = apply_overrides(load_stack_config("hw-entry-t4"), ("billing=spot", "spotMaxPricePerHour=5"))
    first = run_program(config, "hw-entry-t4")
    before = os.environ[clock.CLOCK_ENV]
    try:
        os.environ[clock.CLOCK_ENV] = clock.rfc3339(clock.parse(first.outputs["expiresAt"]) + timedelta(hours=1))
        with pytest.raises(Exception, match="refusing to start capped spot ECSs"):
            run_program(config, "hw-entry-t4", prior=first)
    finally:
        os.environ[clock.CLOCK_ENV] = before


def test_the_ttl_rule_exempts_only_a_spot_ecs_and_never_an_unnamed_charging_mode(plan_for):
    """The adapter's `unenforceable` entry holds for chargingMode spot only; an ECS whose charging mode no
    entry names (or a pay-per-use one without auto_terminate_time) still breaks cloud-side-ttl."""
    import dataclasses

    (rule,) = [r for r in safety.RULES if r.name == "cloud-side-ttl"]
    plan = plan_for("hw-entry-t4")

    def violations(change):
        resources = [dataclasses.replace(r, inputs=change(dict(r.inputs))) if r.type == INSTANCE else r
                     for r in plan.resources]
        return [v.message for v in safety.check(safety.from_plan(resources), "hw-entry-t4", [rule])]

    assert violations(lambda i: i) == []
    assert violations(lambda i: {**i, "chargingMode": "spot", "autoTerminateTime": None}) == []
    assert violations(lambda i: {k: v for k, v in i.items() if k != "autoTerminateTime"})
    assert any("none of the adapter's TTL entries applies" in m
               for m in violations(lambda i: {k: v for k, v in i.items() if k != "chargingMode"}))


@pytest.mark.parametrize("stack", HW_STACKS)
def test_a_spot_price_cap_plans_single_capped_spot_ecss_instead_of_the_pool(stack, plan_for):
    """G1: spotMaxPricePerHour -> ecs.Instance(charging_mode="spot", spot_maximum_price); no AS pool, so no
    poolName for the agent and no AS rights for the agency; the preview says there is no cloud-side TTL."""
    from tools.stackfiles import stack_spec

    plan = plan_for(stack, "billing=spot", "spotMaxPricePerHour=50")
    assert not plan.of_type(CONFIG) and not plan.of_type(GROUP) and not plan.of_type(POLICY)
    nodes = plan.of_type(INSTANCE)
    assert len(nodes) == stack_value(stack, "nodes", 1)
    for node in nodes:
        i = node.inputs
        assert i["chargingMode"] == "spot" and i["spotMaximumPrice"] == "50" and "autoTerminateTime" not in i
        assert i["flavorId"] == EXPECTED_FLAVORS[stack] and i["deleteEipOnTermination"] is True
        cluster = node_config_in_plan(i["userData"], plan.resources)["cluster"]
        assert cluster["poolName"] is None and cluster["tagValue"] == stack
    assert all("as:groups" not in role.inputs["policy"] for role in plan.of_type(ROLE))
    _, spec = stack_spec(stack, ("billing=spot", "spotMaxPricePerHour=50"))
    warning = next(f.message for f in spec.findings if f.key == "spotMaxPricePerHour")
    assert "NO cloud-side TTL" in warning and "not replaced" in warning


@pytest.mark.parametrize("stack", HW_STACKS)
def test_the_preview_says_bulk_downloads_go_through_the_nodes_100_mbit_eip(stack):
    """G3: the per-node EIP caps package downloads; the finding gives the rate it implies."""
    from tools.stackfiles import stack_spec

    _, spec = stack_spec(stack, ())
    (finding,) = [f for f in spec.findings if f.key == "egress"]
    assert f"{profile.PUBLIC_BANDWIDTH_MBPS} Mbit/s" in finding.message and "80 s per GB" in finding.message


def test_preview_prints_the_user_data_of_the_spot_pools_configuration():
    """The newcomer trial's hole: `preview --user-data` on a spot stack said "no node user-data in the
    plan"; the profile's node.user_data_inputs names instanceConfig.userData."""
    import subprocess

    shown = subprocess.run([sys.executable, str(REPO / "scripts" / "preview.py"), "hw-medium-v100", "--user-data"],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("#cloud-config") and "hw-medium-v100" in shown.stdout
    assert profile.PROFILE.node.user_data_inputs == ("userData", "instanceConfig.userData")


BASE = {"gpu-training:provider": "huaweicloud", "huaweicloud:region": "cn-north-4", "gpu-training:tier": "entry",
        "gpu-training:checkpoint": {"bucket": "my-ckpt"}}
LARGE = {"tier": "large", "gpu": "A100-80G", "gpusPerNode": 8, "nodes": 2}
BAD = [
    ({"checkpoint": {"bucket": "My_Ckpt"}}, "checkpoint.bucket", "not a valid bucket name"),
    ({"dataDiskCategory": "SAS"}, "dataDiskCategory", "HDD-class"),
    ({"dataDiskCategory": "SATA"}, "dataDiskCategory", "HDD"),
    ({"billing": "spot", "dataDiskCategory": "ESSD2"}, "dataDiskCategory", "pay-per-use only"),
    ({"dataDiskGb": 40000}, "dataDiskGb", "10-32768"),
    ({**LARGE, "sharedStorageGb": 5000}, "sharedStorageGb", "e.g. 4915 or 6144"),
    ({**LARGE, "sharedStorageGb": 1000}, "sharedStorageGb", "minimum"),
    ({**LARGE, "gpu": "Ascend-910B"}, "gpu", "prePaid"),
    ({"zone": "cn-north-4z"}, "zone", "not a zone of cn-north-4"),
]


@pytest.mark.parametrize("changes,key,fragment", BAD, ids=[f"{c[1]}:{c[2][:18]}" for c in BAD])
def test_bad_huawei_configs_are_refused_naming_the_key(changes, key, fragment):
    messages = refusal_of(BASE, changes, key)
    assert fragment in messages, messages


def test_an_ascend_stack_is_refused_with_the_reason_and_the_alternatives():
    from tools.mockrun import ProgramExit, run_program

    config = {**load_stack_config("hw-large-a100"), "gpu-training:gpu": "Ascend-910B"}
    with pytest.raises(ProgramExit) as stop:
        run_program(config, "hw-large-a100")
    assert stop.value.code == 2 and "Traceback" not in stop.value.stderr
    assert "bare-metal" in stop.value.stderr and "ModelArts" in stop.value.stderr and "Atlas 800" in stop.value.stderr


def test_sfs_turbo_mount_runs_in_the_bootstrap_sandbox(tmp_path):
    """The rendered snippet, run by bash with recording stand-ins: NFSv3 source and fstab entry."""
    from components.bootstrap import render_user_data
    from localcloud.sandbox import Sandbox, Scenario
    from tools.stackfiles import node_config_for_stack

    cfg = node_config_for_stack("hw-large-a100")
    cfg["bootstrap"]["sharedFs"]["address"] = "192.168.0.8:/"  # the shape export_location has
    rendered = render_user_data(cfg, max_encoded=None)
    sb = Sandbox(tmp_path / "sb", rendered, cfg, Scenario(gpus=8))
    result = sb.run()
    steps = {s["name"]: s["result"] for s in result.status["steps"]}
    assert steps["shared_fs"] == "done", result.log
    mounts = result.called("mount")
    assert any(m[:2] == ["-t", "nfs"] and "192.168.0.8:/" in m and "vers=3" in m[3] for m in mounts), mounts
    assert "192.168.0.8:/ /shared nfs vers=3" in sb.path("/etc/fstab").read_text()


# ---------------------------------------------------------------- the node runtime against the stand-ins

def load_runtime():
    spec = importlib.util.spec_from_file_location("hw_runtime", REPO / "components/providers/huaweicloud/node_runtime.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cloud():
    from node_agent.s3 import Metadata as Reader

    metadata = standin.Metadata(ip="10.42.0.7")
    api = standin.CloudApi(instances=[(metadata.instance_id, "10.42.0.7")])
    cfg = {"region": "cn-north-4", "endpoints": {"metadata": metadata.url, "cloudApi": api.url},
           "identity": {"roleName": "gpu-training-s-node"},
           "cluster": {"tagKey": tags.STACK, "tagValue": "s", "poolName": "gpu-training-s"}}
    runtime = load_runtime().Runtime(cfg, lambda token_header=None, formats=None: Reader(metadata.url, token_header,
                                                                                          formats))
    yield runtime, metadata, api
    metadata.stop()
    api.stop()


def test_identity_and_credentials_come_from_the_metadata_documents(cloud):
    runtime, metadata, _ = cloud
    assert runtime.instance_id() == metadata.instance_id and runtime.private_ip() == "10.42.0.7"
    assert runtime.placement() == ("cn-north-4", "cn-north-4a")
    c = runtime.credentials()
    assert (c["access_key"], c["secret_key"], c["token"]) == (metadata.key_id, metadata.secret, metadata.token)
    assert datetime.fromisoformat(c["expiry_time"].replace("Z", "+00:00")) > datetime.now(timezone.utc)


def test_release_deletes_only_this_node_with_its_eip_and_disks_signed_with_the_agency_token(cloud):
    runtime, metadata, api = cloud
    runtime.release()
    (request,) = api.release_requests(metadata.instance_id)
    p = request["params"]
    assert p["servers"] == [{"id": metadata.instance_id}] and p["delete_publicip"] is True and p["delete_volume"] is True
    assert p["_signed"] and p["_token"] == metadata.token


def test_peers_are_the_tagged_running_nodes(cloud):
    runtime, metadata, api = cloud
    assert runtime.peers() == [(metadata.instance_id, "10.42.0.7")]
    (listed,) = api.calls("ListServersDetails")
    assert listed["params"]["tags"] == f"{tags.STACK}=s" and listed["params"]["status"] == "ACTIVE"


def test_the_metadata_notice_is_read_at_every_poll_and_its_time_is_the_reclaim(cloud):
    """huaweicloudDocs/ecs 元数据获取.md "Instance Action": GET /openstack/latest/spot/instance-action answers
    {"action":"terminate","timestamp":"..."} once the spot ECS is about to be interrupted."""
    runtime, metadata, api = cloud
    assert runtime.spot_notice() is None
    reclaim = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(minutes=5)
    metadata.notice = reclaim
    assert runtime.spot_notice() == reclaim, "the notice's own time, not 'now'"
    assert runtime.spot_notice() == reclaim, "read again at the next poll: no cache in front of the metadata"
    reads = [p for _, p, _ in metadata.log if p == standin.SPOT_PATH]
    assert len(reads) == 3
    assert len(api.calls("ShowServer")) == 1, "the API was asked once, before the notice, and not since"


@pytest.mark.parametrize("zone", [timezone(timedelta(hours=8)), timezone.utc], ids=["utc+8", "utc"])
def test_the_zone_less_timestamp_is_read_right_whichever_zone_huawei_writes(cloud, zone):
    """The doc's timestamp has no zone: written in UTC+8 or in UTC, the runtime finds the same moment."""
    runtime, metadata, _ = cloud
    metadata.notice_zone = zone
    reclaim = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=290)
    metadata.notice = reclaim
    assert runtime.spot_notice() == reclaim


def test_notice_time_takes_the_earlier_reading_still_ahead():
    notice_time = load_runtime().notice_time
    now = datetime(2026, 12, 5, 1, 10, tzinfo=timezone.utc)
    body = '{"action":"terminate","timestamp":"%s"}'
    # 09:15 read as Beijing time is 01:15 UTC, 5 minutes ahead; read as UTC it is 8 h 5 min ahead: the first.
    assert notice_time(body % "2026-12-05 09:15:00", now) == datetime(2026, 12, 5, 1, 15, tzinfo=timezone.utc)
    # 01:15 read as Beijing time is 8 h in the past; read as UTC it is 5 minutes ahead.
    assert notice_time(body % "2026-12-05 01:15:00", now) == datetime(2026, 12, 5, 1, 15, tzinfo=timezone.utc)
    # Both readings past (a late read, a skewed clock): due now, never a time already gone.
    assert notice_time(body % "2026-12-04 01:15:00", now) == now
    # A zone written out is taken as written.
    assert notice_time(body % "2026-12-05T01:12:00Z", now) == datetime(2026, 12, 5, 1, 12, tzinfo=timezone.utc)
    # An action whose time does not parse is due now; an answer that is no notice is None.
    assert notice_time('{"action":"terminate","timestamp":"soon"}', now) == now
    for other in ("<html>404</html>", "{}", '{"timestamp":"2026-12-05 09:15:00"}', '"terminate"', ""):
        assert notice_time(other, now) is None, other


def test_an_answer_that_is_no_notice_is_not_a_reclaim(cloud):
    runtime, metadata, _ = cloud
    metadata.garbage[standin.SPOT_PATH] = [(200, b"<html>ok</html>"), (200, b"{}")]
    assert runtime.spot_notice() is None and runtime.spot_notice() is None


def test_a_hardened_metadata_service_is_read_with_a_token(cloud):
    """ecs_03_2167: with V2 (hardening) enforced, every read needs X-Metadata-Token from PUT
    /meta-data/latest/api/token; the runtime fetches one when a read is refused."""
    from node_agent.s3 import http

    runtime, metadata, _ = cloud
    metadata.hardened = True
    assert http("GET", metadata.url + "/openstack/latest/meta_data.json")[0] == 401
    assert runtime.instance_id() == metadata.instance_id and runtime.private_ip() == "10.42.0.7"
    reclaim = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(minutes=5)
    metadata.notice = reclaim
    assert runtime.spot_notice() == reclaim
    puts = [(p, h) for m, p, h in metadata.log if m == "PUT"]
    assert len(puts) == 1 and puts[0][0] == standin.TOKEN_PATH
    assert {k.lower(): v for k, v in puts[0][1].items()}["x-metadata-token-ttl-seconds"] == "21600"
    metadata.revoke_tokens()
    assert runtime.spot_notice() == reclaim, "a revoked token is replaced"


def test_a_reclaim_without_a_notice_is_seen_through_the_ecs_api_at_most_every_few_seconds(cloud):
    runtime, metadata, api = cloud
    assert runtime.spot_notice() is None
    api.reclaim(metadata.instance_id)  # the ECS deleting, with nothing at the metadata path
    try:
        assert runtime.spot_notice() is None, "asked again within SPOT_API_SECONDS: the cached answer"
        assert len(api.calls("ShowServer")) == 1
        runtime._spot = (0.0, None)  # the last ask long ago
        notice = runtime.spot_notice()
        assert notice is not None and abs((notice - datetime.now(timezone.utc)).total_seconds()) < 5
    finally:
        standin.RECLAIMING.discard(metadata.instance_id)


def test_an_unreadable_notice_path_still_asks_the_api_then_says_so(cloud):
    runtime, metadata, api = cloud
    metadata.fail_spot = True
    with pytest.raises(OSError, match="500"):
        runtime.spot_notice()
    assert len(api.calls("ShowServer")) == 1, "the fallback had its turn before the error was raised"


def test_retire_pool_pauses_the_named_group_once(cloud):
    runtime, _, api = cloud
    other = api.add_pool("gpu-training-other")
    group = api.add_pool("gpu-training-s")
    assert runtime.retire_pool() == f"paused {group}"
    assert api.pools[group]["status"] == "PAUSED" and api.pools[other]["status"] == "INSERVICE"
    assert "already retired" in runtime.retire_pool()
    assert len(api.calls("ScalingGroupAction")) == 1


def test_an_api_error_surfaces_and_releases_nothing_silently(cloud):
    runtime, metadata, api = cloud
    api.errors["DeleteServers"] = (403, "Ecs.0319")
    with pytest.raises(Exception) as caught:
        runtime.release()
    assert "Ecs.0319" in str(caught.value) or "403" in str(caught.value)


# ---------------------------------------------------------------- the Ascend path, rehearsed

@pytest.mark.slow
def test_an_ascend_node_rehearses_with_the_fake_npu_smi(tmp_path, monkeypatch):
    """The rehearsal (agent, trainer, stand-ins, preemption drill) of a Huawei stack whose node is an
    Ascend 910B one, as on an Atlas 800 server or an Ascend image: the agent reads utilisation with
    npu-smi (never nvidia-smi), and the drill passes. Huawei's own Ascend flavors are refused
    (prepaid bare metal), so the node config is the stack's with the accelerator an Ascend node reports."""
    import localcloud
    from components.nodeconfig import build_node_config
    from tools.stackfiles import stack_spec

    loader = importlib.util.spec_from_file_location("rehearse_for_ascend", REPO / "scripts" / "rehearse.py")
    rehearse = importlib.util.module_from_spec(loader)
    monkeypatch.setitem(sys.modules, "rehearse_for_ascend", rehearse)  # dataclasses look their module up
    loader.loader.exec_module(rehearse)
    args = rehearse.parse_args(["hw-entry-t4", "--steps", "400"])  # long enough for a 5 s API poll
    _, spec = stack_spec("hw-entry-t4")
    base = build_node_config(spec, shared_fs_address=None)
    base["accelerator"] = {"kind": "ascend", "model": "Ascend-910B", "count": 1, "memoryGb": 64, "nvswitch": False}
    # The node boots through the loader, whose payload holds a bootstrap rendered from this config: an Ascend node
    # names its packages (the Ascend fixture's, tests/bootstrap/fixtures).
    fixture = json.loads((REPO / "tests/bootstrap/fixtures/large-ascend-910b.json").read_text())
    base["bootstrap"]["ascend"] = fixture["bootstrap"]["ascend"]
    calls = tmp_path / "calls"
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    for tool in ("npu-smi", "nvidia-smi"):
        wrapper = wrappers / tool
        wrapper.write_text(f'#!/bin/sh\necho "{tool} $*" >>"{calls}"\nexec "{localcloud.BIN / tool}" "$@"\n')
        wrapper.chmod(0o755)
    monkeypatch.setattr(localcloud, "BIN", wrappers)
    rehearsal = rehearse.Rehearsal(args, "hw-entry-t4", spec, base, tmp_path / "work")
    try:
        rehearsal.run()
    finally:
        rehearsal.stop()
    failed = [f"{c.name}: {c.detail}" for c in rehearsal.checks if not c.ok]
    assert rehearsal.checks and not failed, failed
    used = calls.read_text().splitlines()
    assert "npu-smi info -t usages -i 0" in used and not [u for u in used if u.startswith("nvidia-smi")], used
