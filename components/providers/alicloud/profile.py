"""Alibaba Cloud's declared capabilities, disk classes, endpoints and mirrors (pure data, no SDK import).

Sources: ECS doc "Instance metadata" (metadata service, hardened mode), OSS doc "Access OSS using an
AWS SDK" (S3 endpoint and signature), ECS doc "Alibaba Cloud mirrors" (in-VPC mirror), the ECS doc
"Elastic Block Storage performance: ESSDs" for the ESSD performance levels and their minimum sizes
(PL1 >= 20 GiB, PL2 >= 461 GiB, PL3 >= 1,261 GiB), pulumi-alicloud 4.0 nas.FileSystem docs (CPFS
capacity example 3,600 GiB; storage types advance_100/advance_200).
"""
from __future__ import annotations

from typing import Optional

from components.providers.profile_records import (Billing, DataDisk, Disks, Egress, EndpointRule, FREE, ImageIds,
                                                  Interconnect, KubernetesOffer, Lingering, NO_FLEXIBLE_CHECKSUMS,
                                                  NameLimit, Naming, NodeEnvironment, ObjectStorage, ObjectStore,
                                                  Placement, ProviderProfile, ReclaimNotice, Route, Rules,
                                                  SharedStorage, Spot, StoreVerification, UserDataLimit,
                                                  has_public_address, inbound_note, uploaded_files)
from components.providers.alicloud import registry

# CPFS: the storage type we create, and the regions whose NAS/CPFS API is open (CPFS API reference,
# "Request syntax", help.aliyun.com/zh/cpfs/request-syntax: the service endpoints nas.<region>.aliyuncs.com).
# CPFS is sold on the China site only (NAS API DescribeZones: "仅中国站支持 CPFS 文件系统"). Zones are
# checked at deploy time (network.py: nas.get_zones(file_system_type="cpfs") against the type's zones).
CPFS_STORAGE_TYPE = "advance_100"
CPFS_REGIONS = ("cn-hangzhou", "cn-beijing", "cn-shanghai", "cn-shenzhen", "cn-zhangjiakou", "cn-huhehaote",
                "cn-wulanchabu", "cn-chengdu", "cn-qingdao", "cn-heyuan", "ap-southeast-1")

# Tier disk class -> the ESSD performance level we want, and the smallest disk each level allows.
_LEVEL_FOR_CLASS = {"standard": "PL1", "high": "PL2", "extreme": "PL3"}
_LEVEL_MIN_GIB = {"PL0": 1, "PL1": 20, "PL2": 461, "PL3": 1261}
_ORDER = ["PL0", "PL1", "PL2", "PL3"]
# Data disk sizes (GiB) per category: pulumi-alicloud 4.0.0, ecs.InstanceDataDiskArgs.size ("cloud_ssd:
# [20, 32768]", "cloud_essd: [20, 32768]"; the same ranges on EcsInstanceSet's data disks). cloud_auto
# (ESSD AutoPL) has no range in those documents: unknown here, so not checked.
DATA_DISK_SIZES = {"cloud_essd": (20, 32768), "cloud_ssd": (20, 32768)}


def data_disk(disk_class: str, size_gb: int, category: Optional[str]) -> DataDisk:
    category = category or "cloud_essd"
    if category != "cloud_essd":
        # Other SSD categories (cloud_auto, cloud_ssd) have no performance level to choose.
        return DataDisk(category, None, size_gb)
    wanted = _LEVEL_FOR_CLASS[disk_class]
    level = wanted
    while _LEVEL_MIN_GIB[level] > size_gb:
        level = _ORDER[_ORDER.index(level) - 1]
    note = None
    if level != wanted:
        note = (f"ESSD {wanted} needs at least {_LEVEL_MIN_GIB[wanted]} GiB; a {size_gb} GiB disk gets {level}."
                f" Raise dataDiskGb to {_LEVEL_MIN_GIB[wanted]} for {wanted}.")
    return DataDisk("cloud_essd", level, size_gb, note)


