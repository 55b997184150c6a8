"""Baidu AI Cloud: every request our code sends, checked against Baidu's API reference as data.

The dynamic providers (dynamic.py) and the node runtime (node_runtime.py) run for real against the
BCE API stand-in (localcloud/standins/baiducloud.py CloudApi, a real HTTP server on 127.0.0.1); bce-python-sdk
builds and signs each request. The stand-in records what arrived, and each request is checked against
components/providers/baiducloud/bce_api.yaml (api_reference.problems): a known call (method, path),
its required query keys and body fields, and the flags our code must send (the related-resources
release that frees the data disk and the public IP, the bid instance's EIP release).
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from components import providers, tags
from components.providers.baiducloud import api_reference, bceapi, dynamic
from components.providers.baiducloud.bceapi import BceApiError
from localcloud.standins.baiducloud import Metadata

REGION = "bj"
FAST = dict(first_wait_s=0.01, poll_s=0.01)
SDK_ROOT = Path(importlib.util.find_spec("baidubce").origin).parent.parent


@pytest.fixture
def api(bce_api):  # tests/providers/conftest.py
    return bce_api


def provider(kind: str):
    return dynamic.PROVIDERS[kind](REGION, **FAST)


def node_inputs(network: dict, **changes) -> dict:
    """A node as compute.py plans it: a data disk and a public IP (networkCapacityInMbps)."""
    return {"region": REGION, "name": "gpu-training-t-0", "spec": "bcc.hgn5IB.c116m978.8A100-80g", "cpuCount": 116,
            "memoryCapacityInGB": 978, "imageId": "m-ubuntu2204", "zoneName": "cn-bj-a",
            "subnetId": network["subnet"], "securityGroupId": network["group"], "paymentTiming": "Postpaid",
            "dataDisk": {"cdsSizeInGB": 2000, "storageType": "enhanced_ssd_pl2", "encryptKey": network["key"],
                         "deleteWithInstance": True},
            "networkCapacityInMbps": 100, "releaseTime": "2026-12-05T10:00:00Z",
            "tags": {tags.STACK: "t"}, **changes}


def make_network() -> dict:
    vpc = provider("Vpc").create({"region": REGION, "name": "v", "cidr": "10.42.0.0/16"})
    subnet = provider("Subnet").create({"region": REGION, "name": "s", "zoneName": "cn-bj-a",
                                        "cidr": "10.42.0.0/24", "vpcId": vpc.id})
    group = provider("SecurityGroup").create({"region": REGION, "name": "g", "vpcId": vpc.id, "rules": [
        {"direction": "ingress", "protocol": "tcp", "portRange": "22", "sourceIp": "10.42.0.0/16"}]})
    key = provider("KmsKey").create({"region": REGION, "description": "gpu-training t data disks",
                                     "keySpec": "AES_256", "protectedBy": "HSM"})
    return {"vpc": vpc.id, "subnet": subnet.id, "group": group.id, "key": key.id}


def node_runtime(metadata, api_url: str):
    """node_runtime.py loaded from its file, as the agent loads it on a node."""
    spec = importlib.util.spec_from_file_location("rt_baidu_conformance", providers.node_runtime_path("baiducloud"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Runtime({"region": REGION, "endpoints": {"metadata": metadata.url, "cloudApi": api_url},
                           "identity": {"roleName": metadata.role},
                           "cluster": {"tagKey": tags.STACK, "tagValue": "st"}}, None)


def problems_of(requests: list[dict]) -> list[str]:
    out = []
    for request in requests:
        params = request["params"]
        for problem in api_reference.problems(request["method"], params["path"], params["query"], params["body"]):
            out.append(f"{request['method']} {params['path']}: {problem}")
    return out


# ---------------------------------------------------------------- the whole lifecycle, every request

def test_every_request_of_a_stack_lifecycle_conforms_to_the_api_reference(api):
    """pulumi up (network, key, role, both kinds of node, binding), a day-2 update, a refresh, the node's
    own peer lookup and self-release, then pulumi destroy: every request against bce_api.yaml."""
    network = make_network()
    role = provider("IamRole").create({"region": REGION, "name": "gpu-training-t-node",
                                       "assumeRolePolicyDocument": '{"accessControlList": []}'})
    policy = provider("IamRolePolicy").create({"region": REGION, "roleName": role.id, "policyName": "t-release",
                                               "document": '{"accessControlList": []}'})
    on_demand = provider("BccInstance").create(node_inputs(network))
    bid = provider("BccInstance").create(node_inputs(network, name="gpu-training-t-1", paymentTiming="bid",
                                                     bidModel="market"))
    capped = provider("BccInstance").create(node_inputs(network, name="gpu-training-t-2", paymentTiming="bid",
                                                        bidModel="custom", bidPrice=30.5, onDemandPrice=40))
    binding = provider("RoleBinding").create({"region": REGION, "roleName": role.id,
                                              "instanceIds": [on_demand.id, bid.id]})
    later = node_inputs(network, releaseTime="2026-12-05T22:00:00Z", tags={tags.STACK: "t", "team": "ml"})
    provider("BccInstance").update(on_demand.id, node_inputs(network), later)
    provider("BccInstance").read(on_demand.id, later)

    metadata = Metadata(instance_id=bid.id, role=role.id)
    try:
        runtime = node_runtime(metadata, api.url)
        runtime.peers()
        runtime.release()  # the bid node ends itself
    finally:
        metadata.stop()

    provider("RoleBinding").delete(binding.id, {"roleName": role.id, "instanceIds": [on_demand.id, bid.id]})
    provider("BccInstance").delete(on_demand.id, later)
    provider("BccInstance").delete(bid.id, node_inputs(network))  # already gone: not found is done
    provider("BccInstance").delete(capped.id, node_inputs(network))
    provider("IamRolePolicy").delete(policy.id, {})
    provider("IamRole").delete(role.id, {})
    provider("KmsKey").delete(network["key"], {})
    provider("SecurityGroup").delete(network["group"], {})
    provider("Subnet").delete(network["subnet"], {})
    provider("Vpc").delete(network["vpc"], {})

    refused = [(r["action"], r["why"]) for r in api.rejected if not r["why"].endswith("not found")]
    assert refused == [], refused  # only the second delete of the self-released node met "not found"
    assert problems_of(api.requests) == []
    sent = {r["action"] for r in api.requests}
    assert {"CreateInstanceBySpec", "CreateBidInstance", "ReleaseInstanceWithRelatedResources", "AutoReleaseInstance",
            "BindInstanceRole", "ListInstances"} <= sent, sent
    assert api.state["instance"] == {}, "every node released"


# ---------------------------------------------------------------- the release rules (W2)

@pytest.mark.parametrize("who", ["pulumi destroy (the dynamic provider's delete)", "the node's self-release"])
def test_a_release_frees_the_data_disk_and_the_public_ip(api, who):
    network = make_network()
    made = provider("BccInstance").create(node_inputs(network))
    instance = api.state["instance"][made.id]
    assert instance["dataDisks"] and instance["eip"], "the node has what bills after a plain release"
    if who.startswith("pulumi"):
        provider("BccInstance").delete(made.id, node_inputs(network))
    else:
        metadata = Metadata(instance_id=made.id)
        try:
            node_runtime(metadata, api.url).release()
        finally:
            metadata.stop()
    assert api.rejected == [], [(r["action"], r["why"]) for r in api.rejected]
    (release,) = api.release_requests(made.id)
    assert (release["method"], release["action"]) == ("POST", "ReleaseInstanceWithRelatedResources")
    body = release["params"]["body"]
    assert (body.get("relatedReleaseFlag"), body.get("deleteCdsSnapshotFlag"), body.get("cdsAttributeActive"),
            body.get("bccRecycleFlag")) == (True, True, False, False), body
    assert problems_of([release]) == []
    assert made.id not in api.state["instance"]


def test_a_bid_node_gives_up_its_public_ip_when_bcc_releases_it(api):
    network = make_network()
    provider("BccInstance").create(node_inputs(network, paymentTiming="bid", bidModel="custom", bidPrice=30.5))
    (create,) = api.calls("CreateBidInstance")
    assert create["params"]["body"]["isEipAutoRelatedDelete"] is True
    assert problems_of([create]) == []


def test_the_stand_in_refuses_the_releases_that_leave_a_disk_or_an_ip_billing(api):
    """The real BCC accepts both and leaves the disk detached and the EIP bound to nothing: the stand-in
    refuses them, naming the rule's source, so that no code that sends them passes a test."""
    network = make_network()
    bcc = bceapi.client("bcc", bceapi.Settings(REGION))
    for send in (lambda i: bcc.release_instance(i),
                 lambda i: bcc.release_instance_with_related_resources(i, related_release_flag=False,
                                                                       delete_cds_snapshot_flag=False)):
        made = provider("BccInstance").create(node_inputs(network))
        with pytest.raises(BceApiError) as refused:
            bceapi.call(bceapi.Settings(REGION, attempts=1), "t", "Release", lambda s=send, i=made.id: s(i))
        assert refused.value.code == "StandIn.LeavesBilling" and "dataDisks and eip" in str(refused.value)
        assert "https://intl.cloud.baidu.com/" in str(refused.value), "the rule names its source"
        assert made.id in api.state["instance"], "nothing was released"


