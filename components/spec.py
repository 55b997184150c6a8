"""Stack config -> one frozen, validated Spec. Every problem is collected before any resource exists.

`build_spec(config, stack=...)` takes the flat Pulumi config map (`{"gpu-training:tier": "entry",
"alicloud:region": "cn-hangzhou", ...}`; values as the engine passes them: strings, JSON for lists
and objects, or native values) and returns a Spec, or raises SpecError listing every error, each
naming the dotted key, the bad value and what is allowed, with a "did you mean" for typos.
Warnings and notes ride along in `Spec.findings`.
"""
from __future__ import annotations

import difflib
import gzip
import hashlib
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional

from components import cidrs as cidr_lists
from components import egress, providers, schema
from components import tags as tag_scheme
from components.bootstrap import config as bootstrap_rules
from components.dataset import DataSpec, read_manifest
from components.kubernetes import settings as kubernetes_settings
from components.nodeconfig import build_node_config
from components.teardown import TEARDOWN_ENV, tearing_down
from components.platforms import offer as platform_settings
from components.catalog import Catalog, InstanceType, load_catalog
from components.providers import regions as region_tables
from components.providers.base import DataDisk, ObjectStore, ProviderProfile, StoreVerification
from components.tiers import Gpu, Tier, gpus, tiers
from node_agent import layout

REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_NODES = 512
MAX_HOURS = 24 * 30
# One argv string of execve is at most MAX_ARG_STRLEN (32 pages: 131,072 bytes with 4 KiB pages; execve(2),
# Linux include/uapi/linux/binfmts.h); the agent passes train.command as one, plus up to 1 KiB of torchrun words.
MAX_COMMAND_BYTES = 131072 - 1024
_REGION_RE = re.compile(r"[a-z][a-z0-9-]{1,49}")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_SEGMENT = r"(?!\.\.?(?:/|$))[A-Za-z0-9._-]+"
_PREFIX_RE = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")
_ENDPOINT_RE = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/-]*)?")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# OpenSSH public key line: type, base64 body, optional comment (sshd(8) AUTHORIZED_KEYS FILE FORMAT).
_SSH_KEY_RE = re.compile(r"(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)"
                         r"@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\x00-\x1f\x7f]*)?")
# Image ids: Alibaba's m-... and public image names (ubuntu_22_04_x64_20G_alibase_20240710.vhd), Tencent's img-...
_IMAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# Text that a process receives as an argument or environment value can hold no NUL; the other
# control characters (but tab and newline) are typing accidents that break the agent's log lines.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MAX_POOL_TYPES = 4


@dataclass(frozen=True)
class Finding:
    level: str  # error | warning | info
    key: str
    message: str

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
    kubernetes: Optional[kubernetes_settings.KubernetesSpec] = None  # None: VM nodes (docs/kubernetes.md)
    platform: Optional[platform_settings.PlatformSpec] = None  # None: not a platform job (docs/platforms.md)

    @property
    def spot(self) -> bool:
        return self.billing == "spot"


# ---------------------------------------------------------------- parsing helpers

class _Problems:
    def __init__(self) -> None:
        self.items: list[Finding] = []

    def error(self, key: str, message: str) -> None:
        self.items.append(Finding("error", key, message))

    def creation_error(self, key: str, message: str) -> None:
        """A rule about what `up` creates (an image to pull, a start deadline): an error at `up`, a warning
        while tearing down, so an existing stack that breaks a newer rule can still be destroyed."""
        if tearing_down():
            self.warning(key, f"{message} (not enforced: {TEARDOWN_ENV}=1, a teardown)")
        else:
            self.error(key, f"{message}. A stack created before this rule is torn down with {TEARDOWN_ENV}=1"
                       " set (`gpu-training down` and scripts/run.py set it)")

    def warning(self, key: str, message: str) -> None:
        self.items.append(Finding("warning", key, message))

    def info(self, key: str, message: str) -> None:
        self.items.append(Finding("info", key, message))

    @property
    def has_errors(self) -> bool:
        return any(f.level == "error" for f in self.items)


def _suggest(word: str, choices, n: int = 3) -> str:
    lowered = {c.lower(): c for c in choices}
    # Short names (T4, A10) differ by one character in half their length: loosen the cutoff for them.
    cutoff = 0.5 if len(word) <= 4 else 0.6
    close = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=cutoff)
    return f"; did you mean {' or '.join(repr(lowered[c]) for c in close)}?" if close else ""


def _show(value: Any, width: int = 80) -> str:
    """A value as the user wrote it, cut short: messages quote the bad value, not 30 KB of it."""
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= width else f"{text[:width - 20]}... ({len(text):,} characters)"


_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "array": "a list", "object": "an object", "map": "a map of strings"}
# Beyond any count, size, duration or price a stack can mean, and small enough that every later
# comparison, product and message stays exact and finite (a float holds integers to 2**53 exactly).
MAX_MAGNITUDE = 2 ** 53


def _parse_number(value: Any) -> Any:
    """An int or float from an engine value (native, or text as Pulumi passes it); None if not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        return int(text)  # exact for integer literals (float() would round 2**60 + 1)
    except ValueError:
        pass
    try:
        return float(text)  # also "1e400" -> inf, "nan", "Infinity": refused by the caller, by name
    except ValueError:
        return None


def _coerce_number(kind: str, value: Any, key: str, problems: _Problems) -> Any:
    number = _parse_number(value)
    if number is None:
        return problems.error(key, f"{_show(value)} is not {_TYPE_WORDS[kind]}")
    if isinstance(number, float) and not math.isfinite(number):
        return problems.error(key, f"{_show(value)} is not a finite number; give {_TYPE_WORDS[kind]}")
    if abs(number) > MAX_MAGNITUDE:
        return problems.error(key, f"{_show(value)} is out of range; no {key} is larger than {MAX_MAGNITUDE:,}")
    if kind == "integer":
        if isinstance(number, float) and not number.is_integer():
            return problems.error(key, f"{_show(value)} is not an integer")
        return int(number)
    return float(number)


def _parse_json(text: str) -> Any:
    """JSON as the engine passes lists and objects; ValueError for text that is not JSON (or nests absurdly)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _coerce(kind: str, value: Any, key: str, problems: _Problems) -> Any:
    """Convert an engine value (string/JSON or native) to `kind`; record an error and return None if it can't."""
    def bad() -> None:
        problems.error(key, f"{_show(value)} is not {_TYPE_WORDS[kind]}")

    if kind == "string":
        if isinstance(value, (dict, list)):
            return bad()
        return str(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return bad()
    if kind in ("integer", "number"):
        return _coerce_number(kind, value, key, problems)
    if kind in ("array", "object", "map"):
        if isinstance(value, str):
            text = value.strip()
            if kind == "array" and text and not text.startswith("["):
                return [part.strip() for part in text.split(",") if part.strip()]
            try:
                value = _parse_json(text) if text else ([] if kind == "array" else {})
            except ValueError:
                return bad()
        if kind == "array" and not isinstance(value, list):
            return bad()
        if kind in ("object", "map") and not isinstance(value, dict):
            return bad()
        if kind == "map":
            if any(not isinstance(v, (str, int, float, bool)) for v in value.values()):
                return bad()
            return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}
        return value
    raise AssertionError(kind)


