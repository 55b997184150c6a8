"""Local stand-ins for Huawei Cloud (tests, `make rehearse`): the ECS metadata service (EC2-style paths, the
OpenStack-style meta_data.json, securitykey and spot/instance-action, and the hardened mode's token) and
the ECS and AS APIs the node runtime calls, recording each request. Both APIs answer on one address (the
runtime's endpoints.cloudApi); the path tells them apart.

Facts: ECS user guide ecs_03_0166 "Obtaining Metadata" (meta_data.json uuid/project_id, securitykey's
`credential` object; huaweicloudDocs/ecs@bd661adb cn.zh-cn/用户指南/元数据获取.md "Instance Action":
GET /openstack/latest/spot/instance-action answers {"action":"terminate","timestamp":"2023-06-01 09:15:00"}
once a spot ECS is about to be interrupted); ecs_03_2167 "Configuring Instance Metadata Options" (the
hardened mode: PUT /meta-data/latest/api/token with X-Metadata-Token-Ttl-Seconds, 1 to 360 minutes, then
X-Metadata-Token on every read); ECS API "Deleting ECSs" (POST /v1/{project_id}/cloudservers/delete ->
job_id), "Querying Details About ECSs" (GET /v1/{project_id}/cloudservers/detail), "Querying Details About
an ECS" (GET /v1/{project_id}/cloudservers/{server_id}); AS API "Querying AS Groups" and "Pausing an AS
group" (POST /autoscaling-api/v1/{project_id}/scaling_group/{id}/action {"action": "pause"}).
Not documented, so chosen here and said: the spot path's answer without a notice (404 here), the
timestamp's zone (`notice_zone`, UTC+8 by default; the runtime reads both), and the status a hardened
service refuses a tokenless read with (401 here; the runtime takes 401 and 403 alike).
A `tags` filter outside Huawei's tag rules (components/providers/huaweicloud/tags.yaml) is refused (400).
`reclaim(instance_id)` marks an ECS as being deleted by the cloud in the API (ShowServer), for a reclaim
the metadata path does not announce.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from datetime import timedelta, timezone
from urllib.parse import parse_qs, urlsplit

from components.tags import rules as tag_rules
from localcloud import ApiStub, MetadataStub

PROJECT_ID = "0123456789abcdef0123456789abcdef"
SPOT_PATH = "/openstack/latest/spot/instance-action"
TOKEN_PATH = "/meta-data/latest/api/token"
# Instances the cloud is deleting as ShowServer shows them (CloudApi.reclaim): the runtime's fallback.
RECLAIMING: set[str] = set()


class Metadata(MetadataStub):
    spot_path = SPOT_PATH  # outside /latest/meta-data/: answered by answer() below, never by the base class
    region, zone = "cn-north-4", "cn-north-4a"
    notice_zone = timezone(timedelta(hours=8))  # the zone the notice's timestamp is written in (undocumented)
    hardened = False  # True: every read needs X-Metadata-Token (ecs_03_2167, V2 "hardening")

    @staticmethod
    def new_instance_id():
        return str(uuid.uuid4())

    def answer(self, method, path, headers, body):
        lowered = {k.lower(): v for k, v in headers.items()}
        if method == "PUT" and path == TOKEN_PATH:
            with self.lock:
                self.log.append((method, path, headers))
            ttl = lowered.get("x-metadata-token-ttl-seconds", "")
            if not (ttl.isdigit() and 60 <= int(ttl) <= 21600):
                return 400, b"X-Metadata-Token-Ttl-Seconds: 60 to 21600 seconds", {}
            if "x-forwarded-for" in lowered:  # "Proxy denied" (ecs_03_2167)
                return 403, b"proxied token request", {}
            token = uuid.uuid4().hex
            self.tokens.add(token)
            return 200, token.encode(), {}
        if self.hardened and lowered.get("x-metadata-token") not in self.tokens:
            with self.lock:
                self.log.append((method, path, headers))
            return 401, b"metadata token required", {}
        documents = {"/openstack/latest/meta_data.json": self.meta_data, "/openstack/latest/securitykey": self.securitykey}
        if path in documents or path == SPOT_PATH:
            with self.lock:
                self.log.append((method, path, headers))
                if self.fail > 0:
                    self.fail -= 1
                    return 500, b"injected fault", {}
                if path == SPOT_PATH and self.garbage.get(SPOT_PATH):
                    return (*self.garbage[SPOT_PATH].pop(0), {})
            if path == SPOT_PATH:
                if self.fail_spot:
                    return 500, b"injected spot fault", {}
                if self.notice is None:
                    return 404, b"Not Found", {}
                return 200, self.spot_body(self.notice), {"Content-Type": "application/json"}
            return 200, json.dumps(documents[path]()).encode(), {"Content-Type": "application/json"}
        return super().answer(method, path, headers, body)

    def meta_data(self) -> dict:
        return {"uuid": self.instance_id, "project_id": PROJECT_ID, "availability_zone": self.zone,
                "name": f"node-{self.instance_id[:8]}", "hostname": f"node-{self.instance_id[:8]}"}

    def securitykey(self) -> dict:
        return {"credential": {"access": self.key_id, "secret": self.secret, "securitytoken": self.token,
                               "expires_at": self.expiry().strftime("%Y-%m-%dT%H:%M:%S.000000Z")}}

    def spot_body(self, notice):
        """The doc's shape: {"action":"terminate","timestamp":"YYYY-MM-DD hh:mm:ss"}, in `notice_zone`."""
        stamp = notice.astimezone(self.notice_zone).strftime("%Y-%m-%d %H:%M:%S")
        return json.dumps({"action": "terminate", "timestamp": stamp}, separators=(",", ":")).encode()

    def values(self):
        return {"instance-id": self.instance_id, "local-ipv4": self.ip, "placement/availability-zone": self.zone}


