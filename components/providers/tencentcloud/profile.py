"""Tencent Cloud's declared capabilities, disk classes, endpoints, mirrors and value rules (pure data, no SDK).

Sources (docs/tencentcloud.md lists them with links):
- CVM doc 213/4934 "Instance metadata"; COS doc "Using AWS S3 SDK to access COS" (S3
  endpoint, `name-APPID` buckets); mirrors.tencentyun.com, the in-VPC mirror the CVM docs name.
- CFS API CreateCfsFileSystem (Capacity): High-Performance Turbo (TP) from 10,240 GiB in steps of
  10,240 GiB (see TURBO_MIN_GIB below; the older schema text in tencentcloud-iac-pulumi 0.2.3 said 20,480).
- CBS doc 362/39611 "Enhanced SSD performance": baseline throughput min{120 + 0.5 x GiB, 350} MB/s,
  at most 1,000 MB/s with extra performance, which can be bought only above 460 GiB.
- CVM doc 213/33000 "CBS types" and the CBS usage limits: Tremendous SSD (CLOUD_TSSD) is sold only
  with some storage/standard families (S5se, S6, M6, SA3, ...), none of the GPU families.
- CVM doc 213/15373 (2024): spot costs "typically 3% to 20% of the pay-as-you-go price".
- CVM doc 213/17817 (spot FAQ): billing uses the market price, the max price is only a cap.
- COS doc 436/8276 and 436/30580: bucket names are `<name>-<APPID>`; CAM resources need the APPID.
- CBS data disk sizes 20-32,000 GiB: the console's limits for SSD classes; the stored docs only confirm
  "32 TB per disk" from a third-party copy, so the bound is marked unconfirmed in docs/tencentcloud.md.
"""
from __future__ import annotations

import re
from typing import Iterable, Optional

from components.providers.profile_records import (Billing, DataDisk, Disks, Egress, EndpointRule, FREE, ImageIds,
                                                  Interconnect, Lingering, NO_FLEXIBLE_CHECKSUMS, NameLimit, Naming,
                                                  NodeEnvironment, ObjectStorage, ObjectStore, Placement,
                                                  ProviderProfile, ReclaimNotice, Route, Rules, SharedStorage, Spot,
                                                  StoreVerification, UserDataLimit, has_public_address, inbound_note,
                                                  spot_cap, uploaded_files)

# Tier disk class -> CBS type. Tremendous SSD is not sold with GPU families, so the extreme class is an
# Enhanced SSD with extra throughput bought on top of its baseline.
_CATEGORY_FOR_CLASS = {"standard": "CLOUD_BSSD", "high": "CLOUD_HSSD", "extreme": "CLOUD_HSSD"}
BASELINE_MAX_MBPS = 350  # Enhanced SSD baseline: min{120 + 0.5 x GiB, 350} MB/s (doc 362/39611)
EXTRA_THROUGHPUT_MBPS = 650  # 1,000 MB/s ceiling minus the 350 MB/s baseline ceiling (doc 362/39611)
EXTRA_THROUGHPUT_MIN_GIB = 461  # extra performance needs more than 460 GiB
DISK_MIN_GIB, DISK_MAX_GIB = 20, 32000

TURBO = "cfsturbo"
TURBO_STORAGE_TYPE = "TP"  # High-Performance Turbo
# TP sizes: CFS API CreateCfsFileSystem, Capacity ("turbo性能型起售10TiB，即10240 GiB；扩容步长10TiB",
# as generated into tencentcloud-sdk-go cfs v1.3.49, vendored by terraform-provider-tencentcloud
# f6970a90; the provider's own TP example uses capacity = 10240). The provider's schema text (20,480)
# predates it; ScaleUpFileSystem's note gives a 5,120 GiB step, which 10,240 steps also satisfy.
TURBO_MIN_GIB, TURBO_STEP_GIB = 10240, 10240

# COS bucket names carry the account's APPID: "<name>-<APPID>", lowercase letters, digits and '-'.
BUCKET_RE = re.compile(r"^(?P<name>[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)-(?P<appid>[0-9]{6,})$")


