"""Local stand-ins for Baidu AI Cloud (tests, `make rehearse`): the BCC metadata service and one
BCE API server for BCC, VPC, subnet, IAM and KMS calls, on 127.0.0.1.

The API stand-in (`CloudApi`) checks what the real API checks before it acts:
- the `bce-auth-v1` signature, recomputed here from the documented algorithm (BCE doc "生成认证字符串":
  signing key = HMAC-SHA256(SK, "bce-auth-v1/{AK}/{timestamp}/{expiration}"), canonical request =
  method, URI-encoded path, sorted query (authorization left out), signed headers lower-cased and
  URI-encoded; signature = HMAC-SHA256(signing key, canonical request)); a wrong key or a changed
  byte is 401, as BCE answers an invalid signature;
- the client token of every create: the same token returns what the first request made (no second
  resource), a create without one is refused;
- the request bodies: required fields, SSD-only storage types, an encrypted data disk, a bid with a
  custom price, a release time in UTC, tags (and the ListInstances tag filter) within Baidu's tag rules
  (tags.yaml in this package);
- the routes and required fields of every call, read from Baidu's API reference as data
  (bce_api.yaml through api_reference.py), and its `leaves_billing` rules: a release that would
  leave an instance's CDS data disk or public IP billing (the plain DELETE release, or the POST one
  without relatedReleaseFlag) is refused here with the rule's source. The real API accepts it and the
  disk and the address keep billing: the stand-in refuses it so that no test passes with it.
Faults: `fail_next(n, status, code)` answers the next n API requests with that error (e.g. 500 or
429 RequestLimitExceeded), `fail_action(action, n, status, code)` the next n requests of one call,
`delay_next(n, seconds)` holds the next n answers (a client timeout),
both after the request was applied when `after=True` (the answer lost, the work done). Instances
start as Starting and become Running after `boot_polls` reads.

Facts: bce-python-sdk 0.9.79 (request paths and bodies: baidubce/services/bcc/bcc_client.py,
vpc/vpc_client.py, subnet/subnet_client.py, iam/iam_client.py, kms/kms_client.py) and the BCC API
pages named in bce_api.yaml.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from datetime import datetime, timezone
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from components.providers.baiducloud import api_reference
from components.tags import STACK
from components.tags import rules as tag_rules
from localcloud import ApiStub, MetadataStub

ACCESS_KEY, SECRET_KEY = "AKlocalbaidu0000", "SKlocalbaidusecret0000000000000000"
# The stand-ins' STS: a role credential's secret is derived from its key id, so the API stand-in can
# check a node's signature without being told the metadata stand-in's credentials.
_STS_MASTER = b"gpu-training local STS"


def sts_secret(key_id: str) -> str:
    return hmac.new(_STS_MASTER, key_id.encode(), hashlib.sha256).hexdigest()[:32]
SSD_TYPES = ("enhanced_ssd_pl1", "enhanced_ssd_pl2", "cloud_hp1")


class Metadata(MetadataStub):
    """BCC's metadata service: http://169.254.169.254/1.0/meta-data/ (BCC doc "实例元数据"), no
    session-token mode. The role's credentials at /latest/meta-data/sts-credential, the path BCC's "Set
    IAM Role" page documents (https://intl.cloud.baidu.com/en/doc/BCC/s/jm4bbrdmn-intl-en); the
    document's field names are this stand-in's assumption (Baidu STS's: docs/baiducloud.md)."""
    CREDENTIALS_PATH = "/latest/meta-data/sts-credential"
    PREFIX = "/1.0/meta-data/"
    token_header = None
    spot_path = "spot/termination-time"  # not documented by Baidu: no reclaim notice reaches the VM
    region, zone = "bj", "cn-bj-a"

    def __init__(self, instance_id=None, ip="10.0.0.5", role="node-role"):
        super().__init__(instance_id, ip, role)
        self.key_id = f"STS.{self.instance_id}"
        self.secret = sts_secret(self.key_id)

    @staticmethod
    def new_instance_id():
        return "i-" + uuid.uuid4().hex[:8]  # BCC ids: i- and 8 characters (e.g. i-jL2s2hBI in the SDK docs)

    def spot_body(self, notice):
        return notice.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ").encode()

    def credentials_document(self) -> str:
        return json.dumps({"accessKeyId": self.key_id, "secretAccessKey": self.secret, "sessionToken": self.token,
                           "expiration": self.expiry().strftime("%Y-%m-%dT%H:%M:%SZ")})

    def answer(self, method, path, headers, body):
        if path != self.CREDENTIALS_PATH:
            return super().answer(method, path, headers, body)
        with self.lock:  # outside PREFIX (the one documented /latest/ path), with the same faults
            self.log.append((method, path, headers))
            if self.fail > 0:
                self.fail -= 1
                return 500, b"injected fault", {}
            if self.garbage.get("sts-credential"):
                return (*self.garbage["sts-credential"].pop(0), {})
        return 200, self.credentials_document().encode(), {}

    def values(self):
        return {"instance-shortid": self.instance_id, "instance-id": self.instance_id, "local-ipv4": self.ip,
                "region": self.region, "azone": self.zone}


# ---------------------------------------------------------------- the signature

def _encode(text: str, keep_slash: bool = False) -> str:
    return quote(text, safe="-_.~" + ("/" if keep_slash else ""))


def expected_signature(secret: str, method: str, path: str, query: list[tuple[str, str]], headers: dict,
                       auth_prefix: str, signed: list[str]) -> str:
    signing_key = hmac.new(secret.encode(), auth_prefix.encode(), hashlib.sha256).hexdigest()
    canonical_query = "&".join(sorted(f"{_encode(k)}={_encode(v)}" for k, v in query if k.lower() != "authorization"))
    if signed:
        names = signed
    else:  # the SDK's default set: host, content-md5/length/type and every x-bce-* header
        names = [k for k in headers if k in ("host", "content-md5", "content-length", "content-type")
                 or k.startswith("x-bce-")]
    canonical_headers = "\n".join(sorted(f"{_encode(n)}:{_encode(str(headers[n]).strip())}"
                                         for n in names if str(headers.get(n, "")).strip()))
    canonical = "\n".join([method, _encode(unquote(path), keep_slash=True), canonical_query, canonical_headers])
    return hmac.new(signing_key.encode(), canonical.encode(), hashlib.sha256).hexdigest()


UNKNOWN_KEY, NO_AUTHORIZATION = "unknown access key", "no bce-auth-v1 authorization"  # verify's reasons


def verify(method, path, query, headers, keys: dict[str, str] | None = None) -> str | None:
    """Why the request's bce-auth-v1 signature is wrong, or None when it is right. Keys: the deployer's
    (ACCESS_KEY) and any role credential of the metadata stand-in (STS.<instance id>); or, given `keys`
    (access key -> secret), those only (another stand-in's test credentials: tests/localcloud/price_standins.py)."""
    auth = headers.get("authorization", "")
    parts = auth.split("/")
    if len(parts) != 6 or parts[0] != "bce-auth-v1":
        return NO_AUTHORIZATION
    _, key, stamp, expires, signed, signature = parts
    if keys is not None:
        if key not in keys:
            return f"{UNKNOWN_KEY} {key}"
        secret = keys[key]
    elif key == ACCESS_KEY:
        secret = SECRET_KEY
    elif key.startswith("STS."):
        secret = sts_secret(key)
        if not headers.get("x-bce-security-token"):
            return "a role credential without its x-bce-security-token"
    else:
        return f"{UNKNOWN_KEY} {key}"
    signed_names = [n for n in signed.split(";") if n]
    want = expected_signature(secret, method, path, query, headers, f"bce-auth-v1/{key}/{stamp}/{expires}", signed_names)
    return None if hmac.compare_digest(want, signature) else "signature mismatch"


# ---------------------------------------------------------------- the API

class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code


def _check_tags(tags: list) -> None:
    """Refuse tags outside Baidu's tag rules (components/providers/baiducloud/tags.yaml), as the tag service
    does (TagExceptions.TagKeyInvalid / TagValueInvalid, BCC tag API "Create a Tag")."""
    rules = tag_rules("baiducloud")
    for tag in tags if isinstance(tags, list) else []:
        key, value = str(tag.get("tagKey", "")), str(tag.get("tagValue", ""))
        if rules.key.problems(key):
            raise ApiError(400, "TagExceptions.TagKeyInvalid", f"tag key {key!r}: " + "; ".join(rules.key.problems(key)))
        if rules.value.problems(value):
            raise ApiError(400, "TagExceptions.TagValueInvalid",
                           f"tag value {value!r}: " + "; ".join(rules.value.problems(value)))


def _need(body: dict, *names: str):
    missing = [n for n in names if body.get(n) in (None, "")]
    if missing:
        raise ApiError(400, "InvalidParameter", f"missing {', '.join(missing)}")


class CloudApi(ApiStub):
    """BCC/VPC/IAM/KMS as one server (BAIDUCLOUD_ENDPOINT points every client here)."""
    release_actions = ("ReleaseInstance", "ReleaseInstanceWithRelatedResources")
    peer_actions = ("ListInstances",)  # node_runtime.peers

    def __init__(self, instances=(), boot_polls: int = 1):
        self.boot_polls = boot_polls
        self.state: dict[str, dict] = {"vpc": {}, "subnet": {}, "sg": {}, "instance": {}, "role": {}, "policy": {},
                                       "attach": {}, "key": {}, "binding": {}}
        self.tokens: dict[str, object] = {}  # client token -> the answer of its first create
        self.faults: list[tuple[int, str, bool]] = []  # (status, code, after)
        self.action_faults: dict[str, list[tuple[int, str, str]]] = {}  # action -> [(status, code, message)]
        self.delays: list[tuple[float, bool]] = []
        self.rejected: list[dict] = []  # requests refused for their signature or body
        self.cv = threading.Lock()
        super().__init__(instances)

    @property
    def instances(self) -> list:
        return [(i["id"], i["internalIp"]) for i in self.state["instance"].values() if i["status"] == "Running"]

    @instances.setter
    def instances(self, pairs) -> None:
        """What the tests and the rehearsal set: these instances run (others are forgotten)."""
        self.state["instance"] = {k: v for k, v in self.state["instance"].items() if k in {i for i, _ in pairs}}
        for instance_id, ip in pairs:
            if instance_id not in self.state["instance"]:
                self.add_instance(instance_id, ip)

    def add_instance(self, instance_id: str, ip: str, tags: dict | None = None, data_disk: bool = True,
                     eip: bool = True) -> None:
        """A running instance the node runtime can list and release (default tag: the tests' stack 'st'),
        with a CDS data disk and a public IP unless told otherwise: what the program's nodes have, so a
        release that would leave them billing is refused here too (the rehearsal's nodes included)."""
        tags = tags or {STACK: "st"}
        disks = [{"storageType": "enhanced_ssd_pl1", "cdsSizeInGB": 100, "deleteWithInstance": True}] if data_disk else []
        self.state["instance"][instance_id] = {"id": instance_id, "name": instance_id, "status": "Running",
                                               "internalIp": ip, "polls": 0, "dataDisks": disks, "eip": eip,
                                               "tags": [{"tagKey": k, "tagValue": v} for k, v in tags.items()]}

    # -- fault injection
    def fail_next(self, count: int = 1, status: int = 500, code: str = "InternalError", after: bool = False):
        self.faults += [(status, code, after)] * count

    def fail_action(self, action: str, count: int = 1, status: int = 500, code: str = "InternalError",
                    message: str = "injected fault"):
        """Answer the next `count` requests of one call (by bce_api.yaml's action name) with that error,
        before it is applied; other calls are answered as usual."""
        self.action_faults.setdefault(action, []).extend([(status, code, message)] * count)

    def throttle_next(self, count: int = 1):
        self.fail_next(count, 429, "RequestLimitExceeded")

    def delay_next(self, count: int = 1, seconds: float = 2.0, after: bool = True):
        self.delays += [(seconds, after)] * count

    def created(self, kind: str) -> list[dict]:
        return list(self.state[kind].values())

    # -- the HTTP side
    def parse(self, method, path, headers, body):
        parts = urlsplit(path)
        query = parse_qsl(parts.query, keep_blank_values=True)
        data = json.loads(body) if body else {}
        params = {"path": parts.path, "query": dict(query), "body": data, "raw_query": query,
                  "call": api_reference.match(method, parts.path, dict(query))}
        if "tags" in params["query"]:  # ListInstances' tag filter, "<key>:<value>" (bcc_client.list_instances)
            key, _, value = params["query"]["tags"].rpartition(":")
            params["tag"] = {"key": key, "value": value}
        return _action(method, parts.path, dict(query)), params

    def answer(self, method, path, headers, body):
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            action, params = self.parse(method, path, lowered, body)
        except ValueError:
            return self._error(400, "MalformedJSON", "the body is not JSON")
        record = {"action": action, "params": {k: v for k, v in params.items() if k not in ("raw_query", "call")},
                  "headers": lowered, "method": method, "time": time.time()}
        problem = verify(method, params["path"], params["raw_query"], lowered)
        if problem:  # refused before anything counts: `requests` holds signed requests only
            self.rejected.append({**record, "why": problem})
            return self._error(401, "SignatureDoesNotMatch", problem)
        with self.lock:
            self.requests.append(record)
            fault = self.faults.pop(0) if self.faults else None
            targeted = self.action_faults.get(action)
            if targeted and fault is None:
                targeted_fault = targeted.pop(0)
                return self._error(*targeted_fault)
            delay = self.delays.pop(0) if self.delays else None
        if fault and not fault[2]:
            return self._error(fault[0], fault[1], "injected fault")
        if delay and not delay[1]:
            time.sleep(delay[0])
        try:
            with self.cv:
                status, answer = self.respond_to(action, params)
        except ApiError as error:
            self.rejected.append({**record, "why": str(error)})
            return self._error(error.status, error.code, str(error))
        if fault:
            return self._error(fault[0], fault[1], "injected fault after the change was made")
        if delay:
            time.sleep(delay[0])
        return status, json.dumps(answer).encode(), {"Content-Type": "application/json"}

    @staticmethod
    def _error(status, code, message):
        return status, json.dumps({"code": code, "message": message, "requestId": uuid.uuid4().hex}).encode(), \
            {"Content-Type": "application/json"}

    def respond(self, action, params):  # ApiStub's hook; answer() above calls respond_to
        return self.respond_to(action, params)[1]

    # -- idempotent creates
    def _once(self, params: dict, make):
        token = params["query"].get("clientToken")
        if not token:
            raise ApiError(400, "MissingClientToken", "a create needs clientToken")
        if token in self.tokens:
            return self.tokens[token]
        answer = make()
        self.tokens[token] = answer
        return answer

    def respond_to(self, action, params):
        body, query, path = params["body"], params["query"], params["path"]
        state = self.state
        call = params.get("call")
        if call is not None:  # the API's own required fields (bce_api.yaml body_required)
            _need(body, *call.body_required)
        _check_tags(body.get("tags") or body.get("changeTags") or [])
        if query.get("tags"):  # ListInstances' filter "<key>:<value>"
            key, _, value = query["tags"].rpartition(":")
            _check_tags([{"tagKey": key, "tagValue": value}])
        if action == "CreateVpc":
            _need(body, "name", "cidr")
            return 201, self._once(params, lambda: {"vpcId": self._put("vpc", "vpc-", body)})
        if action == "CreateSubnet":
            _need(body, "name", "zoneName", "cidr", "vpcId")
            if body["vpcId"] not in state["vpc"]:
                raise ApiError(404, "NoSuchVpc", f"vpc {body['vpcId']} not found")
            return 201, self._once(params, lambda: {"subnetId": self._put("subnet", "sbn-", body)})
        if action == "CreateSecurityGroup":
            _need(body, "name", "vpcId")
            for rule in body.get("rules") or []:
                if rule.get("direction") not in ("ingress", "egress"):
                    raise ApiError(400, "InvalidParameter", "rule direction must be ingress or egress")
            return 201, self._once(params, lambda: {"securityGroupId": self._put("sg", "g-", body)})
        if action in ("CreateInstanceBySpec", "CreateBidInstance"):
            return 201, self._once(params, lambda: self._create_instance(action, body))
        if action == "GetInstance":
            instance = self._get("instance", path.rsplit("/", 1)[1])
            if instance["status"] == "Starting":
                instance["polls"] += 1
                if instance["polls"] >= self.boot_polls:
                    instance["status"] = "Running"
            return 200, {"instance": {"id": instance["id"], "name": instance["name"], "status": instance["status"],
                                      "internalIp": instance["internalIp"], "publicIp": "",
                                      "autoReleaseTime": instance.get("releaseTime"), "spec": instance.get("spec")}}
        if action == "ListInstances":
            key, _, value = (query.get("tags") or "").rpartition(":")
            wanted = query.get("status")
            found = [i for i in state["instance"].values() if wanted in (None, i["status"])
                     and (not key or any(t.get("tagKey") == key and t.get("tagValue") == value for t in i["tags"]))]
            return 200, {"instances": [{"id": i["id"], "internalIp": i["internalIp"], "status": i["status"]}
                                       for i in found], "isTruncated": False}
        if action == "AutoReleaseInstance":
            instance = self._get("instance", path.rsplit("/", 1)[1])
            moment = body.get("releaseTime") or ""
            if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", moment):
                raise ApiError(400, "InvalidReleaseTime", f"releaseTime {moment!r} is not yyyy-MM-ddTHH:mm:ssZ")
            instance["releaseTime"] = moment
            return 200, {}
        if action in ("ReleaseInstance", "ReleaseInstanceWithRelatedResources"):
            return 200, self._release(call, path.rsplit("/", 1)[1], body)
        if action in ("BindInstanceTags", "UnbindInstanceTags"):
            instance = self._get("instance", path.split("/")[3])
            change = body.get("changeTags") or []
            kept = [t for t in instance["tags"] if t not in change] if action.startswith("Unbind") else instance["tags"]
            instance["tags"] = kept + (change if action.startswith("Bind") else [])
            return 200, {}
        if action == "ModifyInstance":
            self._get("instance", path.rsplit("/", 1)[1])["name"] = body.get("name")
            return 200, {}
        if action in ("GetVpc", "GetSubnet"):
            kind = "vpc" if action == "GetVpc" else "subnet"
            item = self._get(kind, path.rsplit("/", 1)[1])
            return 200, {kind: item}
        if action in ("DeleteVpc", "DeleteSubnet", "DeleteSecurityGroup"):
            kind = {"DeleteVpc": "vpc", "DeleteSubnet": "subnet", "DeleteSecurityGroup": "sg"}[action]
            item_id = path.rsplit("/", 1)[1]
            self._get(kind, item_id)
            if kind == "vpc" and any(s["vpcId"] == item_id for s in state["subnet"].values()):
                raise ApiError(409, "VpcInUse", "the VPC still has subnets")
            del state[kind][item_id]
            return 200, {}
        if action == "ListSecurityGroups":
            wanted = query.get("securityGroupId")
            groups = [dict(g, rules=g.get("rules") or []) for g in state["sg"].values() if wanted in (None, g["id"])]
            return 200, {"securityGroups": groups, "isTruncated": False}
        if action in ("AuthorizeSecurityGroupRule", "RevokeSecurityGroupRule"):
            group = self._get("sg", path.rsplit("/", 1)[1])
            rule = body.get("rule") or {}
            rules = group.setdefault("rules", [])
            if action.startswith("Authorize"):
                rules.append(rule) if rule not in rules else None
            elif rule in rules:
                rules.remove(rule)
            return 200, {}
        if action == "BindInstanceRole":
            _need(body, "roleName", "instances")
            if body["roleName"] not in state["role"]:
                raise ApiError(404, "NoSuchEntity", f"role {body['roleName']} not found")
            for item in body["instances"]:
                self._get("instance", item["instanceId"])["role"] = body["roleName"]
            return 200, {}
        if action == "UnbindInstanceRole":
            for item in body.get("instances") or []:
                if item["instanceId"] in state["instance"]:
                    state["instance"][item["instanceId"]].pop("role", None)
            return 200, {}
        return self._iam_kms(action, params)

    def _iam_kms(self, action, params):
        body, path, state = params["body"], params["path"], self.state
        if action == "CreateRole":
            _need(body, "name", "assumeRolePolicyDocument")
            if body["name"] in state["role"]:
                raise ApiError(409, "EntityAlreadyExists", f"role {body['name']} exists")
            state["role"][body["name"]] = dict(body)
            return 200, dict(body, id=uuid.uuid4().hex)
        if action == "GetRole":
            return 200, self._get("role", path.rsplit("/", 1)[1])
        if action == "UpdateRole":
            self._get("role", path.rsplit("/", 1)[1]).update(description=body.get("description"))
            return 200, {}
        if action == "DeleteRole":
            name = path.rsplit("/", 1)[1]
            self._get("role", name)
            if any(role == name for role, _ in state["attach"]):
                raise ApiError(409, "DeleteConflict", "the role still has policies")
            del state["role"][name]
            return 204, {}
        if action == "CreatePolicy":
            _need(body, "name", "document")
            json.loads(body["document"])  # a document that is not JSON is refused
            if body["name"] in state["policy"]:
                raise ApiError(409, "EntityAlreadyExists", f"policy {body['name']} exists")
            state["policy"][body["name"]] = dict(body)
            return 200, dict(body)
        if action in ("AttachPolicyToRole", "DetachPolicyFromRole"):
            match = re.fullmatch(r"/v1/role/([^/]+)/policy/([^/]+)", path)
            role, policy = match.group(1), match.group(2)
            self._get("role", role), self._get("policy", policy)
            if action.startswith("Attach"):
                state["attach"][(role, policy)] = True
            elif (role, policy) in state["attach"]:
                del state["attach"][(role, policy)]
            else:
                raise ApiError(404, "NoSuchEntity", "not attached")
            return 200, {}
        if action == "ListPoliciesFromRole":
            role = path.split("/")[3]
            return 200, {"policies": [{"name": p} for r, p in state["attach"] if r == role]}
        if action == "UpdatePolicy":
            json.loads(body.get("document") or "")
            self._get("policy", path.rsplit("/", 1)[1]).update(document=body["document"])
            return 200, {}
        if action == "DeletePolicy":
            name = path.rsplit("/", 1)[1]
            self._get("policy", name)
            del state["policy"][name]
            return 204, {}
        if action == "CreateKey":
            _need(body, "keySpec", "protectedBy", "origin")
            key_id = uuid.uuid4().hex
            state["key"][key_id] = {"keyId": key_id, "description": body.get("description"),
                                    "keySpec": body["keySpec"], "keyState": "Enabled"}
            return 200, {"keyMetadata": state["key"][key_id]}
        if action == "ListKeys":
            return 200, {"keys": [{"keyId": k["keyId"], "description": k["description"], "keyState": k["keyState"]}
                                  for k in state["key"].values()], "truncated": False}
        if action == "DescribeKey":
            return 200, {"keyMetadata": self._get("key", body.get("keyId", ""))}
        if action == "ScheduleKeyDeletion":
            self._get("key", body.get("keyId", ""))["keyState"] = "PendingDeletion"
            return 200, {}
        raise ApiError(400, "UnknownAction", f"the stand-in does not serve {action}")

    def _create_instance(self, action, body):
        _need(body, "imageId", "billing")
        if body["billing"].get("paymentTiming") not in ("Postpaid", "Prepaid"):
            raise ApiError(400, "InvalidBilling", f"paymentTiming {body['billing'].get('paymentTiming')!r}")
        if action == "CreateInstanceBySpec":
            _need(body, "spec")
        else:
            _need(body, "cpuCount", "memoryCapacityInGB", "bidModel")
            if body["bidModel"] == "custom" and not body.get("bidPrice"):
                raise ApiError(400, "InvalidBidPrice", "bidModel custom needs bidPrice")
        for disk in body.get("createCdsList") or []:
            if disk.get("storageType") not in SSD_TYPES:
                raise ApiError(400, "InvalidStorageType", f"storageType {disk.get('storageType')!r}")
            if not disk.get("encryptKey") or disk["encryptKey"] not in self.state["key"]:
                raise ApiError(400, "InvalidEncryptKey", f"encryptKey {disk.get('encryptKey')!r} is no KMS key")
        if body.get("subnetId") and body["subnetId"] not in self.state["subnet"]:
            raise ApiError(404, "NoSuchSubnet", f"subnet {body['subnetId']} not found")
        if body.get("securityGroupId") and body["securityGroupId"] not in self.state["sg"]:
            raise ApiError(404, "SecurityGroup.NotFound", f"security group {body['securityGroupId']} not found")
        ids = []
        for _ in range(int(body.get("purchaseCount") or 1)):
            instance_id = Metadata.new_instance_id()
            self.state["instance"][instance_id] = {
                "id": instance_id, "name": body.get("name"), "status": "Starting", "polls": 0,
                "internalIp": f"10.42.0.{len(self.state['instance']) + 2}", "spec": body.get("spec"),
                "bid": action == "CreateBidInstance", "bidPrice": body.get("bidPrice"),
                "userData": body.get("userData"), "tags": body.get("tags") or [],
                "dataDisks": [dict(d) for d in body.get("createCdsList") or []],
                "eip": int(body.get("networkCapacityInMbps") or 0) > 0,
                "eipReleasedWithBid": body.get("isEipAutoRelatedDelete"),
                "created": datetime.now(timezone.utc).isoformat()}
            ids.append(instance_id)
        return {"instanceIds": ids, "orderId": uuid.uuid4().hex}

    def _release(self, call, instance_id: str, body: dict) -> dict:
        """Release the instance, with its data disks and public IP only as the request says; a release
        that would leave them billing is refused, naming the rule's source (bce_api.yaml)."""
        instance = self._get("instance", instance_id)
        disks = instance.get("dataDisks") or []
        if body.get("cdsAttributeActive") is True:  # only disks with the release attribute go
            disks = [d for d in disks if d.get("deleteWithInstance") is not True]
        has = {name for name, held in (("dataDisks", disks), ("eip", instance.get("eip"))) if held}
        left = call.leaves(body, has) if call else []
        if body.get("cdsAttributeActive") is True and disks:
            left = sorted(set(left) | {"dataDisks"})
        if left:
            raise ApiError(400, "StandIn.LeavesBilling",
                           f"{call.action} of {instance_id} would leave its {' and '.join(left)} billing:"
                           f" {call.leaves_billing['why']} ({call.source})")
        del self.state["instance"][instance_id]
        return {}

    def _put(self, kind, prefix, body):
        item_id = prefix + uuid.uuid4().hex[:8]
        self.state[kind][item_id] = dict(body, id=item_id, **{f"{kind}Id" if kind != "sg" else "securityGroupId": item_id})
        return item_id

    def _get(self, kind, item_id):
        if item_id not in self.state[kind]:
            code = {"instance": "NoSuchInstance", "vpc": "NoSuchVpc", "subnet": "NoSuchSubnet",
                    "sg": "SecurityGroup.NotFound", "key": "NotFound"}.get(kind, "NoSuchEntity")
            raise ApiError(404, code, f"{kind} {item_id} not found")
        return self.state[kind][item_id]


def _action(method: str, path: str, query: dict) -> str:
    """The call this request is, by Baidu's API reference as data (bce_api.yaml)."""
    call = api_reference.match(method, path, query)
    return call.action if call else f"{method} {path}"
