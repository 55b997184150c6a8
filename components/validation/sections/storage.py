"""The storage sections: the checkpoint bucket, the data disk, the staged data set and the shared file system."""
from __future__ import annotations

import hashlib
import math
import re
from typing import Optional

from components import project, schema
from components.dataset import DataSpec, read_manifest
from components.providers.profile_records import DataDisk, ObjectStore, ProviderProfile
from components.spec import CheckpointSpec
from components.tiers import Tier
from components.validation.read import Problems, show, suggest
from node_agent import layout

_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_SEGMENT = r"(?!\.\.?(?:/|$))[A-Za-z0-9._-]+"
_PREFIX_RE = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")
_ENDPOINT_RE = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/-]*)?")


def check_checkpoint(values: dict, profile: ProviderProfile, region: str, billing: str,
                      problems: Problems) -> CheckpointSpec:
    raw = {**schema.BY_NAME["checkpoint"].default, **values.get("checkpoint", {})}
    bucket = raw.get("bucket") or None
    if bucket is not None and not _BUCKET_RE.match(bucket):
        problems.error("checkpoint.bucket", f"{bucket!r} is not a valid bucket name (3-63 characters: a-z, 0-9,"
                       " '-' and '.', starting and ending with a letter or digit)")
    if billing == "spot" and not bucket:
        problems.error("checkpoint.bucket", "spot billing needs a checkpoint bucket: a reclaimed node can only"
                       " resume from object storage")
    elif not bucket:
        problems.error("checkpoint.bucket", "not set: the node agent, the training code, checkpoints, markers"
                       " and reports travel through this bucket; give a bucket you own in the stack's region"
                       " (or set checkpoint.create: true to create one that outlives the stack)")
    if bucket and bucket == profile.object_storage.example_bucket and not raw.get("create"):
        # A warning, not an error: the shipped stacks must preview offline as they are; `up` refuses it.
        problems.up_blocker("checkpoint.bucket", f"{bucket!r} is the example name the stack files ship with;"
                         " `pulumi up` fails (NoSuchBucket or AccessDenied) at the first upload until it names a"
                         " bucket you own in the stack's region (or set checkpoint.create: true)")
    prefix = str(raw.get("prefix", "")).strip("/")
    if prefix and not _PREFIX_RE.fullmatch(prefix):
        problems.error("checkpoint.prefix", f"{show(prefix)} is not allowed; allowed: path segments of letters,"
                       " digits, '.', '_' and '-' joined by '/', none of them '.' or '..' (the node role's storage"
                       " policy is scoped to this prefix, so it may hold no wildcard)")
    # The bucket's region: the stack's, unless the bucket lives elsewhere (a failover region change
    # leaves it where it is: docs/capacity.md); then the nodes reach it at its public endpoint.
    bucket_region = str(raw.get("region") or region)
    store: ObjectStore = profile.object_storage.store(bucket_region)
    endpoint = raw.get("endpoint") or store.endpoint
    if not _ENDPOINT_RE.fullmatch(endpoint):
        problems.error("checkpoint.endpoint", f"{show(endpoint)} is not an http(s) URL (e.g."
                       f" {store.endpoint}; no spaces or control characters)")
    # Nodes use the in-VPC endpoint unless the user named one (then everyone uses theirs).
    node_endpoint = None if raw.get("endpoint") or bucket_region != region else store.node_endpoint
    return CheckpointSpec(bucket, prefix, endpoint, bucket_region, store.addressing_style, store.signature_version,
                          bool(raw.get("create", False)), node_endpoint, store.verification)


def check_data_disk(values: dict, tier: Tier, profile: ProviderProfile, problems: Problems,
                     sized_for_data: bool = False) -> DataDisk:
    size = values.get("dataDiskGb", tier.data_disk_default_gb)
    if size <= 0:
        problems.error("dataDiskGb", f"{size} must be a size in GiB greater than 0")
    elif size < tier.data_disk_min_gb:
        problems.warning("dataDiskGb", f"{size} GiB is below the {tier.name} tier's {tier.data_disk_min_gb} GiB")
    category = values.get("dataDiskCategory")
    if category is not None and category in profile.disks.refused_categories:
        problems.error("dataDiskCategory", f"{category!r} is refused ({profile.disks.refused_categories[category]});"
                       f" only SSD classes: {', '.join(profile.disks.ssd_categories)}")
        category = None
    elif category is not None and category not in profile.disks.ssd_categories:
        problems.error("dataDiskCategory", f"{category!r} is not allowed; SSD classes:"
                       f" {', '.join(profile.disks.ssd_categories)}" + suggest(category, profile.disks.ssd_categories))
        category = None
    data_disk = profile.disks.data_disk(tier.disk_class, max(size, 1), category)
    if size > 0:
        _check_disk_size_for_category(size, data_disk.category, profile, problems, sized_for_data)
    if data_disk.note:
        problems.info("dataDiskGb", data_disk.note)
    return data_disk