def _read_namespace(config: Mapping[str, Any], problems: _Problems) -> dict[str, Any]:
    values: dict[str, Any] = {}
    prefix = schema.NAMESPACE + ":"
    for full_key, raw in config.items():
        if not isinstance(full_key, str):
            problems.error(str(full_key), "config keys are strings such as 'gpu-training:tier'")
            continue
        namespace, sep, name = full_key.partition(":")
        if namespace == schema.NAMESPACE and not name:
            problems.error(full_key, f"no key name after {prefix!r}; known keys: {', '.join(sorted(schema.BY_NAME))}")
            continue
        if not name:
            continue
        if namespace != schema.NAMESPACE:
            if difflib.get_close_matches(namespace, [schema.NAMESPACE], cutoff=0.8):
                problems.error(full_key, f"unknown namespace {namespace!r}; did you mean '{prefix}{name}'?")
            continue
        key = schema.BY_NAME.get(name)
        if key is None and name.lower() == "region":
            problems.error(full_key, _region_hint(config))
            continue
        if key is None:
            problems.error(full_key, f"unknown key{_suggest(name, schema.BY_NAME)}"
                           + ("" if _suggest(name, schema.BY_NAME) else
                              f"; known keys: {', '.join(sorted(schema.BY_NAME))}"))
            continue
        value = _coerce(key.type, raw, name, problems)
        if value is None:
            continue
        if key.type == "object":
            value = _read_object(key, value, problems)
        values[name] = value
    return values


def _region_hint(config: Mapping[str, Any]) -> str:
    """The region is the cloud's own key (alicloud:region, ...), chosen by the stack's provider."""
    provider = str(config.get(f"{schema.NAMESPACE}:provider", schema.BY_NAME["provider"].default))
    if provider in providers.names():
        region_key = providers.profile(provider).region_key
        return (f"unknown key; did you mean {region_key!r}? The region is {providers.profile(provider).display_name}'s"
                f" own key: `pulumi config set {region_key} <region>`, or `--set {region_key}=<region>`")
    keys = ", ".join(providers.profile(p).region_key for p in providers.names())
    return f"unknown key; the region is the cloud's own key, one of {keys} (after the provider)"


def _read_object(key: schema.Key, value: dict, problems: _Problems) -> dict:
    assert key.fields is not None
    if "*" in key.fields:  # a free-form map (tags)
        return _coerce("map", value, key.name, problems) or {}
    result: dict[str, Any] = {}
    for field_name, raw in value.items():
        dotted = f"{key.name}.{field_name}"
        if field_name not in key.fields:
            hint = _suggest(field_name, key.fields) or f"; allowed fields: {', '.join(sorted(key.fields))}"
            problems.error(dotted, f"unknown field{hint}")
            continue
        if raw is None:
            continue
        converted = _coerce(key.fields[field_name], raw, dotted, problems)
        if converted is not None:
            result[field_name] = converted
    return result


def _choice(values: dict, name: str, allowed, problems: _Problems, default=None):
    value = values.get(name, default)
    if value is not None and value not in allowed:
        problems.error(name, f"{_show(value)} is not allowed; allowed: {', '.join(map(str, allowed))}"
                       + _suggest(str(value), [str(a) for a in allowed]))
        return None
    return value


# ---------------------------------------------------------------- instance selection

def _rank(row: InstanceType, tier: Tier, need_memory_gb: float):
    """Sort key: rule-abiding rows first, then the guide's ranges, then known-cheapest, then smallest."""
    vcpu_ok = 8 <= row.vcpus_per_gpu <= 16
    memory_ok = row.memory_gb >= need_memory_gb
    in_vcpu_range = tier.vcpus[0] <= row.vcpus <= tier.vcpus[1]
    in_memory_range = tier.memory_gb[0] <= row.memory_gb <= tier.memory_gb[1] * 1.1
    price = row.price.on_demand_per_hour
    return (not memory_ok, not vcpu_ok, not in_vcpu_range, not in_memory_range,
            price is None, price or 0.0, row.vcpus, row.name)


def _memory_needed(tier: Tier, dataset_gb: Optional[float]) -> float:
    return max(tier.memory_floor_gb, 2 * dataset_gb if dataset_gb else 0)


def _resolve_instance(values: dict, tier: Tier, gpu_table: dict[str, Gpu], catalog: Catalog,
                      profile: ProviderProfile, problems: _Problems):
    """Return (gpu, count, instance) or Nones with errors recorded."""
    override = values.get("instanceType")
    gpu_name = values.get("gpu")
    count = values.get("gpusPerNode")
    need_memory = _memory_needed(tier, values.get("datasetGb"))

    if override is not None:
        row = catalog.get(override)
        if row is None:
            names = [r.name for r in catalog.instances]
            problems.error("instanceType", f"{override!r} is not in the {profile.display_name} catalog"
                           + (_suggest(override, names) or f" (components/providers/{profile.name}/catalog.yaml)"))
            return None, None, None
        if gpu_name is not None and gpu_name != row.gpu:
            problems.error("instanceType", f"{override!r} has {row.gpu} GPUs but gpu is {gpu_name!r}")
        if count is not None and count != row.gpu_count:
            problems.error("instanceType", f"{override!r} has {row.gpu_count} GPUs but gpusPerNode is {count}")
        elif row.gpu_count not in tier.gpu_counts:
            problems.error("instanceType", f"{override!r} has {row.gpu_count} GPUs; the {tier.name} tier allows"
                           f" {', '.join(map(str, tier.gpu_counts))} per node")
        return gpu_table.get(row.gpu), row.gpu_count, row

    if gpu_name is None:
        offered = [g for g in tier.gpus if catalog.counts_for(g)]
        if not offered:
            problems.error("gpu", f"not set, and {profile.display_name} offers none of the {tier.name} tier's"
                           f" GPUs ({', '.join(tier.gpus)}); set gpu to one of {', '.join(tier.extra_gpus)}")
            return None, None, None
        gpu_name = offered[0]
    gpu = gpu_table.get(gpu_name)
    if gpu is None:
        problems.error("gpu", f"{gpu_name!r} is not a known GPU; allowed: {', '.join(gpu_table)}"
                       + _suggest(gpu_name, gpu_table))
        return None, None, None
    if not tier.accepts(gpu_name):
        problems.error("gpu", f"{gpu_name!r} does not fit the {tier.name} tier; allowed:"
                       f" {', '.join(tier.gpus + tier.extra_gpus)}")
        return gpu, None, None
    if count is None:
        count = tier.gpu_counts[0]
    if count not in tier.gpu_counts:
        problems.error("gpusPerNode", f"{count} does not fit the {tier.name} tier; allowed:"
                       f" {', '.join(map(str, tier.gpu_counts))}")
        return gpu, None, None
    candidates = catalog.matching((gpu_name,), count)
    if not candidates:
        offered = catalog.counts_for(gpu_name)
        where = (f"{profile.display_name} offers {gpu_name} in counts {offered}" if offered
                 else f"{profile.display_name} has no {gpu_name} instances")
        problems.error("gpu", f"no instance type has {count}x {gpu_name}: {where}")
        return gpu, count, None
    return gpu, count, min(candidates, key=lambda r: _rank(r, tier, need_memory))


def _pool_types(instance: InstanceType, gpu: Gpu, tier: Tier, catalog: Catalog,
                dataset_gb: Optional[float], problems: _Problems) -> tuple[InstanceType, ...]:
    """The chosen type, then alternatives a spot pool may draw: each passes the tier's rules
    (_pool_type_breaches), and the ones that do not are named in the findings with the reason. The
    pool picks the lowest price, so an under-spec alternative would be the one usually launched."""
    need_memory = _memory_needed(tier, dataset_gb)
    models = (gpu.name,) + gpu.substitutes
    others = []
    for row in catalog.matching(models, instance.gpu_count):
        if row.name == instance.name:
            continue
        breaches = _pool_type_breaches(row, instance, tier, need_memory)
        if breaches:
            problems.info("billing", f"the spot pool does not draw {row.name}: {'; '.join(breaches)}")
        else:
            others.append(row)
    others.sort(key=lambda r: _rank(r, tier, need_memory))
    return (instance, *others[:_MAX_POOL_TYPES - 1])


