"""Baidu AI Cloud: the dynamic providers' lifecycle against the local BCE API stand-in, and the plan.

The providers (components/providers/baiducloud/dynamic.py) run for real: bce-python-sdk signs each
request with bce-auth-v1 and sends it to CloudApi on 127.0.0.1, which recomputes the signature,
keeps client tokens, checks the bodies and can fail, throttle and hold its answers. What Pulumi would
do with the providers (create, read for `pulumi refresh`, diff, update, delete) is called directly:
the Pulumi CLI that would drive them is not available here.
"""
from __future__ import annotations

import base64
import json
import pickle

import dill
import pytest

from components import tags
from components.providers.baiducloud import bceapi, dynamic
from components.providers.baiducloud.bceapi import BceApiError
from localcloud.standins.baiducloud import SECRET_KEY
from tools.mockrun import run_program
from tools.stackfiles import apply_overrides, load_stack_config

REGION = "bj"
FAST = dict(first_wait_s=0.01, poll_s=0.01)


@pytest.fixture
def api(bce_api):  # tests/providers/conftest.py
    return bce_api


def provider(kind: str, **settings):
    return dynamic.PROVIDERS[kind](REGION, **{**FAST, **settings})


@pytest.fixture
def network(api):
    vpc = provider("Vpc").create({"region": REGION, "name": "v", "cidr": "10.42.0.0/16"})
    subnet = provider("Subnet").create({"region": REGION, "name": "s", "zoneName": "cn-bj-a", "cidr": "10.42.0.0/24",
                                        "vpcId": vpc.id})
    group = provider("SecurityGroup").create({"region": REGION, "name": "g", "vpcId": vpc.id, "rules": [
        {"direction": "ingress", "protocol": "", "portRange": "", "sourceIp": "10.42.0.0/16", "ethertype": "IPv4"}]})
    key = provider("KmsKey").create({"region": REGION, "description": "gpu-training t data disks", "keySpec": "AES_256",
                                     "protectedBy": "HSM"})
    return {"subnet": subnet.id, "group": group.id, "key": key.id}


def instance_inputs(network, **changes) -> dict:
    inputs = {"region": REGION, "name": "gpu-training-t-0", "spec": "bcc.hgn5IB.c116m978.8A100-80g", "cpuCount": 116,
              "memoryCapacityInGB": 978, "imageId": "m-ubuntu2204", "zoneName": "cn-bj-a",
              "subnetId": network["subnet"], "securityGroupId": network["group"], "paymentTiming": "Postpaid",
              "dataDisk": {"cdsSizeInGB": 2000, "storageType": "enhanced_ssd_pl2", "encryptKey": network["key"],
                           "deleteWithInstance": True},
              "releaseTime": "2026-12-05T10:00:00Z", "tags": {tags.STACK: "t"}}
    return {**inputs, **changes}


# ---------------------------------------------------------------- create

def test_create_waits_until_the_instance_runs_and_sets_the_cloud_side_ttl(api, network):
    api.boot_polls = 3
    made = provider("BccInstance").create(instance_inputs(network))
    instance = api.state["instance"][made.id]
    assert instance["status"] == "Running" and len(api.calls("GetInstance")) == 3
    assert made.outs["internalIp"] == instance["internalIp"] and made.outs["status"] == "Running"
    assert instance["releaseTime"] == "2026-12-05T10:00:00Z", "BCC releases it at maxHours even if nothing else does"
    assert api.rejected == [], api.rejected


@pytest.mark.parametrize("fault", ["answer lost after the create (500)", "throttled (429)", "timed out"])
def test_a_retried_create_makes_no_second_instance(api, network, fault):
    if fault.startswith("answer lost"):
        api.fail_next(1, 500, "InternalError", after=True)
        settings = {}
    elif fault.startswith("throttled"):
        api.throttle_next(2)
        settings = {}
    else:
        api.delay_next(1, seconds=1.5, after=True)
        settings = {"timeout_ms": 500}
    made = provider("BccInstance", **settings).create(instance_inputs(network))
    creates = api.calls("CreateInstanceBySpec")
    assert len(creates) >= 2, "the create was retried"
    assert len({c["params"]["query"]["clientToken"] for c in creates}) == 1, "every retry carries the same token"
    assert list(api.state["instance"]) == [made.id], "one instance, not one per attempt"