def data_disk(disk_class: str, size_gb: int, category: Optional[str]) -> DataDisk:
    """The CBS data disk for a tier; performance_level holds the extra throughput in MB/s, if any."""
    chosen = category or _CATEGORY_FOR_CLASS[disk_class]
    if chosen != "CLOUD_HSSD" or disk_class != "extreme":
        return DataDisk(chosen, None, size_gb)
    if size_gb < EXTRA_THROUGHPUT_MIN_GIB:
        return DataDisk(chosen, None, size_gb,
                        f"Enhanced SSD extra throughput needs more than 460 GiB; a {size_gb} GiB disk keeps its"
                        f" baseline. Raise dataDiskGb to {EXTRA_THROUGHPUT_MIN_GIB} for +{EXTRA_THROUGHPUT_MBPS} MB/s.")
    return DataDisk(chosen, str(EXTRA_THROUGHPUT_MBPS), size_gb)


def extra_throughput(disk: DataDisk) -> Optional[int]:
    """The `throughput_performance` argument (MB/s) of a data disk chosen by `data_disk`."""
    return int(disk.performance_level) if disk.performance_level else None


# COS computes the CRC-64 (ECMA-182) of every uploaded object, single-part or multipart (when every part
# has one), and returns it as x-cos-hash-crc64ecma on PUT Object, HEAD Object and GET Object.
COS_VERIFICATION = StoreVerification(
    "crc64ecma", header="x-cos-hash-crc64ecma",
    sources=("https://www.tencentcloud.com/document/product/436/43317",
             "https://www.tencentcloud.com/document/product/436/45260", *NO_FLEXIBLE_CHECKSUMS))


def object_store(region: str) -> ObjectStore:
    # COS speaks the S3 API with SigV4 and virtual-hosted buckets; in-region CVMs reach the default
    # domain over the internal network.
    return ObjectStore(f"https://cos.{region}.myqcloud.com", "virtual", "s3v4", verification=COS_VERIFICATION)


# ---------------------------------------------------------------- egress (components/egress.py)
# Outbound path: each node's own public IPv4 address, billed by traffic (CVM doc 213/10578 "Public
# Network Billing Methods": billed on outbound traffic only; bandwidth 0 means no public address). The
# address goes with the node, so nothing bills after the nodes release themselves. Needed for the
# CVM and Auto Scaling APIs (self-release, pool retire: no in-VPC endpoint is used here) and the CUDA
# repository. Inbound stays closed: the security group admits only members and sshAllowCidrs.
PUBLIC_BANDWIDTH_MBPS = 100
INTERNET_CHARGE_TYPE = "TRAFFIC_POSTPAID_BY_HOUR"


def public_bandwidth_mbps(spec) -> int:
    return PUBLIC_BANDWIDTH_MBPS if has_public_address(spec) else 0


def routes(spec) -> tuple[Route, ...]:
    vpc = Route("vpc", "inside the stack's VPC: instance metadata, Tencent's internal mirror, COS in the region,"
                " CFS Turbo over the stack's CCN",
                "no public traffic fee: only outbound public traffic is billed (CVM doc 213/10578)")
    if not has_public_address(spec):
        return (vpc,)
    return (vpc, Route(
        "internet", f"each node's own public IPv4 address, outbound only ({INTERNET_CHARGE_TYPE}, capped at"
        f" {PUBLIC_BANDWIDTH_MBPS} Mbit/s); " + inbound_note(spec),
        "per GB of outbound traffic while a node runs, rate unknown here (region price list; CVM doc"
        " 213/10578 bills outbound traffic only); nothing bills once the node is released",
        evidence=(("tencentcloud:Instance/instance:Instance", "allocatePublicIp"),
                  ("tencentcloud:Instance/instance:Instance", "internetMaxBandwidthOut"),
                  ("tencentcloud:As/scalingConfig:ScalingConfig", "publicIpAssigned"),
                  ("tencentcloud:As/scalingConfig:ScalingConfig", "internetMaxBandwidthOut"))))