def _pool_type_breaches(row: InstanceType, chosen: InstanceType, tier: Tier, need_memory: float) -> list[str]:
    """Why a spot pool may not draw `row` instead of `chosen`: the tier's GPU model and count, the guide's
    8-16 vCPU per GPU (above 16 only as far as the chosen type goes), the tier's vCPU and RAM minimums
    and the RAM the data needs (more RAM than the range is allowed: it never slows training, and the
    pool's price cap bounds what it costs), and NVLink when the chosen type has it."""
    breaches = []
    if not tier.accepts(row.gpu):
        breaches.append(f"its {row.gpu} is not a GPU of the {tier.name} tier")
    if row.gpu_count not in tier.gpu_counts or row.gpu_count != chosen.gpu_count:
        breaches.append(f"{row.gpu_count} GPUs, not {chosen.gpu_count}")
    per_gpu, most = row.vcpus_per_gpu, max(16.0, chosen.vcpus_per_gpu)
    if per_gpu < 8:
        breaches.append(f"{per_gpu:g} vCPU per GPU, below the guide's 8 (starves the data loaders)")
    elif per_gpu > most:
        breaches.append(f"{per_gpu:g} vCPU per GPU, above the guide's 16"
                        + (f" and the chosen type's {chosen.vcpus_per_gpu:g}" if most > 16 else ""))
    if row.vcpus < tier.vcpus[0]:
        breaches.append(f"{row.vcpus} vCPU, below the {tier.name} tier's {tier.vcpus[0]}")
    floor = max(tier.memory_gb[0], need_memory)
    if row.memory_gb < floor:
        breaches.append(f"{row.memory_gb:.0f} GB RAM, below the {floor:g} GB the {tier.name} tier"
                        + (" and the data set need" if need_memory > tier.memory_gb[0] else " needs"))
    if chosen.nvlink is True and row.nvlink is not True:
        breaches.append("no confirmed NVLink, which the chosen type has")
    return breaches


# ---------------------------------------------------------------- the rules

def _check_instance(spec_values: dict, tier: Tier, instance: InstanceType, nodes: int, profile: ProviderProfile,
                    problems: _Problems) -> None:
    per_gpu = instance.vcpus_per_gpu
    if not 8 <= per_gpu <= 16:
        problems.warning("instanceType", f"{instance.name} has {per_gpu:g} vCPU per GPU; the guide advises 8-16"
                         " (fewer starves the data loaders)")
    dataset = spec_values.get("datasetGb")
    if dataset is not None and instance.memory_gb < 2 * dataset:
        problems.error("datasetGb", f"{dataset:g} GB of data needs at least {2 * dataset:g} GB RAM (2x the data);"
                       f" {instance.name} has {instance.memory_gb:.0f} GB: pick a larger instanceType or lower datasetGb")
    if instance.memory_gb < tier.memory_floor_gb:
        problems.error("instanceType", f"{instance.name} has {instance.memory_gb:.0f} GB RAM; the {tier.name}"
                       f" tier needs at least {tier.memory_floor_gb} GB")
    if not tier.vcpus[0] <= instance.vcpus <= tier.vcpus[1]:
        problems.info("instanceType", f"{instance.name} has {instance.vcpus} vCPU; the {tier.name} tier's range"
                      f" is {tier.vcpus[0]}-{tier.vcpus[1]}")
    if nodes > 1:
        if instance.nvlink is False:
            problems.error("nodes", f"{nodes} nodes need an NVLink-class instance; {instance.name} has no NVLink")
        elif instance.nvlink is None:
            problems.warning("nodes", f"NVLink on {instance.name} is unconfirmed by the provider's docs")
        if instance.rdma in ("none", "unknown"):
            speed = f"{instance.network_gbps} Gbit/s" if instance.network_gbps is not None else "a speed the catalog does not know"
            problems.warning("nodes", f"{instance.name} has no confirmed RDMA: inter-node traffic uses TCP at {speed}")
        elif instance.rdma not in profile.rdma_enabled:
            problems.warning("nodes", f"{instance.name} supports {instance.rdma}, but {profile.display_name} stacks"
                             " do not set it up (no RDMA interface, no driver): NCCL between nodes uses TCP"
                             f" at {instance.network_gbps} Gbit/s")
    if instance.note:
        problems.info("instanceType", f"{instance.name}: {instance.note}")


def _check_ssh(values: dict, problems: _Problems) -> tuple[str, ...]:
    cidrs = values.get("sshAllowCidrs", [])
    allow_world = values.get("allowWorldSsh", False)
    good = []
    for index, cidr in enumerate(cidrs):
        key = f"sshAllowCidrs[{index}]"
        network = cidr_lists.network(cidr)
        if network is None:
            problems.error(key, f"{_show(cidr)} is not a CIDR (e.g. 203.0.113.7/32)")
            continue
        if network.prefixlen == 0:
            if not allow_world:
                problems.error(key, f"{cidr!r} opens SSH to the whole internet; set allowWorldSsh: true to accept"
                               " it, or list your own address (e.g. 203.0.113.7/32)")
                continue
            problems.warning(key, f"{cidr!r}: SSH is open to the whole internet (allowWorldSsh: true)")
        good.append(str(network))
    _check_ssh_union(good, allow_world, problems)
    if cidrs and not values.get("sshPublicKey"):
        problems.warning("sshPublicKey", "SSH ingress is open but no sshPublicKey is set: nobody can log in")
    return tuple(good)


def _check_ssh_union(cidrs: list[str], allow_world: bool, problems: _Problems) -> None:
    """CIDRs that together cover a whole address family are world-open too (0.0.0.0/1 + 128.0.0.0/1)."""
    for world, pieces in cidr_lists.world_unions(cidrs):
        if allow_world:
            problems.warning("sshAllowCidrs", f"{pieces}: together these open SSH to the whole internet"
                             f" ({world}; allowWorldSsh: true)")
        else:
            problems.error("sshAllowCidrs", f"{pieces}: together these cover {world}, which opens SSH to the"
                           " whole internet; set allowWorldSsh: true to accept it, or list your own addresses"
                           " (e.g. 203.0.113.7/32)")


def _check_checkpoint(values: dict, profile: ProviderProfile, region: str, billing: str,
                      problems: _Problems) -> CheckpointSpec:
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
    if bucket and bucket == profile.example_bucket and not raw.get("create"):
        # A warning, not an error: the shipped stacks must preview offline as they are.
        problems.warning("checkpoint.bucket", f"{bucket!r} is the example name the stack files ship with;"
                         " `pulumi up` fails (NoSuchBucket or AccessDenied) at the first upload until it names a"
                         " bucket you own in the stack's region (or set checkpoint.create: true)")
    prefix = str(raw.get("prefix", "")).strip("/")
    if prefix and not _PREFIX_RE.fullmatch(prefix):
        problems.error("checkpoint.prefix", f"{_show(prefix)} is not allowed; allowed: path segments of letters,"
                       " digits, '.', '_' and '-' joined by '/', none of them '.' or '..' (the node role's storage"
                       " policy is scoped to this prefix, so it may hold no wildcard)")
    store: ObjectStore = profile.object_store(region)
    endpoint = raw.get("endpoint") or store.endpoint
    if not _ENDPOINT_RE.fullmatch(endpoint):
        problems.error("checkpoint.endpoint", f"{_show(endpoint)} is not an http(s) URL (e.g."
                       f" {store.endpoint}; no spaces or control characters)")
    # Nodes use the in-VPC endpoint unless the user named one (then everyone uses theirs).
    node_endpoint = None if raw.get("endpoint") else store.node_endpoint
    return CheckpointSpec(bucket, prefix, endpoint, region, store.addressing_style, store.signature_version,
                          bool(raw.get("create", False)), node_endpoint, store.verification)