def test_a_create_that_failed_with_its_work_done_is_found_again_by_the_next_up(api, network):
    """Retries exhausted while the instance was made (the last answer lost): Pulumi records no resource,
    and the next `pulumi up` creates again with the same inputs, hence the same client token."""
    api.fail_next(1, 500, "InternalError", after=True)
    with pytest.raises(BceApiError, match="CreateInstanceBySpec failed: InternalError"):
        provider("BccInstance", attempts=1).create(instance_inputs(network))
    again = provider("BccInstance").create(instance_inputs(network))
    assert list(api.state["instance"]) == [again.id]


def _released_with_everything(api, instance_id: str) -> bool:
    return any(r["action"] == "ReleaseInstanceWithRelatedResources" and r["params"]["body"].get("relatedReleaseFlag")
               for r in api.release_requests(instance_id))


def test_a_create_whose_auto_release_keeps_failing_releases_the_instance_before_it_fails(api, network):
    """W5: Pulumi records nothing of a create that raises; an instance left by it would bill unseen."""
    api.fail_action("AutoReleaseInstance", 50, 500, "InternalError")
    with pytest.raises(BceApiError, match="AutoReleaseInstance failed: InternalError"):
        provider("BccInstance", attempts=2).create(instance_inputs(network))
    (created,) = [r["params"]["body"] for r in api.calls("CreateInstanceBySpec")][:1]
    assert created["name"] == "gpu-training-t-0"
    assert api.state["instance"] == {}, "the instance was released before the error went up"
    (made,) = {r["params"]["path"].rsplit("/", 1)[1] for r in api.calls("GetInstance")}
    assert _released_with_everything(api, made), "released with its data disk and public IP"


def test_an_auto_release_refused_once_is_asked_again_once_the_instance_runs(api, network):
    api.fail_action("AutoReleaseInstance", 1, 400, "Instance.InvalidStatus")
    made = provider("BccInstance").create(instance_inputs(network))
    assert api.state["instance"][made.id]["releaseTime"] == "2026-12-05T10:00:00Z"
    assert len(api.calls("AutoReleaseInstance")) == 2


def test_an_instance_that_never_runs_has_its_release_time_then_is_released(api, network):
    api.boot_polls = 10**9
    with pytest.raises(BceApiError, match="GetInstance failed: Timeout"):
        provider("BccInstance", ready_timeout_s=0.2).create(instance_inputs(network))
    actions = [r["action"] for r in api.requests if r["action"] != "GetInstance"]
    assert actions.index("AutoReleaseInstance") < actions.index("ReleaseInstanceWithRelatedResources"), \
        "the cloud-side TTL is set right after the create, before the wait"
    assert api.state["instance"] == {}


def test_the_next_up_after_a_released_attempt_makes_a_new_instance(api, network):
    """The same inputs carry the same client token, which BCC answers with the released instance: a new
    token then makes a new one."""
    api.boot_polls = 10**9
    with pytest.raises(BceApiError):
        provider("BccInstance", ready_timeout_s=0.1).create(instance_inputs(network))
    api.boot_polls = 1
    made = provider("BccInstance").create(instance_inputs(network))
    assert list(api.state["instance"]) == [made.id]
    assert api.state["instance"][made.id]["status"] == "Running"
    tokens = [r["params"]["query"]["clientToken"] for r in api.calls("CreateInstanceBySpec")]
    assert tokens[0] == tokens[1] != tokens[2]


def test_a_failed_release_after_a_failed_create_names_the_instance_that_bills(api, network):
    api.boot_polls = 10**9
    api.fail_action("ReleaseInstanceWithRelatedResources", 50, 500, "InternalError")
    with pytest.raises(BceApiError, match=r"bills outside Pulumi's state until released.*POST /v2/instance/i-"):
        provider("BccInstance", ready_timeout_s=0.1, attempts=2).create(instance_inputs(network))
def test_a_market_bid_instance_is_created_without_a_price(api, network):
    """The default bid (no spotMaxPricePerHour): BCC's automatic bid, which is only reclaimed for lack of
    inventory (BCC "Spot the Instance"); the SDK sends bidModel market and no bidPrice."""
    made = provider("BccInstance").create(instance_inputs(network, paymentTiming="bid", bidModel="market"))
    (request,) = api.calls("CreateBidInstance")
    body = request["params"]["body"]
    assert body["bidModel"] == "market" and "bidPrice" not in body, body
    assert api.state["instance"][made.id]["bid"]


