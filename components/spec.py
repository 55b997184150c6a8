"""The validated stack: frozen records that every part of the program reads (components/validation builds them).

A Spec is what `build_spec` (components/validation) returns for a stack config that passes every rule;
SpecError lists every problem when one does not. This module holds the records and the limits they
and the provider parts share, and imports only data modules, so it sits below every provider part.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from components.catalog import InstanceType
from components.dataset import DataSpec
from components.kubernetes.spec import KubernetesSpec
from components.platforms.offer import PlatformSpec
from components.providers.profile_records import DataDisk, ProviderProfile, StoreVerification
from components.tiers import Gpu, Tier
from node_agent import layout

MAX_NODES = 512
MAX_HOURS = 24 * 30
# One argv string of execve is at most MAX_ARG_STRLEN (32 pages: 131,072 bytes with 4 KiB pages; execve(2),
# Linux include/uapi/linux/binfmts.h); the agent passes train.command as one, plus up to 1 KiB of torchrun words.
MAX_COMMAND_BYTES = 131072 - 1024


@dataclass(frozen=True)
class Finding:
    level: str  # error | warning | info
    key: str
    message: str
    # A warning the offline preview shows but `gpu-training up` refuses before creating anything (the shipped
    # example bucket: the shipped stacks preview as they are, yet no `pulumi up` of them can work).
    blocks_up: bool = False

    def render(self) -> str:
        return f"{self.level}: {self.key}: {self.message}"


class SpecError(Exception):
    """Invalid stack config: every error at once (sorted by key), plus the warnings seen on the way."""

    def __init__(self, findings: list[Finding]):
        self.findings = sorted(findings, key=lambda f: (f.level != "error", f.key))
        self.errors = [f for f in self.findings if f.level == "error"]
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"invalid stack config ({len(self.errors)} error{'s' if len(self.errors) != 1 else ''}):"]
        lines += [f"  {f.render()}" for f in self.findings]
        return "\n".join(lines)


@dataclass(frozen=True)
class CheckpointSpec:
    bucket: Optional[str]
    prefix: str
    endpoint: str
    region: str
    addressing_style: str
    signature_version: str
    create: bool
    node_endpoint: Optional[str] = None  # what nodes use (the in-VPC endpoint); None: `endpoint`
    verification: StoreVerification = StoreVerification("read-back", ())

    @property
    def endpoint_for_nodes(self) -> str:
        return self.node_endpoint or self.endpoint

    def stack_prefix(self, stack: str) -> str:
        """'<prefix>/<stack>' (node_agent.layout, without the trailing slash): policies and messages."""
        return layout.stack_root(self.prefix, stack).rstrip("/")

    def output(self) -> dict:
        """The settings a machine outside the VPC reaches the bucket with: the stack's `checkpoint` output,
        which run.py, report.py and pack.py --upload read (tools/runlib/bucket.py)."""
        return {"bucket": self.bucket, "prefix": self.prefix, "endpoint": self.endpoint, "region": self.region,
                "addressingStyle": self.addressing_style, "signatureVersion": self.signature_version,
                "verify": self.verification.node_config()}


@dataclass(frozen=True)
class TrainSpec:
    command: str
    env: Mapping[str, str]
    code_dir: Optional[Path]
    launcher: str  # direct | torchrun
    # What the nodes install before training, after the framework (docs/training-contract.md, "Your packages"):
    # shell commands, and a pip requirements file (a path relative to code_dir, which holds it).
    setup: tuple[str, ...] = ()
    requirements: Optional[str] = None


@dataclass(frozen=True)
class FailoverSpec:
    """Where `gpu-training up` tries next on a stock-out (the `failover` key, docs/capacity.md): the
    alternatives in the user's order, each checked against the region's zones, the catalog, the regions."""
    zones: tuple[str, ...] = ()
    instance_types: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.zones or self.instance_types or self.regions)


@dataclass(frozen=True)
class Spec:
    project: str
    stack: str
    provider: str
    profile: ProviderProfile
    region: str
    tier: Tier
    gpu: Gpu
    gpus_per_node: int
    nodes: int
    instance: InstanceType
    pool_types: tuple[InstanceType, ...]  # spot pool: the instance first, then alternatives
    billing: str
    spot_max_price: Optional[float]
    spot_fallback: bool
    zone: Optional[str]
    spot_zones: tuple[str, ...]
    data_disk: DataDisk
    dataset_gb: Optional[float]
    shared_storage: str
    shared_storage_gb: int
    ssh_allow_cidrs: tuple[str, ...]
    allow_world_ssh: bool
    ssh_public_key: Optional[str]
    image: Optional[str]
    max_hours: float
    idle_minutes: float
    keep: bool
    checkpoint: CheckpointSpec
    train: TrainSpec
    bootstrap: Mapping[str, str]
    tags: Mapping[str, str]
    findings: tuple[Finding, ...] = field(default=())
    public_egress: bool = True
    data: DataSpec = DataSpec(stage=False)
    kubernetes: Optional[KubernetesSpec] = None  # None: VM nodes (docs/kubernetes.md)
    platform: Optional[PlatformSpec] = None  # None: not a platform job (docs/platforms.md)
    failover: FailoverSpec = FailoverSpec()  # where `gpu-training up` tries next on a stock-out

    @property
    def spot(self) -> bool:
        return self.billing == "spot"