# ESSD performance per disk by level: (IOPS base, IOPS per GiB, IOPS cap, MB/s base, MB/s per GiB, MB/s cap),
# each figure min{base + per GiB x capacity, cap}. Source: ECS doc "ESSDs", "Specifications" table
# (https://www.alibabacloud.com/help/en/elastic-compute-service/latest/essds): PL0 min{1,800 + 12 x C,
# 10,000} IOPS, min{100 + 0.25 x C, 180} MB/s; PL1 min{1,800 + 50 x C, 50,000}, min{120 + 0.5 x C, 350};
# PL2 min{1,800 + 50 x C, 100,000}, min{120 + 0.5 x C, 750}; PL3 min{1,800 + 50 x C, 1,000,000},
# min{120 + 0.5 x C, 4,000}. Used by bench/data_read.py to throttle a stand-in disk the same way.
_ESSD_PERFORMANCE = {"PL0": (1800, 12, 10_000, 100, 0.25, 180), "PL1": (1800, 50, 50_000, 120, 0.5, 350),
                     "PL2": (1800, 50, 100_000, 120, 0.5, 750), "PL3": (1800, 50, 1_000_000, 120, 0.5, 4000)}
ESSD_PERFORMANCE_SOURCE = "https://www.alibabacloud.com/help/en/elastic-compute-service/latest/essds"


def data_disk_performance(disk: DataDisk) -> Optional[tuple[int, float]]:
    """(random IOPS, MB/s) the cloud documents for this data disk, or None where unknown here (not an ESSD)."""
    if disk.category != "cloud_essd" or disk.performance_level not in _ESSD_PERFORMANCE:
        return None
    iops0, iops_gib, iops_cap, mb0, mb_gib, mb_cap = _ESSD_PERFORMANCE[disk.performance_level]
    return min(iops0 + iops_gib * disk.size_gb, iops_cap), min(mb0 + mb_gib * disk.size_gb, mb_cap)


# OSS computes the CRC-64/XZ (ECMA-182) of every uploaded object, single-part or multipart, stores it
# and returns it as x-oss-hash-crc64ecma on PutObject, HeadObject and GetObject.
OSS_VERIFICATION = StoreVerification(
    "crc64ecma", header="x-oss-hash-crc64ecma",
    sources=("https://www.alibabacloud.com/help/en/oss/user-guide/check-data-transmission-integrity-by-using-crc-64",
             *NO_FLEXIBLE_CHECKSUMS))


def object_store(region: str) -> ObjectStore:
    # OSS rejects the chunked payload signing that SigV4 uploads use: sign with "s3" (V2). Nodes use
    # the region's internal S3 endpoint (OSS doc "Access OSS using an AWS SDK": public
    # https://s3.oss-{region}.aliyuncs.com, internal (VPC) https://s3.oss-{region}-internal.aliyuncs.com);
    # scripts/run.py, on the user's machine, the public one.
    return ObjectStore(f"https://s3.oss-{region}.aliyuncs.com", "virtual", "s3",
                       node_endpoint=f"https://s3.oss-{region}-internal.aliyuncs.com", verification=OSS_VERIFICATION)


# ---------------------------------------------------------------- egress (components/egress.py)
# Outbound path for what has no in-VPC endpoint (the CUDA repository, downloads from other regions):
# each node's own public IPv4 address, pay-by-traffic, not a NAT gateway. Why: ECS doc "Public
# bandwidth" (alibabacloud.com/help/en/ecs/public-bandwidth): outbound traffic is billed per GB,
# inbound traffic and the address itself are not, and pay-as-you-go instances allow up to 100 Mbit/s;
# the address goes with the node, so nothing bills once the nodes release themselves. A NAT gateway
# and its EIP bill by the hour until `pulumi destroy`, nodes or not. Inbound stays closed: the
# security group admits only members and sshAllowCidrs.
PUBLIC_BANDWIDTH_MBPS = 100
INTERNET_CHARGE_TYPE = "PayByTraffic"


def public_bandwidth_mbps(spec) -> int:
    """internet_max_bandwidth_out of every node: the cap on outbound traffic (0: no public address)."""
    return PUBLIC_BANDWIDTH_MBPS if has_public_address(spec) else 0


