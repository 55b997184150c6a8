"""The compute sections: the GPU and instance type, the spot pool's alternatives, nodes, spot price and zones."""
from __future__ import annotations

from typing import Optional

from components.catalog import Catalog, InstanceType
from components.providers.profile_records import ProviderProfile
from components.spec import MAX_NODES
from components.tiers import Gpu, Tier, ram_shortfalls
from components.validation.read import Problems, suggest

_MAX_POOL_TYPES = 4


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


def resolve_instance(values: dict, tier: Tier, gpu_table: dict[str, Gpu], catalog: Catalog,
                      profile: ProviderProfile, problems: Problems):
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
                           + (suggest(override, names) or f" (components/providers/{profile.name}/catalog.yaml)"))
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
                       + suggest(gpu_name, gpu_table))
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


def pool_types(instance: InstanceType, gpu: Gpu, tier: Tier, catalog: Catalog,
                dataset_gb: Optional[float], problems: Problems) -> tuple[InstanceType, ...]:
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


def check_instance(spec_values: dict, tier: Tier, instance: InstanceType, nodes: int, profile: ProviderProfile,
                    problems: Problems) -> None:
    per_gpu = instance.vcpus_per_gpu
    if not 8 <= per_gpu <= 16:
        why = ("fewer starves the data loaders" if per_gpu < 8
               else "more is more than the data loaders need, paid for by the hour")
        problems.warning("instanceType", f"{instance.name} has {per_gpu:g} vCPU per GPU; the guide advises 8-16"
                         f" ({why})")
    # The RAM rule the advisor applies too (tiers.ram_shortfalls).
    for key, message in ram_shortfalls(tier, instance.memory_gb, spec_values.get("datasetGb")):
        if key == "datasetGb":
            problems.error(key, f"{message}; {instance.name} has {instance.memory_gb:.0f} GB: pick a larger"
                           " instanceType or lower datasetGb")
        else:
            problems.error(key, f"{instance.name} has {message}")
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
        elif instance.rdma not in profile.interconnect.rdma_enabled:
            problems.warning("nodes", f"{instance.name} supports {instance.rdma}, but {profile.display_name} stacks"
                             " do not set it up (no RDMA interface, no driver): NCCL between nodes uses TCP"
                             f" at {instance.network_gbps} Gbit/s")
    if instance.note:
        problems.info("instanceType", f"{instance.name}: {instance.note}")


def check_gpu_fits_tier(gpu: Optional[Gpu], instance: Optional[InstanceType], tier: Tier,
                         problems: Problems) -> None:
    if gpu is None or instance is None:
        return
    if gpu.name not in tier.gpus and tier.accepts(gpu.name):
        problems.warning("gpu", f"{gpu.name} is not one of the {tier.name} tier's GPUs in the guide"
                         f" ({', '.join(tier.gpus)}); accepted as a stand-in")
    elif not tier.accepts(gpu.name):
        problems.error("instanceType", f"{instance.name} has {gpu.name} GPUs, which do not fit the {tier.name}"
                       f" tier; allowed: {', '.join(tier.gpus + tier.extra_gpus)}")


def check_nodes(values: dict, tier: Tier, problems: Problems) -> int:
    nodes = values.get("nodes", 1)
    if nodes < 1 or nodes > MAX_NODES:
        problems.error("nodes", f"{nodes} is out of range; allowed: 1-{MAX_NODES}")
    elif nodes > 1 and not tier.multi_node:
        problems.error("nodes", f"{nodes} nodes: more than one node is only allowed in the large tier"
                       f" (this stack is {tier.name})")
    return nodes


def check_spot_price(values: dict, instance: Optional[InstanceType], billing: Optional[str],
                      problems: Problems) -> Optional[float]:
    spot_cap = values.get("spotMaxPricePerHour")
    if spot_cap is not None:
        if spot_cap <= 0:
            problems.error("spotMaxPricePerHour", f"{spot_cap:g} must be greater than 0")
        elif instance is not None and instance.price.account_price is not None \
                and spot_cap > instance.price.account_price:
            problems.error("spotMaxPricePerHour", f"{spot_cap:g} is more than the on-demand price of"
                           f" {instance.name} ({instance.price.account_price:g} {instance.price.currency}/h);"
                           " spot is never worth more")
        elif instance is not None and instance.price.known and not instance.price.from_api \
                and spot_cap > instance.price.on_demand_per_hour:
            # A list price may be old or of the other site (another currency): a warning, not a refusal.
            price = instance.price
            problems.warning("spotMaxPricePerHour", f"{spot_cap:g} is more than the list price of {instance.name}"
                             f" ({price.on_demand_per_hour:g} {price.currency}/h, {price.source}, {price.date});"
                             " spot is never worth more than on-demand: check the cap's currency and today's price")
        if billing != "spot":
            problems.warning("spotMaxPricePerHour", "ignored: billing is on-demand")
    if values.get("spotFallback") and billing != "spot":
        problems.warning("spotFallback", "ignored: billing is on-demand")
    return spot_cap


def check_spot_zones(values: dict, billing: Optional[str], problems: Problems) -> tuple[str, ...]:
    spot_zones = tuple(str(z) for z in values.get("spotZones", []))
    if spot_zones and billing != "spot":
        problems.warning("spotZones", "ignored: billing is on-demand")
    return spot_zones
