"""The performance model (components/data/perf.yaml) as typed records, and the arithmetic on it.

Throughput of one GPU, GPU memory for a batch, what the CPUs can feed, and how efficiency falls
with more GPUs and nodes. Every function here is pure: the optimiser composes them, the tests and
docs/advisor.md explain them. Unknown figures stay None and callers reject the offer with a reason.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Mapping, Optional

from components import datafiles
from components.catalog import InstanceType

@dataclass(frozen=True)
class GpuPerf:
    name: str
    images_per_second: Optional[float]  # ResNet-50 AMP at the reference resolution; None = unknown
    estimate: bool
    basis: str  # source key, or how an estimate was derived
    nvlink_gbps: Optional[float]
    pcie_generation: Optional[int]


@dataclass(frozen=True)
class ModelPerf:
    name: str
    relative_speed: float  # vs ResNet-50 on the same GPU at `resolution`
    resolution: int
    params_m: float
    fit_batch: int  # the largest per-GPU batch that fitted fit_memory_gb
    fit_memory_gb: float
    default_batch: int
    cpu_cost: float
    estimate: bool
    basis: str


@dataclass(frozen=True)
class PerfModel:
    sources: Mapping[str, Mapping[str, str]]
    reference_resolution: int
    gpus: Mapping[str, GpuPerf]
    models: Mapping[str, ModelPerf]
    pcie_gbps: Mapping[int, float]
    reference_gflops: float
    bytes_per_param: float
    context_gb: float
    usable_fraction: float
    small_batch: int
    small_batch_exponent: float
    max_pixel_speedup: float
    cpu_rates: tuple[tuple[int, float], ...]  # (resolution, images/s per core), ascending
    vcpu_share: float
    reserved_vcpus_per_gpu: int
    per_doubling: float
    per_node_doubling: float
    overlap: float
    gradient_bytes_per_param: float
    network_efficiency: Mapping[str, float]
    startup_minutes: float
    spot_interruptions_per_node_hour: float
    spot_restart_minutes: float
    spot_checkpoint_minutes: float
    spot_max_lost_fraction: float
    dataset_kb_per_image: float


def _model(name: str, row: Mapping) -> ModelPerf:
    fit = row["fit"]
    return ModelPerf(
        name=name, relative_speed=float(row["relativeSpeed"]), resolution=int(row["resolution"]),
        params_m=float(row["paramsM"]), fit_batch=int(fit["batch"]), fit_memory_gb=float(fit["gpuMemoryGb"]),
        default_batch=int(row["defaultBatch"]), cpu_cost=float(row.get("cpuCost", 1)),
        estimate=bool(row.get("estimate", False)) or bool(fit.get("estimate", False)),
        basis=str(row.get("basis", "")),
    )


@functools.lru_cache(maxsize=None)
def load() -> PerfModel:
    raw = datafiles.load("perf.yaml")
    gpus = {
        name: GpuPerf(name, None if row.get("imagesPerSecond") is None else float(row["imagesPerSecond"]),
                      bool(row.get("estimate", False)), str(row.get("basis") or row.get("source") or ""),
                      row.get("nvlinkGBps"), row.get("pcie"))
        for name, row in raw["gpus"].items()
    }
    models = {name: _model(name, row) for name, row in raw["models"].items()}
    reference = models[raw["reference"]["model"]]
    derived = raw.get("derivedModels") or {}
    cpu = raw["cpu"]
    perf = PerfModel(
        sources=raw["sources"], reference_resolution=int(raw["reference"]["resolution"]), gpus=gpus,
        models=models, pcie_gbps={int(k): float(v) for k, v in raw["pcieGBps"].items()},
        reference_gflops=float(raw["models"][reference.name]["gflops"]),
        bytes_per_param=float(raw["memory"]["bytesPerParam"]), context_gb=float(raw["memory"]["contextGb"]),
        usable_fraction=float(raw["memory"]["usableFraction"]),
        small_batch=int(raw["smallBatch"]["batch"]), small_batch_exponent=float(raw["smallBatch"]["exponent"]),
        max_pixel_speedup=float(raw["maxPixelSpeedup"]),
        cpu_rates=tuple(sorted((int(k), float(v)) for k, v in cpu["imagesPerSecondPerCore"].items())),
        vcpu_share=float(cpu["vcpuShare"]), reserved_vcpus_per_gpu=int(cpu["reservedVcpusPerGpu"]),
        per_doubling=float(raw["scaling"]["perDoubling"]),
        per_node_doubling=float(raw["scaling"]["perNodeDoubling"]), overlap=float(raw["scaling"]["overlap"]),
        gradient_bytes_per_param=float(raw["scaling"]["gradientBytesPerParam"]),
        network_efficiency=dict(raw["scaling"]["networkEfficiency"]),
        startup_minutes=float(raw["startupMinutes"]),
        spot_interruptions_per_node_hour=float(raw["spot"]["interruptionsPerNodeHour"]),
        spot_restart_minutes=float(raw["spot"]["restartMinutes"]),
        spot_checkpoint_minutes=float(raw["spot"]["checkpointMinutes"]),
        spot_max_lost_fraction=float(raw["spot"]["maxLostFraction"]),
        dataset_kb_per_image=float(raw["datasetKbPerImage"]),
    )
    # Models known by architecture only: a custom model under their own name (models is the dict perf holds).
    for name, row in derived.items():
        model = custom_model(perf, float(row["gflops"]), float(row["paramsM"]), int(row["resolution"]))
        models[name] = replace(model, name=name, basis=f"estimate: ResNet-50 scaled by GFLOPs ({row['source']})")
    return perf


def custom_model(perf: PerfModel, gflops: float, params_m: float, resolution: int) -> ModelPerf:
    """A model known only by its GFLOPs per sample (at `resolution`) and parameter count: estimates."""
    reference = perf.models["resnet50"]
    ratio = gflops / perf.reference_gflops
    # Scale the reference's per-sample memory by the FLOPs ratio: activations grow with the work done.
    per_sample = reference_per_sample_gb(perf, reference) * ratio
    fit_memory = reference.fit_memory_gb
    static = static_gb(perf, params_m)
    usable = fit_memory * perf.usable_fraction
    fit_batch = max(1, int((usable - static) / per_sample)) if usable > static else 0
    return ModelPerf(
        name=f"custom ({gflops:g} GFLOPs, {params_m:g} M params)", relative_speed=1 / ratio,
        resolution=resolution, params_m=params_m, fit_batch=fit_batch, fit_memory_gb=fit_memory,
        default_batch=reference.default_batch, cpu_cost=1.0, estimate=True,
        basis="estimate: ResNet-50 scaled by the GFLOPs ratio (perf.yaml `custom`)",
    )


# ---------------------------------------------------------------- memory

def static_gb(perf: PerfModel, params_m: float) -> float:
    return params_m * 1e6 * perf.bytes_per_param / 1e9 + perf.context_gb


def reference_per_sample_gb(perf: PerfModel, model: ModelPerf) -> float:
    usable = model.fit_memory_gb * perf.usable_fraction
    return max(usable - static_gb(perf, model.params_m), 0.0) / model.fit_batch


def pixel_ratio(model: ModelPerf, resolution: int) -> float:
    return (resolution / model.resolution) ** 2


def memory_needed_gb(perf: PerfModel, model: ModelPerf, batch: int, resolution: int) -> float:
    per_sample = reference_per_sample_gb(perf, model) * pixel_ratio(model, resolution)
    return static_gb(perf, model.params_m) + per_sample * batch


def usable_gb(perf: PerfModel, gpu_memory_gb: float) -> float:
    return gpu_memory_gb * perf.usable_fraction


def default_batch(perf: PerfModel, model: ModelPerf, gpu_memory_gb: float, resolution: int,
                  minimum: int = 8) -> Optional[int]:
    """The largest power of two up to the recipe's batch that fits the GPU; None below `minimum`."""
    batch = 1 << int(math.log2(max(model.default_batch, 1)))
    while batch >= minimum:
        if memory_needed_gb(perf, model, batch, resolution) <= usable_gb(perf, gpu_memory_gb):
            return batch
        batch //= 2
    return None