def routes(spec) -> tuple[Route, ...]:
    vpc = Route("vpc", "inside the stack's VPC: instance metadata, OSS internal endpoint, ECS VPC endpoint,"
                " in-VPC mirrors",
                "not billed: traffic inside a region over the internal network is free (ECS doc 'Public bandwidth')")
    if spec.kubernetes:  # ACK's nodes have no public address: the NAT gateway ACK creates (new_nat_gateway)
        return (vpc, Route(
            "internet", "the NAT gateway and EIP that ACK creates for the cluster's nodes (new_nat_gateway), outbound"
            " only: image pulls, pip, STS for the pods' RRSA credentials",
            "the NAT gateway and its EIP by the hour until `pulumi destroy` (keepsBilling), plus traffic; rates"
            " unknown here (NAT Gateway price list)",
            evidence=(("alicloud:cs/managedKubernetes:ManagedKubernetes", "newNatGateway"),)))
    if not has_public_address(spec):
        return (vpc,)
    return (vpc, Route(
        "internet", f"each node's own public IPv4 address, outbound only ({INTERNET_CHARGE_TYPE},"
        f" capped at {PUBLIC_BANDWIDTH_MBPS} Mbit/s); " + inbound_note(spec),
        "per GB of outbound traffic while a node runs, rate unknown here (region price list); inbound"
        " traffic (downloads) and the address are not billed (ECS doc 'Public bandwidth'); nothing bills"
        " once the node is released",
        evidence=(("alicloud:ecs/instance:Instance", "internetMaxBandwidthOut"),
                  ("alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", "internetMaxBandwidthOut"))))


def endpoint_rules(region: str) -> tuple[EndpointRule, ...]:
    r = region.replace(".", r"\.")
    return (
        EndpointRule(r"^100\.100\.100\.200$", ("vpc",),
                     "the instance metadata service, link-local in every VPC (ECS doc 'Instance metadata')"),
        EndpointRule(r"^mirrors\.cloud\.aliyuncs\.com$", ("vpc",),
                     "Alibaba's in-VPC mirror of apt and PyPI (Alibaba open source mirror site: the VPC"
                     " address of mirrors.aliyun.com)"),
        EndpointRule(rf"^([a-z0-9.-]+\.)?(s3\.)?oss-{r}-internal\.aliyuncs\.com$", ("vpc",),
                     "the region's OSS internal endpoint (OSS doc 'Regions and endpoints')"),
        EndpointRule(rf"^[a-z]+-vpc\.{r}\.aliyuncs\.com$", ("vpc",),
                     "the region's VPC endpoint of a cloud API (ECS doc 'Endpoints': ecs-vpc.<region>.aliyuncs.com;"
                     " 'Call API operations over the internal network')"),
        EndpointRule(r".*", ("internet",), "outside the VPC: reached through a public address only"),
    )


def cloud_api(region: str) -> str:
    """The ECS API the node agent calls (release, peers, pool retire): the region's VPC endpoint."""
    return f"https://ecs-vpc.{region}.aliyuncs.com"


def cloud_api_default(spec) -> tuple[str, ...]:
    """What the ECS SDK resolves with no endpoint given: the region's public endpoint (ECS doc 'Endpoints')."""
    return (f"ecs.{spec.region}.aliyuncs.com",)


# ---------------------------------------------------------------- billing (components/billing.py)
FILE_SYSTEM = "alicloud:nas/fileSystem:FileSystem"
MOUNT_TARGET = "alicloud:nas/mountTarget:MountTarget"
PAYG = "pay-as-you-go"