def _check_train(values: dict, nodes: int, gpus_per_node: int, problems: _Problems) -> TrainSpec:
    raw = {**schema.BY_NAME["train"].default, **values.get("train", {})}
    command = str(raw.get("command", "")).strip()
    if not command:
        problems.error("train.command", "is empty; give the command that starts training"
                       f" (default: {schema.DEFAULT_TRAIN_COMMAND!r})")
    elif _CONTROL_RE.search(command):
        problems.error("train.command", f"{_show(command)} holds a control character; allowed: printable text,"
                       " tabs and newlines")
    elif len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
        problems.error("train.command", f"{len(command.encode('utf-8')):,} bytes; the node starts it as one argument"
                       f" of sh -c, and Linux takes at most {MAX_COMMAND_BYTES:,} here (execve(2): a single"
                       " argument may not exceed MAX_ARG_STRLEN, 32 pages = 131,072 bytes; 1 KiB is kept for the"
                       " torchrun words the agent adds); put a long command in a script in train.codeDir")
    code_dir = _code_dir(raw.get("codeDir"), problems)
    launcher = raw.get("launcher") or ("torchrun" if nodes > 1 or gpus_per_node > 1 else "direct")
    if launcher not in ("direct", "torchrun"):
        problems.error("train.launcher", f"{launcher!r} is not allowed; allowed: direct, torchrun")
    env = raw.get("env") or {}
    for name, value in env.items():
        if not _ENV_NAME_RE.fullmatch(name):
            problems.error(f"train.env.{name}", "is not a valid environment variable name (letters, digits and"
                           " '_', not starting with a digit)")
        if _CONTROL_RE.search(value):
            problems.error(f"train.env.{name}", f"{_show(value)} holds a control character; allowed: printable"
                           " text, tabs and newlines")
        if re.search(r"(SECRET|PASSWORD|ACCESS_KEY|TOKEN)", name.upper()):
            problems.error(f"train.env.{name}", "looks like a credential: user-data is readable on the node and"
                           " in the cloud console; give the node role access instead")
    return TrainSpec(command, dict(env), code_dir, launcher)


def _code_dir(value: Optional[str], problems: _Problems) -> Optional[Path]:
    """train.codeDir as a folder (relative to the repository), or None with the problem recorded."""
    if not value:
        return None
    try:
        code_dir = (REPO_ROOT / value).resolve()
        if code_dir.is_dir():
            return code_dir
        why = "is not a folder"
    except (OSError, ValueError) as error:  # a NUL byte, a name longer than the file system allows
        why = f"cannot be a folder ({getattr(error, 'strerror', None) or error})"
    problems.error("train.codeDir", f"{_show(value)} {why} (relative to {REPO_ROOT})")
    return None


def _check_bootstrap(values: dict, gpu: Optional[Gpu], problems: _Problems) -> dict:
    """The node software keys: checked with the bootstrap's own rules (components/bootstrap/config.py),
    so a value the bootstrap would refuse at `pulumi up` is refused here, by its key."""
    given = values.get("bootstrap", {})
    merged = {**schema.BOOTSTRAP_DEFAULTS, **given}
    if merged["framework"] == "paddle":
        _paddle_defaults(merged, given, problems)
    if merged["framework"] not in bootstrap_rules.FRAMEWORKS:
        problems.error("bootstrap.framework", f"{_show(merged['framework'])} is not allowed; allowed:"
                       f" {', '.join(bootstrap_rules.FRAMEWORKS)}")
    for name, rule in (("driverBranch", bootstrap_rules.DRIVER_BRANCH), ("cudaToolkit", bootstrap_rules.CUDA_TOOLKIT),
                       ("frameworkVersion", bootstrap_rules.FRAMEWORK_VERSION)):
        if not rule.accepts(merged[name]):
            problems.error(f"bootstrap.{name}", f"{_show(merged[name])} is not allowed; expected {rule.allowed}")
    index = merged["frameworkIndexUrl"]
    if index and not bootstrap_rules.FRAMEWORK_INDEX_URL.accepts(index):
        problems.error("bootstrap.frameworkIndexUrl", f"{_show(index)} is not allowed; expected"
                       f" {bootstrap_rules.FRAMEWORK_INDEX_URL.allowed}")
    url = merged["ascendPackagesUrl"]
    if url and not bootstrap_rules.ASCEND_PACKAGES_URL.accepts(url):
        problems.error("bootstrap.ascendPackagesUrl", f"{_show(url)} is not allowed; expected"
                       f" {bootstrap_rules.ASCEND_PACKAGES_URL.allowed}")
    if gpu is not None and gpu.kind == "ascend" and not merged["ascendPackagesUrl"]:
        problems.error("bootstrap.ascendPackagesUrl", "Ascend nodes need the location of the driver, firmware"
                       " and CANN run-packages (an object storage URL or a path on the shared FS)")
    return merged


def _paddle_defaults(merged: dict, given: dict, problems: _Problems) -> None:
    """PaddlePaddle's own defaults (version, CUDA toolkit, driver) and the wheel index that matches the
    CUDA toolkit (components/bootstrap/paddle.py); the user's values win, checked the same way."""
    from components.bootstrap import paddle

    for key, default in (("frameworkVersion", paddle.DEFAULT_VERSION), ("cudaToolkit", paddle.DEFAULT_CUDA_TOOLKIT)):
        merged[key] = given.get(key, default)
    if "driverBranch" not in given:
        merged["driverBranch"] = str(paddle.MIN_DRIVER_BRANCH.get(merged["cudaToolkit"], merged["driverBranch"]))
    if not given.get("frameworkIndexUrl"):
        merged["frameworkIndexUrl"] = paddle.index_for(merged["cudaToolkit"]) or ""
        if not merged["frameworkIndexUrl"]:
            problems.error("bootstrap.cudaToolkit", f"{_show(merged['cudaToolkit'])}: no PaddlePaddle GPU wheel index"
                           f" is known for it; allowed: {', '.join(paddle.INDEXED_TOOLKITS)}, or set"
                           " bootstrap.frameworkIndexUrl to the index of your CUDA version")
    wanted = paddle.driver_too_old(merged["driverBranch"], merged["cudaToolkit"])
    if wanted:
        problems.error("bootstrap.driverBranch", f"{_show(merged['driverBranch'])} is too old for CUDA"
                       f" {merged['cudaToolkit']}: at least {wanted} (CUDA Toolkit release notes, driver table)")


# A stand-in for the expiry tag's value at validation (the real one is known at deploy time): the same shape.
_EXPIRY_STANDIN = tag_scheme.expiry_value("2026-12-31T23:59:00Z")


