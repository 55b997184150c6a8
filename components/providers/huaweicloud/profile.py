"""Huawei Cloud's declared capabilities, disk classes, endpoints and value rules (pure data, no SDK import).

Sources (docs/huaweicloud.md lists them with links). `TF` below is
huaweicloud/terraform-provider-huaweicloud at tag v1.73.3 (commit 7cb68681), the provider
pulumi-huaweicloud 0.0.12 is bridged from (bridge.yaml):
- EVS disk classes and the V2 classes' IOPS/throughput rules: TF docs/resources/compute_instance.md
  (data_disks: GPSSD2 iops 3,000-128,000 and <= 500 x GiB, throughput 125-1,000 MiB/s and <= iops/4;
  ESSD2 iops 100-256,000 and <= 1,000 x GiB, "only support in postpaid charging mode"), evs_volume.md.
- SFS Turbo HPC sizes: TF docs/resources/sfs_turbo.md:95-98 (1,228-1,048,576 GB for 40M-1000M
  bandwidth, "a multiple of 1.2TiB, ... rounded down after converting to GiB").
- OBS: endpoint obs.<region>.myhuaweicloud.com and bucket domain <bucket>.<endpoint> (OBS developer
  guide "Endpoints and Access Domain Names", obs_06_0007); V4 signatures supported, only
  UNSIGNED-PAYLOAD and STREAMING payloads, and boto3 >= 1.36 must send checksums only when required
  (OBS FAQ obs_faq_0274 "How do I use V4 signatures to access OBS").
- ECS metadata: http://169.254.169.254, OpenStack and EC2 styles, `securitykey` for the agency's
  temporary keys (ECS user guide ecs_03_0166 "Obtaining Metadata").
- Names: TF docs/resources/*.md at v1.73.3 (the provider itself validates none of them: provider_facts.json).
- Ascend 910B: only as bare-metal flavors (physical.kat2*), and huaweicloud_bms_instance accepts
  charging_mode prePaid only (TF docs/resources/bms_instance.md): refused here (docs/huaweicloud.md, "Ascend").
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Optional

from components.providers.profile_records import (Billing, DataDisk, Disks, Egress, EndpointRule, FREE, ImageIds,
                                                  Interconnect, Lingering, NO_FLEXIBLE_CHECKSUMS, NameLimit, Naming,
                                                  NodeEnvironment, ObjectStorage, ObjectStore, Placement,
                                                  ProviderProfile, ReclaimNotice, Route, Rules, SharedStorage, Spot,
                                                  StoreVerification, UserDataLimit, has_public_address, inbound_note,
                                                  transfer_seconds, uploaded_files)

_TF = "huaweicloud/terraform-provider-huaweicloud@v1.73.3 (7cb68681)"

# ---------------------------------------------------------------- disks (EVS)
# Tier disk class -> EVS type. GPSSD2 lets IOPS and throughput be bought apart from the size, and is
# sold with pay-per-use and spot alike (ESSD2 is pay-per-use only), so the extreme tier uses it.
_CATEGORY_FOR_CLASS = {"standard": "GPSSD", "high": "ESSD", "extreme": "GPSSD2"}
SSD_CATEGORIES = ("GPSSD", "SSD", "ESSD", "GPSSD2", "ESSD2")
DISK_MIN_GIB, DISK_MAX_GIB = 10, 32768  # TF docs/resources/compute_instance.md, data_disks.size
GPSSD2_IOPS = (3000, 128000, 500)  # (min, max, per GiB)
GPSSD2_THROUGHPUT = (125, 1000)  # MiB/s, and at most iops / 4
ESSD2_IOPS = (100, 256000, 1000)


def disk_iops(category: str, size_gb: int) -> Optional[int]:
    """The IOPS a V2 disk is bought with: the most its size allows (GPSSD2, ESSD2); None for the others."""
    low, high, per_gib = {"GPSSD2": GPSSD2_IOPS, "ESSD2": ESSD2_IOPS}.get(category, (None, None, None))
    if low is None:
        return None
    return max(low, min(high, per_gib * size_gb))


def disk_throughput(category: str, size_gb: int) -> Optional[int]:
    """The throughput (MiB/s) a GPSSD2 disk is bought with: the most its IOPS allows; None for the others."""
    if category != "GPSSD2":
        return None
    return max(GPSSD2_THROUGHPUT[0], min(GPSSD2_THROUGHPUT[1], disk_iops(category, size_gb) // 4))


def data_disk(disk_class: str, size_gb: int, category: Optional[str]) -> DataDisk:
    chosen = category or _CATEGORY_FOR_CLASS[disk_class]
    iops, throughput = disk_iops(chosen, size_gb), disk_throughput(chosen, size_gb)
    level = None
    if iops is not None:
        level = f"{iops} IOPS" + (f", {throughput} MiB/s" if throughput is not None else "")
    return DataDisk(chosen, level, size_gb)


# ---------------------------------------------------------------- object storage (OBS)
_OBS_V4 = "https://support.huaweicloud.com/intl/zh-cn/obs_faq/obs_faq_0274.html"


# OBS checks the Content-MD5 of a PUT and of each part and refuses other bytes with 400 BadDigest
# ("Uploading Objects - PUT", "Uploading Parts"); with server-side encryption, which the checkpoint bucket
# has (storage.py), the ETag is not the object's MD5, while the Content-MD5 check holds encrypted or not
# ("Server-Side Encryption Overview": 无论是否使用服务端加密上传对象,请求消息头中加入Content-MD5参数时,
# OBS均会对对象进行MD5校验). So the store's word is its acceptance of each request's MD5 (content-md5),
# not the ETag, and no upload is read back.
OBS_VERIFICATION = StoreVerification("content-md5", content_md5=True, sources=(
    "https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0080.html",
    "https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0099.html",
    "https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0105.html",
    _OBS_V4, *NO_FLEXIBLE_CHECKSUMS))


def object_store(region: str) -> ObjectStore:
    # OBS speaks the S3 API with SigV4 and virtual-hosted buckets; ECSs in the region reach the same
    # domain over Huawei's internal network.
    return ObjectStore(f"https://obs.{region}.myhuaweicloud.com", "virtual", "s3v4", verification=OBS_VERIFICATION)


BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")  # OBS bucket naming rules (3-63, no '..')

# ---------------------------------------------------------------- shared storage (SFS Turbo HPC)
TURBO = "sfsturbo"
TURBO_SHARE_TYPE = "HPC"
TURBO_HPC_BANDWIDTH = "250M"  # MB/s per TiB; 40M-1000M share the 1,228 GiB minimum
TURBO_STEP_TIB = 1.2
TURBO_MIN_GIB, TURBO_MAX_GIB = 1228, 1048576
TURBO_DEFAULT_GIB = 4915  # 4.8 TiB: about 1.2 GB/s at 250M, the docs' own example size


def turbo_sizes_near(size_gb: int) -> tuple[int, int]:
    """The valid HPC sizes just below and above `size_gb`: floor(k x 1.2 TiB in GiB)."""
    k = max(1, math.floor(size_gb / (TURBO_STEP_TIB * 1024)))
    return math.floor(k * TURBO_STEP_TIB * 1024), math.floor((k + 1) * TURBO_STEP_TIB * 1024)


def is_turbo_size(size_gb: int) -> bool:
    k = round(size_gb / (TURBO_STEP_TIB * 1024))
    return k >= 1 and math.floor(k * TURBO_STEP_TIB * 1024) == size_gb


# ---------------------------------------------------------------- egress
# Nodes get a pay-per-use EIP billed by traffic for outbound calls (the ECS and AS APIs for
# self-release, the CUDA repository, PyPI); the security group admits members and sshAllowCidrs
# only. The EIP is released with the node (delete_eip_on_termination, AS delete_publicip).
PUBLIC_BANDWIDTH_MBPS = 100


def public_bandwidth_mbps(spec) -> int:
    return PUBLIC_BANDWIDTH_MBPS if has_public_address(spec) else 0


def routes(spec) -> tuple[Route, ...]:
    vpc = Route("vpc", "inside the stack's VPC: instance metadata, OBS in the region over Huawei's internal network,"
                " SFS Turbo in the VPC", "no public traffic fee")
    if not has_public_address(spec):
        return (vpc,)
    return (vpc, Route(
        "internet", f"each node's own EIP, outbound only (5_bgp, billed by traffic, capped at {PUBLIC_BANDWIDTH_MBPS}"
        " Mbit/s); " + inbound_note(spec),
        "per GB of outbound traffic while a node runs, rate unknown here (EIP price list); the EIP is released"
        " with the node",
        evidence=(("huaweicloud:Ecs/instance:Instance", "bandwidth"),
                  ("huaweicloud:As/configuration:Configuration", "instanceConfig.publicIp"))))


def endpoint_rules(region: str) -> tuple[EndpointRule, ...]:
    r = region.replace(".", r"\.")
    return (
        EndpointRule(r"^169\.254\.169\.254$", ("vpc",), "the ECS metadata service (ECS user guide ecs_03_0166)"),
        EndpointRule(rf"^([a-z0-9.-]+\.)?obs\.{r}\.myhuaweicloud\.com$", ("vpc", "internet"),
                     "OBS in the stack's region: ECSs in the region reach it over the internal network (OBS developer"
                     " guide obs_06_0007), else through the node's EIP"),
        EndpointRule(r".*", ("internet",), "outside the VPC: reached through a public address only"),
    )


def cloud_api_default(spec) -> tuple[str, ...]:
    """What the node agent calls with endpoints.cloudApi unset: the ECS (and AS) API of the region."""
    hosts = (f"ecs.{spec.region}.myhuaweicloud.com",)
    return hosts + ((f"as.{spec.region}.myhuaweicloud.com",) if spec.spot and pooled(spec) else ())


# ---------------------------------------------------------------- value rules
def checks(spec) -> Iterable[tuple[str, str]]:
    bucket = spec.checkpoint.bucket
    if bucket and (not BUCKET_RE.match(bucket) or ".." in bucket):
        yield ("checkpoint.bucket", f"{bucket!r} is not an OBS bucket name: 3-63 lowercase letters, digits, '-' and"
                                    " '.', starting and ending with a letter or digit")
    if spec.shared_storage == TURBO and not is_turbo_size(spec.shared_storage_gb):
        low, high = turbo_sizes_near(spec.shared_storage_gb)
        yield ("sharedStorageGb", f"{spec.shared_storage_gb} is not an SFS Turbo HPC size: a multiple of 1.2 TiB in"
                                  f" GiB, rounded down ({TURBO_MIN_GIB}, 2457, 3686, 4915, ...), at most {TURBO_MAX_GIB};"
                                  f" e.g. {low} or {high} ({_TF} docs/resources/sfs_turbo.md:95)")
    if spec.spot and spec.data_disk.category == "ESSD2":
        yield ("dataDiskCategory", "ESSD2 is sold with pay-per-use only (TF compute_instance.md: 'only support in"
                                   " postpaid charging mode'); use GPSSD2 for spot nodes, or billing: on-demand")


AS_MAX_FLAVORS = 10  # "A maximum of `10` flavors can be selected" (TF docs/resources/as_configuration.md:202)


def capped_spot(spec) -> bool:
    """Spot with spotMaxPricePerHour: single spot ECSs with `spot_maximum_price` instead of the AS pool,
    whose configuration takes no price (TF resource_huaweicloud_compute_instance.go:432-436 has it;
    as_configuration's instance_config has charging_mode spot only)."""
    return bool(spec.spot) and spec.spot_max_price is not None


def pooled(spec) -> bool:
    return not capped_spot(spec)


def warnings(spec) -> Iterable[tuple[str, str]]:
    if spec.spot and pooled(spec) and len(spec.pool_types) > AS_MAX_FLAVORS:
        kept = ", ".join(row.name for row in spec.pool_types[:AS_MAX_FLAVORS])
        yield ("billing", f"spot: an AS configuration takes at most {AS_MAX_FLAVORS} flavors; the pool uses {kept}"
                          f" and leaves out {len(spec.pool_types) - AS_MAX_FLAVORS} more")
    if capped_spot(spec):
        yield ("spotMaxPricePerHour", f"capped spot: {spec.nodes} single spot ECS(s) (charging_mode spot,"
                                      f" spot_maximum_price {spec.spot_max_price:g} per hour) instead of the AS spot pool,"
                                      " whose configuration takes no price. NO cloud-side TTL: Huawei spot ECSs take no"
                                      " auto_terminate_time (TF compute_instance.md: 'only support in postpaid charging"
                                      " mode'), so only the node agent's own TTL and scripts/run.py's destroy end them."
                                      " A reclaimed node is not replaced" +
                                      (f"; spotZones ({', '.join(spec.spot_zones)}) are not used: the nodes start in"
                                       " the stack's zone" if spec.spot_zones else "") +
                                      ". Remove spotMaxPricePerHour for the pool (market price, at most pay-per-use)")
    elif spec.spot:
        yield ("billing", "spot: Huawei spot ECSs take no auto_terminate_time (TF compute_instance.md: 'only supported in"
                          " postpaid charging mode'); the pool's scheduled scale-to-zero (AS policy at maxHours) is the"
                          " cloud-side TTL, and the node agent's own TTL plus scripts/run.py's destroy are the backstop"
                          " (the reclaim notice, its lead time and the work a reclaim can lose: the reclaim section)."
                          " When training ends the node agent pauses the AS pool, and a later `pulumi up` of this stack"
                          " leaves it paused (the program never re-enables it): a retired pool starts no nodes. A new run"
                          " is a new pool: `gpu-training down`, then `gpu-training up`")
    if spec.nodes > 1:
        yield ("nodes", "Huawei's ECS server groups only spread nodes (policy anti-affinity; TF"
                        " compute_servergroup.md): no low-latency or cluster placement exists for these flavors, so"
                        " inter-node traffic runs over the VPC at the flavor's network bandwidth")
    if has_public_address(spec):
        seconds_per_gb = transfer_seconds(1, PUBLIC_BANDWIDTH_MBPS)
        yield ("egress", f"package downloads (the CUDA repository, PyPI: the framework's wheels) reach each node through"
                         f" its own EIP, capped at {PUBLIC_BANDWIDTH_MBPS} Mbit/s: at least {seconds_per_gb:.0f} s per GB,"
                         " on every node at every boot (a reclaimed spot node's replacement too); OBS traffic"
                         " (checkpoints, the data set) stays inside the VPC. Huawei's mirror (repo.huaweicloud.com) is"
                         " not used: its reachability without an EIP is unverified. An image with the GPU driver"
                         " preinstalled (gpu-training:image) skips the driver's download")
    yield ("identity", "the node agency's release permission (ecs:cloudServers:delete) cannot be limited to this"
                       " stack's tag: tag conditions (g:ResourceTag) need IAM 5.0 identity policies, which"
                       " pulumi-huaweicloud 0.0.12 does not map; it is granted in this region's project only, and"
                       " the node agent deletes only its own instance id (docs/huaweicloud.md, 'Node agency')")


# ---------------------------------------------------------------- billing
def keeps_billing(spec) -> tuple[Lingering, ...]:
    items = [Lingering("KMS key that encrypts the stack's disks", "huaweicloud:Dew/key:Key", "1 custom key",
                       "per key-month (DEW price list)", None,
                       "pulumi destroy (the key then waits 7 days pending deletion, which is not charged: DEW user"
                       " guide 'Deleting a Key', https://support.huaweicloud.com/intl/es-us/ally-visitor-1-usermanual-kms/"
                       "dew_01_0031.html)")]
    if spec.shared_storage == TURBO:
        items.append(Lingering(f"SFS Turbo file system ({TURBO_SHARE_TYPE}, {TURBO_HPC_BANDWIDTH})",
                               "huaweicloud:Sfs/turbo:Turbo", f"{spec.shared_storage_gb:,} GiB",
                               "provisioned capacity per GiB-hour, pay-per-use", None, "pulumi destroy",
                               prices="sharedStorage"))
    items.append(uploaded_files("huaweicloud:Obs/bucketObject:BucketObject", unit="GB"))
    return tuple(items)


BILLS_NOTHING_ALONE = {
    "huaweicloud:Vpc/vpc:Vpc": FREE,
    "huaweicloud:Vpc/subnet:Subnet": FREE,
    "huaweicloud:Vpc/secgroup:Secgroup": FREE,
    "huaweicloud:Vpc/secgroupRule:SecgroupRule": "a security group rule",
    "huaweicloud:Iam/agency:Agency": "IAM: no charge",
    "huaweicloud:Iam/role:Role": "IAM: no charge",
    "huaweicloud:Ecs/keypair:Keypair": FREE,
    "huaweicloud:Ecs/servergroup:Servergroup": "placement only",
    "huaweicloud:Ecs/instance:Instance": "bills while it runs; deleted by the agent or at maxHours (auto_terminate_time),"
                                         " its EIP and disks with it",
    "huaweicloud:As/configuration:Configuration": "a launch configuration: the pool's nodes bill, not the configuration",
    "huaweicloud:As/group:Group": "the group bills nothing; its spot nodes bill while they run (the scheduled policy"
                                  " empties it at maxHours, the agent at the end of the run)",
    "huaweicloud:As/policy:Policy": "a scheduled policy",
    "huaweicloud:Obs/bucket:Bucket": "storage bills the data in it (the checkpoints); kept on destroy",
}

NAME_LIMITS = (
    NameLimit("huaweicloud:Vpc/vpc:Vpc", "name", "gpu-training-{stack}", 64, 1, f"{_TF} docs/resources/vpc.md:46"),
    NameLimit("huaweicloud:Vpc/subnet:Subnet", "name", "gpu-training-{stack}-{index}", 64, 1,
              f"{_TF} docs/resources/vpc_subnet.md:69"),
    NameLimit("huaweicloud:Ecs/instance:Instance", "name", "gpu-training-{stack}-{index}", 64, 1,
              f"{_TF} docs/resources/compute_instance.md:203"),
    NameLimit("huaweicloud:Iam/agency:Agency", "name", "gpu-training-{stack}-node", 64, 1,
              f"{_TF} docs/resources/identity_agency.md:37"),
    NameLimit("huaweicloud:As/group:Group", "scalingGroupName", "gpu-training-{stack}", 64, 1,
              f"{_TF} docs/resources/as_group.md:117"),
    NameLimit("huaweicloud:As/configuration:Configuration", "scalingConfigurationName", "gpu-training-{stack}", 64, 1,
              f"{_TF} docs/resources/as_configuration.md:185"),
    NameLimit("huaweicloud:As/policy:Policy", "scalingPolicyName", "gpu-training-{stack}-ttl", 64, 1,
              f"{_TF} docs/resources/as_policy.md:108"),
    NameLimit("huaweicloud:Sfs/turbo:Turbo", "name", "gpu-training-{stack}", 64, 4,
              f"{_TF} docs/resources/sfs_turbo.md:88"),
)

ASCEND_REFUSED = (
    "Ascend 910B training servers are bare-metal flavors on Huawei Cloud (physical.kat2*), and the BMS API takes"
    " prePaid (monthly/yearly) billing only (TF bms_instance.md): a destroy-after-the-run stack would commit you"
    " to at least a month. Train on Ascend 910B as a pay-per-use ModelArts training job instead: add"
    " `platform: {kind: modelarts}` to the stack (stacks/Pulumi.hw-large-910b-modelarts.yaml, docs/platforms.md),"
    " or run the bootstrap's CANN path on your own Atlas 800 servers (docs/huaweicloud.md, 'Ascend')")


def _platforms():
    """The platform path's targets on Huawei Cloud (components/platforms; imported late: it loads data files)."""
    from components.providers.huaweicloud.modelarts.job import OFFER

    return {OFFER.kind: OFFER}

# The ECS group (server group) multi-node stacks' nodes go in (compute.py: ecs.Servergroup, policy
# anti-affinity, the only one ECS groups support). No published number: it differs by region.
PLACEMENT = Placement(
    construct="anti-affinity ECS group (ecs.Servergroup)",
    keeps="each node on a physical host of its own",
    members=None,
    source="not published: ECS doc Managing ECS Groups, Constraints: the maximum number of ECSs in an ECS group"
           " varies by region, shown on the ECS Group page"
           " (https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0150.html); the account's own is"
           " maxServerGroupMembers of GET /v1/{project_id}/cloudservers/limits"
           " (https://support.huaweicloud.com/intl/en-us/api-ecs/ecs_02_0801.html)",
)

def reclaim_notice(spec) -> ReclaimNotice:
    """Huawei's spot-price ECS notice (node_runtime.py, docs/huaweicloud.md "Reclaim notice")."""
    return ReclaimNotice(
        "/openstack/latest/spot/instance-action on the node's metadata service ({\"action\", \"timestamp\"}, a"
        " zone-less time read as UTC+8 and as UTC, the earlier one ahead taken), polled by the node agent; the ECS"
        " API's status of the node (ShowServer, every 5 s) as the fallback", "about 5 minutes", 300,
        "huaweicloudDocs/ecs@bd661adb cn.zh-cn/用户指南/元数据获取.md ('如果您的竞价实例即将被中断，该接口会返回预计关机的"
        "时间') and 购买竞价计费型实例.md ('系统发出即将释放云服务器资源的通知，并在约5分钟后自动中断回收', 方式一: 元数据spot)",
        "spot block (竞享) ECSs, which this program does not create, are released 'within seconds' (竞享计费型实例.md:"
        " '实例被中断时会秒级释放'): no lead time")

PROFILE = ProviderProfile(
    name="huaweicloud",
    stack_prefix="hw-",  # `gpu-training init`'s stack names, as stacks/Pulumi.hw-*.yaml
    display_name="Huawei Cloud",
    region_key="huaweicloud:region",
    config_sdk="pulumi_huaweicloud",  # its config/vars.py names the keys of the huaweicloud: namespace
    currency="CNY",
    credential_env=("HW_", "HUAWEICLOUD_"),  # the Pulumi provider (HW_ACCESS_KEY, ...) and huaweicloudsdk
    shared_fs=SharedStorage(
        kinds={TURBO: f"SFS Turbo HPC ({TURBO_HPC_BANDWIDTH} per TiB): NFS in the stack's VPC"},
        parallel=TURBO,
        default_gb={TURBO: TURBO_DEFAULT_GIB},
        min_gb={TURBO: TURBO_MIN_GIB},
    ),
    disks=Disks(
        ssd_categories=SSD_CATEGORIES,
        sizes={category: (DISK_MIN_GIB, DISK_MAX_GIB) for category in SSD_CATEGORIES},
        refused_categories={
            "SAS": "high I/O (SAS): HDD-class throughput, too slow for training data",
            "SATA": "common I/O (SATA): HDD, retired class",
        },
        data_disk=data_disk,
    ),
    object_storage=ObjectStorage(example_bucket="my-gpu-training", store=object_store),
    node=NodeEnvironment(
        metadata_endpoint="http://169.254.169.254",
        apt_mirror=None,  # Huawei's mirror (repo.huaweicloud.com) is public; not confirmed reachable in-VPC here
        pip_index=None,
        requirements=("boto3", "tenacity", "huaweicloudsdkcore", "huaweicloudsdkecs", "huaweicloudsdkas"),
        user_data=UserDataLimit(32 * 1024, "raw", "huaweicloudsdkecs 3.1.219 PostPaidServer.user_data (ECS API"
                                " 'Creating an ECS'): base64-encoded, 'the content before encoding at most 32KB';"
                                " text or gzip"),
        # ECSs hold it at the top; the spot pool's AS configuration inside instance_config.
        user_data_inputs=("userData", "instanceConfig.userData"),
        default_image_note=("the newest Huawei public Ubuntu 22.04 image for the flavor (ims.get_image); set"
                            " gpu-training:image to an image with the GPU driver preinstalled and the bootstrap skips"
                            " the driver install"),
        image_ids=ImageIds(
            forms=((r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
                    "a UUID (an IMS image id, e.g. 67f433d8-ed0e-4321-a8a2-a71838539e09)"),),
            source="huaweicloudsdkecs 3.1.219 PostPaidServer.image_ref: the image's id, 'ID格式为通用唯一识别码"
                   "（Universally Unique Identifier，简称UUID）', from IMS ListImages"),
    ),
    spot=Spot(
        discount=1.0,
        discount_source=("unknown: no dated Huawei spot/pay-per-use price ratio was found; spot is priced as"
                         " pay-per-use until a source says otherwise"),
        pool_for=pooled,  # spotMaxPricePerHour: single capped spot ECSs (compute.py), no pool
        notice=reclaim_notice,
    ),
    rules=Rules(
        unsupported={
            "gpu=Ascend-910B": ASCEND_REFUSED,
            "spotFallback=true": ("an AS configuration has one charging mode: pay-per-use cannot fill missing spot"
                                  " capacity; widen the pool with spotZones, or use billing: on-demand"),
        },
        checks=checks,
        warnings=warnings,
    ),
    egress=Egress(routes=routes, endpoint_rules=endpoint_rules, cloud_api_default=cloud_api_default),
    billing=Billing(keeps_billing=keeps_billing, bills_nothing_alone=BILLS_NOTHING_ALONE),
    naming=Naming(limits=NAME_LIMITS),
    interconnect=Interconnect(placement=PLACEMENT),
    platforms=_platforms,
)