def warnings(spec):
    """What the documents say a stack cannot get; the deploy-time zone check decides for zones."""
    if spec.shared_storage == "cpfs" and spec.region not in CPFS_REGIONS:
        yield ("sharedStorage", f"CPFS in {spec.region}: not among the regions whose CPFS API is documented"
               f" ({', '.join(CPFS_REGIONS)}; CPFS API reference 'Request syntax'); `pulumi up` stops if no zone"
               " of the region sells it")
    if spec.shared_storage == "cpfs":
        yield ("sharedStorage", "CPFS is sold on the China site (aliyun.com) only (NAS API DescribeZones); an"
               " international-site account cannot create it")
    if spec.spot and spec.nodes > 1 and not spec.kubernetes:
        yield ("billing", "unverified without an account: the spot pool's launch template names a LowLatency"
               " deployment set, and the Chinese ECS doc 部署集 (https://www.alibabacloud.com/help/zh/doc-detail/"
               "91258.htm, 使用限制) has said that spot instances cannot be created in a deployment set, and that"
               " LowLatency keeps all instances in one zone (spotZones would then not be used). If the pool's"
               " launches fail, use billing: on-demand for placement, or nodes: 1")


def keeps_billing(spec) -> tuple[Lingering, ...]:
    """What bills after the nodes are gone, until `pulumi destroy`. Rates: none in the cited documents."""
    items = []
    if spec.shared_storage == "cpfs":
        items += [
            Lingering(f"CPFS file system ({CPFS_STORAGE_TYPE})", FILE_SYSTEM, f"{spec.shared_storage_gb:,} GiB",
                      f"provisioned capacity per GiB-hour, {PAYG}", None, "pulumi destroy", prices="sharedStorage"),
        ]
    elif spec.shared_storage == "nas":
        items.append(Lingering("NAS file system (Performance, NFS)", FILE_SYSTEM, "what is stored in it",
                               f"{PAYG} while it exists (NAS price list)", None, "pulumi destroy",
                               prices="sharedStorage"))
    items.append(uploaded_files("alicloud:oss/bucketObject:BucketObject"))
    if spec.kubernetes:  # ACK has no cluster TTL: all of this bills until the stack is destroyed
        until = "pulumi destroy (scripts/run.py destroys once every pod's marker says the data is saved)"
        k8s = spec.kubernetes
        items += [
            Lingering(f"ACK control plane ({k8s.offer.cluster_spec})", "alicloud:cs/managedKubernetes:ManagedKubernetes",
                      "1 cluster", "cluster management fee per cluster-hour", k8s.offer.control_plane_rate, until),
            Lingering("ACK system node pool (CPU nodes for CoreDNS and controllers)", "alicloud:cs/nodePool:NodePool",
                      f"{k8s.system_nodes} x {k8s.system_instance_type}", f"ECS {PAYG} per instance-hour; the GPU pool"
                      " scales to zero when no pod needs it", None, until),
            Lingering("the API server's load balancer and the NAT gateway ACK creates", None, "1 CLB, 1 NAT gateway",
                      "per hour plus traffic, billed to the cluster's resources", None, until),
        ]
    return tuple(items)


BILLS_NOTHING_ALONE = {
    "alicloud:vpc/network:Network": FREE,
    "alicloud:vpc/switch:Switch": FREE,
    "alicloud:ecs/securityGroup:SecurityGroup": FREE,
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": "a rule of the security group",
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": FREE,
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": "placement only",
    "alicloud:ram/role:Role": "RAM: no charge",
    "alicloud:ram/policy:Policy": "RAM: no charge",
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": "RAM: no charge",
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment": "RAM: no charge",
    "alicloud:ecs/instance:Instance": "bills while it runs; released by the agent or at maxHours (auto_release_time),"
                                      " its public address and disks (delete_with_instance) with it",
    "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate": "a template: the pool's nodes bill, not the template",
    "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup": "the group bills nothing; its spot nodes bill while they"
                                                                " run (the agent retires it, valid_until ends it)",
    "alicloud:nas/accessGroup:AccessGroup": "access control",
    "alicloud:nas/accessRule:AccessRule": "access control",
    MOUNT_TARGET: "a NAS mount target: " + FREE,
    "alicloud:nas/protocolService:ProtocolService": "General spec: free of charge (NAS API CreateProtocolService)",
    "alicloud:nas/protocolMountTarget:ProtocolMountTarget": "an export of the protocol service: " + FREE,
    "alicloud:oss/bucket:Bucket": "storage bills the data in it (the checkpoints item); kept on destroy",
    "alicloud:cs/kubernetesAddon:KubernetesAddon": "an add-on runs on the system pool's nodes",
    "alicloud:cs/autoscalingConfig:AutoscalingConfig": "the autoscaler's settings; it runs in the control plane",
    "alicloud:slb/acl:Acl": "an access control list: " + FREE,
    "alicloud:slb/aclEntryAttachment:AclEntryAttachment": "an entry of the access control list",
}