def _check_tags(values: dict, profile: ProviderProfile, stack: str, project: str, tier: Optional[str],
                problems: _Problems) -> dict:
    """The user's `tags` and the program's own against the cloud's tag rules (its package's tags.yaml):
    what the cloud would refuse at `pulumi up` is refused here, naming the key, the value and the rule."""
    rules = tag_scheme.rules(profile.name)
    user = values.get("tags", {})
    for name, value in user.items():
        if name.lower().startswith(tag_scheme.RESERVED):
            problems.error(f"tags.{name}", f"keys starting with {tag_scheme.RESERVED!r} are set by gpu-training"
                           f" itself ({', '.join(tag_scheme.STANDARD)})")
            continue
        for why in rules.problems(name, str(value)):
            problems.error(f"tags.{name}", f"{why}: {profile.display_name} refuses it"
                           f" ({_cite((rules.key if why.startswith('key ') else rules.value).source)})")
    total = len(user) + len(tag_scheme.STANDARD)
    if rules.max_tags is not None and total > rules.max_tags:
        problems.error("tags", f"{len(user)} tags of yours and gpu-training's {len(tag_scheme.STANDARD)} make {total};"
                       f" {profile.display_name} takes at most {rules.max_tags} per resource ({rules.max_tags_source}):"
                       f" give at most {rules.max_tags - len(tag_scheme.STANDARD)}")
    # The program's own values hold the stack and project names: a name the cloud's tag rule refuses is
    # refused on the key that sets it.
    own = tag_scheme.standard(project, stack, tier or "", _EXPIRY_STANDIN)
    longest = rules.value.max_length
    for tag_key, key in ((tag_scheme.STACK, "stack"), (tag_scheme.PROJECT, "project")):
        name = own[tag_key]
        if longest is not None and len(name) > longest:
            problems.error(key, f"the {key} name {name!r} is the value of the {tag_key} tag, {len(name)} characters;"
                           f" {profile.display_name} takes tag values of at most {longest} characters"
                           f" ({_cite(rules.value.source)}): use a {key} name of at most {longest} characters")
            continue
        for why in rules.value.problems(name):
            problems.error(key, f"the {key} name {name!r} is the value of the {tag_key} tag, which {why}"
                           f" on {profile.display_name} ({_cite(rules.value.source)})")
    return dict(user)


def _cite(source: str) -> str:
    """A rule's first cited page (its whole source is in the provider's tags.yaml), for a message."""
    url = re.search(r"https?://[^\s),]+", source)
    return url.group(0) if url else source.split(";")[0].strip()[:100]


def _check_capabilities(values: dict, profile: ProviderProfile, problems: _Problems) -> None:
    for name, value in values.items():
        shown = str(value).lower() if isinstance(value, bool) else value
        for declared in (f"{name}={shown}", name):
            if declared in profile.unsupported:
                problems.error(name, f"{profile.display_name} does not support {declared}:"
                               f" {profile.unsupported[declared]}")


# ---------------------------------------------------------------- sections of build_spec

def _resolve_region(config: Mapping[str, Any], profile: ProviderProfile, problems: _Problems) -> str:
    """The region is the provider's own key (alicloud:region), outside our namespace."""
    region = config.get(profile.region_key)
    if not region:
        problems.error(profile.region_key, f"not set; the region is {profile.display_name}'s own key:"
                       f" `pulumi config set {profile.region_key} <region>` or add it to the stack file")
        return ""
    region = str(region)
    if not _REGION_RE.fullmatch(region):
        problems.error(profile.region_key, f"{_show(region)} is not a region id (lowercase letters, digits and"
                       " '-', e.g. cn-hangzhou)")
    return region


def _check_placement(region: str, zone: Optional[str], spot_zones: tuple[str, ...], profile: ProviderProfile,
                     problems: _Problems) -> None:
    """The region and the zones against the provider's declared ones (components/providers/regions.py)."""
    table = region_tables.load(profile.name)
    if table is None or not region or not _REGION_RE.fullmatch(region):
        return
    if region not in table.regions:
        known = sorted(table.regions)
        problems.error(profile.region_key, f"{_show(region)} is not among {profile.display_name}'s regions"
                       f"{_suggest(region, known)}; known: {', '.join(known)}. {table.refresh_hint()}")
        return
    zones = table.regions[region]
    for key, value in [("zone", zone), *((f"spotZones[{i}]", z) for i, z in enumerate(spot_zones))]:
        if value is None:
            continue
        if zones is None:
            if not re.fullmatch(rf"{re.escape(region)}-[a-z0-9]+", value):
                problems.error(key, f"{_show(value)} is not a zone of {region} (zones of {region} are named"
                               f" {region}-<letter or number>; the declared list does not name them)")
        elif value not in zones:
            problems.error(key, f"{_show(value)} is not a zone of {region}{_suggest(value, zones)}; known:"
                           f" {', '.join(zones)}. {table.refresh_hint()}")


def _check_gpu_fits_tier(gpu: Optional[Gpu], instance: Optional[InstanceType], tier: Tier,
                         problems: _Problems) -> None:
    if gpu is None or instance is None:
        return
    if gpu.name not in tier.gpus and tier.accepts(gpu.name):
        problems.warning("gpu", f"{gpu.name} is not one of the {tier.name} tier's GPUs in the guide"
                         f" ({', '.join(tier.gpus)}); accepted as a stand-in")
    elif not tier.accepts(gpu.name):
        problems.error("instanceType", f"{instance.name} has {gpu.name} GPUs, which do not fit the {tier.name}"
                       f" tier; allowed: {', '.join(tier.gpus + tier.extra_gpus)}")


def _check_nodes(values: dict, tier: Tier, problems: _Problems) -> int:
    nodes = values.get("nodes", 1)
    if nodes < 1 or nodes > MAX_NODES:
        problems.error("nodes", f"{nodes} is out of range; allowed: 1-{MAX_NODES}")
    elif nodes > 1 and not tier.multi_node:
        problems.error("nodes", f"{nodes} nodes: more than one node is only allowed in the large tier"
                       f" (this stack is {tier.name})")
    return nodes


def _check_spot_price(values: dict, instance: Optional[InstanceType], billing: Optional[str],
                      problems: _Problems) -> Optional[float]:
    spot_cap = values.get("spotMaxPricePerHour")
    if spot_cap is not None:
        if spot_cap <= 0:
            problems.error("spotMaxPricePerHour", f"{spot_cap:g} must be greater than 0")
        elif instance is not None and instance.price.known and spot_cap > instance.price.on_demand_per_hour:
            problems.error("spotMaxPricePerHour", f"{spot_cap:g} is more than the on-demand price of"
                           f" {instance.name} ({instance.price.on_demand_per_hour:g} {instance.price.currency}/h);"
                           " spot is never worth more")
        if billing != "spot":
            problems.warning("spotMaxPricePerHour", "ignored: billing is on-demand")
    if values.get("spotFallback") and billing != "spot":
        problems.warning("spotFallback", "ignored: billing is on-demand")
    return spot_cap


def _check_data_disk(values: dict, tier: Tier, profile: ProviderProfile, problems: _Problems,
                     sized_for_data: bool = False) -> DataDisk:
    size = values.get("dataDiskGb", tier.data_disk_default_gb)
    if size <= 0:
        problems.error("dataDiskGb", f"{size} must be a size in GiB greater than 0")
    elif size < tier.data_disk_min_gb:
        problems.warning("dataDiskGb", f"{size} GiB is below the {tier.name} tier's {tier.data_disk_min_gb} GiB")
    category = values.get("dataDiskCategory")
    if category is not None and category in profile.refused_disk_categories:
        problems.error("dataDiskCategory", f"{category!r} is refused ({profile.refused_disk_categories[category]});"
                       f" only SSD classes: {', '.join(profile.ssd_disk_categories)}")
        category = None
    elif category is not None and category not in profile.ssd_disk_categories:
        problems.error("dataDiskCategory", f"{category!r} is not allowed; SSD classes:"
                       f" {', '.join(profile.ssd_disk_categories)}" + _suggest(category, profile.ssd_disk_categories))
        category = None
    data_disk = profile.data_disk(tier.disk_class, max(size, 1), category)
    if size > 0:
        _check_disk_size_for_category(size, data_disk.category, profile, problems, sized_for_data)
    if data_disk.note:
        problems.info("dataDiskGb", data_disk.note)
    return data_disk


