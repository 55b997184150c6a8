"""Local stand-ins for Alibaba Cloud (tests, `make rehearse`): the ECS metadata service in hardened
mode (session token required: 403 without it) and the ECS RPC API, recording signed requests:
DescribeInstances (peers) and the spot pool's auto provisioning groups (`add_pool`), which
DeleteAutoProvisioningGroup marks deleted but keeps listing, as the API lists deleted groups; STS for
RRSA; and an ACK cluster (AckCluster): its temporary kubeconfigs and the few Kubernetes API calls
run.py and the teardown make, refusing a kubeconfig past its expiration.

Facts: ECS doc "Instance metadata" (https://www.alibabacloud.com/help/en/ecs/user-guide/instance-metadata-items) and the
DeleteInstance API (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstance).
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl, urlsplit

import yaml

from localcloud import ApiStub, MetadataStub, Stub

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
    """ECS as the node runtime and the local engine (tools/localstack.py) call it. RunInstances in a zone
    listed in `sold_out_zones` is answered as ECS answers a stock-out: HTTP 403 OperationDenied.NoStock with
    the documented message (components/providers/alicloud/capacity.yaml, with its source); otherwise the
    instances are made and listed in `launched` until DeleteInstance(s)."""
    release_actions = ("DeleteInstance",)  # node_runtime.release

    def __init__(self, instances=()):
        self.pools = {}  # auto provisioning group id -> {"name", "status", "terminateInstances"}
        self.sold_out_zones: set[str] = set()
        self.launched: dict[str, dict] = {}  # instance id -> {"zone", "type", "name"}
        super().__init__(instances)

    def answer(self, method, path, headers, body):
        lowered = {k.lower(): v for k, v in headers.items()}
        action, params = self.parse(method, path, lowered, body)
        if action == "RunInstances" and params.get("ZoneId") in self.sold_out_zones:
            with self.lock:
                self.requests.append({"action": action, "params": params, "headers": lowered, "method": method,
                                      "time": time.time()})
            from components.capacity import of
            (answer,) = [a for a in of("alicloud").answers if a.code == "OperationDenied.NoStock"]
            return 403, json.dumps({"Code": answer.code, "Message": answer.meaning, "RequestId": uuid.uuid4().hex,
                                    "HostId": "ecs.aliyuncs.com"}).encode(), {"Content-Type": "application/json"}
        return super().answer(method, path, headers, body)

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
        elif action == "RunInstances":
            made = [f"i-{uuid.uuid4().hex[:20]}" for _ in range(int(params.get("Amount") or 1))]
            for instance_id in made:
                self.launched[instance_id] = {"zone": params.get("ZoneId"), "type": params.get("InstanceType"),
                                              "name": params.get("InstanceName")}
            out.update(InstanceIdSets={"InstanceIdSet": made})
        elif action == "DeleteInstance":
            self.launched.pop(params.get("InstanceId"), None)
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


class AckCluster(Stub):
    """One ACK cluster: the ACK API's DescribeClusterUserKubeconfig (GET /k8s/<cluster>/user_config) and the
    cluster's API server, on one local server.

    The rules are the ACK offer's data (profile.ACK): TemporaryDurationMinutes outside
    credential_minutes_range is refused (400), and a kubeconfig authenticates until its `expiration`
    (credential_source), after which the API server answers 401 Unauthorized, as a Kubernetes API server
    does for a credential it no longer accepts. The stand-in's kubeconfig carries a bearer token where
    ACK's carries a client certificate (both are kubeconfig user credentials; tools/runlib/kubeapi.py reads
    either). `now` is the stand-in's clock (seconds): a test moves it on with `advance`.

    Kubernetes API: list pods by `job-name=<job>`, get and delete a Job (Background propagation deletes its
    pods), answers in the API's own shapes (PodList, Job, Status)."""

    def __init__(self, cluster_id: str = "c-standin0001"):
        from components.providers.alicloud.profile import ACK
        self.offer, self.cluster_id = ACK, cluster_id
        self.offset = 0.0
        self.tokens: dict[str, float] = {}  # token -> expiry (stand-in clock)
        self.jobs: dict[tuple[str, str], dict] = {}  # (namespace, name) -> Job
        self.pods: dict[tuple[str, str], list[dict]] = {}  # (namespace, job) -> pods
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        self.deleted = False  # DeleteCluster: the teardown got to the cluster itself
        super().__init__()

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, minutes: float) -> None:
        self.offset += minutes * 60

    def add_job(self, namespace: str, name: str, pods: list[dict]) -> None:
        self.jobs[(namespace, name)] = {"apiVersion": "batch/v1", "kind": "Job",
                                        "metadata": {"name": name, "namespace": namespace}}
        self.pods[(namespace, name)] = [json.loads(json.dumps(p)) for p in pods]

    def user_config(self, minutes: int) -> dict:
        """What DescribeClusterUserKubeconfig answers (the program's cs.get_cluster_credential)."""
        status, body, _ = self.answer("GET", f"/k8s/{self.cluster_id}/user_config?TemporaryDurationMinutes={minutes}",
                                      {}, b"")
        if status != 200:
            raise ValueError(body.decode())
        return json.loads(body)

    def answer(self, method, path, headers, body):
        status, data = self._answer(method, path, {k.lower(): v for k, v in headers.items()})
        with self.lock:
            self.requests.append((method, path, status))
        return status, json.dumps(data).encode(), {"Content-Type": "application/json"}

    def _answer(self, method, path, headers):
        split = urlsplit(path)
        query = dict(parse_qsl(split.query))
        if split.path == f"/k8s/{self.cluster_id}/user_config" and method == "GET":
            return self._kubeconfig(query.get("TemporaryDurationMinutes"))
        token = (headers.get("authorization") or "").removeprefix("Bearer ")
        if self.tokens.get(token, 0) <= self.now():
            return 401, _status(401, "Unauthorized", "Unauthorized")
        parts = split.path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 and parts[4] == "pods" and method == "GET":
            job = query.get("labelSelector", "").removeprefix("job-name=")
            return 200, {"apiVersion": "v1", "kind": "PodList", "items": self.pods.get((parts[3], job), [])}
        if parts[:4] == ["apis", "batch", "v1", "namespaces"] and len(parts) == 7 and parts[5] == "jobs":
            key = (parts[4], parts[6])
            if key not in self.jobs:
                return 404, _status(404, "NotFound", f'jobs.batch "{parts[6]}" not found')
            if method == "DELETE":
                self.jobs.pop(key)
                self.pods.pop(key, None)
                return 200, _status(200, "", "", status="Success")
            return 200, self.jobs[key]
        return 404, _status(404, "NotFound", "the server could not find the requested resource")

    def _kubeconfig(self, minutes):
        low, high = self.offer.credential_minutes_range
        try:
            minutes = int(minutes) if minutes is not None else high
        except ValueError:
            minutes = -1
        if not low <= minutes <= high:
            return 400, {"code": "ErrorParamInvalid",
                         "message": f"TemporaryDurationMinutes must be {low} to {high}: {self.offer.credential_source}"}
        token = uuid.uuid4().hex
        expiry = self.now() + minutes * 60
        self.tokens[token] = expiry
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "standin",
                  "clusters": [{"name": "kubernetes", "cluster": {"server": self.url}}],
                  "users": [{"name": "standin-user", "user": {"token": token}}],
                  "contexts": [{"name": "standin", "context": {"cluster": "kubernetes", "user": "standin-user"}}]}
        return 200, {"config": yaml.safe_dump(config),
                     "expiration": datetime.fromtimestamp(expiry, timezone.utc).strftime(UTC_ISO)}