class CloudApi(ApiStub):
    """ECS and AS as the node runtime and the local engine (tools/localstack.py) call them. CreateServers
    is asynchronous, as on Huawei: it answers a job id, and the job (ShowJob) fails for a zone of
    `sold_out_zones` with the message Huawei's ECS error list documents for a sold-out flavor ("Flavor %s is
    sold out", capacity.yaml: its code number is not documented, so none is answered); otherwise the
    servers are made and listed in `launched` until DeleteServers."""
    release_actions = ("DeleteServers",)  # node_runtime.release
    peer_actions = ("ListServersDetails",)  # node_runtime.peers

    ROUTES = (
        ("POST", r"/v1\.1/[0-9a-f]+/cloudservers", "CreateServers"),
        ("GET", r"/v1/[0-9a-f]+/jobs/(?P<job>[0-9a-f]+)", "ShowJob"),
        ("POST", r"/v1/[0-9a-f]+/cloudservers/delete", "DeleteServers"),
        ("GET", r"/v1/[0-9a-f]+/cloudservers/detail", "ListServersDetails"),
        ("GET", r"/v1/[0-9a-f]+/cloudservers/(?P<server>[0-9a-f-]{36})", "ShowServer"),
        ("GET", r"/autoscaling-api/v1/[0-9a-f]+/scaling_group", "ListScalingGroups"),
        ("POST", r"/autoscaling-api/v1/[0-9a-f]+/scaling_group/(?P<group>[0-9a-f-]{36})/action", "ScalingGroupAction"),
    )

    def __init__(self, instances=()):
        self.pools = {}  # scaling group id -> {"name", "status": INSERVICE | PAUSED}
        self.errors = {}  # action -> (HTTP status, error code) to answer with
        self.sold_out_zones: set[str] = set()
        self.launched: dict[str, dict] = {}  # server id -> {"zone", "flavor", "name"}
        self.jobs: dict[str, dict] = {}  # job id -> ShowJob's answer
        super().__init__(instances)

    def add_pool(self, name: str) -> str:
        group_id = str(uuid.uuid4())
        self.pools[group_id] = {"name": name, "status": "INSERVICE"}
        return group_id

    @staticmethod
    def reclaim(instance_id: str) -> None:
        RECLAIMING.add(instance_id)

    def parse(self, method, path, headers, body):
        url = urlsplit(path)
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        params.update(json.loads(body or b"{}"))
        for verb, pattern, action in self.ROUTES:
            match = re.fullmatch(pattern, url.path)
            if verb == method and match:
                params.update(match.groupdict())
                params["_signed"] = headers.get("authorization", "").startswith("SDK-HMAC-SHA256")
                params["_token"] = headers.get("x-security-token")
                return action, params
        return f"{method} {url.path}", params

    def answer(self, method, path, headers, body):
        status, payload, extra = super().answer(method, path, headers, body)
        action = self.requests[-1]["action"] if self.requests else None
        if action in self.errors:
            code, error = self.errors[action]
            return code, json.dumps({"error": {"code": error, "message": f"injected {error}"}}).encode(), extra
        if action and " " in action:
            return 404, json.dumps({"error": {"code": "APIGW.0101", "message": "no such API"}}).encode(), extra
        refused = self.refused_tags(self.requests[-1]["params"]) if action == "ListServersDetails" else None
        if refused:
            return 400, json.dumps({"error": {"code": "Ecs.0005", "message": refused}}).encode(), extra
        return status, payload, extra

    @staticmethod
    def refused_tags(params: dict) -> str | None:
        """Why the `tags` filter (key=value) breaks Huawei's tag rules (tags.yaml), or None: a lookup by a
        key the cloud refuses to create cannot match, and the real API rejects the parameter."""
        if "tags" not in params:
            return None
        key, _, value = str(params["tags"]).partition("=")
        problems = tag_rules("huaweicloud").problems(key, value)
        return f"invalid tags filter {params['tags']!r}: " + "; ".join(problems) if problems else None

    def respond(self, action, params):
        if action == "CreateServers":
            server = params.get("server") or {}
            job = uuid.uuid4().hex
            if server.get("availability_zone") in self.sold_out_zones:
                self.jobs[job] = {"job_id": job, "job_type": "createServer", "status": "FAIL",
                                  "fail_reason": f"Flavor {server.get('flavorRef')} is sold out"}
                return {"job_id": job}
            made = [str(uuid.uuid4()) for _ in range(int(server.get("count") or 1))]
            for server_id in made:
                self.launched[server_id] = {"zone": server.get("availability_zone"), "flavor": server.get("flavorRef"),
                                            "name": server.get("name")}
            self.jobs[job] = {"job_id": job, "job_type": "createServer", "status": "SUCCESS",
                              "entities": {"sub_jobs": [{"status": "SUCCESS", "entities": {"server_id": i}}
                                                        for i in made]}}
            return {"job_id": job, "serverIds": made}
        if action == "ShowJob":
            return self.jobs.get(params.get("job")) or {"job_id": params.get("job"), "status": "FAIL",
                                                         "fail_reason": "no such job"}
        if action == "DeleteServers":
            for server in params.get("servers") or []:
                self.launched.pop(server.get("id"), None)
            return {"job_id": uuid.uuid4().hex}
        if action == "ListServersDetails":
            servers = [{"id": i, "name": f"node-{i[:8]}", "status": "ACTIVE",
                        "addresses": {"vpc": [{"version": "4", "addr": ip, "OS-EXT-IPS:type": "fixed"}]}}
                       for i, ip in self.instances]
            return {"count": len(servers), "servers": servers}
        if action == "ShowServer":
            server = params["server"]
            deleting = server in RECLAIMING
            return {"server": {"id": server, "name": f"node-{server[:8]}", "status": "ACTIVE",
                               "OS-EXT-STS:task_state": "deleting" if deleting else ""}}
        if action == "ListScalingGroups":
            groups = [{"scaling_group_id": i, "scaling_group_name": g["name"], "scaling_group_status": g["status"]}
                      for i, g in self.pools.items()
                      if not params.get("scaling_group_name") or g["name"] == params["scaling_group_name"]]
            return {"total_number": len(groups), "start_number": 0, "limit": 20, "scaling_groups": groups}
        if action == "ScalingGroupAction" and params.get("group") in self.pools and params.get("action") == "pause":
            self.pools[params["group"]]["status"] = "PAUSED"
            return {}
        return {}