def _check_disk_size_for_category(size: int, category: str, profile: ProviderProfile, problems: _Problems,
                                  sized_for_data: bool = False) -> None:
    """The provider's declared size range for the disk's category: outside it the cloud refuses the disk."""
    limits = profile.data_disk_sizes.get(category)
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


def _check_data(values: dict, problems: _Problems) -> DataSpec:
    """The `data` config: a packed folder (its manifest gives the size) or the size of a set already uploaded.

    Its size becomes datasetGb's default, so the RAM rule (RAM >= 2x the data) counts the staged set.
    """
    raw = values.get("data") or {}
    local, size, wait = raw.get("localDir"), raw.get("sizeGb"), raw.get("waitMinutes")
    if size is not None and not (math.isfinite(size) and size > 0):
        problems.error("data.sizeGb", f"{_show(size)} must be a size in GB greater than 0")
        size = None
    if wait is not None and not (math.isfinite(wait) and 0 <= wait <= MAX_DATA_WAIT_MINUTES):
        problems.error("data.waitMinutes", f"{_show(wait)} must be minutes from 0 to {MAX_DATA_WAIT_MINUTES}"
                       " (how long a booting node waits for the data set's manifest)")
        wait = None
    if not local:
        return DataSpec(stage=size is not None, size_gb=size, wait_minutes=wait)
    folder = (REPO_ROOT / local).resolve()
    try:
        manifest = read_manifest(folder)
    except ValueError as error:
        problems.error("data.localDir", f"{_show(local)}: {error}")
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


def _size_disk_for_data(values: dict, data: DataSpec, tier: Tier, problems: _Problems) -> bool:
    """With no dataDiskGb given, the data disk grows past the tier's default to hold the staged set (True)."""
    need = data.disk_needed_gib()
    if values.get("dataDiskGb") is None and need is not None and need > tier.data_disk_default_gb:
        values["dataDiskGb"] = need
        problems.info("dataDiskGb", f"{need} GiB, sized to hold the staged data set ({data.size_gb:.1f} GB plus 10%"
                      f" and 20 GiB for checkpoints and code; the {tier.name} tier's default is"
                      f" {tier.data_disk_default_gb} GiB)")
        return True
    return False


def _check_data_fits_disk(data: DataSpec, disk_gb: int, problems: _Problems) -> None:
    need = data.disk_needed_gib()
    if need is not None and disk_gb < need:
        problems.error("dataDiskGb", f"{disk_gb} GiB cannot hold the staged data set ({data.size_gb:.1f} GB, plus"
                       f" 10% and 20 GiB for checkpoints and code): at least {need} GiB, or a smaller data set")


def _check_dataset(values: dict, problems: _Problems) -> Optional[float]:
    dataset = values.get("datasetGb")
    if dataset is not None and dataset < 0:
        problems.error("datasetGb", f"{dataset} must be 0 or more (GB of training data)")
        return None
    return dataset


def _check_shared_storage(values: dict, tier: Tier, profile: ProviderProfile,
                          problems: _Problems) -> tuple[str, int]:
    shared_default = profile.parallel_fs if tier.shared_storage == "parallel" else "none"
    shared = values.get("sharedStorage", shared_default or "none")
    allowed_shared = ["none", *profile.shared_storage]
    if shared not in allowed_shared:
        problems.error("sharedStorage", f"{shared!r} is not offered on {profile.display_name}; allowed:"
                       f" {', '.join(allowed_shared)}" + _suggest(shared, allowed_shared))
        shared = "none"
    shared_gb = values.get("sharedStorageGb", profile.shared_storage_default_gb.get(shared, 0))
    if shared_gb < 0:
        problems.error("sharedStorageGb", f"{shared_gb} must be 0 or more (GiB)")
    elif shared != "none" and shared_gb < profile.shared_storage_min_gb.get(shared, 0):
        problems.error("sharedStorageGb", f"{shared_gb} is below the {shared} minimum of"
                       f" {profile.shared_storage_min_gb[shared]} GiB")
    if tier.name == "large" and shared == "none":
        problems.info("sharedStorage", "none: the guide pairs the large tier with a parallel FS or object"
                      " storage plus a local cache")
    return shared, shared_gb


def _check_lifetime(values: dict, problems: _Problems) -> tuple[float, float]:
    """(maxHours, idleMinutes): the cloud-side TTL and the agent's idle limit."""
    max_hours = values.get("maxHours", schema.BY_NAME["maxHours"].default)
    if not 0 < max_hours <= MAX_HOURS:
        problems.error("maxHours", f"{max_hours:g} is out of range; allowed: more than 0, at most {MAX_HOURS}")
    idle = values.get("idleMinutes", schema.BY_NAME["idleMinutes"].default)
    if not 0 <= idle <= MAX_HOURS * 60:
        problems.error("idleMinutes", f"{idle:g} is out of range; allowed: 0 (off) to {MAX_HOURS * 60}"
                       f" (maxHours' own limit, {MAX_HOURS} h)")
    return max_hours, idle


def _check_login_and_image(values: dict, problems: _Problems) -> None:
    """sshPublicKey and image reach the cloud API as they are: refuse what no cloud would take."""
    key = values.get("sshPublicKey")
    if key is not None and not _SSH_KEY_RE.fullmatch(key.strip()):
        problems.error("sshPublicKey", f"{_show(key, 60)} is not an OpenSSH public key; expected one line such as"
                       " 'ssh-ed25519 AAAAC3Nza... you@host' (the contents of ~/.ssh/id_ed25519.pub)")
    image = values.get("image")
    if image is not None and not _IMAGE_RE.fullmatch(image):
        problems.error("image", f"{_show(image)} is not an image id; expected letters, digits, '.', '_' and '-'"
                       " (e.g. m-bp1... or ubuntu_22_04_x64_20G_alibase_20240710.vhd on Alibaba, img-... on Tencent)")


def _check_spot_zones(values: dict, billing: Optional[str], problems: _Problems) -> tuple[str, ...]:
    spot_zones = tuple(str(z) for z in values.get("spotZones", []))
    if spot_zones and billing != "spot":
        problems.warning("spotZones", "ignored: billing is on-demand")
    return spot_zones


def _platform_offer(values: dict, profile: ProviderProfile):
    """The platform the stack's `platform.kind` names, when the provider offers it (else None: the
    section's checker says why, by key)."""
    raw = values.get("platform")
    return None if raw is None else profile.platforms().get(raw.get("kind"))


def _check_resolved(spec: Spec, problems: _Problems) -> None:
    """Rules on the whole resolved spec: the provider's own, egress, then the user-data budget; for a
    platform job, the platform's own rules instead (no VPC, no user-data: the platform runs the job)."""
    if spec.platform is not None:
        for key, message in spec.platform.offer.checks(spec):
            problems.error(key, message)
        problems.info("nodes", f"the plan needs this {spec.platform.offer.display_name} quota in {spec.region}:"
                      f" {spec.nodes} worker(s) of {spec.instance.name} ({spec.nodes * spec.gpus_per_node}"
                      f" {spec.gpu.name}); check the platform's quota before `pulumi up`")
        return
    for key, message in spec.profile.checks(spec):
        problems.error(key, message)
    for key, message in spec.profile.warnings(spec):
        problems.warning(key, message)
    _check_egress(spec, problems)
    _check_names(spec, problems)
    _check_scale(spec, problems)
    _check_shared_storage_use(spec, problems)
    if not problems.has_errors:
        _check_user_data_budget(spec, problems)