def test_an_instance_without_disk_or_ip_may_be_released_either_way(api):
    api.add_instance("i-plain001", "10.0.0.9", data_disk=False, eip=False)
    bcc = bceapi.client("bcc", bceapi.Settings(REGION))
    bcc.release_instance("i-plain001")
    assert "i-plain001" not in api.state["instance"] and api.rejected == []


# ---------------------------------------------------------------- the data itself

def test_every_call_of_the_reference_has_a_source_and_its_sdk_line_is_the_request_builder():
    for call in api_reference.calls():
        assert call.sdk or call.doc, f"{call.action}: no source"
        for flag in call.flags.values():
            assert flag.get("why"), f"{call.action}: a flag without its reason"
        if call.leaves_billing:
            assert call.leaves_billing.get("why") and call.doc.startswith("https://"), call.action
        match = re.match(r"(baidubce/\S+\.py):(\d+)", call.sdk)
        assert match, f"{call.action}: sdk {call.sdk!r} is not file:line"
        line = (SDK_ROOT / match.group(1)).read_text().splitlines()[int(match.group(2)) - 1]
        assert line.lstrip().startswith("def "), f"{call.action}: {call.sdk} is {line.strip()!r}, not a def"


def test_a_request_is_matched_to_the_most_specific_call():
    match = api_reference.match
    assert match("POST", "/v2/instance/bid", {"clientToken": "t"}).action == "CreateBidInstance"
    assert match("POST", "/v2/instance/role", {"bind": ""}).action == "BindInstanceRole"
    assert match("POST", "/v2/instance/i-abc12345", {}).action == "ReleaseInstanceWithRelatedResources"
    assert match("DELETE", "/v2/instance/i-abc12345", {}).action == "ReleaseInstance"
    assert match("PUT", "/v2/instance/i-abc12345", {"autorelease": ""}).action == "AutoReleaseInstance"
    assert match("POST", "/", {"action": "CreateKey"}).action == "CreateKey"
    assert match("PATCH", "/v2/instance", {}) is None