def _status(code: int, reason: str, message: str, status: str = "Failure") -> dict:
    """A Kubernetes API Status object (what the API server answers for errors and deletes)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": status, "message": message,
            "reason": reason, "code": code}


# ---------------------------------------------------------------- the local engine's half (tools/localstack.py)
# Which planned resources start nodes, and the ECS calls that start and release them: made with the ECS
# SDK (alibabacloud_ecs20140526's own request models) against CloudApi, so a refusal reaches the engine as
# the SDK reports it.
NODE_TYPES = ("alicloud:ecs/instance:Instance",)
_LOCAL_KEYS = {"ALIBABA_CLOUD_ACCESS_KEY_ID": "local", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "local"}


def launch(api_url: str, region: str, name: str, inputs: dict) -> str:
    """RunInstances for one planned node; its instance id (the SDK's exception when refused)."""
    from alibabacloud_ecs20140526 import models

    from components.providers.alicloud.pricing import ecs_client, runtime_options

    request = models.RunInstancesRequest(region_id=region, zone_id=inputs.get("availabilityZone"),
                                         instance_type=inputs.get("instanceType"), instance_name=name, amount=1,
                                         image_id=str(inputs.get("imageId") or ""),
                                         v_switch_id=str(inputs.get("vswitchId") or ""))
    answer = ecs_client(region, api_url, _LOCAL_KEYS).run_instances_with_options(request, runtime_options())
    return answer.body.instance_id_sets.instance_id_set[0]


def release(api_url: str, region: str, instance_id: str) -> None:
    from alibabacloud_ecs20140526 import models

    from components.providers.alicloud.pricing import ecs_client, runtime_options

    ecs_client(region, api_url, _LOCAL_KEYS).delete_instance_with_options(
        models.DeleteInstanceRequest(instance_id=instance_id, force=True), runtime_options())
