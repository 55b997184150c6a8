"""Local stand-ins for Alibaba Cloud (tests, `make rehearse`): the ECS metadata service in hardened
mode (session token required: 403 without it) and the ECS RPC API, recording signed requests:
DescribeInstances (peers) and the spot pool's auto provisioning groups (`add_pool`), which
DeleteAutoProvisioningGroup marks deleted but keeps listing, as the API lists deleted groups.

Facts: ECS doc "Instance metadata" (https://www.alibabacloud.com/help/en/ecs/user-guide/instance-metadata-items) and the
DeleteInstance API (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstance).
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl, urlsplit

from localcloud import ApiStub, MetadataStub

UTC_ISO = "%Y-%m-%dT%H:%M:%SZ"


class Metadata(MetadataStub):
    token_header = "x-aliyun-ecs-metadata-token"  # hardened mode: 403 without a session token
    denied_status = 403
    spot_path = "instance/spot/termination-time"

    @staticmethod
    def new_instance_id():
        return "i-bp" + uuid.uuid4().hex[:18]  # i- and 20 characters, like the documented examples

    def spot_body(self, notice):
        return notice.astimezone(timezone.utc).strftime(UTC_ISO).encode()

    def values(self):
        credentials = {"AccessKeyId": self.key_id, "AccessKeySecret": self.secret, "SecurityToken": self.token,
                       "Expiration": self.expiry().strftime(UTC_ISO), "Code": "Success"}
        return {"instance-id": self.instance_id, "private-ipv4": self.ip, "region-id": self.region,
                "zone-id": self.zone,
                f"ram/security-credentials/{self.role}": json.dumps(credentials)}


class CloudApi(ApiStub):
    release_actions = ("DeleteInstance",)  # node_runtime.release

    def __init__(self, instances=()):
        self.pools = {}  # auto provisioning group id -> {"name", "status", "terminateInstances"}
        super().__init__(instances)

    def add_pool(self, name: str, status: str = "active") -> str:
        """A spot pool the agent can find by name; its new id."""
        pool_id = f"apg-{uuid.uuid4().hex[:12]}"
        self.pools[pool_id] = {"name": name, "status": status, "terminateInstances": None}
        return pool_id

    def parse(self, method, path, headers, body):
        # RPC style: parameters in the query string and/or a form body.
        params = dict(parse_qsl(urlsplit(path).query))
        params.update(parse_qsl(body.decode()))
        return params.get("Action") or headers.get("x-acs-action"), params

    def respond(self, action, params):
        out = {"RequestId": uuid.uuid4().hex}
        if action == "DescribeInstances":
            out.update(TotalCount=len(self.instances), PageNumber=1, PageSize=100, Instances={"Instance": [
                {"InstanceId": i, "Status": "Running", "VpcAttributes": {"PrivateIpAddress": {"IpAddress": [ip]}}}
                for i, ip in self.instances]})
        elif action == "DescribeAutoProvisioningGroups":
            name = params.get("AutoProvisioningGroupName")
            groups = [{"AutoProvisioningGroupId": i, "AutoProvisioningGroupName": p["name"], "Status": p["status"],
                       "AutoProvisioningGroupType": "maintain"}
                      for i, p in self.pools.items() if name in (None, p["name"])]
            out.update(TotalCount=len(groups), PageNumber=1, PageSize=100,
                       AutoProvisioningGroups={"AutoProvisioningGroup": groups})
        elif action == "DeleteAutoProvisioningGroup" and params.get("AutoProvisioningGroupId") in self.pools:
            pool = self.pools[params["AutoProvisioningGroupId"]]
            pool.update(status="deleted", terminateInstances=params.get("TerminateInstances"))
        return out


class Sts(ApiStub):
    """STS for RRSA (the Kubernetes path's pods, pod_runtime.py): AssumeRoleWithOIDC trades the
    ServiceAccount's token for temporary credentials when the role, the OIDC provider and the token are
    the ones this stand-in was given; anything else is refused as STS refuses it (an error body, 400).
    Facts: STS API reference "AssumeRoleWithOIDC" (anonymous; RoleArn, OIDCProviderArn, OIDCToken,
    RoleSessionName; the answer's Credentials.{AccessKeyId, AccessKeySecret, SecurityToken, Expiration})."""

    def __init__(self, role_arn: str, provider_arn: str, token: str):
        self.role_arn, self.provider_arn, self.token = role_arn, provider_arn, token
        super().__init__(())

    def parse(self, method, path, headers, body):
        params = dict(parse_qsl(urlsplit(path).query))
        params.update(parse_qsl(body.decode()))
        return params.get("Action"), params

    def answer(self, method, path, headers, body):
        action, params = self.parse(method, path, headers, body)
        self.requests.append({"action": action, "params": params, "method": method})
        good = (action == "AssumeRoleWithOIDC" and params.get("RoleArn") == self.role_arn
                and params.get("OIDCProviderArn") == self.provider_arn and params.get("OIDCToken") == self.token)
        if not good:
            return 400, json.dumps({"Code": "InvalidParameter", "Message": "role, provider or token"}).encode(), {}
        expiry = datetime.now(timezone.utc) + timedelta(hours=1)
        return 200, json.dumps({"RequestId": uuid.uuid4().hex, "Credentials": {
            "AccessKeyId": f"STS.pod-{uuid.uuid4().hex[:8]}", "AccessKeySecret": uuid.uuid4().hex,
            "SecurityToken": uuid.uuid4().hex, "Expiration": expiry.strftime(UTC_ISO)}}).encode(), {
            "Content-Type": "application/json"}
