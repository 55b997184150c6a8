"""Local stand-ins for Tencent Cloud (tests, `make rehearse`): the CVM metadata service (no token;
the spot termination time in UTC+8, not ISO) and the API 3.0 of CVM (DescribeInstances, TerminateInstances)
and Auto Scaling (the spot pool's scaling groups, `add_pool`; DisableAutoScalingGroup), recording signed
requests. All products answer on one address; the signature's credential scope names the product.
`errors` (action -> error code) answers an action with an API error the way API 3.0 does: HTTP 200 and
`Response.Error` (e.g. UnauthorizedOperation, what CAM answers when the role lacks a permission).

Facts: CVM doc 213/4934 "Instance metadata" and the CVM API reference, TerminateInstances; the spot notice:
CVM doc 213/32487 (`curl metadata.tencentyun.com/latest/meta-data/spot/termination-time` answers
"2018-08-18 12:05:33", "the OS time of the spot instance when it's terminated (in UTC+8)"; 404 when none).
"""
from __future__ import annotations

import json
import uuid
from datetime import timedelta, timezone

from localcloud import ApiStub, MetadataStub

CHINA = timezone(timedelta(hours=8))


class Metadata(MetadataStub):
    spot_path = "spot/termination-time"  # no session token on Tencent
    region, zone = "ap-guangzhou", "ap-guangzhou-3"

    @staticmethod
    def new_instance_id():
        return "ins-" + uuid.uuid4().hex[:8]

    def spot_body(self, notice):
        return notice.astimezone(CHINA).strftime("%Y-%m-%d %H:%M:%S").encode()

    def values(self):
        credentials = {"TmpSecretId": self.key_id, "TmpSecretKey": self.secret, "Token": self.token,
                       "ExpiredTime": int(self.expiry().timestamp()), "Code": "Success"}
        return {"instance-id": self.instance_id, "local-ipv4": self.ip, "private-ipv4": self.ip,
                "placement/region": self.region, "placement/zone": self.zone,
                f"cam/security-credentials/{self.role}": json.dumps(credentials)}


class CloudApi(ApiStub):
    """CVM and Auto Scaling as the node runtime and the local engine (tools/localstack.py) call them.
    RunInstances in a zone of `sold_out_zones` is answered as CVM answers a stock-out:
    ResourceInsufficient.SpecifiedInstanceType with Tencent's own text (capacity.yaml, from the SDK's
    errorcodes.py); otherwise the instances are made and listed in `launched` until TerminateInstances."""
    release_actions = ("TerminateInstances",)  # node_runtime.release

    def __init__(self, instances=()):
        self.pools = {}  # scaling group id -> {"name", "enabled": ENABLED | DISABLED}
        self.errors = {}  # action -> error code to answer with
        self.sold_out_zones: set[str] = set()
        self.launched: dict[str, dict] = {}  # instance id -> {"zone", "type", "name"}
        super().__init__(instances)

    def add_pool(self, name: str) -> str:
        """A spot pool (scaling group) the agent can find by name; its new id."""
        group_id = f"asg-{uuid.uuid4().hex[:8]}"
        self.pools[group_id] = {"name": name, "enabled": "ENABLED"}
        return group_id

    def parse(self, method, path, headers, body):
        return headers.get("x-tc-action"), json.loads(body or b"{}")

    @staticmethod
    def new_id() -> str:
        return Metadata.new_instance_id()

    def respond(self, action, params):
        out = {"Response": {"RequestId": uuid.uuid4().hex}}
        if action in self.errors:
            out["Response"]["Error"] = {"Code": self.errors[action], "Message": f"injected {self.errors[action]}"}
        elif action == "RunInstances" and (params.get("Placement") or {}).get("Zone") in self.sold_out_zones:
            from components.capacity import of
            (answer,) = [a for a in of("tencentcloud").answers if a.code == "ResourceInsufficient.SpecifiedInstanceType"]
            out["Response"]["Error"] = {"Code": answer.code, "Message": answer.meaning}
        elif action == "RunInstances":
            made = [self.new_id() for _ in range(int(params.get("InstanceCount") or 1))]
            for instance_id in made:
                self.launched[instance_id] = {"zone": params["Placement"]["Zone"], "type": params.get("InstanceType"),
                                              "name": params.get("InstanceName")}
            out["Response"].update(InstanceIdSet=made)
        elif action == "TerminateInstances":
            for instance_id in params.get("InstanceIds") or []:
                self.launched.pop(instance_id, None)
        elif action == "DescribeInstances":
            out["Response"].update(TotalCount=len(self.instances), InstanceSet=[
                {"InstanceId": i, "PrivateIpAddresses": [ip]} for i, ip in self.instances])
        elif action == "DescribeAutoScalingGroups":
            names = [v for f in params.get("Filters") or [] if f.get("Name") == "auto-scaling-group-name"
                     for v in f.get("Values") or []]
            groups = [{"AutoScalingGroupId": i, "AutoScalingGroupName": g["name"], "EnabledStatus": g["enabled"]}
                      for i, g in self.pools.items() if not names or g["name"] in names]
            out["Response"].update(TotalCount=len(groups), AutoScalingGroupSet=groups)
        elif action == "DisableAutoScalingGroup" and params.get("AutoScalingGroupId") in self.pools:
            self.pools[params["AutoScalingGroupId"]]["enabled"] = "DISABLED"
        return out


# ---------------------------------------------------------------- the local engine's half (tools/localstack.py)
# Which planned resources start nodes, and the CVM calls that start and release them, made with the
# CVM SDK's own request models against CloudApi, so a refusal reaches the engine as the SDK raises it.
NODE_TYPES = ("tencentcloud:Instance/instance:Instance",)
_LOCAL_KEYS = {"TENCENTCLOUD_SECRET_ID": "local", "TENCENTCLOUD_SECRET_KEY": "local"}


def launch(api_url: str, region: str, name: str, inputs: dict) -> str:
    from tencentcloud.cvm.v20170312 import models

    from components.providers.tencentcloud.pricing import cvm_client

    request = models.RunInstancesRequest()
    request.from_json_string(json.dumps({
        "Placement": {"Zone": inputs.get("availabilityZone")}, "InstanceType": inputs.get("instanceType"),
        "ImageId": str(inputs.get("imageId") or ""), "InstanceName": name, "InstanceCount": 1,
        "InstanceChargeType": "POSTPAID_BY_HOUR"}))
    return cvm_client(region, api_url, _LOCAL_KEYS).RunInstances(request).InstanceIdSet[0]


def release(api_url: str, region: str, instance_id: str) -> None:
    from tencentcloud.cvm.v20170312 import models

    from components.providers.tencentcloud.pricing import cvm_client

    request = models.TerminateInstancesRequest()
    request.InstanceIds = [instance_id]
    cvm_client(region, api_url, _LOCAL_KEYS).TerminateInstances(request)