def test_a_bid_instance_is_created_with_a_custom_price(api, network):
    made = provider("BccInstance").create(instance_inputs(
        network, paymentTiming="bid", bidModel="custom", bidPrice=30.5, onDemandPrice=40))
    (request,) = api.calls("CreateBidInstance")
    body = request["params"]["body"]
    assert (body["bidModel"], body["bidPrice"], body["billing"]["paymentTiming"]) == ("custom", "30.5", "Postpaid")
    assert body["createCdsList"][0]["encryptKey"] == network["key"]
    assert api.state["instance"][made.id]["bid"]


def test_check_refuses_a_bid_above_the_pay_as_you_go_price_and_world_open_ssh():
    bid = dynamic.BccInstanceProvider(REGION).check({}, {
        "paymentTiming": "bid", "bidModel": "custom", "bidPrice": 41, "onDemandPrice": 40})
    assert any("above the pay-as-you-go price" in f.reason for f in bid.failures), bid.failures
    def bid_failures(**inputs):
        return [f for f in dynamic.BccInstanceProvider(REGION).check({}, {"paymentTiming": "bid", **inputs}).failures
                if f.property in ("bidModel", "bidPrice")]
    assert not bid_failures(bidModel="market"), "the automatic bid takes no price"
    assert bid_failures(bidModel="market", bidPrice=30), "a price on a market bid would be ignored: refused"
    assert bid_failures(bidModel="custom"), "a custom bid without its cap"
    assert bid_failures(bidModel="cheapest")
    group = dynamic.SecurityGroupProvider(REGION).check({}, {"region": REGION, "name": "g", "vpcId": "vpc-1", "rules": [
        {"direction": "ingress", "protocol": "tcp", "portRange": "22", "sourceIp": "0.0.0.0/0"}]})
    assert any("open to the world" in f.reason for f in group.failures), group.failures


def test_check_refuses_an_hdd_data_disk_naming_the_input():
    result = dynamic.BccInstanceProvider(REGION).check({}, {"dataDisk": {
        "cdsSizeInGB": 100, "storageType": "hdd", "encryptKey": "k"}})
    assert any(f.property == "dataDisk.storageType" and "hdd" in f.reason for f in result.failures), result.failures


def test_an_api_error_names_the_resource_the_call_and_the_clouds_code(api, network):
    with pytest.raises(BceApiError) as raised:
        provider("BccInstance").create(instance_inputs(network, dataDisk={
            "cdsSizeInGB": 100, "storageType": "enhanced_ssd_pl1", "encryptKey": "not-a-key"}))
    text = str(raised.value)
    assert "BccInstance gpu-training-t-0" in text and "CreateInstanceBySpec" in text and "InvalidEncryptKey" in text


def test_a_wrong_secret_is_refused_by_the_signature_check(api, monkeypatch):
    monkeypatch.setenv(bceapi.SECRET_KEY_ENV, SECRET_KEY[:-1] + "x")
    with pytest.raises(BceApiError) as raised:
        provider("Vpc").create({"region": REGION, "name": "v", "cidr": "10.42.0.0/16"})
    assert raised.value.code == "SignatureDoesNotMatch" and raised.value.status == 401
    assert api.state["vpc"] == {}


def test_sts_credentials_carry_their_security_token(api, monkeypatch):
    """bce-python-sdk 0.9.79's BCC/VPC clients do not send x-bce-security-token themselves (bceapi
    adds it); the stand-in refuses a role key without it, as BCE refuses an STS key without its token."""
    from localcloud.standins.baiducloud import sts_secret

    monkeypatch.setenv(bceapi.ACCESS_KEY_ENV, "STS.deployer")
    monkeypatch.setenv(bceapi.SECRET_KEY_ENV, sts_secret("STS.deployer"))
    monkeypatch.setenv(bceapi.TOKEN_ENV, "sts-session-token")
    made = provider("Vpc").create({"region": REGION, "name": "v", "cidr": "10.42.0.0/16"})
    (request,) = api.calls("CreateVpc")
    assert request["headers"]["x-bce-security-token"] == "sts-session-token" and made.id in api.state["vpc"]


