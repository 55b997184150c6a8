"""Baidu AI Cloud's declared capabilities, disk classes, endpoints and value rules (pure data, no SDK).

Sources (docs/baiducloud.md lists them with what is unverified):
- BCC Python SDK doc "实例" (cloud.baidu.com/doc/BCC/s/njwvympu0): create_instance_by_spec, the data
  disk storage types (enhanced_ssd_pl1 ...), CDS sizes "0~5120G", root disk [40, 2048] GB,
  instance names 1-65 characters.
- BOS docs "服务域名" (cloud.baidu.com/doc/BOS/s/xjwvyq9l4): S3 endpoints s3.<region>.bcebos.com for
  bj, gz, su, bd, fwh, hkg, path-style and virtual-hosted; "兼容签名认证" (/doc/BOS/s/Hjwvyq84s):
  AWS Signature Version 4, single-chunk and multi-chunk payloads, region names bj/bd/su/gz/fwh/hkg;
  "兼容工具" (/doc/BOS/s/ojwvyq973): boto3 with signature_version s3v4 and region_name 'bj'.
- bce-python-sdk 0.9.79 bcc_client.py: bid instances (POST /v2/instance/bid, bidModel/bidPrice),
  auto release (PUT /v2/instance/{id}?autorelease), instance roles (bind_instance_role).
"""
from __future__ import annotations

from typing import Iterable, Optional

from components.providers.profile_records import (Billing, DataDisk, Disks, Egress, EndpointRule, FREE, ImageIds,
                                                  Interconnect, Lingering, NO_FLEXIBLE_CHECKSUMS, NameLimit, Naming,
                                                  NodeEnvironment, ObjectStorage, ObjectStore, ProviderProfile,
                                                  ReclaimNotice, Route, Rules, SharedStorage, Spot, StoreVerification,
                                                  UserDataLimit, has_public_address, inbound_note, transfer_seconds,
                                                  uploaded_files)

# The dynamic resources' type tokens (dynamic.py: `module="baiducloud"` in each class statement).
TYPE_PREFIX = "pulumi-python:dynamic/baiducloud:"

# Tier disk class -> CDS storage type: general-purpose SSD, enhanced SSD PL1, enhanced SSD PL2.
_TYPE_FOR_CLASS = {"standard": "cloud_hp1", "high": "enhanced_ssd_pl1", "extreme": "enhanced_ssd_pl2"}
# CDS sizes: "CDS磁盘容量,必须为大于0的整数,单位为GB,大小为0~5120G" (BCC Python SDK doc, create_instance_by_spec).
DATA_DISK_SIZES = {t: (1, 5120) for t in _TYPE_FOR_CLASS.values()}
S3_REGIONS = ("bj", "gz", "su", "bd", "fwh", "hkg")  # BOS "服务域名": the regions with an S3 endpoint


def data_disk(disk_class: str, size_gb: int, category: Optional[str]) -> DataDisk:
    return DataDisk(category or _TYPE_FOR_CLASS[disk_class], None, size_gb)


# BOS checks a request's Content-MD5 against the bytes it stores, for PutObject and for each UploadPart
# (the API reference of both), and its S3 API takes the header as S3 does ("兼容公共头", updated
# 2024-03-13, Content-MD5: compatible; PUT object, Upload Part and Complete Multipart Upload: compatible). Whether its ETag is an
# MD5 for multipart uploads, and whether it accepts botocore's default x-amz-checksum-* headers, is not
# stated: the store's word is its acceptance of each request's MD5 (content-md5), not the ETag.
BOS_VERIFICATION = StoreVerification("content-md5", content_md5=True, sources=(
    "https://cloud.baidu.com/doc/BOS/s/Ikc5nv3wc-en", "https://cloud.baidu.com/doc/BOS/s/3kc5v4qs0-en",
    "https://cloud.baidu.com/doc/BOS/s/ejwvyq8vh", "https://cloud.baidu.com/doc/BOS/s/Njwvyq8ho-en",
    "https://cloud.baidu.com/doc/BOS/s/Hjwvyq84s", *NO_FLEXIBLE_CHECKSUMS))


