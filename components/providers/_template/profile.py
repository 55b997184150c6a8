"""__Cloud__'s declared capabilities, disk classes, endpoints and mirrors (pure data, no SDK import).

Every value below that the cloud's docs have not confirmed is marked TODO and chosen to refuse
rather than to guess: no shared storage, no disk category, no mirror. Replace each with the cloud's
fact and its source (URL, doc title or repo@commit) in a comment.
"""
from __future__ import annotations

from typing import Optional

from components.providers.base import DataDisk, ObjectStore, ProviderProfile, UserDataLimit


def data_disk(tier_disk_class: str, size_gb: int, override: Optional[str]) -> DataDisk:
    # TODO(__cloud__): map the tier's disk class (local-nvme / ssd / fast-ssd) to the cloud's category.
    raise NotImplementedError("__cloud__: profile.data_disk is not written yet (docs/providers.md)")


def object_store(region: str) -> ObjectStore:
    # TODO(__cloud__): the S3-compatible endpoint, its addressing style and signature; the in-VPC one.
    raise NotImplementedError("__cloud__: profile.object_store is not written yet (docs/providers.md)")


PROFILE = ProviderProfile(
    name="__cloud__",
    display_name="__Cloud__",
    region_key="__cloud__:region",  # the Pulumi provider's own config key
    # TODO(__cloud__): the placement group compute.py puts multi-node stacks' nodes in, as
    # base.Placement(construct, keeps, members, source) with members from the cloud's limits doc (None
    # when no primary source states it); None: compute.py makes none.
    placement=None,
    currency="TODO",  # TODO(__cloud__): the currency the price API answers in
    shared_storage={},  # TODO(__cloud__): accepted `sharedStorage` values -> what they are
    parallel_fs=None,
    shared_storage_default_gb={},
    shared_storage_min_gb={},
    ssd_disk_categories=(),
    refused_disk_categories={},
    data_disk=data_disk,
    object_store=object_store,
    metadata_endpoint="http://169.254.169.254",  # TODO(__cloud__): confirm from the metadata doc
    apt_mirror=None,
    pip_index=None,
    node_requirements=("boto3", "tenacity"),  # plus the cloud SDK the node runtime calls
    spot_discount=1.0,  # TODO(__cloud__): spot as a fraction of on-demand, with its source (1.0 = no saving)
    spot_discount_source="TODO(__cloud__): unknown; spot is priced as on-demand until a source says otherwise",
    # The smallest limit known (Tencent CVM: 16 KB after base64) until the instance API's doc says.
    user_data=UserDataLimit(16384, "base64", "TODO(__cloud__): the instance API's user-data limit"),
    unsupported={"billing=spot": "TODO(__cloud__): spot nodes are not built yet"},
    credential_env=(),  # TODO(__cloud__): prefixes of the variables its SDK and Pulumi provider read
)