# Names the program gives (validation refuses a stack whose names break a limit, naming the
# stack name, the usual cause). Sources: the provider at the commit of provider_facts.json, or the API doc.
_TF = "aliyun/terraform-provider-alicloud@81c43b67"
NAME_LIMITS = (
    NameLimit("alicloud:ecs/instance:Instance", "instanceName", "gpu-training-{stack}-{index}", 128, 2,
              f"{_TF} alicloud/resource_alicloud_instance.go:76 (validators.go:537, 2-128)"),
    NameLimit("alicloud:ecs/ecsKeyPair:EcsKeyPair", "keyPairName", "gpu-training-{stack}", 128, 2,
              f"{_TF} alicloud/resource_alicloud_ecs_key_pair.go:40 (validators.go:537, 2-128)"),
    NameLimit("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet", "deploymentSetName", "gpu-training-{stack}", 128, 2,
              f"{_TF} alicloud/resource_alicloud_ecs_deployment_set.go:31 (validators.go:558, {{2,128}})"),
    # Past PLACEMENT.members, every further set is gpu-training-{stack}-{group}; the check renders {index}
    # as the last node's index, never less than a group's number, so it errs long.
    NameLimit("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet", "deploymentSetName", "gpu-training-{stack}-{index}",
              128, 2, f"{_TF} alicloud/resource_alicloud_ecs_deployment_set.go:31 (validators.go:558, {{2,128}})"),
    NameLimit("alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", "instanceName", "gpu-training-{stack}", 128, 2,
              f"{_TF} alicloud/resource_alicloud_ecs_launch_template.go:127 (validators.go:558, 1+{{1,127}})"),
    NameLimit("alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup", "autoProvisioningGroupName",
              "gpu-training-{stack}", 128, 2,
              f"{_TF} website/docs/r/auto_provisioning_group.html.markdown:88 (2 to 128 characters)"),
    NameLimit("alicloud:ram/role:Role", "roleName", "gpu-training-{stack}-node", 64, 1,
              "RAM API reference, CreateRole: RoleName 1 to 64 characters"
              " (https://www.alibabacloud.com/help/doc-detail/28710.htm)"),
    NameLimit("alicloud:ram/policy:Policy", "policyName", "gpu-training-{stack}-node", 128, 1,
              f"{_TF} website/docs/r/ram_policy.html.markdown:73 (1 to 128 characters)"),
    NameLimit("alicloud:ram/policy:Policy", "policyName", "gpu-training-{stack}-node-pool", 128, 1,
              f"{_TF} website/docs/r/ram_policy.html.markdown:73 (1 to 128 characters)"),
)

# The deployment set multi-node stacks' nodes go in (compute.py, cluster.py; strategy LowLatency, one of
# Availability, AvailabilityGroup, LowLatency: https://help.aliyun.com/zh/terraform/alicloud-ecs-deployment-set).
# Past 20 nodes, on-demand nodes take several sets and a pool none (base.Placement).
PLACEMENT = Placement(
    construct="LowLatency deployment set (ecs.EcsDeploymentSet)",
    keeps="its nodes in one network topology of the zone, for NCCL's latency",
    members=20,
    source="ECS doc 部署集 (Deployment set), 使用限制 (Limits): with the low latency strategy all instances are"
           " in one zone, at most 20 ECS instances in it (https://www.alibabacloud.com/help/zh/doc-detail/91258.htm)",
)

