"""The guide's three scenarios (entry, medium, large) and the accelerator models, read from data files."""
from __future__ import annotations

from typing import Optional

from dataclasses import dataclass

from components import datafiles


@dataclass(frozen=True)
class Gpu:
    name: str
    kind: str  # nvidia | ascend
    memory_gb: int
    nvlink_class: bool
    substitutes: tuple[str, ...]


@dataclass(frozen=True)
class Tier:
    name: str
    description: str
    gpus: tuple[str, ...]
    extra_gpus: tuple[str, ...]
    gpu_counts: tuple[int, ...]
    vcpus: tuple[int, int]
    memory_gb: tuple[int, int]
    memory_floor_gb: int
    data_disk_min_gb: int
    data_disk_default_gb: int
    disk_class: str
    multi_node: bool
    shared_storage: str  # none | parallel

    def accepts(self, gpu: str) -> bool:
        return gpu in self.gpus or gpu in self.extra_gpus


@dataclass(frozen=True)
class FitRules:
    """The guide's rules a type must meet to count as fitting (tiers.yaml `fit`)."""
    vcpus_per_gpu: tuple[int, int]
    data_ram_max: float
    memory_range_slack: float


def ram_shortfalls(tier: Tier, memory_gb: float, dataset_gb: Optional[float]) -> list[tuple[str, str]]:
    """The RAM rules a node must meet, as (key, message): RAM >= 2x the data set and the tier's floor. The
    validator refuses a stack on them and the advisor rejects a type on them: one rule, one place. The
    tier's memoryGb range is the guide's advice, not a rule (the advisor ranks by cost, which weighs it)."""
    found = []
    if dataset_gb is not None and memory_gb < 2 * dataset_gb:
        found.append(("datasetGb", f"{dataset_gb:g} GB of data needs at least {2 * dataset_gb:g} GB RAM (2x the data)"))
    if memory_gb < tier.memory_floor_gb:
        found.append(("instanceType", f"{memory_gb:.0f} GB RAM; the {tier.name} tier needs at least"
                                      f" {tier.memory_floor_gb} GB"))
    return found


def fit_rules() -> FitRules:
    raw = datafiles.load("tiers.yaml")["fit"]
    return FitRules(tuple(raw["vcpusPerGpu"]), float(raw["dataRamMax"]), float(raw["memoryRangeSlack"]))


def gpus() -> dict[str, Gpu]:
    raw = datafiles.load("gpus.yaml")["gpus"]
    return {
        name: Gpu(name, row["kind"], row["memoryGb"], row["nvlinkClass"], tuple(row["substitutes"]))
        for name, row in raw.items()
    }


def tiers() -> dict[str, Tier]:
    raw = datafiles.load("tiers.yaml")["tiers"]
    return {
        name: Tier(
            name=name,
            description=row["description"],
            gpus=tuple(row["gpus"]),
            extra_gpus=tuple(row["extraGpus"]),
            gpu_counts=tuple(row["gpuCounts"]),
            vcpus=tuple(row["vcpus"]),
            memory_gb=tuple(row["memoryGb"]),
            memory_floor_gb=row["memoryFloorGb"],
            data_disk_min_gb=row["dataDiskGb"]["min"],
            data_disk_default_gb=row["dataDiskGb"]["default"],
            disk_class=row["diskClass"],
            multi_node=row["multiNode"],
            shared_storage=row["sharedStorage"],
        )
        for name, row in raw.items()
    }