def endpoint_rules(region: str) -> tuple[EndpointRule, ...]:
    r = region.replace(".", r"\.")
    return (
        EndpointRule(r"^metadata\.tencentyun\.com$", ("vpc",),
                     "the CVM metadata service, reachable from inside Tencent Cloud only (CVM doc 213/4934)"),
        EndpointRule(r"^mirrors\.tencentyun\.com$", ("vpc",),
                     "Tencent's internal software mirror (apt, PyPI) for CVM"),
        EndpointRule(rf"^([a-z0-9.-]+\.)?cos\.{r}\.myqcloud\.com$", ("vpc", "internet"),
                     "COS in the stack's region: same-region CVMs reach the default domain over the private"
                     " network (COS doc 436/6224, 'Regions and Access Endpoints'), else over the public address"),
        EndpointRule(r".*", ("internet",), "outside the VPC: reached through a public address only"),
    )


def cloud_api_default(spec) -> tuple[str, ...]:
    """What the node agent calls with endpoints.cloudApi unset: tencentcloud-sdk-python's public domains."""
    return ("cvm.tencentcloudapi.com",) + (("as.tencentcloudapi.com",) if spec.spot else ())


def bucket_appid(bucket: str) -> Optional[str]:
    match = BUCKET_RE.match(bucket)
    return match.group("appid") if match else None


def checks(spec) -> Iterable[tuple[str, str]]:
    """Value rules `unsupported` cannot express; each names the key, the value and what is allowed."""
    bucket = spec.checkpoint.bucket
    if bucket and bucket_appid(bucket) is None:
        yield ("checkpoint.bucket",
               f"{bucket!r} is not a COS bucket name: COS names are '<name>-<APPID>' (e.g."
               " 'my-ckpt-1250000000'; lowercase letters, digits and '-'), and the node role's COS policy"
               " needs the APPID; copy the full name from the COS console")
    if spec.spot and spot_cap(spec) is None:
        yield ("spotMaxPricePerHour",
               f"not set, and the catalog has no on-demand price for {spec.instance.name}: Tencent's SPOTPAID"
               " needs a max price and tencentcloud-iac-pulumi has no price lookup; set spotMaxPricePerHour"
               " (CNY per node-hour, at most the on-demand price your console shows; you are billed the"
               " market price, the cap only stops launches above it)")
    if spec.shared_storage == TURBO and (spec.shared_storage_gb - TURBO_MIN_GIB) % TURBO_STEP_GIB:
        low = spec.shared_storage_gb - (spec.shared_storage_gb - TURBO_MIN_GIB) % TURBO_STEP_GIB
        yield ("sharedStorageGb",
               f"{spec.shared_storage_gb} is not a CFS Turbo (High-Performance) size: {TURBO_MIN_GIB} GiB plus"
               f" steps of {TURBO_STEP_GIB}; e.g. {low} or {low + TURBO_STEP_GIB}")


# ---------------------------------------------------------------- billing (components/billing.py)
SEED_DISK_GB = 20  # the smallest SSD-class CBS disk: the spot pool's encrypted seed (compute.py)
PAYG = "pay-as-you-go"


def keeps_billing(spec) -> tuple[Lingering, ...]:
    """What bills after the nodes are gone, until `pulumi destroy`. Rates: none in the cited documents."""
    items = []
    if spec.shared_storage == TURBO:
        items += [
            Lingering("CFS Turbo file system (High-Performance, TP)", "tencentcloud:Cfs/fileSystem:FileSystem",
                      f"{spec.shared_storage_gb:,} GiB", f"provisioned capacity per GiB-hour, {PAYG}", None,
                      "pulumi destroy", prices="sharedStorage"),
            Lingering("Cloud Connect Network that reaches CFS Turbo (POSTPAID)", "tencentcloud:Ccn/instance:Instance",
                      "1 network, the stack's VPC attached", "postpaid bandwidth between regions (CCN price list);"
                      " this stack stays in one region, whether that bills nothing is not verified", None,
                      "pulumi destroy"),
        ]
    if spec.spot:
        items += [
            Lingering("encrypted seed disk of the spot pool's data disks", "tencentcloud:Cbs/storage:Storage",
                      f"{SEED_DISK_GB} GiB {spec.data_disk.category}", f"capacity per GiB-hour, {PAYG}", None,
                      "pulumi destroy"),
            Lingering("snapshot of the seed disk", "tencentcloud:Cbs/snapshot:Snapshot", f"of {SEED_DISK_GB} GiB",
                      "snapshot storage per GiB", None, "pulumi destroy"),
        ]
    items.append(uploaded_files("tencentcloud:Cos/bucketObject:BucketObject"))
    return tuple(items)