def _check_names(spec: Spec, problems: _Problems) -> None:
    """Every name the program gives fits the cloud's limit (provider profile `name_limits`); the stack
    name is in each, so a long stack name is the usual cause and the message says how long it may be."""
    for limit in spec.profile.name_limits:
        name = limit.render(spec.stack, index=max(spec.nodes - 1, 0))
        if limit.min <= len(name) <= limit.max:
            continue
        room = limit.max - (len(name) - len(spec.stack))
        problems.error("stack", f"the stack name {spec.stack!r} makes the {limit.type.split(':')[-1]} {limit.input}"
                       f" {name!r} {len(name)} characters; {spec.profile.display_name} allows {limit.min}-{limit.max}"
                       f" ({limit.source}): use a stack name of at most {max(room, 0)} characters")


def _check_shared_storage_use(spec: Spec, problems: _Problems) -> None:
    """A shared file system on a single-node tier shares nothing, and it bills until `pulumi destroy`
    (maxHours releases nodes only): a warning with what it bills, from the provider's keeps_billing data."""
    if spec.shared_storage == "none" or spec.tier.multi_node:
        return
    from components import billing

    without = {item.what for item in billing.keeps_billing(replace(spec, shared_storage="none", shared_storage_gb=0))}
    extra = [item for item in billing.keeps_billing(spec) if item.what not in without]
    bills = "; ".join(f"{item.what}: {item.size}, {item.basis}, rate {item.rate or 'unknown here'}" for item in extra)
    problems.warning("sharedStorage", f"{spec.shared_storage!r} on the {spec.tier.name} tier: a single node gains"
                     " nothing from a shared file system (the guide pairs one with the large tier's nodes), and it"
                     f" bills from `pulumi up` to `pulumi destroy`, after the node is gone ({bills or 'its capacity'});"
                     " allowed without this warning: sharedStorage: none")


def _check_scale(spec: Spec, problems: _Problems) -> None:
    """Before anything is created: the subnets (sized from `nodes`, components/cidrs.py) fit the VPC, and
    the preview says what quota the plan needs, so a quota error does not stop `pulumi up` partway."""
    subnets = 1 + (len(spec.spot_zones) if spec.spot else 0)
    if not cidr_lists.subnets_fit(cidr_lists.STACK_VPC, subnets, spec.nodes):
        most = max((n for n in range(1, MAX_NODES + 1) if cidr_lists.subnets_fit(cidr_lists.STACK_VPC, subnets, n)),
                   default=0)
        problems.error("nodes", f"{spec.nodes} nodes need {subnets} subnet(s) of a"
                       f" /{cidr_lists.subnet_prefix(spec.nodes)} each, more than the stack's VPC"
                       f" ({cidr_lists.STACK_VPC}) holds; allowed: at most {most} nodes with {subnets} zone(s)")
        return
    _check_placement_groups(spec, problems)
    problems.info("nodes", _quota_note(spec))


def _placement_groups(spec: Spec) -> int:
    """How many placement groups the compute part makes (the profile's `placement`, base.Placement): a
    pool (spot pool, Kubernetes node pool) takes one in its template or none."""
    if spec.profile.placement is None:
        return 0
    pooled = spec.kubernetes is not None or spec.profile.has_pool(spec)
    return spec.profile.placement.groups(spec.nodes, pooled)


def _check_placement_groups(spec: Spec, problems: _Problems) -> None:
    """More nodes than the cloud's placement group holds plan all the same (several groups, or none for a
    pool), never a `pulumi up` that fails at the first node past the limit: the warning says what is lost."""
    placement = spec.profile.placement
    if placement is None or placement.members is None or spec.nodes <= placement.members:
        return
    count = _placement_groups(spec)
    limit = f"one {placement.construct} holds at most {placement.members} nodes ({placement.source})"
    if count:
        problems.warning("nodes", f"{spec.nodes} nodes: {limit}, so the nodes go in {count} of them, filled in"
                         f" node order (nodes 0-{placement.members - 1} in the first): each keeps {placement.keeps},"
                         f" nothing holds between them; for all nodes in one: nodes: {placement.members} or fewer")
        return
    pool = "the Kubernetes GPU node pool" if spec.kubernetes is not None else "the spot pool"
    problems.warning("nodes", f"{spec.nodes} nodes: {limit}; {pool} takes one in its template, so it gets none and"
                     f" loses what one gives ({placement.keeps}); for it: nodes: {placement.members} or fewer"
                     + ("" if spec.kubernetes is not None else ", or billing: on-demand (several groups)"))


def _quota_note(spec: Spec) -> str:
    """The quota the plan draws on in the region: instances, GPUs, vCPUs, public addresses, and the
    placement groups with their member limit (or where the account's own is read when it is unknown)."""
    from components.providers.base import has_public_address

    vcpus = spec.nodes * max(row.vcpus for row in spec.pool_types)
    if spec.kubernetes is not None:
        addresses = "the NAT gateway's EIP (the GPU nodes have no public address)"
    elif has_public_address(spec):
        addresses = f"{spec.nodes} public IP(s) (EIPs), one per node (publicEgress or sshAllowCidrs)"
    else:
        addresses = "no public IP"
    offered, groups = spec.profile.placement, _placement_groups(spec)
    if not groups:
        placement = ""
    elif offered.members is None:
        placement = (f"; all {spec.nodes} nodes go in one {offered.construct}, whose member limit is not known"
                     f" here ({offered.source}): check that it holds {spec.nodes}")
    else:
        placement = (f"; placement: {groups} x {offered.construct}, at most {offered.members} nodes each"
                     f" ({offered.source})")
    return (f"the plan needs this {spec.profile.display_name} quota in {spec.region}: {spec.nodes} GPU instance(s)"
            f" of {spec.instance.name} ({spec.nodes * spec.gpus_per_node:,} {spec.gpu.name} GPUs),"
            f" {vcpus:,} vCPUs{' (the largest type of the spot pool)' if len(spec.pool_types) > 1 else ''},"
            f" {addresses}{placement}. Check the account's quotas for them before `pulumi up`: a quota"
            " error stops it partway, with some resources created")


# The shared FS mount address is known only at deploy time: validation renders user-data with a
# stand-in longer than the mount targets the clouds hand out (~50 characters) and as incompressible.
_FS_ADDRESS_STANDIN = hashlib.sha256(b"deploy-time mount target").hexdigest() * 2 + ":/share"


def _user_text(spec: Spec) -> list[tuple[str, str]]:
    """(dotted key, value) of the free text the user wrote that rides in the node config."""
    items = [("train.command", spec.train.command)]
    items += [(f"train.env.{name}", f"{name}={value}") for name, value in spec.train.env.items()]
    items += [("checkpoint.bucket", spec.checkpoint.bucket or ""), ("checkpoint.prefix", spec.checkpoint.prefix),
              ("checkpoint.endpoint", spec.checkpoint.endpoint)]
    return items