# ---------------------------------------------------------------- the local engine's half (tools/localstack.py)
# Which planned resources start nodes, and the ECS calls that start and release them, made with
# huaweicloudsdkecs's own request models against CloudApi; a create's job is followed to its end, as the
# provider does, and a failed job's reason is the error.
NODE_TYPES = ("huaweicloud:Ecs/instance:Instance",)


def _local_client(api_url: str):
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkecs.v2 import EcsClient

    return (EcsClient.new_builder().with_credentials(BasicCredentials("local", "local", PROJECT_ID))
            .with_endpoints([api_url]).build())


def launch(api_url: str, region: str, name: str, inputs: dict) -> str:
    from huaweicloudsdkecs.v2 import (CreateServersRequest, CreateServersRequestBody, PrePaidServer, PrePaidServerNic,
                                      PrePaidServerRootVolume, ShowJobRequest)

    networks = inputs.get("networks") or [{}]
    server = PrePaidServer(image_ref=str(inputs.get("imageId") or "image"), flavor_ref=inputs.get("flavorId"),
                           name=name, vpcid="vpc", availability_zone=inputs.get("availabilityZone"),
                           nics=[PrePaidServerNic(subnet_id=str(networks[0].get("uuid") or "subnet"))],
                           root_volume=PrePaidServerRootVolume(volumetype=str(inputs.get("systemDiskType") or "SSD")))
    client = _local_client(api_url)
    job = client.create_servers(CreateServersRequest(body=CreateServersRequestBody(server=server))).job_id
    for _ in range(50):
        state = client.show_job(ShowJobRequest(job_id=job))
        if state.status == "SUCCESS":
            return state.entities.sub_jobs[0].entities.server_id
        if state.status == "FAIL":
            raise RuntimeError(f"job {job} failed: {state.error_code or ''} {state.fail_reason}".replace("  ", " "))
        time.sleep(0.05)
    raise RuntimeError(f"job {job} did not end")


def release(api_url: str, region: str, instance_id: str) -> None:
    from huaweicloudsdkecs.v2 import DeleteServersRequest, DeleteServersRequestBody, ServerId

    _local_client(api_url).delete_servers(DeleteServersRequest(body=DeleteServersRequestBody(
        servers=[ServerId(id=instance_id)], delete_publicip=True, delete_volume=True)))