BILLS_NOTHING_ALONE = {
    "tencentcloud:Vpc/instance:Instance": FREE,
    "tencentcloud:Subnet/instance:Instance": FREE,
    "tencentcloud:Security/group:Group": FREE,
    "tencentcloud:Security/groupRuleSet:GroupRuleSet": "the security group's rules",
    "tencentcloud:Cam/role:Role": "CAM: no charge",
    "tencentcloud:Cam/policy:Policy": "CAM: no charge",
    "tencentcloud:Cam/rolePolicyAttachmentByName:RolePolicyAttachmentByName": "CAM: no charge",
    "tencentcloud:Key/pair:Pair": FREE,
    "tencentcloud:Placement/group:Group": "placement only",
    "tencentcloud:Instance/instance:Instance": "bills while it runs; terminated by the agent or at maxHours (its"
                                               " ActionTimer), its public address and disks with it",
    "tencentcloud:Cvm/actionTimer:ActionTimer": "a timer",
    "tencentcloud:As/scalingConfig:ScalingConfig": "a launch configuration: the pool's nodes bill, not the configuration",
    "tencentcloud:As/scalingGroup:ScalingGroup": "the group bills nothing; its spot nodes bill while they run (the agent"
                                                 " disables it, the schedule empties it)",
    "tencentcloud:As/schedule:Schedule": "a schedule",
    "tencentcloud:Ccn/attachmentV2:AttachmentV2": "the VPC's attachment (the CCN is its own item)",
    "tencentcloud:Cfs/accessGroup:AccessGroup": "access control",
    "tencentcloud:Cfs/accessRule:AccessRule": "access control",
    "tencentcloud:Cos/bucket:Bucket": "storage bills the data in it (the checkpoints item); kept on destroy",
}


def warnings(spec) -> Iterable[tuple[str, str]]:
    """What a stack silently would not get; each names the key and the way to get it."""
    if spec.spot and spec.data_disk.performance_level:
        # terraform-provider-tencentcloud as_scaling_config (f6970a90): data_disk has disk_type,
        # disk_size, snapshot_id and delete_with_instance only; tencentcloud-iac-pulumi 0.2.3 likewise.
        yield ("billing",
               f"spot: the pool's data disks cannot buy extra throughput (as_.ScalingConfig data_disk has no"
               f" throughput_performance), so pool nodes get the Enhanced SSD's baseline, at most"
               f" {BASELINE_MAX_MBPS} MB/s, not +{EXTRA_THROUGHPUT_MBPS} MB/s; use billing: on-demand for it")



