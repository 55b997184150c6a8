"""What a provider declares: the records its profile (components/providers/<cloud>/profile.py) is made of,
with the defaults and small functions they share. Pure data: no Pulumi, no SDK (the preview, validation and
the tools read profiles without the engine). What a provider's parts return is in part_records.py."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

from components import schema


@dataclass(frozen=True)
class DataDisk:
    """The data disk a provider chose for a tier: its own category/performance names."""
    category: str
    performance_level: Optional[str]
    size_gb: int
    note: Optional[str] = None


@dataclass(frozen=True)
class StoreVerification:
    """How a store confirms the content it received: what "verified" means for the node agent's
    uploads (node_agent/integrity.py, docs/agent.md "Verified uploads"). Carried by the node config
    as `checkpoint.verify`."""
    method: str  # crc64ecma (the store's CRC-64 in `header`) | etag-md5 (S3's ETag) | content-md5 | read-back
    sources: tuple[str, ...]  # where each claim below comes from
    header: Optional[str] = None  # the response header with the store's CRC-64 (crc64ecma)
    content_md5: bool = False  # send Content-MD5 so the store refuses damaged bytes on arrival
    flexible_checksums: bool = False  # the store accepts botocore's default x-amz-checksum-* headers

    def node_config(self) -> dict:
        return {"method": self.method, "header": self.header or "", "contentMd5": self.content_md5,
                "flexibleChecksums": self.flexible_checksums, "sources": list(self.sources)}


# botocore >= 1.36 sends CRC32 x-amz-checksum-* headers by default (boto/boto3#4392); OSS and COS do not
# support them (milvus-io/milvus-storage#454, which also lists OBS and GCS's S3 API).
NO_FLEXIBLE_CHECKSUMS = ("https://github.com/boto/boto3/issues/4392",
                         "https://github.com/milvus-io/milvus-storage/pull/454")


@dataclass(frozen=True)
class ObjectStore:
    """How boto3 reaches this cloud's S3-compatible object storage, and how the store vouches for content."""
    endpoint: str  # from anywhere (scripts/run.py on the user's machine)
    addressing_style: str  # virtual | path
    signature_version: str  # s3 | s3v4
    node_endpoint: Optional[str] = None  # from a node in the region (an in-VPC endpoint); None: `endpoint`
    verification: StoreVerification = StoreVerification("read-back", ())


@dataclass(frozen=True)
class Route:
    """One way for a node to reach an endpoint: inside the VPC, or out to the Internet.

    `evidence` names the plan's proof that the route exists: (resource type, input) pairs (`a.b` is an
    input inside an object); the route is in a plan when at least one resource of a listed type is
    there and every such resource has that input set (true, or a number above 0). No evidence:
    nothing has to be created (the VPC).
    """
    name: str  # "vpc" | "internet"
    description: str
    cost: str  # what it bills after the nodes are gone and per use; rates with their source, or "unknown"
    evidence: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class EndpointRule:
    """Which routes reach the hosts matching `pattern` (a regex on the host), preferred first."""
    pattern: str
    routes: tuple[str, ...]
    note: str  # why, with the source


@dataclass(frozen=True)
class Lingering:
    """Something that keeps billing after the nodes release themselves (maxHours releases nodes only)."""
    what: str
    type: Optional[str]  # the plan's resource type; None: data the nodes write (no Pulumi resource)
    size: str
    basis: str  # what the bill counts
    rate: Optional[str]  # the rate with its source; None: unknown here (never invented)
    until: str  # "pulumi destroy", or who deletes it
    # It may still bill for a while after `pulumi destroy` (a key in a pending-deletion window whose billing
    # is not documented): run.py then lists it under "Still billing after destroy" although `until` names it.
    bills_after_destroy: bool = False
    # Which shipped list price prices it (components/storage_prices.py): "sharedStorage" (the stack's shared file
    # system), "objectStorage" (data in the bucket); None: none. billing.keeps_billing fills `rate` from it.
    prices: Optional[str] = None

    def as_dict(self) -> dict:
        return {"what": self.what, "type": self.type, "size": self.size, "basis": self.basis,
                "rate": self.rate, "until": self.until, "billsAfterDestroy": self.bills_after_destroy}


