"""Typed arguments of gpu_training.TrainingCluster: the stack keys (components/schema.py) as Python fields.

One field per stack key, in snake_case (`gpusPerNode` is `gpus_per_node`, `train.codeDir` is
`train.code_dir`); None means "the default" (the tier's, the catalog's or the schema's), so a field left
out is validated exactly as a key left out of a stack file. tests/test_public_api.py keeps the fields and
the schema's keys one to one. The descriptions of the keys are README.md's configuration table.

The region is not a field: it is the cloud's own config key (`pulumi config set alicloud:region
cn-hangzhou`), because the cloud's Pulumi provider reads it from there for every resource.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence

NAMESPACE = "gpu-training"  # components/schema.NAMESPACE, spelled here so a type checker sees a plain module


def camel(name: str) -> str:
    """A field's stack-key spelling: gpus_per_node -> gpusPerNode."""
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


def _plain(value: Any) -> Any:
    """A field's value as a stack file would hold it: sections as mappings of camelCase keys, lists, dicts."""
    if dataclasses.is_dataclass(value):
        return {camel(f.name): _plain(v) for f in dataclasses.fields(value)
                if (v := getattr(value, f.name)) is not None}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """Object storage for checkpoints, markers and reports (stack key `checkpoint`)."""
    bucket: Optional[str] = None
    prefix: Optional[str] = None
    endpoint: Optional[str] = None
    create: Optional[bool] = None
    region: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class Train:
    """The training job (stack key `train`): code_dir is relative to the project (the folder of Pulumi.yaml)."""
    command: Optional[str] = None
    env: Optional[Mapping[str, str]] = None
    code_dir: Optional[str] = None
    launcher: Optional[Literal["direct", "torchrun"]] = None
    setup: Optional[Sequence[str]] = None  # shell commands run once per node before training
    requirements: Optional[str] = None  # a pip requirements file in code_dir; default requirements.txt if present


@dataclass(frozen=True, kw_only=True)
class Data:
    """The packed data set staged onto the nodes before training (stack key `data`; docs/data.md)."""
    local_dir: Optional[str] = None
    size_gb: Optional[float] = None
    wait_minutes: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """Node software (stack key `bootstrap`; docs/bootstrap.md)."""
    driver_branch: Optional[str] = None
    cuda_toolkit: Optional[str] = None
    framework: Optional[Literal["pytorch", "paddle"]] = None
    framework_version: Optional[str] = None
    framework_index_url: Optional[str] = None
    ascend_packages_url: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class Platform:
    """A job on a managed training platform instead of VM nodes (stack key `platform`; docs/platforms.md)."""
    kind: Optional[Literal["modelarts", "pai-dlc"]] = None
    image: Optional[str] = None
    pool: Optional[str] = None
    pool_id: Optional[str] = None
    workspace_id: Optional[str] = None
    resource_quota_id: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class Failover:
    """Where `gpu-training up` tries next on a stock-out (stack key `failover`; docs/capacity.md)."""
    zones: Optional[Sequence[str]] = None
    instance_types: Optional[Sequence[str]] = None
    regions: Optional[Sequence[str]] = None


@dataclass(frozen=True, kw_only=True)
class Kubernetes:
    """A managed Kubernetes cluster instead of VM nodes (stack key `kubernetes`; docs/kubernetes.md)."""
    version: Optional[str] = None
    api_allow_cidrs: Optional[Sequence[str]] = None
    system_nodes: Optional[int] = None
    system_instance_type: Optional[str] = None
    image: Optional[str] = None
    gpu_operator: Optional[bool] = None
    namespace: Optional[str] = None
    start_deadline_minutes: Optional[int] = None


@dataclass(frozen=True, kw_only=True)
class TrainingArgs:
    """Everything a stack file can say, typed. Only `checkpoint.bucket` is needed for a real `pulumi up`."""
    provider: Optional[str] = None
    tier: Optional[Literal["entry", "medium", "large"]] = None
    gpu: Optional[str] = None
    gpus_per_node: Optional[int] = None
    nodes: Optional[int] = None
    instance_type: Optional[str] = None
    billing: Optional[Literal["on-demand", "spot"]] = None
    spot_max_price_per_hour: Optional[float] = None
    spot_fallback: Optional[bool] = None
    spot_zones: Optional[Sequence[str]] = None
    zone: Optional[str] = None
    data_disk_gb: Optional[int] = None
    data_disk_category: Optional[str] = None
    dataset_gb: Optional[int] = None
    shared_storage: Optional[str] = None
    shared_storage_gb: Optional[int] = None
    ssh_allow_cidrs: Optional[Sequence[str]] = None
    allow_world_ssh: Optional[bool] = None
    ssh_public_key: Optional[str] = None
    public_egress: Optional[bool] = None
    image: Optional[str] = None
    max_hours: Optional[int] = None
    idle_minutes: Optional[int] = None
    keep: Optional[bool] = None
    checkpoint: Optional[Checkpoint] = None
    train: Optional[Train] = None
    data: Optional[Data] = None
    bootstrap: Optional[Bootstrap] = None
    tags: Optional[Mapping[str, str]] = None
    platform: Optional[Platform] = None
    failover: Optional[Failover] = None
    kubernetes: Optional[Kubernetes] = None

    def stack_config(self) -> dict[str, Any]:
        """The fields that are set, as a stack file's `config:` would hold them (`gpu-training:gpusPerNode`)."""
        return {f"{NAMESPACE}:{key}": value for key, value in _plain(self).items()}


def python_key(stack_key: str) -> str:
    """A stack key as its field path here, for messages: `gpu-training:train.codeDir` -> `train.code_dir`."""
    name = stack_key.split(":", 1)[1] if stack_key.startswith(f"{NAMESPACE}:") else stack_key
    return ".".join(_snake(part) for part in name.split("."))


def _snake(word: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in word)