def max_batch(perf: PerfModel, model: ModelPerf, gpu_memory_gb: float, resolution: int) -> int:
    per_sample = reference_per_sample_gb(perf, model) * pixel_ratio(model, resolution)
    room = usable_gb(perf, gpu_memory_gb) - static_gb(perf, model.params_m)
    return max(0, int(room / per_sample)) if per_sample > 0 else 0


# ---------------------------------------------------------------- throughput

def gpu_images_per_second(perf: PerfModel, model: ModelPerf, gpu: GpuPerf, resolution: int,
                          batch: int) -> Optional[float]:
    """Training samples/s of one GPU; None when the GPU has no performance figure."""
    if gpu.images_per_second is None:
        return None
    pixels = min(1 / pixel_ratio(model, resolution), perf.max_pixel_speedup)
    small = min(1.0, batch / perf.small_batch) ** perf.small_batch_exponent
    return gpu.images_per_second * model.relative_speed * pixels * small


def cpu_images_per_second_per_core(perf: PerfModel, resolution: int) -> float:
    """Log-log interpolation between the measured resolutions; flat beyond the ends."""
    points = perf.cpu_rates
    if resolution <= points[0][0]:
        return points[0][1]
    if resolution >= points[-1][0]:
        return points[-1][1]
    for (r0, v0), (r1, v1) in zip(points, points[1:], strict=False):
        if r0 <= resolution <= r1:
            t = (math.log(resolution) - math.log(r0)) / (math.log(r1) - math.log(r0))
            return math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0)))
    raise AssertionError(resolution)