def _bos_region(spec) -> str:
    return spec.checkpoint.region or spec.region


def object_store(region: str) -> ObjectStore:
    # Virtual-hosted buckets and SigV4 as in BOS's boto3 sample; no in-VPC S3 endpoint is documented,
    # so nodes use the same one (node_endpoint None).
    return ObjectStore(f"https://s3.{region}.bcebos.com", "virtual", "s3v4", verification=BOS_VERIFICATION)


# ---------------------------------------------------------------- egress (components/egress.py)
# Nodes reach BOS's S3 endpoint, the BCC API (self-release) and the package indexes through their own
# public address (networkCapacityInMbps, billed by traffic: BCC SDK doc, internet_charge_type); no
# in-VPC endpoint for them is documented in the sources above.
PUBLIC_BANDWIDTH_MBPS = 100
INSTANCE = TYPE_PREFIX + "BccInstance"


def routes(spec) -> tuple[Route, ...]:
    vpc = Route("vpc", "inside the stack's VPC: the instance metadata service and the other nodes",
                "not billed: traffic between instances of a VPC")
    if not has_public_address(spec):
        return (vpc,)
    return (vpc, Route(
        "internet", f"each node's own public address, outbound only (capped at {PUBLIC_BANDWIDTH_MBPS} Mbit/s); "
        + inbound_note(spec),
        "per GB of outbound traffic while a node runs, rate unknown here (BCC price list); the address goes"
        " with the node",
        evidence=((INSTANCE, "networkCapacityInMbps"),)))


def endpoint_rules(region: str) -> tuple[EndpointRule, ...]:
    return (
        EndpointRule(r"^169\.254\.169\.254$", ("vpc",),
                     "the BCC instance metadata service, link-local (unverified: see docs/baiducloud.md)"),
        EndpointRule(r".*", ("internet",), "outside the VPC: reached through a public address only"),
    )


def cloud_api(region: str) -> str:
    """The BCC API the node agent calls to release its own instance."""
    return f"https://bcc.{region}.baidubce.com"


def cloud_api_default(spec) -> tuple[str, ...]:
    return (f"bcc.{spec.region}.baidubce.com",)


SPOT_DOC = "BCC 'Spot the Instance' (https://intl.cloud.baidu.com/doc/BCC/s/fkag7tev6-en)"


def bid_model(spec) -> str:
    """BCC's bid mode for a spot stack: "market" (automatic bid, the default) or "custom" (spotMaxPricePerHour).

    SPOT_DOC: "Automatic bid: ... it matches the latest market price real time by default, and the instance is
    only released due to insufficient inventory"; "Maximum price: ... the instance is released when the maximum
    price accepted by the user is lower than the market price or the inventory is insufficient"; the market
    price moves "between 10% of catalog price ... and the catalog price", so a market bid never pays more than
    pay-as-you-go. A cap only adds a reason to be reclaimed: it is used only when the stack sets one."""
    return "custom" if spec.spot_max_price is not None else "market"


def reclaim_notice(spec) -> ReclaimNotice:
    released = ("automatic (market) bid: released only for lack of inventory" if bid_model(spec) == "market" else
                f"custom bid capped at spotMaxPricePerHour {spec.spot_max_price:g}: released when the market price"
                " (updated every 5 minutes) passes the cap, or for lack of inventory")
    return ReclaimNotice(
        "none reaches the node: the agent's spot_notice() is always None (node_runtime.py); a reclaim is seen by"
        " nobody on the node, and what the last periodic sync uploaded is the resume point",
        "none on the node (an SMS to the account 5 minutes before; the BCM event 'BCC抢占实例释放事件' reaches mail,"
        " SMS, phone or a callback, with no lead time documented)", 0,
        f"{SPOT_DOC}: 'The user is notified in the short message 5 minutes before release'; BCM event alarm"
        " (https://cloud.baidu.com/theme/N/3351353-65): '事件名称选择“BCC抢占实例释放事件”... 支持邮件、短信、电话、"
        "接口回调多种通知方式'; the BCM event list API (GET /event-api/v1/bce-event/list, bce-python-sdk 0.9.79"
        " BcmClient.get_cloud_event_data) states no time at which the release event is listed",
        f"{released}; the first hour after creation is the doc's 'One-hour protection period' ({SPOT_DOC})")