# Names the program gives (validation refuses a stack whose names break a limit, naming the
# stack name, the usual cause). Source: the provider at the commit of provider_facts.json; every limit
# below is ValidateStringLengthInRange (tencentcloud/common/validators.go:104), counted in characters.
_TF = "tencentcloudstack/terraform-provider-tencentcloud@f6970a90"
NAME_LIMITS = (
    NameLimit("tencentcloud:As/scalingGroup:ScalingGroup", "scalingGroupName", "gpu-training-{stack}", 55, 1,
              f"{_TF} tencentcloud/services/as/resource_tc_as_scaling_group.go:31"),
    NameLimit("tencentcloud:As/scalingConfig:ScalingConfig", "configurationName", "gpu-training-{stack}", 60, 1,
              f"{_TF} tencentcloud/services/as/resource_tc_as_scaling_config.go:31"),
    NameLimit("tencentcloud:As/schedule:Schedule", "scheduleActionName", "gpu-training-{stack}-ttl", 60, 1,
              f"{_TF} tencentcloud/services/as/resource_tc_as_schedule.go:31"),
    NameLimit("tencentcloud:Cbs/storage:Storage", "storageName", "gpu-training-{stack}-seed", 60, 2,
              f"{_TF} tencentcloud/services/cbs/resource_tc_cbs_storage.go:80"),
    NameLimit("tencentcloud:Cbs/snapshot:Snapshot", "snapshotName", "gpu-training-{stack}-encrypted-seed", 60, 2,
              f"{_TF} tencentcloud/services/cbs/resource_tc_cbs_snapshot.go:34"),
    NameLimit("tencentcloud:Placement/group:Group", "name", "gpu-training-{stack}", 60, 1,
              f"{_TF} tencentcloud/services/cvm/resource_tc_placement_group.go:27"),
    NameLimit("tencentcloud:Instance/instance:Instance", "instanceName", "gpu-training-{stack}-{index}", 128, 2,
              f"{_TF} tencentcloud/services/cvm/resource_tc_instance.go:66"),
    NameLimit("tencentcloud:Ccn/instance:Instance", "name", "gpu-training-{stack}", 60, 1,
              f"{_TF} tencentcloud/services/ccn/resource_tc_ccn.go:31"),
    NameLimit("tencentcloud:Cfs/accessGroup:AccessGroup", "name", "gpu-training-{stack}", 64, 1,
              f"{_TF} tencentcloud/services/cfs/resource_tc_cfs_access_group.go:28"),
    NameLimit("tencentcloud:Vpc/instance:Instance", "name", "gpu-training-{stack}", 60, 1,
              f"{_TF} tencentcloud/services/vpc/resource_tc_vpc.go:32"),
    NameLimit("tencentcloud:Subnet/instance:Instance", "name", "gpu-training-{stack}-{index}", 60, 1,
              f"{_TF} tencentcloud/services/vpc/resource_tc_subnet.go:41"),
    NameLimit("tencentcloud:Security/group:Group", "name", "gpu-training-{stack}", 60, 1,
              f"{_TF} tencentcloud/services/vpc/resource_tc_security_group.go:30"),
)

# The placement group multi-node stacks' nodes go in (compute.py: placement.Group type HOST). No
# published number: the CVM doc says the most instances a group holds differ by layer (HOST, SW, RACK)
# and shows them in the console; the API gives the account's own as a quota.
PLACEMENT = Placement(
    construct="spread placement group of type HOST (placement.Group)",
    keeps="each node on a physical host of its own",
    members=None,
    source="not published: CVM doc Placement Group (https://intl.cloud.tencent.com/document/product/213/15486,"
           " rules 5-6: the limit differs by layer, see the console); the account's own is CvmInHostGroupQuota of"
           " DescribeDisasterRecoverGroupQuota (https://cloud.tencent.com/document/api/213/17811)",
)

def reclaim_notice(spec) -> ReclaimNotice:
    return ReclaimNotice("spot/termination-time on metadata.tencentyun.com (no token), 'YYYY-MM-DD hh:mm:ss' in UTC+8,"
                         " polled by the node agent", "2 minutes", 120,
                         "CVM doc 213/17817 (spot FAQ): 'Two minutes before the interruption, we will notify you in"
                         " the form of metadata'; the format: CVM doc 213/32487")