def test_missing_credentials_are_named_not_a_traceback_from_the_sdk(api, monkeypatch):
    monkeypatch.delenv(bceapi.SECRET_KEY_ENV)
    with pytest.raises(bceapi.CredentialsMissing, match=bceapi.SECRET_KEY_ENV):
        provider("Vpc").create({"region": REGION, "name": "v", "cidr": "10.42.0.0/16"})


# ---------------------------------------------------------------- read (refresh), diff, update

def test_refresh_reads_the_instance_and_drops_one_released_behind_pulumis_back(api, network):
    made = provider("BccInstance").create(instance_inputs(network))
    state = {**instance_inputs(network), **made.outs}
    api.state["instance"][made.id]["name"] = "renamed-in-the-console"
    read = provider("BccInstance").read(made.id, state)
    assert read.id == made.id and read.outs["name"] == "renamed-in-the-console"
    del api.state["instance"][made.id]
    assert provider("BccInstance").read(made.id, state).id is None, "gone: refresh removes it from the state"


def test_diff_replaces_on_spec_and_updates_the_release_time_and_tags_in_place(api, network):
    p = provider("BccInstance")
    made = p.create(instance_inputs(network))
    olds = {**instance_inputs(network), **made.outs}
    bigger = p.diff(made.id, olds, instance_inputs(network, spec="bcc.other"))
    assert bigger.changes and bigger.replaces == ["spec"]
    later = instance_inputs(network, releaseTime="2026-12-05T22:00:00Z", tags={tags.STACK: "t", "team": "ml"})
    moved = p.diff(made.id, olds, later)
    assert moved.changes and moved.replaces == []
    p.update(made.id, olds, later)
    instance = api.state["instance"][made.id]
    assert instance["releaseTime"] == "2026-12-05T22:00:00Z"
    assert {"tagKey": "team", "tagValue": "ml"} in instance["tags"]
    assert list(api.state["instance"]) == [made.id], "updated, not replaced"
    assert not p.diff(made.id, {**made.outs, **later, "internalIp": "10.42.0.9"}, later).changes, "computed outputs are not a change"


def test_the_release_policy_changes_in_place_and_named_kinds_are_deleted_before_replaced(api):
    """The release policy names the instances, so a new node changes its document: updated in place
    (UpdatePolicy), never replaced by a policy of the same name that the old one's delete would remove."""
    p = provider("IamRolePolicy")
    provider("IamRole").create({"region": REGION, "name": "r", "assumeRolePolicyDocument": "{}"})
    olds = {"region": REGION, "roleName": "r", "policyName": "r-release", "document": '{"ids": ["i-1"]}'}
    made = p.create(olds)
    news = dict(olds, document='{"ids": ["i-2"]}')
    assert p.diff(made.id, olds, news).replaces == []
    p.update(made.id, olds, news)
    assert api.state["policy"]["r-release"]["document"] == news["document"]
    renamed = p.diff(made.id, olds, dict(olds, policyName="r-other"))
    assert renamed.replaces == ["policyName"] and renamed.delete_before_replace
    key = provider("KmsKey").diff("k", {"description": "a"}, {"description": "b"})
    assert key.replaces == ["description"] and key.delete_before_replace
    vpc = provider("Vpc").diff("v", {"cidr": "10.42.0.0/16"}, {"cidr": "10.43.0.0/16"})
    assert vpc.replaces == ["cidr"] and not vpc.delete_before_replace


def test_security_group_rules_change_in_place(api, network):
    p = provider("SecurityGroup")
    olds = {"region": REGION, "name": "g", "vpcId": "x", "rules": [{"direction": "ingress", "sourceIp": "10.42.0.0/16"}]}
    news = dict(olds, rules=olds["rules"] + [{"direction": "ingress", "protocol": "tcp", "portRange": "22",
                                              "sourceIp": "203.0.113.7/32"}])
    assert p.diff(network["group"], olds, news).replaces == []
    p.update(network["group"], olds, news)
    assert len(api.calls("AuthorizeSecurityGroupRule")) == 1


# ---------------------------------------------------------------- delete

def test_delete_is_retried_and_treats_not_found_as_done(api, network):
    p = provider("BccInstance")
    made = p.create(instance_inputs(network))
    api.fail_next(1, 503, "ServiceUnavailable")
    p.delete(made.id, instance_inputs(network))
    assert made.id not in api.state["instance"] and len(api.calls("ReleaseInstanceWithRelatedResources")) == 2
    p.delete(made.id, instance_inputs(network))  # a retried delete (the first answer lost): done, no error
    assert len(api.calls("ReleaseInstanceWithRelatedResources")) == 3