# ACK, the Kubernetes path (components/providers/alicloud/cluster.py, docs/kubernetes.md).
_ACK_BILLING = "https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/product-overview/ack-pro-cluster-billing"
ACK = KubernetesOffer(
    service="ACK managed Pro cluster",
    cluster_spec="ack.pro.small",
    # ACK's version strings: 1.<minor>.<patch>-aliyun.<n> (cs.ManagedKubernetes `version`).
    version_pattern=r"1\.(\d+)\.\d+-aliyun\.\d+",
    min_minor=31,  # podFailurePolicy is GA in 1.31 (Kubernetes docs, "Handling retriable and non-retriable pod failures")
    default_system_type="ecs.g7.xlarge",  # 4 vCPU, 16 GiB: CoreDNS, metrics, the autoscaler's controllers
    default_system_nodes=2,
    control_plane_rate=f"USD 0.09 per cluster-hour (ack.pro.small, pay-as-you-go; CNY rate not stated there): {_ACK_BILLING}",
    billing_while_up=(
        "the ACK Pro control plane (cluster management fee, per cluster-hour)",
        "the system node pool's ECS instances (pay-as-you-go, per instance-hour)",
        "the API server's Classic Load Balancer (PayByCLCU) and its EIP (ACK creates them; " + _ACK_BILLING + ")",
        "the NAT gateway and its EIP that ACK creates for the nodes' egress (new_nat_gateway)",
    ),
    gpu_stack_note=("ACK installs the NVIDIA driver and its GPU device plugin on GPU node pools itself; the driver"
                    " version is chosen with a node pool label (ACK doc 'Specify an NVIDIA driver version for nodes"
                    " by adding a label', https://www.alibabacloud.com/help/en/document_detail/207292.html)"),
    gang_labels={"name": "pod-group.scheduling.sigs.k8s.io/name",
                 "min": "pod-group.scheduling.sigs.k8s.io/min-available"},
    gang_source="ACK doc 'Use Gang scheduling', method 1 (labels): https://www.alibabacloud.com/help/doc-detail/178169.htm",
    workload_identity=("RRSA: the ServiceAccount names a RAM role whose trust is the cluster's OIDC provider and"
                       " this one ServiceAccount; ack-pod-identity-webhook injects ALIBABA_CLOUD_ROLE_ARN,"
                       " ALIBABA_CLOUD_OIDC_PROVIDER_ARN, ALIBABA_CLOUD_OIDC_TOKEN_FILE (ACK doc 'Use RRSA to"
                       " authorize different pods to access different cloud services')"),
    # cs.get_cluster_credential's temporary kubeconfig: long enough for one `pulumi up` (~15 minutes to create
    # the cluster) and run.py's start check (kubernetes.startDeadlineMinutes); teardown does not need it to
    # last, because refresh and destroy run the program, which reads a new one (docs/kubernetes.md).
    credential_minutes=240,
    credential_minutes_range=(15, 4320),
    credential_source=("ACK API DescribeClusterUserKubeconfig, TemporaryDurationMinutes: 15 to 4320 (3 days); the"
                       " answer's `expiration` is when the kubeconfig stops authenticating"
                       " (https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/developer-reference/"
                       "api-cs-2015-12-15-describeclusteruserkubeconfig; zh: https://help.aliyun.com/document_detail/183915.htm)"),
    image_pull_problem=registry.image_pull_problem,
)

def _platforms():
    """The platform path's targets on Alibaba Cloud (components/platforms; imported late: it loads data files)."""
    from components.providers.alicloud.dlc.job import OFFER

    return {OFFER.kind: OFFER}


def reclaim_notice(spec) -> ReclaimNotice:
    """Alibaba's spot notice: the node's metadata item, read through the hardened service's token; on ACK,
    the pod reads its node's item the same way (pod_runtime.py) besides the drain's SIGTERM."""
    where = ("instance/spot/termination-time on the node's metadata service (hardened: session token), ISO 8601 UTC;"
             + (" read from the pod of the ACK Job through its node's metadata service, and the drain's SIGTERM"
                if spec.kubernetes else " polled by the node agent"))
    return ReclaimNotice(where, "about 5 minutes (the ECS docs read suggest it; not confirmed)", None,
                         "ECS doc 'Instance metadata' (https://www.alibabacloud.com/help/en/ecs/user-guide/"
                         "instance-metadata-items): spot/termination-time, 404 until a reclaim is scheduled")

