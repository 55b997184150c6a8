"""__Cloud__'s declared capabilities, disk classes, endpoints and mirrors (pure data, no SDK import).

Every value below that the cloud's docs have not confirmed is marked TODO and chosen to refuse
rather than to guess: no disk category, no mirror, and `rules.unsupported` refuses the spot pool, the shared
file system and the Kubernetes path that the parts offer (compute.py, storage.py, cluster.py) until
their facts are filled in. Replace each with the cloud's fact and its source (URL, doc title or
repo@commit) in a comment, and drop the refusal.
"""
from __future__ import annotations

from typing import Optional

from components.providers.profile_records import (DataDisk, Disks, Interconnect, KubernetesOffer, NodeEnvironment,
                                                  ObjectStorage, ObjectStore, ProviderProfile, Rules, SharedStorage,
                                                  Spot, UserDataLimit)


def data_disk(tier_disk_class: str, size_gb: int, override: Optional[str]) -> DataDisk:
    # TODO(__cloud__): map the tier's disk class (local-nvme / ssd / fast-ssd) to the cloud's category.
    raise NotImplementedError("__cloud__: data_disk in profile.py is not written yet (docs/providers.md)")


def object_store(region: str) -> ObjectStore:
    # TODO(__cloud__): the S3-compatible endpoint, its addressing style and signature; the in-VPC one.
    raise NotImplementedError("__cloud__: object_store in profile.py is not written yet (docs/providers.md)")


# TODO(__cloud__): the cloud's shared file system (storage.py makes it): its name as `sharedStorage` takes it.
SHARED_FS = "sharedfs"

# The managed Kubernetes cluster.py builds on. TODO(__cloud__): each value from the service's docs, with its source.
KUBERNETES = KubernetesOffer(
    service="TODO(__cloud__): the managed Kubernetes service",
    cluster_spec="TODO(__cloud__): the control plane class cluster.py asks for",
    version_pattern=r"1\.(\d+)\.\d+",  # TODO(__cloud__): the service's version strings, minor as group 1
    min_minor=31,  # the manifests' podFailurePolicy is GA in 1.31 (Kubernetes docs): the manifests' floor
    default_system_type="TODO(__cloud__): a 4 vCPU / 16 GiB instance type for CoreDNS and the controllers",
    default_system_nodes=2,
    control_plane_rate=None,  # unknown until the service's pricing page says
    billing_while_up=("TODO(__cloud__): the control plane's fee, if any",
                      "the system node pool's instances (per instance-hour)"),
    gpu_stack_note="TODO(__cloud__): who installs the GPU driver and device plugin on GPU nodes, with the source",
    # The coscheduling plugin's labels (kubernetes-sigs/scheduler-plugins); TODO(__cloud__): the cluster's own.
    gang_labels={"name": "pod-group.scheduling.sigs.k8s.io/name",
                 "min": "pod-group.scheduling.sigs.k8s.io/min-available"},
    gang_source="TODO(__cloud__): the service's gang scheduling doc",
    workload_identity="TODO(__cloud__): how pods get the bucket role's credentials (cluster.py, pod_runtime.py)",
)

PROFILE = ProviderProfile(
    name="__cloud__",
    display_name="__Cloud__",
    region_key="__cloud__:region",  # the Pulumi provider's own config key
    config_sdk=None,  # the Pulumi SDK package whose config/vars.py names the namespace's keys (pulumi___cloud__)
    currency="TODO",  # TODO(__cloud__): the currency the price API answers in
    credential_env=(),  # TODO(__cloud__): prefixes of the variables its SDK and Pulumi provider read
    shared_fs=SharedStorage(
        kinds={SHARED_FS: "TODO(__cloud__): what the shared file system is (NFS, Lustre...)"},
        parallel=None,  # TODO(__cloud__): SHARED_FS once it is a parallel file system (the tiers' "parallel")
        default_gb={SHARED_FS: 1024},  # TODO(__cloud__): the size a stack gets without sharedStorageGb
        min_gb={SHARED_FS: 0},  # TODO(__cloud__): the smallest file system the cloud sells
    ),
    disks=Disks(
        ssd_categories=(),
        refused_categories={},
        data_disk=data_disk,
    ),
    object_storage=ObjectStorage(store=object_store),
    node=NodeEnvironment(
        metadata_endpoint="http://169.254.169.254",  # TODO(__cloud__): confirm from the metadata doc
        apt_mirror=None,
        pip_index=None,
        requirements=("boto3", "tenacity"),  # plus the cloud SDK the node runtime calls
        # The smallest limit known (Tencent CVM: 16 KB after base64) until the instance API's doc says.
        user_data=UserDataLimit(16384, "base64", "TODO(__cloud__): the instance API's user-data limit"),
    ),
    spot=Spot(
        discount=1.0,  # TODO(__cloud__): spot as a fraction of on-demand, with its source (1.0 = no saving)
        discount_source="TODO(__cloud__): unknown; spot is priced as on-demand until a source says otherwise",
    ),
    rules=Rules(
        unsupported={
            "billing=spot": "TODO(__cloud__): the spot pool of compute.py is placeholders until the cloud's is written",
            f"sharedStorage={SHARED_FS}": "TODO(__cloud__): storage.py's file system is a placeholder until it is written",
            "kubernetes": "TODO(__cloud__): cluster.py is placeholders until the managed Kubernetes is written",
        },
    ),
    interconnect=Interconnect(
        # TODO(__cloud__): the placement group compute.py puts multi-node stacks' nodes in, as
        # base.Placement(construct, keeps, members, source) with members from the cloud's limits doc (None
        # when no primary source states it); None: compute.py makes none.
        placement=None,
    ),
    kubernetes=KUBERNETES,
)