# A resource that bills nothing by itself (Billing.bills_nothing_alone's usual reason).
FREE = "no charge of its own"


UPLOADED_WHAT = "agent files and training code the program uploads"


def uploaded_files(object_type: str, unit: str = "GiB") -> Lingering:
    """What every stack keeps billing: the agent files and training code `pulumi up` puts in the bucket, as
    objects of the cloud's `object_type`; `unit` as its price list counts stored bytes."""
    return Lingering(UPLOADED_WHAT, object_type, "a few MB",
                     f"object storage: stored {unit} per month", None, "pulumi destroy", prices="objectStorage")


def nothing_lingers(spec: Any) -> tuple[Lingering, ...]:
    return ()


def transfer_seconds(gigabytes: float, mbit_per_s: float) -> float:
    """At least this long to move `gigabytes` (decimal GB) through a link of `mbit_per_s` (a node's EIP cap)."""
    return gigabytes * 8e3 / mbit_per_s


def has_public_address(spec: Any) -> bool:
    """Nodes get a public address for outbound traffic (publicEgress) or for SSH from sshAllowCidrs."""
    return bool(spec.public_egress or spec.ssh_allow_cidrs)


def inbound_note(spec: Any) -> str:
    return "the security group admits nothing from outside" + (" but sshAllowCidrs" if spec.ssh_allow_cidrs else "")


def no_routes(spec: Any) -> tuple[Route, ...]:
    return ()


def internet_only(region: str) -> tuple[EndpointRule, ...]:
    return ()


def no_endpoints(spec: Any) -> tuple[str, ...]:
    return ()


def sdk_default(region: str) -> Optional[str]:
    return None


def spot_cap(spec: Any) -> Optional[float]:
    """The spot price cap: the user's cap, never above a known on-demand price of the pool's types; the
    lowest known on-demand price without one; None when neither is known. Known: read for the account by the
    signed price API (Price.account_price), never a list price of the price book."""
    known = [row.price.account_price for row in spec.pool_types if row.price.account_price is not None]
    if spec.spot_max_price is not None:
        return min([spec.spot_max_price, *known])
    return min(known) if known else None


def no_checks(spec: Any) -> Iterable[tuple[str, str]]:
    return ()


def always_pooled(spec: Any) -> bool:
    return True