def checks(spec) -> Iterable[tuple[str, str]]:
    if spec.nodes > 1:
        yield ("nodes", f"{spec.nodes}: Baidu stacks run one node: the large tier's parallel file system (PFS)"
                        " is not built for Baidu (its API is in baiducloud-python-sdk-pfs, not bce-python-sdk),"
                        " so several nodes would share no data; use nodes: 1")
    if not spec.zone:
        yield ("zone", "not set: Baidu stacks name their zone (e.g. cn-bj-a, as BCC's API writes zones); no zone"
                       " lookup is built for Baidu")
    if spec.checkpoint.create:
        yield ("checkpoint.create", "true: the Baidu provider does not create the BOS bucket; create it in the BOS"
                                    " console (same region as the stack) and set checkpoint.create: false")
    if spec.region not in S3_REGIONS:
        yield ("baiducloud:region", f"{spec.region!r} has no BOS S3 endpoint in the BOS doc '服务域名';"
                                    f" allowed: {', '.join(S3_REGIONS)}")


# ---------------------------------------------------------------- preview findings (spec.warnings)
# What no source settles without an account, said where a user sees it: the preview's findings.
_BOS_IN_VPC_NOTE = ("BOS documents no in-VPC endpoint for its S3 API in the pages read (BOS 'Region与Endpoint',"
                    " https://cloud.baidu.com/doc/BOS/s/akrqd2wcx; an in-VPC path exists only through a VPC service"
                    " network interface (服务网卡), which this program does not create)")
_IAM_PAGE = "https://intl.cloud.baidu.com/en/doc/BCC/s/mjxkcdfp8-intl-en"


def transfer_minutes(gigabytes: float) -> float:
    """At least this long to move `gigabytes` through a node's public address."""
    return transfer_seconds(gigabytes, PUBLIC_BANDWIDTH_MBPS) / 60