def node_cpu_images_per_second(perf: PerfModel, model: ModelPerf, instance: InstanceType, resolution: int) -> float:
    workers = instance.vcpus - perf.reserved_vcpus_per_gpu * instance.gpu_count
    # An instance with no spare vCPU still loads data, only slower: count half its vCPUs.
    workers = workers if workers > 0 else instance.vcpus / 2
    return workers * perf.vcpu_share * cpu_images_per_second_per_core(perf, resolution) / model.cpu_cost


def link_gbps(perf: PerfModel, gpu: GpuPerf, instance: InstanceType) -> tuple[float, str]:
    """The GPU-to-GPU bandwidth inside a node (GB/s, one direction) and what it is."""
    if instance.nvlink is True and gpu.nvlink_gbps:
        return float(gpu.nvlink_gbps), "NVLink"
    generation = gpu.pcie_generation or 3
    return perf.pcie_gbps[generation], f"PCIe Gen{generation}" + (" (NVLink unconfirmed)" if instance.nvlink is None else "")


def network_kind(instance: InstanceType, rdma_enabled: tuple[str, ...]) -> str:
    """RDMA only where the provider sets the fabric up end to end (profile.interconnect.rdma_enabled);
    otherwise the nodes get host.rdma none and NCCL runs over TCP, whatever the hardware has."""
    return "rdma" if instance.rdma in rdma_enabled else "tcp"


@dataclass(frozen=True)
class Scaling:
    efficiency: float
    base: float
    compute_seconds: float
    exposed_seconds: float
    link: str


def scaling(perf: PerfModel, model: ModelPerf, gpu: GpuPerf, instance: InstanceType, nodes: int,
            per_gpu: float, batch: int, rdma_enabled: tuple[str, ...] = ()) -> Optional[Scaling]:
    """Efficiency of nodes x gpus against one GPU; None when multi-node needs an unknown network rate."""
    gpus = instance.gpu_count
    base = perf.per_doubling ** math.log2(gpus) * perf.per_node_doubling ** math.log2(nodes)
    gradient_bytes = model.params_m * 1e6 * perf.gradient_bytes_per_param
    compute = batch / per_gpu
    link, link_name = link_gbps(perf, gpu, instance)
    intra = 2 * (gpus - 1) / gpus * gradient_bytes / (link * 1e9) if gpus > 1 else 0.0
    inter = 0.0
    if nodes > 1:
        if not instance.network_gbps:
            return None
        kind = network_kind(instance, rdma_enabled)
        rate = instance.network_gbps / 8 * 1e9 * perf.network_efficiency[kind]
        inter = 2 * (nodes - 1) / nodes * gradient_bytes / rate
        link_name += f", {instance.network_gbps:g} Gbit/s {'RDMA' if kind == 'rdma' else 'TCP'} between nodes"
    exposed = max(0.0, intra + inter - perf.overlap * compute)
    return Scaling(base * compute / (compute + exposed), base, compute, exposed, link_name)


def dataset_gb_estimate(perf: PerfModel, images: int, resolution: int) -> float:
    factor = min(max((resolution / perf.reference_resolution) ** 2, 0.02), 1.5)
    return images * perf.dataset_kb_per_image * factor / 1e6