def _check_user_data_budget(spec: Spec, problems: _Problems) -> None:
    """Each node's encoded user-data must stay under the cloud's limit (the profile's `user_data`):
    rendered here the way `pulumi up` renders it, and when it does not fit, the error names the value
    the user wrote that weighs most, instead of the program failing later."""
    from components.bootstrap import BootstrapConfigError, render_user_data, user_data_limit

    address = _FS_ADDRESS_STANDIN if spec.shared_storage != "none" else None
    try:
        rendered = render_user_data(build_node_config(spec, shared_fs_address=address), max_encoded=None)
    except BootstrapConfigError as error:  # the rules above should have said it; say it by key all the same
        for line in error.problems:
            key, _, message = line.partition(": ")
            problems.error(key, message)
        return
    limit = user_data_limit(spec.provider)
    if rendered.encoded_size <= limit:
        return
    weights = sorted(((len(gzip.compress(value.encode(), 9)), key, value) for key, value in _user_text(spec)
                      if value), reverse=True)
    weight, key, value = weights[0]
    others = [f"{k} (~{w:,} bytes)" for w, k, _ in weights[1:4] if w > 200]
    problems.error(key, f"{len(value):,} characters make the node's user-data {rendered.encoded_size:,} bytes"
                   f" encoded; the cloud's limit is {limit:,} ({spec.profile.user_data.describe()}; it also carries the"
                   f" node config and the"
                   f" agent's boot set). This value weighs ~{weight:,} bytes compressed"
                   + (f"; next: {', '.join(others)}" if others else "")
                   + (". Shorten it: a long command belongs in a script in train.codeDir" if key == "train.command"
                      else ". Shorten it: long data belongs in a file in train.codeDir"))


# ---------------------------------------------------------------- entry point

def build_spec(config: Mapping[str, Any], *, stack: str, project: str = "gpu-training",
               catalog: Optional[Catalog] = None) -> Spec:
    """Validate `config`; `catalog` replaces the provider's catalog file (what-ifs with other prices).

    Each section has its own checker (above): it records its problems and returns the value to use.
    """
    problems = _Problems()
    values = _read_namespace(config, problems)
    data = _check_data(values, problems)

    provider = _choice(values, "provider", providers.names(), problems, schema.BY_NAME["provider"].default)
    tier_table = tiers()
    tier_name = _choice(values, "tier", list(tier_table), problems, schema.BY_NAME["tier"].default)
    billing = _choice(values, "billing", ("on-demand", "spot"), problems, "on-demand")
    if provider is None or tier_name is None:
        raise SpecError(problems.items)
    profile = providers.profile(provider)
    tier = tier_table[tier_name]
    # A platform stack is judged by the platform's declared limits and its flavors instead of the VM ones.
    offer = _platform_offer(values, profile)
    _check_capabilities(values, offer or profile, problems)
    region = _resolve_region(config, profile, problems)

    catalog = catalog or (offer.catalog() if offer else load_catalog(provider))
    gpu, count, instance = _resolve_instance(values, tier, gpus(), catalog, profile, problems)
    _check_gpu_fits_tier(gpu, instance, tier, problems)
    nodes = _check_nodes(values, tier, problems)
    if instance is not None and count is not None:
        _check_instance(values, tier, instance, nodes, profile, problems)
    spot_cap = _check_spot_price(values, instance, billing, problems)
    sized_for_data = _size_disk_for_data(values, data, tier, problems)
    data_disk = _check_data_disk(values, tier, profile, problems, sized_for_data)
    _check_data_fits_disk(data, values.get("dataDiskGb", tier.data_disk_default_gb), problems)
    shared, shared_gb = _check_shared_storage(values, tier, profile, problems)
    if offer is not None:  # the job mounts the stack's bucket prefix; no shared FS is created (docs/platforms.md)
        shared, shared_gb = "none", 0
    max_hours, idle = _check_lifetime(values, problems)
    dataset = _check_dataset(values, problems)
    _check_login_and_image(values, problems)
    ssh = _check_ssh(values, problems)
    checkpoint = _check_checkpoint(values, profile, region, billing or "on-demand", problems)
    train = _check_train(values, nodes, count or 1, problems)
    # A platform job runs the platform's image (CANN/CUDA inside): the node bootstrap's accelerator rules do not apply.
    bootstrap = _check_bootstrap(values, None if offer else gpu, problems)
    tags = _check_tags(values, profile, stack, project, tier_name, problems)
    spot_zones = _check_spot_zones(values, billing, problems)
    _check_placement(region, values.get("zone"), spot_zones, profile, problems)
    kubernetes = _check_kubernetes(values, profile, region, max_hours, checkpoint, shared, ssh, problems)
    platform = (platform_settings.check(values["platform"], profile.platforms(), profile.display_name, max_hours,
                                        problems) if values.get("platform") is not None else None)

    if problems.has_errors or instance is None or gpu is None or count is None:
        if not problems.has_errors:  # defensive: never build a half-resolved spec
            problems.error("gpu", "could not resolve an instance type")
        raise SpecError(problems.items)

    pool = _pool_types(instance, gpu, tier, catalog, values.get("datasetGb"), problems) if billing == "spot" \
        else (instance,)
    if billing == "spot" and len(pool) == 1 and not spot_zones and offer is None:
        problems.info("spotZones", f"the spot pool has one instance type ({instance.name}) in one zone;"
                      " list spotZones to give it more capacity to draw from")

    spec = Spec(
        project=project, stack=stack, provider=provider, profile=profile, region=region, tier=tier, gpu=gpu,
        gpus_per_node=count, nodes=nodes, instance=instance, pool_types=pool, billing=billing,
        spot_max_price=spot_cap, spot_fallback=bool(values.get("spotFallback", False)),
        zone=values.get("zone"), spot_zones=spot_zones, data_disk=data_disk,
        dataset_gb=dataset, shared_storage=shared, shared_storage_gb=shared_gb,
        ssh_allow_cidrs=ssh, allow_world_ssh=bool(values.get("allowWorldSsh", False)),
        ssh_public_key=values.get("sshPublicKey"), image=values.get("image"), max_hours=max_hours,
        idle_minutes=idle, keep=bool(values.get("keep", False)), checkpoint=checkpoint, train=train,
        bootstrap=bootstrap, tags=tags, findings=tuple(problems.items),
        public_egress=bool(values.get("publicEgress", schema.BY_NAME["publicEgress"].default)), data=data,
        kubernetes=kubernetes, platform=platform,
    )
    _check_resolved(spec, problems)
    if problems.has_errors:
        raise SpecError(problems.items)
    return replace(spec, findings=tuple(problems.items))


def _check_kubernetes(values: dict, profile: ProviderProfile, region: str, max_hours: float, checkpoint: CheckpointSpec,
                      shared: str, ssh: tuple[str, ...], problems: _Problems) -> Optional[kubernetes_settings.KubernetesSpec]:
    """The `kubernetes:` section (components/kubernetes/settings.py) and the VM settings it cannot honour."""
    if values.get("kubernetes") is None:
        return None
    found = kubernetes_settings.check(values["kubernetes"], profile.kubernetes, problems, region=region,
                                      max_hours=max_hours)
    if found is None:
        return None
    if not checkpoint.bucket:
        problems.error("checkpoint.bucket", "not set; a Kubernetes stack's pods keep nothing between evictions:"
                       " checkpoints, markers and the agent itself live in this bucket")
    if shared != "none":
        problems.error("sharedStorage", f"{shared!r} is not mounted by the Kubernetes path yet; allowed: none (the"
                       " pods use the node's data disk and object storage; docs/kubernetes.md)")
    if ssh:
        problems.error("sshAllowCidrs", "the Kubernetes path opens no SSH to the nodes; use kubectl exec through"
                       " the API server (kubernetes.apiAllowCidrs); allowed: []")
    return found


def _check_egress(spec: Spec, problems: _Problems) -> None:
    """Every endpoint a node uses needs a route out of (or inside) the VPC (components/egress.py)."""

    for level, key, message in egress.findings(spec):
        getattr(problems, level)(key, message)