def test_every_kind_deletes_what_it_made_and_a_second_delete_is_quiet(api, network):
    role = provider("IamRole").create({"region": REGION, "name": "r", "assumeRolePolicyDocument": "{}"})
    policy = provider("IamRolePolicy").create({"region": REGION, "roleName": "r", "policyName": "p", "document": "{}"})
    for kind, made, props in (("IamRolePolicy", policy, {}), ("IamRole", role, {})):
        provider(kind).delete(made.id, props)
        provider(kind).delete(made.id, props)
    assert api.state["role"] == {} and api.state["policy"] == {} and api.state["attach"] == {}
    provider("KmsKey").delete(network["key"], {})
    assert api.state["key"][network["key"]]["keyState"] == "PendingDeletion"


def test_a_retried_kms_key_create_finds_the_key_the_first_attempt_made(api):
    props = {"region": REGION, "description": "gpu-training t data disks", "keySpec": "AES_256", "protectedBy": "HSM"}
    api.fail_next(1, 500, "InternalError", after=True)
    with pytest.raises(BceApiError):
        provider("KmsKey", attempts=1).create(props)  # the key was made, the answer lost, no retry left
    again = provider("KmsKey").create(props)  # what Pulumi's next `up` does
    assert list(api.state["key"]) == [again.id]


# ---------------------------------------------------------------- no secret in the state

def test_no_credential_reaches_the_pickled_providers_or_the_inputs(monkeypatch):
    """The plan's inputs are what Pulumi writes to the state, `__provider` included (the pickled provider)."""
    secret, key = "SK-must-not-leak-0123456789", "AK-must-not-leak-0123"
    monkeypatch.setenv(bceapi.ACCESS_KEY_ENV, key)
    monkeypatch.setenv(bceapi.SECRET_KEY_ENV, secret)
    monkeypatch.setenv(bceapi.TOKEN_ENV, "token-must-not-leak")
    stack = "bd-large-a100-spot"
    plan = run_program(apply_overrides(load_stack_config(stack), ("image=m-ubuntu2204",)), stack, preview=False)
    dynamic_resources = [r for r in plan.resources if r.type.startswith("pulumi-python:dynamic/baiducloud:")]
    assert len(dynamic_resources) >= 8
    for resource in dynamic_resources:
        blob = base64.b64decode(resource.inputs["__provider"])
        text = json.dumps(resource.inputs) + blob.decode("latin-1")
        for needle in (secret, key, "token-must-not-leak"):
            assert needle not in text, (resource.name, needle)
        restored = dill.loads(blob)
        assert set(vars(restored)) <= {"region", "attempts", "first_wait_s", "ready_timeout_s", "poll_s",
                                       "timeout_ms", "kind"}, vars(restored)


def test_constructing_dynamic_resources_leaves_the_pickler_as_it_was():
    before = pickle._Pickler._batch_setitems, pickle._Pickler.save_dict
    config = apply_overrides(load_stack_config("bd-large-a100"), ())
    for _ in range(3):
        run_program(config, "bd-large-a100")
    # Huawei's spot pool makes its login key with the other dynamic resource (components/generated_key.py).
    run_program(load_stack_config("hw-medium-v100"), "hw-medium-v100")
    assert (pickle._Pickler._batch_setitems, pickle._Pickler.save_dict) == before


# ---------------------------------------------------------------- the plan

def test_the_plan_makes_an_automatic_bid_instance_by_default(plan_for):
    """BCC "Spot the Instance": an automatic bid "is only released due to insufficient inventory"; a maximum
    price adds the market price as a reason. Without spotMaxPricePerHour the stack bids automatically."""
    plan = plan_for("bd-large-a100-spot")
    (node,) = plan.of_type("pulumi-python:dynamic/baiducloud:BccInstance")
    assert (node.inputs["paymentTiming"], node.inputs["bidModel"]) == ("bid", "market")
    assert "bidPrice" not in node.inputs
    assert node.inputs["dataDisk"]["encryptKey"] == "bd-large-a100-spot-disk-key-id"
    assert plan.outputs["poolId"] is None, "no pool on Baidu"