PROFILE = ProviderProfile(
    name="alicloud",
    display_name="Alibaba Cloud",
    region_key="alicloud:region",
    config_sdk="pulumi_alicloud",  # its config/vars.py names the keys of the alicloud: namespace
    currency="CNY",
    credential_env=("ALICLOUD_", "ALIBABA_CLOUD_"),  # the Pulumi provider's and the SDKs' variables
    shared_fs=SharedStorage(
        kinds={
            "cpfs": "CPFS general-purpose parallel file system (nas.FileSystem file_system_type=cpfs)",
            "nas": "NAS Performance (NFS v3), for shared code and small data",
        },
        parallel="cpfs",
        default_gb={"cpfs": 3600, "nas": 0},
        min_gb={"cpfs": 3600, "nas": 0},
    ),
    disks=Disks(
        ssd_categories=("cloud_essd", "cloud_auto", "cloud_ssd"),
        sizes=DATA_DISK_SIZES,
        refused_categories={
            "cloud": "basic disk: HDD-backed",
            "cloud_efficiency": "ultra disk: HDD/SSD hybrid, too slow for training data",
        },
        data_disk=data_disk,
    ),
    object_storage=ObjectStorage(example_bucket="my-gpu-training-checkpoints", store=object_store),
    node=NodeEnvironment(
        metadata_endpoint="http://100.100.100.200",
        apt_mirror="http://mirrors.cloud.aliyuncs.com",
        pip_index="http://mirrors.cloud.aliyuncs.com/pypi/simple/",
        requirements=("boto3", "tenacity", "fastcrc", "alibabacloud_ecs20140526", "alibabacloud_tea_openapi"),
        user_data=UserDataLimit(32 * 1024, "raw", "alibabacloud_ecs20140526 7.11.8 RunInstancesRequest.user_data:"
                                " 'The size of instance user data cannot exceed 32 KB before Base64 encoding.'"),
        default_image_note="newest Alibaba Cloud public Ubuntu 22.04 image (ecs.get_images)",
        image_ids=ImageIds(
            forms=((r"m-[A-Za-z0-9]+", "m-... (a custom, shared, Marketplace or community image, e.g. m-bp1g7004ksh0oeuc1234)"),
                   (r"[A-Za-z0-9][A-Za-z0-9._-]*\.vhd",
                    "<os>_<version>_<arch>_<size>_alibase_<date>.vhd (a public image, e.g."
                    " ubuntu_22_04_x64_20G_alibase_20240710.vhd)")),
            source="alibabacloud_ecs20140526 7.11.8 DescribeImagesRequest.image_id, 'Naming rules for image IDs':"
                   " public images are named by OS version, architecture, language and date (…_alibase_<date>.vhd);"
                   " custom, shared, Marketplace and community images start with m"),
    ),
    spot=Spot(
        discount=0.3,
        discount_source=("the cloud GPU selection guide (the project brief): spot costs 10-30% of pay-as-you-go;"
                         " the upper bound is used as the estimate"),
        notice=reclaim_notice,
    ),
    rules=Rules(
        unsupported={
            "spotFallback=true": ("pulumi-alicloud 4.0's AutoProvisioningGroup does not expose Alibaba's"
                                  " CompensateWithOnDemand, so pay-as-you-go cannot automatically fill spot capacity"
                                  " that is missing; widen the spot pool with spotZones, or use billing: on-demand"),
        },
        warnings=warnings,
    ),
    egress=Egress(
        routes=routes,
        endpoint_rules=endpoint_rules,
        cloud_api=cloud_api,
        cloud_api_default=cloud_api_default,
    ),
    billing=Billing(keeps_billing=keeps_billing, bills_nothing_alone=BILLS_NOTHING_ALONE),
    naming=Naming(limits=NAME_LIMITS),
    interconnect=Interconnect(placement=PLACEMENT),
    kubernetes=ACK,
    platforms=_platforms,
)