@dataclass(frozen=True)
class UserDataLimit:
    """How much user data the cloud's API accepts. Ours is base64(gzip(#cloud-config)); a limit that
    counts the bytes before base64 ("raw") counts the gzip bytes."""
    max_bytes: int
    counted: str  # "base64" (the encoded string the API receives) | "raw" (the bytes before base64)
    source: str

    @property
    def max_encoded(self) -> int:
        """The longest base64 string that fits: what the renderer and the validator check."""
        return self.max_bytes if self.counted == "base64" else (self.max_bytes // 3) * 4

    def describe(self) -> str:
        return f"{self.max_bytes:,} bytes {'after' if self.counted == 'base64' else 'before'} base64"


@dataclass(frozen=True)
class NameLimit:
    """A name the program gives a resource, and the cloud's limit on it (checked at validation).

    `template` is the name as the parts build it ({stack}, {index} for per-node names); `source` says
    where the limit is written (repo@commit file:line, or the API doc)."""
    type: str  # the Pulumi type token
    input: str  # the input that carries the name (camelCase, a.b for a nested field)
    template: str
    max: int
    min: int = 1
    source: str = ""

    def render(self, stack: str, index: int = 0) -> str:
        return self.template.format(stack=stack, index=index)


@dataclass(frozen=True)
class Placement:
    """The placement group a multi-node stack's nodes go in (the compute part makes it when nodes > 1),
    and how many members one holds: components/validation/build.py checks `nodes` against it before
    anything is made.

    Past `members`, on-demand nodes go in several groups, node i in group i // members: each group keeps
    its guarantee (`keeps`) for its nodes, none holds between groups, and adding nodes never moves a node
    to another group. A pool (spot pool, Kubernetes node pool) takes one group in its template: past
    `members` it gets none, and the preview says what is lost. Refusing instead would make the cloud's
    small groups (20 on Alibaba) a ceiling on training scale that nothing else imposes."""
    construct: str  # what the cloud calls it, with the strategy the compute part asks for
    keeps: str  # what membership guarantees the nodes of one group
    members: Optional[int]  # the most nodes one group holds; None: no primary source states one
    source: str  # where `members` is written; when None, where the account's own limit is read

    def groups(self, nodes: int, pooled: bool) -> int:
        """How many groups `nodes` take: none for one node, one up to `members` (or when it is unknown),
        beyond it ceil(nodes / members) for on-demand nodes and none for a pool."""
        if nodes <= 1:
            return 0
        if self.members is None or nodes <= self.members:
            return 1
        return 0 if pooled else -(-nodes // self.members)


@dataclass(frozen=True)
class KubernetesOffer:
    """What a provider's managed Kubernetes offers the Kubernetes path (docs/kubernetes.md); data with sources.

    A provider without one refuses the `kubernetes` key at validation (its `rules.unsupported` says why)."""
    service: str  # e.g. "ACK Pro (managed)"
    cluster_spec: str  # the provider's control plane class
    version_pattern: str  # regex for `kubernetes.version` (fullmatch)
    min_minor: int  # the oldest 1.<minor> whose APIs the manifests use (components/kubernetes/manifests.py)
    default_system_type: str  # the system pool's instance type (CoreDNS, controllers)
    default_system_nodes: int
    control_plane_rate: Optional[str]  # the management fee with its source; None: unknown here
    billing_while_up: tuple[str, ...]  # what bills from `pulumi up` to `pulumi destroy`, GPU nodes or not
    gpu_stack_note: str  # who installs the GPU driver and device plugin, with the source
    gang_labels: Mapping[str, str]  # pod labels the cluster's scheduler gangs by: {name label, min label}
    gang_source: str
    workload_identity: str  # how pods get bucket credentials, with the source
    # The kubeconfig the program reads for its Kubernetes provider: how long it authenticates (None: until
    # revoked), the range the cloud accepts, and the source. A short-lived one is why refresh and destroy
    # run the program (docs/kubernetes.md, "Access and teardown").
    credential_minutes: Optional[int] = None
    credential_minutes_range: Optional[tuple[int, int]] = None
    credential_source: str = ""
    # (region, image) -> why the cluster's nodes in that region cannot pull that image, or None: the
    # provider's rule for kubernetes.image (e.g. a registry its network does not reach).
    image_pull_problem: Optional[Callable[[str, str], Optional[str]]] = None


# ---------------------------------------------------------------- the profile's groups
# Each group is read by one neutral module where it can be (named in its docstring); a cloud's profile.py
# fills them in, and neutral code reads them through the registry (providers.profile), never a cloud by name.

@dataclass(frozen=True)
class SharedStorage:
    """The shared file systems a stack may ask for with `sharedStorage` (validation checks the value and
    the size; the advisor explains the tier's default). The defaults: none offered."""
    kinds: Mapping[str, str] = field(default_factory=dict)  # accepted values (besides none) -> what each is
    parallel: Optional[str] = None  # what the tiers' "parallel" shared storage means here
    default_gb: Mapping[str, int] = field(default_factory=dict)
    min_gb: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Disks:
    """The nodes' data disk: the category a tier's disk class maps to, which categories a stack may name
    (`dataDiskCategory`), and the sizes each accepts (validation; scripts/prices.py prices them)."""
    data_disk: Callable[[str, int, Optional[str]], DataDisk]  # (tier disk class, size, override)
    ssd_categories: tuple[str, ...] = ()
    refused_categories: Mapping[str, str] = field(default_factory=dict)  # category -> why (HDD class)
    # (min, max) GiB per category, checked at validation (a disk outside them is an error, never a
    # warning). A category not listed has no declared range.
    sizes: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ObjectStorage:
    """The checkpoint bucket's store: how boto3 reaches it in a region, and the bucket the shipped stack
    files name (validation warns while a stack still uses it)."""
    store: Callable[[str], ObjectStore]  # region -> endpoint settings
    example_bucket: Optional[str] = None


@dataclass(frozen=True)
class ImageIds:
    """The forms of VM image id the cloud's instance API takes: validation refuses an `image` in none of
    them (e.g. `ubuntu`, an image's name rather than its id) before anything is created."""
    forms: tuple[tuple[str, str], ...]  # (regex, fullmatch; what that form is, with an example)
    source: str

    def accepts(self, value: str) -> bool:
        return any(re.fullmatch(pattern, value) for pattern, _ in self.forms)

    def described(self) -> str:
        return "; ".join(what for _, what in self.forms)


@dataclass(frozen=True)
class NodeEnvironment:
    """What a node finds and is given: read by components/nodeconfig.py (the node config), the bootstrap
    renderer and the preview."""
    metadata_endpoint: str
    user_data: UserDataLimit  # what the instance API accepts (components/bootstrap/render.py checks it)
    apt_mirror: Optional[str] = None
    pip_index: Optional[str] = None
    requirements: tuple[str, ...] = ()  # pip packages the agent needs on this cloud
    # Where a resource of this cloud holds the nodes' user data: input paths (`a.b` inside an object),
    # tried in order on each resource (the preview's --user-data and its size line read it there).
    user_data_inputs: tuple[str, ...] = ("userData", "user_data")
    default_image_note: str = ""  # what the preview says the image is when `image` is not set
    image_ids: Optional[ImageIds] = None  # the image ids `image` may name; None: any id-shaped string


@dataclass(frozen=True)
class ReclaimNotice:
    """How the node agent learns that the cloud reclaims a spot node, and how early: what the preview's reclaim
    section says (components/reclaim.py) and the node runtime's spot_notice() reads. Facts with their source."""
    mechanism: str  # what the node reads, or that nothing reaches it
    lead: str  # how early, as the sources say it
    lead_seconds: Optional[float]  # that lead for the arithmetic: 0 nothing reaches the node, None not confirmed
    source: str
    note: str = ""  # what else decides a reclaim on this cloud (a bid mode, a protection period)


def undeclared_notice(spec: Any) -> ReclaimNotice:
    return ReclaimNotice("not declared by this provider", "unknown", None, "the provider's profile declares none")


@dataclass(frozen=True)
class Spot:
    """Spot nodes: the price estimate (components/cost.py), who keeps them and whether they are warned."""
    discount: float  # typical spot price as a fraction of on-demand
    discount_source: str
    # Spot nodes are kept by a pool that replaces reclaimed ones and that the agent retires before it
    # releases its node (cluster.poolName). False: spot nodes are single instances (no pool to retire).
    pool: bool = True
    # Whether a given spot stack's nodes are in that pool: a cloud may offer single capped spot instances
    # beside it (Huawei: an AS configuration takes no price cap, an ECS does). Used through has_pool().
    pool_for: Callable[[Any], bool] = always_pooled
    # A reclaimed spot node is told first (a notice in its metadata: node_runtime.spot_notice). False: it
    # stops without warning (the rehearsal's drill then kills the node instead of posting a notice).
    reclaim_notice: bool = True
    # (spec) -> ReclaimNotice: the mechanism, the lead time and their sources, for the preview and docs.
    notice: Callable[[Any], ReclaimNotice] = undeclared_notice

    def has_pool(self, spec: Any) -> bool:
        """A pool keeps this stack's spot nodes (the agent retires it: cluster.poolName)."""
        return bool(spec.spot) and self.pool and self.pool_for(spec)


@dataclass(frozen=True)
class Egress:
    """Egress (components/egress.py): the routes a stack's plan gives its nodes, which routes reach which
    hosts (a host no rule matches needs the Internet), and the cloud API the node agent calls."""
    routes: Callable[[Any], tuple[Route, ...]] = no_routes
    endpoint_rules: Callable[[str], tuple[EndpointRule, ...]] = internet_only
    cloud_api: Callable[[str], Optional[str]] = sdk_default  # node config endpoints.cloudApi
    cloud_api_default: Callable[[Any], tuple[str, ...]] = no_endpoints  # (spec) hosts the SDK calls when that is None


@dataclass(frozen=True)
class Billing:
    """Billing (components/billing.py): what keeps billing once the nodes are gone, and every other
    resource type the program creates with why it bills nothing by itself (or only with the nodes)."""
    keeps_billing: Callable[[Any], tuple[Lingering, ...]] = nothing_lingers
    bills_nothing_alone: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Naming:
    """What the program's resources of this cloud are called: the limits on the names it gives
    (validation checks them; tests check the plan uses these templates) and the type tokens' prefixes."""
    limits: tuple[NameLimit, ...] = ()
    # Prefixes of the type tokens of the resources its parts create; empty: "<name>:" (a bridged Pulumi
    # provider's package). A provider of dynamic resources names its own (pulumi-python:dynamic/<module>:).
    type_prefixes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rules:
    """What validation refuses or warns about on this cloud beyond the common rules."""
    # "key" or "key=value" (a stack key of components/schema.py, and a value it can take) -> why it is
    # refused. ProviderProfile checks the keys when it is made: a misspelt one would refuse nothing.
    unsupported: Mapping[str, str] = field(default_factory=dict)
    # Rules that depend on values or on the resolved spec (bucket naming, size steps, a required spot
    # cap), which `unsupported` cannot express: checks(spec) -> (dotted key, message) errors.
    checks: Callable[[Any], Iterable[tuple[str, str]]] = no_checks
    # The same for warnings: something the stack silently does not get (a disk option a pool drops).
    warnings: Callable[[Any], Iterable[tuple[str, str]]] = no_checks


@dataclass(frozen=True)
class Interconnect:
    """How the nodes of a multi-node stack reach each other (validation, the node config, the advisor)."""
    # RDMA kinds (catalog `rdma`) the program sets up end to end: interface + driver. A catalog row's
    # other kind is hardware the nodes do not use: they get host.rdma "none" and NCCL uses TCP.
    rdma_enabled: tuple[str, ...] = ()
    # The placement group multi-node stacks' nodes go in and its member limit (Placement); None: the
    # compute part makes none (the nodes go where the cloud puts them).
    placement: Optional[Placement] = None


@dataclass(frozen=True)
class ProviderProfile:
    """What a cloud declares: who it is (name, region key, currency, credential variables) and one group
    per concern, each read by the module named in its docstring."""
    name: str
    display_name: str
    region_key: str  # the provider's own config key, e.g. "alicloud:region"
    currency: str
    disks: Disks
    object_storage: ObjectStorage
    node: NodeEnvironment
    spot: Spot
    # Prefixes of the environment variables that carry this cloud's credentials (its Pulumi provider
    # and SDKs read them): the preview hides them from the program, the rehearsal from its agents.
    credential_env: tuple[str, ...] = ()
    shared_fs: SharedStorage = SharedStorage()
    rules: Rules = Rules()
    egress: Egress = Egress()
    billing: Billing = Billing()
    naming: Naming = Naming()
    interconnect: Interconnect = Interconnect()
    # The managed Kubernetes the `kubernetes` key deploys to (components/kubernetes/); None: not offered yet.
    kubernetes: Optional[KubernetesOffer] = None
    # The managed training platforms the `platform` key submits jobs to (components/platforms/offer.py),
    # by platform.kind; a callable so the profile does not load the platforms' data files on import.
    platforms: Callable[[], Mapping[str, Any]] = dict
    # The cloud's Pulumi provider SDK (a top-level package name), whose config/vars.py names every key of the
    # region key's namespace (components/validation/namespaces.py refuses others); None: no Pulumi provider.
    config_sdk: Optional[str] = None
    # What `gpu-training init` puts before a stack name it makes up (TIER-GPU), so the same tier and GPU on
    # two clouds are two stacks: the shipped stacks' convention (stacks/: tc-, hw-, bd-; Alibaba's have none).
    stack_prefix: str = ""

    def __post_init__(self):
        # Made when the registry imports the profile: a misspelt refusal stops every lookup, not one stack.
        schema.check_refusals(f"{self.name}'s profile (rules.unsupported)", self.rules.unsupported)

    def owns(self, type_token: str) -> bool:
        return type_token.startswith(self.naming.type_prefixes or (f"{self.name}:",))