def warnings(spec) -> Iterable[tuple[str, str]]:
    yield ("identity", "unverified without an account: the node role's release policy grants OPERATE on the"
                       " stack's own instances (identity.release_policy); BCC's IAM page names three levels (full"
                       f" control, operation and maintenance, read-only: {_IAM_PAGE}) but not which one releasing"
                       " an instance needs, nor whether releasing it with its data disk and EIP (relatedReleaseFlag)"
                       " also needs a grant on those. Baidu's other services put deleting in full control, not"
                       " in operation (CDN: deleting a domain is CdnFullAccessPolicy only,"
                       " https://cloud.baidu.com/doc/CDN/s/zk04vd3kw; Kafka: deleting clusters is"
                       " KAFKAFullControlPolicy, https://cloud.baidu.com/doc/Kafka/s/Blbercto2). If BCC does the"
                       " same, the node's self-release is refused and"
                       f" the node bills on until its auto release at maxHours ({spec.max_hours:g} h) or"
                       " scripts/run.py's destroy")
    yield ("identity", "unverified without an account: the role's trust document names {\"service\": \"bce:bcc\"}"
                       " as the grantee (identity.TRUST); Baidu documents the BCC carrier for console-made roles"
                       " (BCC 'Set IAM Role', https://intl.cloud.baidu.com/en/doc/BCC/s/jm4bbrdmn-intl-en), not"
                       " the JSON form. If it is wrong, BindInstanceRole may succeed while the metadata service"
                       " serves no credentials: the agent stops at boot with 'role credentials: none'")
    yield ("checkpoint.bucket", "unverified without an account: whether BOS's S3 API accepts the node role's STS"
                                " credentials. The header boto3 carries their token in, x-amz-security-token, is"
                                " listed as compatible ('兼容公共头', https://cloud.baidu.com/doc/BOS/s/ejwvyq8vh,"
                                " updated 2024-03-13; the older English page still says otherwise), and the nodes"
                                " sign for BOS region " + _bos_region(spec) + " ('兼容签名认证',"
                                " https://cloud.baidu.com/doc/BOS/s/Hjwvyq84s). If BOS refuses the role's requests"
                                " all the same, no checkpoint reaches the bucket: the agent keeps the node"
                                " (SYNC_FAILED, no release, nothing lost); try one upload with the role's"
                                " credentials before a long run")
    yield ("maxHours", "unverified without an account: what BCC's auto release (the cloud-side TTL at maxHours)"
                       " does with the CDS data disk is not documented (API 'Setting Auto-Release for Postpay',"
                       " https://intl.cloud.baidu.com/en/doc/BCC/s/8lfrq74kx-intl-en, names a release time only;"
                       " the disk is created with deleteWithInstance). Its public IP is asked to go with it"
                       " (isEipAutoRelatedDelete on the create and the auto release call: bce-python-sdk 0.9.79"
                       " bcc_client.py:4643, 4780). pulumi destroy and the node's self-release free both (the POST"
                       " release with relatedReleaseFlag). After a node ended at maxHours, check the CDS list:"
                       " see keepsBilling")
    if has_public_address(spec):
        data = ""
        if spec.data.stage and spec.data.size_gb:
            data = (f"; staging the {spec.data.size_gb:.1f} GB data set takes at least"
                    f" {transfer_minutes(spec.data.size_gb):.0f} min")
        yield ("publicEgress", f"all BOS traffic (data set, checkpoints, reports) and the package installs go"
                               f" through each node's {PUBLIC_BANDWIDTH_MBPS} Mbit/s public address, billed by"
                               f" traffic: {_BOS_IN_VPC_NOTE}. A 10 GB checkpoint takes at least"
                               f" {transfer_minutes(10):.0f} min to upload{data}")


# ---------------------------------------------------------------- billing (components/billing.py)
def keeps_billing(spec) -> tuple[Lingering, ...]:
    items = [uploaded_files(TYPE_PREFIX + "BucketObject"),
             Lingering("KMS key of the data disk (pending deletion for 7 days after destroy)", TYPE_PREFIX + "KmsKey",
                       "1 key", "KMS price list", None,
                       "pulumi destroy, then the pending window (unverified: whether Baidu KMS bills a key pending"
                       " deletion is not in the pages read)", bills_after_destroy=True)]
    # A node ended by the auto release (maxHours): whether BCC frees its data disk (and, for a Postpaid
    # node, its EIP) is undocumented; the state then holds an instance that is gone, so pulumi destroy's
    # release finds nothing and frees nothing. Listed so that nobody assumes it is free.
    address = " and its public IP" if has_public_address(spec) and not spec.spot else ""
    items.append(Lingering(f"only if a node ends at maxHours (auto release): its CDS data disk{address}, if BCC"
                           " keeps them (unverified)", None,
                           f"{spec.data_disk.size_gb:,} GiB {spec.data_disk.category} per node",
                           "CDS per GiB-hour; EIP per hour and GB", None,
                           "you release them in the CDS / EIP console (pulumi destroy cannot: the instance is gone)"))
    return tuple(items)


BILLS_NOTHING_ALONE = {
    TYPE_PREFIX + "Vpc": FREE,
    TYPE_PREFIX + "Subnet": FREE,
    TYPE_PREFIX + "SecurityGroup": FREE,
    TYPE_PREFIX + "IamRole": "IAM: no charge",
    TYPE_PREFIX + "IamRolePolicy": "IAM: no charge",
    TYPE_PREFIX + "RoleBinding": "a binding",
    INSTANCE: "bills while it runs; released by the agent or pulumi destroy together with its CDS data disk and"
              " public IP (the POST release with relatedReleaseFlag), or at maxHours by its auto release time",
}