PROFILE = ProviderProfile(
    name="tencentcloud",
    stack_prefix="tc-",  # `gpu-training init`'s stack names, as stacks/Pulumi.tc-*.yaml
    display_name="Tencent Cloud",
    region_key="tencentcloud:region",
    config_sdk="tencentcloud_iac_pulumi",  # its config/vars.py names the keys of the tencentcloud: namespace
    currency="CNY",
    credential_env=("TENCENTCLOUD_",),  # the Pulumi provider's and the SDKs' variables
    shared_fs=SharedStorage(
        kinds={
            TURBO: "CFS Turbo, High-Performance (TP): parallel file system reached over a CCN, Lustre client",
        },
        parallel=TURBO,
        default_gb={TURBO: TURBO_MIN_GIB},
        min_gb={TURBO: TURBO_MIN_GIB},
    ),
    disks=Disks(
        ssd_categories=("CLOUD_HSSD", "CLOUD_BSSD", "CLOUD_SSD"),
        sizes={category: (DISK_MIN_GIB, DISK_MAX_GIB) for category in ("CLOUD_HSSD", "CLOUD_BSSD", "CLOUD_SSD")},
        refused_categories={
            "CLOUD_BASIC": "basic cloud disk: HDD",
            "CLOUD_PREMIUM": "premium cloud disk: HDD with an SSD cache, too slow for training data",
        },
        data_disk=data_disk,
    ),
    object_storage=ObjectStorage(
        example_bucket="my-gpu-training-1250000000",  # <name>-<APPID>, with the APPID of COS's docs
        store=object_store,
    ),
    node=NodeEnvironment(
        metadata_endpoint="http://metadata.tencentyun.com",
        apt_mirror="http://mirrors.tencentyun.com",
        pip_index="http://mirrors.tencentyun.com/pypi/simple",
        requirements=("boto3", "tenacity", "fastcrc", "tencentcloud-sdk-python-common", "tencentcloud-sdk-python-cvm"),
        user_data=UserDataLimit(16 * 1024, "base64", "tencentcloud-iac-pulumi 0.2.3 cvm Instance.user_data: 'Must be"
                                " base64 encoded and up to 16 KB.'"),
        default_image_note=("the first Tencent Cloud public Ubuntu 22.04 image for the type (images.get_instance); set"
                            " gpu-training:image to an image with the GPU driver preinstalled and the bootstrap skips"
                            " the driver install"),
        image_ids=ImageIds(
            forms=((r"img-[A-Za-z0-9]+", "img-... (a public, custom, shared or Marketplace image, e.g. img-gvbnzy6f)"),),
            source="tencentcloud-sdk-python-cvm 3.1.178 cvm/v20170312 RunInstancesRequest.ImageId: '格式形如img-xxx'"
                   " (public, custom, shared and Marketplace images alike); DescribeImagesRequest.ImageIds: e.g."
                   " img-gvbnzy6f"),
    ),
    spot=Spot(
        discount=0.2,
        discount_source=("Tencent CVM doc 213/15373 (2024): spot is typically 3% to 20% of the pay-as-you-go"
                         " price; the upper bound is used as the estimate"),
        notice=reclaim_notice,
    ),
    rules=Rules(
        unsupported={
            "kubernetes": ("the Kubernetes path runs on ACK only so far; TKE (kubernetes.Cluster + NodePool in"
                           " tencentcloud-iac-pulumi) is not built yet: docs/kubernetes.md, 'TKE: not yet'"),
            "spotFallback=true": ("tencentcloud-iac-pulumi 0.2.3's as_.ScalingGroup exposes no mixed spot/pay-as-you-go"
                                  " allocation, so pay-as-you-go cannot fill missing spot capacity; widen the pool"
                                  " with spotZones, or use billing: on-demand"),
            "dataDiskCategory=CLOUD_TSSD": ("Tremendous SSD is sold only with some storage and standard families"
                                            " (S5se, S6, M6, SA3, ...), not with GPU instances; the extreme tier uses"
                                            " CLOUD_HSSD with extra throughput instead"),
            "dataDiskCategory=LOCAL_NVME": ("local NVMe comes with the instance type itself, not as a CBS data disk;"
                                            " the catalog's GPU families have none"),
        },
        checks=checks,
        warnings=warnings,
    ),
    egress=Egress(routes=routes, endpoint_rules=endpoint_rules, cloud_api_default=cloud_api_default),
    billing=Billing(keeps_billing=keeps_billing, bills_nothing_alone=BILLS_NOTHING_ALONE),
    naming=Naming(limits=NAME_LIMITS),
    interconnect=Interconnect(placement=PLACEMENT),
)