def test_the_plan_makes_a_bid_instance_capped_at_the_users_price(plan_for):
    plan = plan_for("bd-large-a100-spot", "spotMaxPricePerHour=60")
    (node,) = plan.of_type("pulumi-python:dynamic/baiducloud:BccInstance")
    assert (node.inputs["paymentTiming"], node.inputs["bidModel"], node.inputs["bidPrice"]) == ("bid", "custom", 60)


def test_the_node_config_names_no_pool_to_retire(plan_for):
    from components.bootstrap import node_config_in_plan

    plan = plan_for("bd-large-a100-spot")
    (node,) = plan.of_type("pulumi-python:dynamic/baiducloud:BccInstance")
    config = node_config_in_plan(node.inputs["userData"], plan.resources)
    assert config["cluster"]["poolName"] is None and config["billing"] == "spot"


@pytest.mark.parametrize("override,key", [(("nodes=2",), "nodes"), (("checkpoint.create=true",), "checkpoint.create"),
                                          (("baiducloud:region=cd",), "baiducloud:region")])
def test_refused_configs_name_the_key(override, key):
    from tools.mockrun import ProgramExit

    config = apply_overrides(load_stack_config("bd-large-a100"), override)
    with pytest.raises(ProgramExit) as stop:
        run_program(config, "bd-large-a100")
    assert stop.value.code == 2 and key in stop.value.stderr and "Traceback" not in stop.value.stderr


# ---------------------------------------------------------------- PaddlePaddle on the nodes

def test_paddle_gets_the_wheel_index_of_the_nodes_cuda_version(plan_for):
    from components.bootstrap import node_config_in_plan

    plan = plan_for("bd-large-a100", "bootstrap.framework=paddle")
    (node,) = plan.of_type("pulumi-python:dynamic/baiducloud:BccInstance")
    boot = node_config_in_plan(node.inputs["userData"], plan.resources)["bootstrap"]
    assert (boot["framework"], boot["frameworkVersion"], boot["cudaToolkit"], boot["driverBranch"]) == \
        ("paddle", "3.2.0", "12-6", "560")
    assert boot["frameworkIndexUrl"] == "https://www.paddlepaddle.org.cn/packages/stable/cu126/"
    nine = plan_for("bd-large-a100", "bootstrap.framework=paddle", "bootstrap.cudaToolkit=12-9",
                    "bootstrap.driverBranch=575")
    (node,) = nine.of_type("pulumi-python:dynamic/baiducloud:BccInstance")
    assert node_config_in_plan(node.inputs["userData"], nine.resources)["bootstrap"]["frameworkIndexUrl"].endswith("/cu129/")


@pytest.mark.parametrize("override,key", [
    (("bootstrap.cudaToolkit=12-4",), "bootstrap.cudaToolkit"),
    (("bootstrap.cudaToolkit=12-6", "bootstrap.driverBranch=550"), "bootstrap.driverBranch"),
    (("bootstrap.frameworkIndexUrl=ftp://mirror/paddle",), "bootstrap.frameworkIndexUrl")])
def test_paddle_refuses_a_cuda_without_an_index_and_a_driver_too_old(override, key):
    from tools.mockrun import ProgramExit

    config = apply_overrides(load_stack_config("bd-large-a100"), ("bootstrap.framework=paddle", *override))
    with pytest.raises(ProgramExit) as stop:
        run_program(config, "bd-large-a100")
    assert stop.value.code == 2 and key in stop.value.stderr and "Traceback" not in stop.value.stderr


# ---------------------------------------------------------------- what the preview says (audit W2, W5, W6, G3)

def test_the_preview_names_what_is_unverified_and_the_public_address_bandwidth():
    from tools.stackfiles import stack_spec

    _, spec = stack_spec("bd-large-a100", ())
    found = {}
    for key, message in spec.profile.rules.warnings(spec):
        found.setdefault(key, []).append(message)
    identity = " ".join(found["identity"])
    assert "OPERATE" in identity and "mjxkcdfp8" in identity and "maxHours (24 h)" in identity
    assert "bce:bcc" in identity and "jm4bbrdmn" in identity
    assert "8lfrq74kx" in found["maxHours"][0], "the auto release's disk and EIP handling is unverified"
    (egress,) = found["publicEgress"]
    assert "100 Mbit/s" in egress and "10 GB checkpoint takes at least 13 min" in egress and "服务网卡" in egress