# Names: BCC instance names 1-65 characters (BCC doc "创建实例": name); IAM role names: not stated in
# the sources above, the smallest known limit (64, Alibaba RAM) is applied.
NAME_LIMITS = (
    NameLimit(INSTANCE, "name", "gpu-training-{stack}-{index}", 65, 1,
              "BCC API CreateInstance: name 'length 1-65' (cloud.baidu.com/doc/BCC/s/njwvympu0)"),
    NameLimit(TYPE_PREFIX + "IamRole", "name", "gpu-training-{stack}-node", 64, 1,
              "not stated by Baidu's docs read here: the smallest known limit (RAM CreateRole, 64)"),
)

PROFILE = ProviderProfile(
    name="baiducloud",
    stack_prefix="bd-",  # `gpu-training init`'s stack names, as stacks/Pulumi.bd-*.yaml
    display_name="Baidu AI Cloud",
    region_key="baiducloud:region",  # no Pulumi provider reads it: the dynamic resources take the region
    currency="CNY",
    credential_env=("BAIDUCLOUD_", "BCE_"),
    shared_fs=SharedStorage(),  # none offered: PFS is not built for Baidu (docs/baiducloud.md)
    disks=Disks(
        ssd_categories=tuple(_TYPE_FOR_CLASS.values()),
        sizes=DATA_DISK_SIZES,
        refused_categories={
            "hp1": "high-performance cloud disk: not an SSD class in the BCC storage types",
            "sata": "HDD-backed", "hdd": "HDD-backed", "std1": "HDD-backed",
        },
        data_disk=data_disk,
    ),
    object_storage=ObjectStorage(store=object_store, example_bucket="my-gpu-training-checkpoints"),
    node=NodeEnvironment(
        metadata_endpoint="http://169.254.169.254",  # unverified (docs/baiducloud.md)
        apt_mirror=None,
        pip_index=None,
        requirements=("boto3", "tenacity", "bce-python-sdk"),
        user_data=UserDataLimit(16384, "base64", "not stated in the BCC docs read here: the smallest known limit"
                                                 " (Tencent CVM, 16 KB after base64) applies"),
        default_image_note="an Ubuntu 22.04 BCC public image id: set gpu-training:image (m-...)",
        image_ids=ImageIds(
            forms=((r"m-[A-Za-z0-9]+", "m-... (a BCC image id, e.g. m-A4jJpFzi)"),),
            source="baidubce/terraform-provider-baiducloud@3ff7ab55d8922e37611b22433f8d0cfac1cf39f0"
                   " website/docs/r/instance.html.markdown: image_id = \"m-A4jJpFzi\""),
    ),
    spot=Spot(
        discount=1.0,
        discount_source="unknown: no Baidu source for bid prices was found; spot is priced as pay-as-you-go",
        pool=False,  # bid instances, no pool (compute.py)
        reclaim_notice=False,  # none documented for bid instances (node_runtime.py)
        notice=reclaim_notice,
    ),
    rules=Rules(
        unsupported={
            "spotFallback=true": "BCC has no pool that falls back from bid to pay-as-you-go instances",
        },
        checks=checks,
        warnings=warnings,
    ),
    egress=Egress(
        routes=routes,
        endpoint_rules=endpoint_rules,
        cloud_api=cloud_api,
        cloud_api_default=cloud_api_default,
    ),
    billing=Billing(keeps_billing=keeps_billing, bills_nothing_alone=BILLS_NOTHING_ALONE),
    naming=Naming(
        limits=NAME_LIMITS,
        type_prefixes=(TYPE_PREFIX,),
    ),
    interconnect=Interconnect(
        placement=None,  # compute.py makes no deployment set: BCC nodes go where the cloud puts them
    ),
)