# ---------------------------------------------------------------- the plan's own nodes

@pytest.mark.parametrize("stack", ["bd-large-a100", "bd-large-a100-spot"])
def test_the_node_the_plan_makes_is_created_and_released_by_the_reference(api, plan_for, stack):
    """The BccInstance inputs of the shipped stack's plan (ids of the plan's other resources replaced
    by the stand-in's), created and deleted for real: every request conforms, and the node had the
    data disk and the public IP that the release must free."""
    (node,) = plan_for(stack).of_type("pulumi-python:dynamic/baiducloud:BccInstance")
    network = make_network()
    inputs = {k: v for k, v in node.inputs.items() if not k.startswith("__") and v is not None}
    inputs.update(subnetId=network["subnet"], securityGroupId=network["group"], imageId="m-ubuntu2204",
                  zoneName="cn-bj-a", dataDisk={**inputs["dataDisk"], "encryptKey": network["key"]})
    made = provider("BccInstance").create(inputs)
    instance = api.state["instance"][made.id]
    assert instance["dataDisks"] and instance["eip"], (instance["dataDisks"], instance["eip"])
    provider("BccInstance").delete(made.id, inputs)
    assert api.rejected == [], [(r["action"], r["why"]) for r in api.rejected]
    assert problems_of(api.requests) == []
    assert made.id not in api.state["instance"]