def test_keeps_billing_lists_the_disk_an_auto_release_may_leave_and_the_release_frees_the_rest():
    from components import billing
    from components.providers.baiducloud import profile
    from tools.stackfiles import stack_spec

    _, spec = stack_spec("bd-large-a100", ())
    listed = {item.what: item for item in billing.keeps_billing(spec)}
    (maybe,) = [item for what, item in listed.items() if what.startswith("only if a node ends at maxHours")]
    assert maybe.size == "2,000 GiB enhanced_ssd_pl2 per node" and maybe.rate is None and "unverified" in maybe.what
    assert "relatedReleaseFlag" in profile.BILLS_NOTHING_ALONE[profile.INSTANCE]


def test_a_node_signs_for_bos_region_bj_and_sends_the_roles_security_token():
    """BOS's S3 API: SigV4 with the BOS region name in the credential scope ("兼容签名认证",
    https://cloud.baidu.com/doc/BOS/s/Hjwvyq84s: <ak>/<date>/<bos-region>/s3/aws4_request, bos-region bj|bd|su|gz|
    fwh|hkg) and the STS token in x-amz-security-token, which "兼容公共头"
    (https://cloud.baidu.com/doc/BOS/s/ejwvyq8vh, 2024-03-13) lists as compatible. The node agent's own S3
    client, with the node config the plan gives a Baidu node and the role's temporary credentials."""
    import hashlib as _hashlib

    from localcloud import Stub
    from node_agent import s3 as node_s3
    from components.nodeconfig import build_node_config
    from tools.stackfiles import stack_spec

    class Bos(Stub):
        def __init__(self):
            self.seen: list[dict] = []
            super().__init__()

        def answer(self, method, path, headers, body):
            self.seen.append({"method": method, "path": path, "headers": {k.lower(): v for k, v in headers.items()}})
            return 200, b"", {"ETag": '"' + _hashlib.md5(body).hexdigest() + '"'}

    _, spec = stack_spec("bd-large-a100-spot", ())
    cfg = build_node_config(spec, shared_fs_address=None)
    assert cfg["checkpoint"]["region"] == "bj" and cfg["checkpoint"]["signatureVersion"] == "s3v4"
    bos = Bos()
    try:
        # The stand-in is an IP address, which has no bucket subdomain: path style here, the same signing.
        cfg["checkpoint"] = {**cfg["checkpoint"], "endpoint": bos.url, "addressingStyle": "path"}
        role = lambda: {"access_key": "ak-role", "secret_key": "sk-role", "token": "sts-token-1",  # noqa: E731
                        "expiry_time": "2099-01-01T00:00:00Z"}
        node_s3.client(cfg, credentials=role).put_object(Bucket=cfg["checkpoint"]["bucket"], Key="k", Body=b"x")
    finally:
        bos.stop()
    (put,) = [r for r in bos.seen if r["method"] == "PUT"]
    authorization = put["headers"]["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=ak-role/")
    assert "/bj/s3/aws4_request" in authorization, authorization
    assert put["headers"]["x-amz-security-token"] == "sts-token-1"
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert "x-amz-security-token" in signed


def test_the_bos_token_finding_cites_the_current_page_which_lists_the_header_as_compatible():
    """W6: the English 'Compatible Public Header' page (ejwvyq8vh-en) is outdated; the Chinese one of
    2024-03-13 lists x-amz-security-token as 兼容 (compatible)."""
    from tools.stackfiles import stack_spec

    _, spec = stack_spec("bd-large-a100-spot", ())
    (finding,) = [m for k, m in spec.profile.rules.warnings(spec) if k == "checkpoint.bucket"]
    assert "https://cloud.baidu.com/doc/BOS/s/ejwvyq8vh," in finding and "2024-03-13" in finding
    assert "as compatible" in finding and "not compatible" not in finding and "region bj" in finding


def test_a_new_instance_not_listed_at_once_is_not_taken_for_a_released_one(api, network):
    """Right after CreateInstance a GetInstance may answer not found; a second create then would leave the
    first instance billing with no release time."""
    api.fail_action("GetInstance", 2, 404, "NoSuchInstance")
    made = provider("BccInstance").create(instance_inputs(network))
    assert list(api.state["instance"]) == [made.id] and len(api.calls("CreateInstanceBySpec")) == 1