def _check_disk_size_for_category(size: int, category: str, profile: ProviderProfile, problems: Problems,
                                  sized_for_data: bool = False) -> None:
    """The provider's declared size range for the disk's category: outside it the cloud refuses the disk."""
    limits = profile.disks.sizes.get(category)
    if limits is None:
        return  # no declared range for this category (the profile says why)
    low, high = limits
    if sized_for_data and size > high:
        # The user set no disk size: the data set is what is too big, so say so on its key.
        problems.error("data", f"the staged data set needs a {size} GiB data disk; a {category} data disk on"
                       f" {profile.display_name} takes at most {high} GiB: use a smaller data set")
    elif not low <= size <= high:
        problems.error("dataDiskGb", f"{size} GiB is out of range for a {category} data disk on"
                       f" {profile.display_name}; allowed: {low}-{high} GiB")


MAX_DATA_WAIT_MINUTES = 1440  # a day: longer than any upload a node should sit billing for


def check_data(values: dict, problems: Problems) -> DataSpec:
    """The `data` config: a packed folder (its manifest gives the size) or the size of a set already uploaded.

    Its size becomes datasetGb's default, so the RAM rule (RAM >= 2x the data) counts the staged set.
    """
    raw = values.get("data") or {}
    local, size, wait = raw.get("localDir"), raw.get("sizeGb"), raw.get("waitMinutes")
    if size is not None and not (math.isfinite(size) and size > 0):
        problems.error("data.sizeGb", f"{show(size)} must be a size in GB greater than 0")
        size = None
    if wait is not None and not (math.isfinite(wait) and 0 <= wait <= MAX_DATA_WAIT_MINUTES):
        problems.error("data.waitMinutes", f"{show(wait)} must be minutes from 0 to {MAX_DATA_WAIT_MINUTES}"
                       " (how long a booting node waits for the data set's manifest)")
        wait = None
    if not local:
        return DataSpec(stage=size is not None, size_gb=size, wait_minutes=wait)
    folder = (project.root() / local).resolve()  # relative to the user's project (Pulumi.yaml's folder)
    try:
        manifest = read_manifest(folder)
    except ValueError as error:
        problems.error("data.localDir", f"{show(local)}: {error}")
        return DataSpec(stage=False)
    measured = manifest["bytes"] / 1e9
    if size is not None and abs(size - measured) > 0.05 * measured + 0.01:
        problems.warning("data.sizeGb", f"{size:g} GB, but the manifest in {local} says {measured:.2f} GB:"
                         " the manifest's size is used")
    if values.get("datasetGb") is None:
        values["datasetGb"] = measured
    return DataSpec(stage=True, local_dir=folder, size_gb=measured, shards=len(manifest["shards"]),
                    samples=manifest["samples"], wait_minutes=wait,
                    manifest_sha256=hashlib.sha256((folder / layout.DATA_MANIFEST).read_bytes()).hexdigest())


def size_disk_for_data(values: dict, data: DataSpec, tier: Tier, problems: Problems) -> bool:
    """With no dataDiskGb given, the data disk grows past the tier's default to hold the staged set (True)."""
    need = data.disk_needed_gib()
    if values.get("dataDiskGb") is None and need is not None and need > tier.data_disk_default_gb:
        values["dataDiskGb"] = need
        problems.info("dataDiskGb", f"{need} GiB, sized to hold the staged data set ({data.size_gb:.1f} GB plus 10%"
                      f" and 20 GiB for checkpoints and code; the {tier.name} tier's default is"
                      f" {tier.data_disk_default_gb} GiB)")
        return True
    return False


def check_data_fits_disk(data: DataSpec, disk_gb: int, problems: Problems) -> None:
    need = data.disk_needed_gib()
    if need is not None and disk_gb < need:
        problems.error("dataDiskGb", f"{disk_gb} GiB cannot hold the staged data set ({data.size_gb:.1f} GB, plus"
                       f" 10% and 20 GiB for checkpoints and code): at least {need} GiB, or a smaller data set")


def check_dataset(values: dict, problems: Problems) -> Optional[float]:
    dataset = values.get("datasetGb")
    if dataset is not None and dataset < 0:
        problems.error("datasetGb", f"{dataset} must be 0 or more (GB of training data)")
        return None
    return dataset


def check_shared_storage(values: dict, tier: Tier, profile: ProviderProfile,
                          problems: Problems) -> tuple[str, int]:
    shared_default = profile.shared_fs.parallel if tier.shared_storage == "parallel" else "none"
    shared = values.get("sharedStorage", shared_default or "none")
    allowed_shared = ["none", *profile.shared_fs.kinds]
    if shared not in allowed_shared:
        problems.error("sharedStorage", f"{shared!r} is not offered on {profile.display_name}; allowed:"
                       f" {', '.join(allowed_shared)}" + suggest(shared, allowed_shared))
        shared = "none"
    shared_gb = values.get("sharedStorageGb", profile.shared_fs.default_gb.get(shared, 0))
    if shared_gb < 0:
        problems.error("sharedStorageGb", f"{shared_gb} must be 0 or more (GiB)")
    elif shared != "none" and shared_gb < profile.shared_fs.min_gb.get(shared, 0):
        problems.error("sharedStorageGb", f"{shared_gb} is below the {shared} minimum of"
                       f" {profile.shared_fs.min_gb[shared]} GiB")
    if tier.name == "large" and shared == "none":
        problems.info("sharedStorage", "none: the guide pairs the large tier with a parallel FS or object"
                      " storage plus a local cache")
    return shared, shared_gb
