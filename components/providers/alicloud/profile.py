"""Alibaba Cloud's declared capabilities, disk classes, endpoints and mirrors (pure data, no SDK import).

Sources: REFERENCE.md (metadata, OSS S3 endpoint and signature quirk, in-VPC mirror), the ECS doc
"Elastic Block Storage performance: ESSDs" for the ESSD performance levels and their minimum sizes
(PL1 >= 20 GiB, PL2 >= 461 GiB, PL3 >= 1,261 GiB), pulumi-alicloud 4.0 nas.FileSystem docs (CPFS
capacity example 3,600 GiB; storage types advance_100/advance_200).
"""
from __future__ import annotations

from typing import Optional

from components.providers.base import DataDisk, ObjectStore, ProviderProfile

# Tier disk class -> the ESSD performance level we want, and the smallest disk each level allows.
_LEVEL_FOR_CLASS = {"standard": "PL1", "high": "PL2", "extreme": "PL3"}
_LEVEL_MIN_GIB = {"PL0": 1, "PL1": 20, "PL2": 461, "PL3": 1261}
_ORDER = ["PL0", "PL1", "PL2", "PL3"]


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


def object_store(region: str) -> ObjectStore:
    # OSS rejects the chunked payload signing that SigV4 uploads use: sign with "s3" (V2).
    return ObjectStore(f"https://s3.oss-{region}.aliyuncs.com", "virtual", "s3")


PROFILE = ProviderProfile(
    name="alicloud",
    display_name="Alibaba Cloud",
    region_key="alicloud:region",
    currency="CNY",
    shared_storage={
        "cpfs": "CPFS general-purpose parallel file system (nas.FileSystem file_system_type=cpfs)",
        "nas": "NAS Performance (NFS v3), for shared code and small data",
    },
    parallel_fs="cpfs",
    shared_storage_default_gb={"cpfs": 3600, "nas": 0},
    shared_storage_min_gb={"cpfs": 3600, "nas": 0},
    ssd_disk_categories=("cloud_essd", "cloud_auto", "cloud_ssd"),
    refused_disk_categories={
        "cloud": "basic disk: HDD-backed",
        "cloud_efficiency": "ultra disk: HDD/SSD hybrid, too slow for training data",
    },
    data_disk=data_disk,
    object_store=object_store,
    metadata_endpoint="http://100.100.100.200",
    apt_mirror="http://mirrors.cloud.aliyuncs.com",
    pip_index="http://mirrors.cloud.aliyuncs.com/pypi/simple/",
    node_requirements=("boto3", "tenacity", "alibabacloud_ecs20140526", "alibabacloud_tea_openapi"),
    spot_discount=0.3,
    spot_discount_source=("cloud GPU selection guide (DESIGN.md): spot costs 10-30% of pay-as-you-go;"
                          " the upper bound is used as the estimate"),
    unsupported={
        "spotFallback=true": ("pulumi-alicloud 4.0's AutoProvisioningGroup does not expose Alibaba's"
                              " CompensateWithOnDemand, so pay-as-you-go cannot automatically fill spot capacity"
                              " that is missing; widen the spot pool with spotZones, or use billing: on-demand"),
    },
    default_image_note="newest Alibaba Cloud public Ubuntu 22.04 image (ecs.get_images)",
)
