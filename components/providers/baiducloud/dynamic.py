"""Baidu AI Cloud resources as Pulumi dynamic resources over bce-python-sdk (no Pulumi provider exists).

What is Baidu's lives here: SCHEMAS (each kind's inputs, the same data provider_facts.json is generated
from), the providers' API calls, and the kinds' table (PROVIDERS). The lifecycle every kind shares and
the resource classes made from the table are the neutral components/dynamic_resources.py:

- `check` validates the inputs against SCHEMAS and refuses a bid price above the pay-as-you-go price
  (BccInstanceProvider._check) and world-open ingress (SecurityGroupProvider._check).
- `create` is idempotent: the request carries a client token derived from the resource's name and
  inputs, so a create retried after a timeout or a throttled answer gets the resource the first
  attempt made; it returns only once the resource is usable (an instance Running).
- `diff` says which changed inputs replace (SCHEMAS' `replace`) and which update in place.
- `read` returns what the cloud has now (refresh), or no id when the resource is gone.
- `delete` treats "not found" (BceApiError.not_found) as done, so a retried delete succeeds.
- Credentials come from the environment inside each call (bceapi.py), never from inputs: the pickled
  provider holds only its region and retry settings (tests/providers/test_baiducloud.py checks the
  serialized provider and the recorded inputs for the secret).

Each resource type is a `pulumi.dynamic.Resource` subclass with its own type token
(`pulumi-python:dynamic/baiducloud:<Kind>`). Pulumi pickles a provider into the state by reference to
its class: the provider classes below keep this module and their names, and BaiduProvider's fields
are what the state holds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, Optional

from components.dynamic_resources import Field, SchemaProvider, client_token, facts_resources, one_of, \
    resource_classes
from components.providers.baiducloud import bceapi
from components.providers.baiducloud.bceapi import BceApiError, Settings
from components.providers.baiducloud.profile import TYPE_PREFIX

SDK_DOC = "bce-python-sdk 0.9.79"
TYPE_MODULE = "baiducloud"  # the type tokens' module: pulumi-python:dynamic/baiducloud:<Kind>


_BCC = "cloud.baidu.com/doc/BCC/s/njwvympu0 (Python SDK: create_instance_by_spec) and bce-python-sdk 0.9.79 bcc_model"
# Data disk storage types the program may send: the SSD classes (profile.py refuses the HDD ones).
SSD_TYPES = ("enhanced_ssd_pl1", "enhanced_ssd_pl2", "cloud_hp1")
_NAME = {"kind": "length", "min": 1, "max": 65, "unit": "runes"}  # BCC InstanceModel.name: 1-65 characters

SCHEMAS: dict[str, dict[str, Field]] = {
    "Vpc": {
        "region": Field("string", True, True),
        "name": Field("string", True, True, {"kind": "length", "min": 1, "max": 65, "unit": "runes"}),
        "cidr": Field("string", True, True, {"kind": "cidr"}),
        "description": Field("string"),
        "tags": Field("map", replace=True),
    },
    "Subnet": {
        "region": Field("string", True, True),
        "name": Field("string", True, True, {"kind": "length", "min": 1, "max": 65, "unit": "runes"}),
        "zoneName": Field("string", True, True),
        "cidr": Field("string", True, True, {"kind": "cidr"}),
        "vpcId": Field("string", True, True),
        "tags": Field("map", replace=True),
    },
    "SecurityGroup": {
        "region": Field("string", True, True),
        "name": Field("string", True, True),
        "vpcId": Field("string", True, True),
        "description": Field("string", replace=True, api="desc"),
        # Ingress rules: changed in place (authorize / revoke), never by replacing the group.
        "rules": Field("list", block={
            "direction": Field("string", True, validate=one_of("ingress", "egress")),
            "protocol": Field("string", validate=one_of("", "tcp", "udp", "icmp")),
            "portRange": Field("string"),
            "sourceIp": Field("string"),
            "destIp": Field("string"),
            "ethertype": Field("string", validate=one_of("IPv4", "IPv6")),
            "remark": Field("string"),
        }),
        "tags": Field("map", replace=True),
    },
    "KmsKey": {
        "region": Field("string", True, True),
        # The key is found again by its description (CreateKey has no client token).
        "description": Field("string", True, True),
        "keySpec": Field("string", True, True, one_of("AES_128", "AES_256", "BAIDU_AES_256")),
        "protectedBy": Field("string", True, True, one_of("HSM", "SOFTWARE")),
        "pendingWindowInDays": Field("int", validate={"kind": "int_range", "min": 7, "max": 30}),
    },
    "IamRole": {
        "region": Field("string", True, True),
        "name": Field("string", True, True, {"kind": "length", "min": 1, "max": 64, "unit": "runes"}),
        "description": Field("string"),
        "assumeRolePolicyDocument": Field("string", True, True),
    },
    "IamRolePolicy": {
        "region": Field("string", True, True),
        "roleName": Field("string", True, True),
        "policyName": Field("string", True, True),
        # Changed in place (UpdatePolicy): the release policy's document changes with every new instance.
        "document": Field("string", True),
    },
    "BccInstance": {
        "region": Field("string", True, True),
        "name": Field("string", True, False, _NAME),
        "hostname": Field("string", replace=True),
        "spec": Field("string", True, True),
        "cpuCount": Field("int", True, True, api="cpuCount"),
        "memoryCapacityInGB": Field("int", True, True),
        "imageId": Field("string", True, True),
        "zoneName": Field("string", True, True),
        "subnetId": Field("string", True, True),
        "securityGroupId": Field("string", True, True),
        "paymentTiming": Field("string", True, True, one_of("Postpaid", "bid"), source=_BCC),
        # market: automatic bid at the market price, released only for lack of inventory; custom: a price cap
        # (bidPrice), released also when the market price passes it (BCC "Spot the Instance",
        # https://intl.cloud.baidu.com/doc/BCC/s/fkag7tev6-en; SDK bcc_client.py:242 '"market" or "custom"').
        "bidModel": Field("string", replace=True, validate=one_of("market", "custom")),
        "bidPrice": Field("number", replace=True),
        "onDemandPrice": Field("number", replace=True),
        "rootDiskSizeInGb": Field("int", replace=True, validate={"kind": "int_range", "min": 40, "max": 2048}),
        "rootDiskStorageType": Field("string", replace=True, validate=one_of(*SSD_TYPES)),
        "dataDisk": Field("list", True, True, one=True, block={
            "cdsSizeInGB": Field("int", True, validate={"kind": "int_range", "min": 5, "max": 32765}),
            "storageType": Field("string", True, validate=one_of(*SSD_TYPES)),
            "encryptKey": Field("string", True),
            "deleteWithInstance": Field("bool"),
        }),
        "userData": Field("string", replace=True),
        "networkCapacityInMbps": Field("int", replace=True, validate={"kind": "int_range", "min": 0, "max": 200}),
        "keypairId": Field("string", replace=True),
        "releaseTime": Field("string", True, validate={"kind": "rfc3339"}),
        # Changed in place: BindInstanceToTags / UnbindInstanceFromTags (PUT /v2/instance/{id}/tag).
        "tags": Field("map"),
        "deletionProtection": Field("int", replace=True, validate={"kind": "int_one_of", "values": [0]}),
        # Outputs the provider fills in (declared as inputs so the engine's registration carries them).
        "internalIp": Field("string", output=True),
        "publicIp": Field("string", output=True),
    },
    "BucketObject": {
        "region": Field("string", True, True),
        "bucket": Field("string", True, True),
        "key": Field("string", True, True),
        "source": Field("string"),  # a file, or
        "content": Field("string"),  # the text itself (the boot payload): one of the two
        "contentMd5": Field("string", True),  # a changed file is a changed input: it is uploaded again
    },
    "RoleBinding": {
        "region": Field("string", True, True),
        "roleName": Field("string", True, True),
        "instanceIds": Field("list", True, True),
    },
}


def facts_document() -> dict:
    """provider_facts.json for Baidu: written by devtools/provider_facts.py (bridge.yaml kind: dynamic)."""
    from importlib.metadata import version

    return {"_about": "generated by devtools/provider_facts.py from components/providers/baiducloud/dynamic.py"
                      " SCHEMAS: the inputs each dynamic provider's check() accepts and diff() replaces on",
            "cloud": "baiducloud",
            "provider": {"kind": "dynamic", "repository": None, "commit": None,
                         "module": "components.providers.baiducloud.dynamic"},
            "sdk": {"package": "bce-python-sdk", "version": "0.9.79", "installed": version("bce-python-sdk")},
            "resources": facts_resources(SCHEMAS, TYPE_PREFIX, "components/providers/baiducloud/dynamic.py"),
            "hand_written": {}}


# ---------------------------------------------------------------- the provider base

# Found by name (IAM) or description (KMS): a replacement is deleted first (SchemaProvider.found_by_name).
IDENTIFIED_BY_NAME = ("IamRole", "IamRolePolicy", "KmsKey")


@dataclass
class BaiduProvider(SchemaProvider):
    """Baidu's share of every kind: the region and retry settings (what the state holds), the API call
    wrapper, and what "not found" is; subclasses give `kind`, `_create`, `_read`, `_delete` and,
    optionally, `_update` and `_check`."""
    region: str
    attempts: int = 6
    first_wait_s: float = 1.0
    ready_timeout_s: float = 1800.0
    poll_s: float = 10.0
    timeout_ms: int = 30_000
    schemas: ClassVar = SCHEMAS  # a class attribute: never in the pickled state
    found_by_name: ClassVar = IDENTIFIED_BY_NAME
    serialize_as_secret_always = False  # nothing secret is in it; kept readable so a test can prove it

    def __post_init__(self):
        # The kind in the instance as well as on the class: every pickled provider in a state holds it.
        self.kind = type(self).kind

    def settings(self) -> Settings:
        return Settings(self.region, attempts=self.attempts, first_wait_s=self.first_wait_s,
                        timeout_ms=self.timeout_ms)

    def api(self, what: str, call_name: str, function):
        return bceapi.call(self.settings(), f"{self.kind} {what}", call_name, function)

    def not_found(self, error: Exception) -> bool:
        return isinstance(error, BceApiError) and error.not_found


def _tags(tags: Optional[dict]):
    """BCC calls take TagModel objects (they send each one's __dict__)."""
    from baidubce.services.bcc.bcc_model import TagModel
    return [TagModel(k, v) for k, v in sorted((tags or {}).items())]


def _tag_dicts(tags: Optional[dict]) -> list[dict]:
    """The VPC and subnet calls put `tags` into the body as given: the JSON objects themselves."""
    return [{"tagKey": k, "tagValue": v} for k, v in sorted((tags or {}).items())]


# ---------------------------------------------------------------- VPC, subnet, security group

class VpcProvider(BaiduProvider, kind="Vpc"):
    def _create(self, inputs, token):
        vpc = bceapi.client("vpc", self.settings())
        got = bceapi.body(self.api(inputs["name"], "CreateVpc", lambda: vpc.create_vpc(
            inputs["name"], inputs["cidr"], description=inputs.get("description"), client_token=token,
            tags=_tag_dicts(inputs.get("tags")))))
        return got["vpc_id"], {}

    def _read(self, id_, inputs):
        vpc = bceapi.body(self.api(id_, "GetVpc", lambda: bceapi.client("vpc", self.settings()).get_vpc(id_)))["vpc"]
        return {"name": vpc["name"], "cidr": vpc["cidr"], "description": vpc.get("description")}

    def _update(self, id_, olds, news):
        self.api(id_, "UpdateVpc", lambda: bceapi.client("vpc", self.settings()).update_vpc(
            id_, news["name"], description=news.get("description")))

    def _delete(self, id_, inputs):
        self.api(id_, "DeleteVpc", lambda: bceapi.client("vpc", self.settings()).delete_vpc(id_))


class SubnetProvider(BaiduProvider, kind="Subnet"):
    def _create(self, inputs, token):
        subnets = bceapi.client("subnet", self.settings())
        got = bceapi.body(self.api(inputs["name"], "CreateSubnet", lambda: subnets.create_subnet(
            inputs["name"], inputs["zoneName"], inputs["cidr"], inputs["vpcId"], client_token=token,
            tags=_tag_dicts(inputs.get("tags")))))
        return got["subnet_id"], {}

    def _read(self, id_, inputs):
        got = bceapi.body(self.api(id_, "GetSubnet", lambda: bceapi.client("subnet", self.settings()).get_subnet(id_)))
        subnet = got["subnet"]
        return {"name": subnet["name"], "cidr": subnet["cidr"], "zoneName": subnet["zone_name"],
                "vpcId": subnet["vpc_id"]}

    def _delete(self, id_, inputs):
        self.api(id_, "DeleteSubnet", lambda: bceapi.client("subnet", self.settings()).delete_subnet(id_))


def _rule(rule: dict):
    from baidubce.services.bcc.bcc_model import SecurityGroupRuleModel
    return SecurityGroupRuleModel(remark=rule.get("remark"), direction=rule["direction"],
                                  ethertype=rule.get("ethertype", "IPv4"), portRange=rule.get("portRange", ""),
                                  protocol=rule.get("protocol", ""), sourceIp=rule.get("sourceIp"),
                                  destIp=rule.get("destIp"))


class SecurityGroupProvider(BaiduProvider, kind="SecurityGroup"):
    def _check(self, news):
        # No world-open SSH (or any port) from this program, whatever the caller passes.
        return [(f"rules[{i}]", f"SecurityGroup: ingress from {r.get('sourceIp')} is open to the world")
                for i, r in enumerate(news.get("rules") or [])
                if r.get("direction") == "ingress" and r.get("sourceIp") in ("0.0.0.0/0", "::/0", "all")]

    def _create(self, inputs, token):
        bcc = bceapi.client("bcc", self.settings())
        got = bceapi.body(self.api(inputs["name"], "CreateSecurityGroup", lambda: bcc.create_security_group(
            inputs["name"], [_rule(r) for r in inputs.get("rules") or []], vpc_id=inputs["vpcId"],
            desc=inputs.get("description"), client_token=token, tags=_tags(inputs.get("tags")))))
        return got["security_group_id"], {}

    def _read(self, id_, inputs):
        bcc = bceapi.client("bcc", self.settings())
        got = bceapi.body(self.api(id_, "ListSecurityGroups", lambda: bcc.list_security_groups(security_group_id=id_)))
        groups = [g for g in got.get("security_groups") or [] if g["id"] == id_]
        if not groups:
            return None
        rules = [{"direction": r["direction"], "protocol": r.get("protocol", ""), "portRange": r.get("port_range", ""),
                  "sourceIp": r.get("source_ip"), "destIp": r.get("dest_ip"), "ethertype": r.get("ethertype", "IPv4"),
                  "remark": r.get("remark")} for r in groups[0].get("rules") or []]
        return {"name": groups[0]["name"], "rules": [{k: v for k, v in r.items() if v not in (None,)} for r in rules]}

    def _update(self, id_, olds, news):
        bcc = bceapi.client("bcc", self.settings())
        before, after = olds.get("rules") or [], news.get("rules") or []
        for rule in after:
            if rule not in before:
                self.api(id_, "AuthorizeSecurityGroupRule", lambda r=rule: bcc.authorize_security_group_rule(
                    id_, _rule(r), client_token=client_token("rule+" + id_, r)))
        for rule in before:
            if rule not in after:
                self.api(id_, "RevokeSecurityGroupRule", lambda r=rule: bcc.revoke_security_group_rule(id_, _rule(r)))

    def _delete(self, id_, inputs):
        self.api(id_, "DeleteSecurityGroup", lambda: bceapi.client("bcc", self.settings()).delete_security_group(id_))


# ---------------------------------------------------------------- KMS key (disk encryption)

class KmsKeyProvider(BaiduProvider, kind="KmsKey"):
    def _find(self, description: str) -> Optional[str]:
        kms = bceapi.client("kms", self.settings())
        got = bceapi.body(self.api(description, "ListKeys", lambda: kms.list_masterKey(1000)))
        found = [k["key_id"] for k in got.get("keys") or [] if k.get("description") == description
                 and k.get("key_state") not in ("PendingDeletion",)]
        return found[0] if found else None

    def _create(self, inputs, token):
        # CreateKey takes no client token: a retried create first finds the key the earlier attempt made.
        existing = self._find(inputs["description"])
        if existing:
            return existing, {}
        kms = bceapi.client("kms", self.settings())
        got = bceapi.body(self.api(inputs["description"], "CreateKey", lambda: kms.create_masterKey(
            inputs["description"], inputs["protectedBy"], inputs["keySpec"], "BAIDU_KMS")))
        return got["key_metadata"]["key_id"], {}

    def _read(self, id_, inputs):
        kms = bceapi.client("kms", self.settings())
        got = bceapi.body(self.api(id_, "DescribeKey", lambda: kms.describe_masterKey(id_)))
        meta = got["key_metadata"]
        if meta.get("key_state") == "PendingDeletion":
            return None
        return {"description": meta.get("description"), "keySpec": meta.get("key_spec")}

    def _delete(self, id_, inputs):
        kms = bceapi.client("kms", self.settings())
        days = int(inputs.get("pendingWindowInDays") or 7)
        self.api(id_, "ScheduleKeyDeletion", lambda: kms.scheduleDelete_masterKey(id_, days))


# ---------------------------------------------------------------- IAM role and its policies

def _b(text: str) -> bytes:
    """The IAM client builds its paths from bytes (iam_client.py: b"/role/" + role_name)."""
    return text.encode()


class IamRoleProvider(BaiduProvider, kind="IamRole"):
    def _create(self, inputs, token):
        iam = bceapi.client("iam", self.settings())
        try:
            self.api(inputs["name"], "CreateRole", lambda: iam.create_role({
                "name": inputs["name"], "description": inputs.get("description", ""),
                "assumeRolePolicyDocument": inputs["assumeRolePolicyDocument"]}))
        except BceApiError as error:
            # CreateRole has no client token: a retried create meets the role the first attempt made.
            if error.status != 409 and "Exist" not in (error.code or ""):
                raise
        return inputs["name"], {}

    def _read(self, id_, inputs):
        got = bceapi.body(self.api(id_, "GetRole", lambda: bceapi.client("iam", self.settings()).get_role(_b(id_))))
        return {"name": got["name"], "description": got.get("description")}

    def _update(self, id_, olds, news):
        self.api(id_, "UpdateRole", lambda: bceapi.client("iam", self.settings()).update_role(
            _b(id_), {"description": news.get("description", "")}))

    def _delete(self, id_, inputs):
        self.api(id_, "DeleteRole", lambda: bceapi.client("iam", self.settings()).delete_role(_b(id_)))


class IamRolePolicyProvider(BaiduProvider, kind="IamRolePolicy"):
    """A custom policy attached to a role: created, then attached; detached, then deleted."""

    def _create(self, inputs, token):
        iam = bceapi.client("iam", self.settings())
        name = inputs["policyName"]
        try:
            self.api(name, "CreatePolicy", lambda: iam.create_policy({"name": name, "document": inputs["document"],
                                                                      "description": "gpu-training node role"}))
        except BceApiError as error:
            if error.status != 409 and "Exist" not in (error.code or ""):
                raise
        self.api(name, "AttachPolicyToRole", lambda: iam.attach_policy_to_role(_b(inputs["roleName"]), _b(name)))
        return f"{inputs['roleName']}/{name}", {}

    def _update(self, id_, olds, news):
        iam = bceapi.client("iam", self.settings())
        self.api(id_, "UpdatePolicy", lambda: iam.update_policy(news["policyName"], {
            "document": news["document"], "description": "gpu-training node role"}))

    def _read(self, id_, inputs):
        role, name = id_.split("/", 1)
        got = bceapi.body(self.api(id_, "ListPoliciesFromRole", lambda: bceapi.client(
            "iam", self.settings()).list_policies_from_role(_b(role))))
        return {} if any(p.get("name") == name for p in got.get("policies") or []) else None

    def _delete(self, id_, inputs):
        role, name = id_.split("/", 1)
        iam = bceapi.client("iam", self.settings())
        try:
            self.api(id_, "DetachPolicyFromRole", lambda: iam.detach_policy_from_role(_b(role), _b(name)))
        except BceApiError as error:
            if not error.not_found:
                raise
        self.api(id_, "DeletePolicy", lambda: iam.delete_policy(_b(name)))


# ---------------------------------------------------------------- BCC instances

RUNNING, GONE = "Running", ("Deleted", "Recycled")
# release_instance_with_related_resources' arguments (bce-python-sdk 0.9.79 bcc_client.py:4785): the data
# disks, their snapshots and the EIP go with the instance, nothing goes to the recycle bin. The SDK puts
# cdsAttributeActive in the body only when bcc_recycle_flag is given (bcc_client.py:4837), so both are.
# What each flag means and its source: bce_api.yaml, ReleaseInstanceWithRelatedResources.
RELEASE_EVERYTHING = dict(related_release_flag=True, delete_cds_snapshot_flag=True, bcc_recycle_flag=False,
                          cds_attribute_active=False)
FAILED = ("Error", "CreateFailed", "Failed")


class BccInstanceProvider(BaiduProvider, kind="BccInstance"):
    """One BCC instance with its SSD CDS data disk: Postpaid (pay-as-you-go) or bid with a price cap."""

    def _check(self, news):
        problems = []
        if news.get("paymentTiming") == "bid":
            price, cap = news.get("bidPrice"), news.get("onDemandPrice")
            model = news.get("bidModel")
            if model not in ("market", "custom"):
                problems.append(("bidModel", f"BccInstance: {model!r}: a bid instance needs bidModel market or custom"))
            elif model == "market" and price not in (None, ""):
                problems.append(("bidPrice", "BccInstance: a market bid takes no bidPrice (the market price is billed)"))
            elif model == "custom" and price in (None, ""):
                problems.append(("bidPrice", "BccInstance: a custom bid needs a bidPrice (its cap)"))
            elif model == "custom" and cap not in (None, "") and float(price) > float(cap):
                problems.append(("bidPrice", f"BccInstance: bid price {price} is above the pay-as-you-go price"
                                             f" {cap}; the cap must never exceed it"))
        return problems

    def _create(self, inputs, token):
        from baidubce.services.bcc.bcc_model import Billing, CreateCdsModel

        bcc = bceapi.client("bcc", self.settings())
        disk = inputs["dataDisk"]
        cds = [CreateCdsModel(cdsSizeInGB=int(disk["cdsSizeInGB"]), storageType=disk["storageType"],
                              encryptKey=disk["encryptKey"], deleteWithInstance=disk.get("deleteWithInstance", True))]
        common = dict(create_cds_list=cds, root_disk_size_in_gb=int(inputs.get("rootDiskSizeInGb") or 100),
                      root_disk_storage_type=inputs.get("rootDiskStorageType"), name=inputs["name"],
                      hostname=inputs.get("hostname"), zone_name=inputs["zoneName"], subnet_id=inputs["subnetId"],
                      security_group_id=inputs["securityGroupId"], tags=_tags(inputs.get("tags")),
                      key_pair_id=inputs.get("keypairId"), user_data=inputs.get("userData"),
                      network_capacity_in_mbps=int(inputs.get("networkCapacityInMbps") or 0),
                      spec=inputs["spec"])
        if inputs["paymentTiming"] == "bid":
            # The documented Python path for bid instances: POST /v2/instance/bid (bcc_client.create_instance_of_bid).
            call_name = "CreateBidInstance"
            # isEipAutoRelatedDelete: the public IP goes with the bid instance when BCC releases it (a
            # reclaim or the auto release); the SDK's default False keeps it billing (bce_api.yaml).
            send = lambda token: bcc.create_instance_of_bid(  # noqa: E731
                int(inputs["cpuCount"]), int(inputs["memoryCapacityInGB"]), inputs["imageId"],
                billing=Billing("Postpaid"), bid_model=inputs["bidModel"],
                bid_price=None if inputs["bidModel"] == "market" else str(inputs["bidPrice"]),
                is_eip_auto_related_delete=True, client_token=token, **common)
        else:
            call_name = "CreateInstanceBySpec"
            common.pop("spec")
            # isEipAutoRelatedDelete here too: the auto release at maxHours then frees the public IP
            # (the SDK omits the field unless it is given, bce_api.yaml).
            send = lambda token: bcc.create_instance_by_spec(  # noqa: E731
                inputs["spec"], inputs["imageId"], billing=Billing("Postpaid"), is_eip_auto_related_delete=True,
                client_token=token, **common)
        instance_id = self._new_instance(inputs["name"], call_name, send, token)
        return instance_id, self._make_usable(instance_id, inputs)

    def _new_instance(self, name: str, call_name: str, send, token: str) -> str:
        """The instance the create call makes. A token whose instance is gone (a failed earlier attempt
        released it, below) would be answered with that instance again: a new token then makes a new one."""
        for _ in range(3):
            instance_id = bceapi.body(self.api(name, call_name, lambda t=token: send(t)))["instance_ids"][0]
            if not self._gone(instance_id):
                return instance_id
            token = client_token("again+" + instance_id, {"token": token})
        raise BceApiError(f"BccInstance {name}", call_name, "InstanceGone", None,
                          f"the create keeps answering with released instances (last {instance_id})")

    def _gone(self, instance_id: str, looks: int = 3) -> bool:
        """Whether the create's answer is an instance already released. "Not found" is asked again
        (`looks` times, poll_s apart) before it counts: a just-made instance may not be listed at once,
        and taking it for gone would make a second one while the first bills without a release time."""
        for look in range(looks):
            try:
                got = bceapi.body(self.api(instance_id, "GetInstance", lambda: bceapi.client(
                    "bcc", self.settings()).get_instance(instance_id)))
            except BceApiError as error:
                if not error.not_found:
                    raise
                if look + 1 < looks:
                    time.sleep(self.poll_s)
                continue
            return got["instance"].get("status") in GONE
        return True

    def _make_usable(self, instance_id: str, inputs: dict) -> dict:
        """Release time first, then the wait for Running; on any failure the instance is released
        before the error goes up. Pulumi records nothing of a create that raises (pulumi 3.272.0
        pulumi/dynamic/__main__.py Create: the id is sent only once create returns), so an instance
        left here would bill outside the state, unseen by `pulumi destroy`."""
        ttl_error = None
        try:
            # The cloud-side TTL: BCC releases the instance at releaseTime even if nothing else does,
            # so it is set before anything else can fail.
            self._set_release_time(instance_id, inputs["releaseTime"])
        except BceApiError as error:
            # Whether BCC takes a release time before the instance runs is not documented ("Setting
            # Auto-Release for Postpay" names no state): asked again once it runs.
            ttl_error = error
        try:
            outs = self._wait_running(instance_id, inputs["name"])
            if ttl_error is not None:
                self._set_release_time(instance_id, inputs["releaseTime"])
        except BaseException as error:
            self._release_after_failed_create(instance_id, inputs["name"], error)
            raise
        return outs

    def _release_after_failed_create(self, instance_id: str, name: str, cause: BaseException) -> None:
        """The POST release with the related resources (as `_delete`); when that fails too, the error
        says which instance bills and how to release it, with the cause."""
        try:
            self._delete(instance_id, {})
        except Exception as error:
            if isinstance(error, BceApiError) and error.not_found:
                return
            raise BceApiError(f"BccInstance {name} ({instance_id})", "ReleaseInstanceWithRelatedResources",
                              getattr(error, "code", None), getattr(error, "status", None),
                              f"the create failed ({cause}) and releasing the instance failed too ({error}): it "
                              f"bills outside Pulumi's state until released: BCC console, or POST "
                              f"/v2/instance/{instance_id} with relatedReleaseFlag=true") from cause

    def _wait_running(self, instance_id: str, name: str) -> dict:
        bcc = bceapi.client("bcc", self.settings())
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            instance = bceapi.body(self.api(f"{name} ({instance_id})", "GetInstance",
                                            lambda: bcc.get_instance(instance_id)))["instance"]
            status = instance.get("status")
            if status == RUNNING:
                return {"status": status, "internalIp": instance.get("internal_ip"),
                        "publicIp": instance.get("public_ip")}
            if status in FAILED or status in GONE:
                raise BceApiError(f"BccInstance {name} ({instance_id})", "GetInstance", status, 200,
                                  f"the instance became {status} instead of Running")
            if time.monotonic() > deadline:
                raise BceApiError(f"BccInstance {name} ({instance_id})", "GetInstance", "Timeout", None,
                                  f"still {status} after {self.ready_timeout_s:.0f} s")
            time.sleep(self.poll_s)

    def _set_release_time(self, instance_id: str, release_time: str) -> None:
        moment = release_time.replace("+00:00", "Z")
        if "." in moment:
            moment = moment.split(".")[0] + "Z"
        bcc = bceapi.client("bcc", self.settings())
        self.api(instance_id, "AutoReleaseInstance", lambda: bcc.auto_release_instance(
            instance_id, release_time=moment, client_token=client_token("release+" + instance_id, {"t": moment}),
            is_eip_auto_related_delete=True))

    def _read(self, id_, inputs):
        instance = bceapi.body(self.api(id_, "GetInstance", lambda: bceapi.client(
            "bcc", self.settings()).get_instance(id_)))["instance"]
        if instance.get("status") in GONE:
            return None
        return {"status": instance.get("status"), "internalIp": instance.get("internal_ip"),
                "publicIp": instance.get("public_ip"), "name": instance.get("name", inputs.get("name"))}

    def _update(self, id_, olds, news):
        before, after = olds.get("tags") or {}, news.get("tags") or {}
        gone = {k: v for k, v in before.items() if after.get(k) != v}
        added = {k: v for k, v in after.items() if before.get(k) != v}
        bcc = bceapi.client("bcc", self.settings())
        if gone:
            self.api(id_, "UnbindInstanceFromTags", lambda: bcc.unbind_instance_from_tags(id_, _tags(gone)))
        if added:
            self.api(id_, "BindInstanceToTags", lambda: bcc.bind_instance_to_tags(id_, _tags(added)))
        if olds.get("releaseTime") != news.get("releaseTime"):
            self._set_release_time(id_, news["releaseTime"])
        if olds.get("name") != news.get("name"):
            self.api(id_, "ModifyInstanceAttributes", lambda: bceapi.client(
                "bcc", self.settings()).modify_instance_attributes(id_, name=news["name"]))

    def _delete(self, id_, inputs):
        """The POST release with the related resources: the CDS data disk and the public IP go with the
        instance (the DELETE release detaches the disk and keeps it billing; bce_api.yaml)."""
        bcc = bceapi.client("bcc", self.settings())
        self.api(id_, "ReleaseInstanceWithRelatedResources", lambda: bcc.release_instance_with_related_resources(
            id_, **RELEASE_EVERYTHING, client_token=client_token("release-all+" + id_, {})))


class RoleBindingProvider(BaiduProvider, kind="RoleBinding"):
    """Binds the node role to the instances (BCC BindInstanceRole): their metadata service then serves
    the role's temporary credentials."""

    def _create(self, inputs, token):
        bcc = bceapi.client("bcc", self.settings())
        self.api(inputs["roleName"], "BindInstanceRole", lambda: bcc.bind_instance_role(
            list(inputs["instanceIds"]), inputs["roleName"], client_token=token))
        return f"{inputs['roleName']}:{','.join(inputs['instanceIds'])}", {}

    def _read(self, id_, inputs):
        bcc = bceapi.client("bcc", self.settings())
        alive = []
        for instance_id in inputs.get("instanceIds") or []:
            try:
                got = bceapi.body(self.api(instance_id, "GetInstance", lambda i=instance_id: bcc.get_instance(i)))
                if got["instance"].get("status") not in GONE:
                    alive.append(instance_id)
            except BceApiError as error:
                if not error.not_found:
                    raise
        return {"instanceIds": alive} if alive else None

    def _delete(self, id_, inputs):
        bcc = bceapi.client("bcc", self.settings())
        self.api(inputs["roleName"], "UnbindInstanceRole", lambda: bcc.unbind_instance_role(
            list(inputs["instanceIds"]), inputs["roleName"]))


# ---------------------------------------------------------------- BOS objects (through BOS's S3 API)

S3_ENDPOINT_ENV = "BAIDUCLOUD_S3_ENDPOINT"


class BucketObjectProvider(BaiduProvider, kind="BucketObject"):
    """One object in BOS, put through the S3-compatible API (profile.object_storage: SigV4, virtual hosts)."""

    def _s3(self):
        import os

        import boto3
        from botocore.config import Config

        bceapi.credentials()  # the same variables, the same message when they are missing
        endpoint = os.environ.get(S3_ENDPOINT_ENV) or f"https://s3.{self.region}.bcebos.com"
        return boto3.client("s3", endpoint_url=endpoint, region_name=self.region,
                            aws_access_key_id=os.environ[bceapi.ACCESS_KEY_ENV],
                            aws_secret_access_key=os.environ[bceapi.SECRET_KEY_ENV],
                            aws_session_token=os.environ.get(bceapi.TOKEN_ENV),
                            config=Config(signature_version="s3v4", s3={"addressing_style": "virtual"},
                                          request_checksum_calculation="when_required",
                                          response_checksum_validation="when_required"))

    def _put(self, inputs):
        from botocore.exceptions import ClientError

        if ("source" in inputs) == ("content" in inputs):
            raise ValueError(f"BucketObject {inputs['key']}: give source (a file) or content (text), one of the two")
        data = inputs["content"].encode() if "content" in inputs else open(inputs["source"], "rb").read()
        try:
            self._s3().put_object(Bucket=inputs["bucket"], Key=inputs["key"], Body=data,
                                  ContentMD5=inputs["contentMd5"])
        except ClientError as error:
            meta = error.response.get("ResponseMetadata", {})
            raise BceApiError(f"BucketObject {inputs['bucket']}/{inputs['key']}", "PutObject",
                              error.response.get("Error", {}).get("Code"), meta.get("HTTPStatusCode"),
                              error.response.get("Error", {}).get("Message", "")) from None

    def _create(self, inputs, token):
        self._put(inputs)  # a PUT of the same bytes is idempotent
        return f"{inputs['bucket']}/{inputs['key']}", {}

    def _read(self, id_, inputs):
        from botocore.exceptions import ClientError

        bucket, key = id_.split("/", 1)
        try:
            self._s3().head_object(Bucket=bucket, Key=key)
        except ClientError as error:
            if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return None
            raise
        return {}

    def _update(self, id_, olds, news):
        self._put(news)

    def _delete(self, id_, inputs):
        bucket, key = id_.split("/", 1)
        self._s3().delete_object(Bucket=bucket, Key=key)  # S3 answers 204 for a missing key too


PROVIDERS = {"Vpc": VpcProvider, "Subnet": SubnetProvider, "SecurityGroup": SecurityGroupProvider,
             "KmsKey": KmsKeyProvider, "IamRole": IamRoleProvider, "IamRolePolicy": IamRolePolicyProvider,
             "BccInstance": BccInstanceProvider, "RoleBinding": RoleBindingProvider, "BucketObject": BucketObjectProvider}


# ---------------------------------------------------------------- the Pulumi resources

# One class per kind, made from the table (components/dynamic_resources.py resource_classes).
RESOURCES = resource_classes(TYPE_MODULE, PROVIDERS, SCHEMAS, __name__)
Vpc = RESOURCES["Vpc"]
Subnet = RESOURCES["Subnet"]
SecurityGroup = RESOURCES["SecurityGroup"]
KmsKey = RESOURCES["KmsKey"]
IamRole = RESOURCES["IamRole"]
IamRolePolicy = RESOURCES["IamRolePolicy"]
BccInstance = RESOURCES["BccInstance"]
BucketObject = RESOURCES["BucketObject"]
RoleBinding = RESOURCES["RoleBinding"]
