"""Plain-language reasons: why a configuration fits, why others were rejected, what the ranking means."""
from __future__ import annotations

from components import catalog, clock
from components.tiers import fit_rules
from tools.advisor.optimiser import Evaluation, Rejection, Result, ram_range, tier_summary

LARGE_BATCH = 8192

CONSTRAINT_TITLES = {
    "tier": "no tier of the guide takes the GPU count/model",
    "performance": "no performance figure for the GPU",
    "vcpu": "vCPU per GPU outside the guide's 8-16",
    "ram": "RAM: at least twice the data set and the tier's floor (the spec's rules), within the tier's range"
           " (the guide's)",
    "vram": "GPU memory for the batch",
    "deadline": "too slow for the deadline",
    "spot": "spot reclaims would eat the run",
    "budget": "over budget",
}


def shared_storage(ev: Evaluation) -> tuple[str, int]:
    """The shared file system the spec will give this stack by default, and its size in GiB."""
    tier, profile = ev.offer.tier, ev.offer.profile
    assert tier is not None
    shared = profile.shared_fs
    if tier.shared_storage == "parallel" and shared.parallel:
        return shared.parallel, int(shared.default_gb.get(shared.parallel, 0))
    return "none", 0


def reasons(ev: Evaluation, request) -> list[str]:
    row, fit, tier = ev.offer.instance, ev.fit, ev.offer.tier
    assert tier is not None and ev.offer.gpu is not None
    lines = []
    stand_in = row.gpu not in tier.gpus
    lines.append(f"tier: {tier.name} ({tier.description})"
                 + (f"; {row.gpu} is a stand-in, not one of the guide's {', '.join(tier.gpus)}" if stand_in else ""))
    lowered = f", lowered from the recipe's {request.model.default_batch} to fit" if fit.batch_lowered else ""
    lines.append(f"VRAM: batch {fit.batch} per GPU{lowered} needs ~{fit.memory_needed_gb:.1f} GB;"
                 f" each {row.gpu} offers {fit.usable_gb:.1f} of {row.gpu_memory_gb} GB"
                 f" (global batch {fit.batch * ev.gpus:,})")
    per_gpu_vcpu = row.vcpus_per_gpu
    low_vcpu, high_vcpu = fit_rules().vcpus_per_gpu
    guide = f"inside the guide's {low_vcpu}-{high_vcpu}"
    feed = (f"the CPUs prepare ~{fit.node_cpu:,.0f} images/s per node, the GPUs take"
            f" ~{ev.gpu_images_per_second / ev.nodes:,.0f}")
    lines.append(f"vCPU: {row.vcpus} vCPU = {per_gpu_vcpu:g} per GPU ({guide}); {feed}"
                 + (": CPU-bound, the GPUs will wait for data" if ev.cpu_bound else ""))
    floor = f", tier floor {tier.memory_floor_gb} GB" if tier.memory_floor_gb else ""
    low, high = ram_range(tier, request.dataset_gb_int)
    # The RAM rule reads the stack's whole-GB datasetGb: say so where it differs from the size given.
    as_given = (f"the {request.dataset_gb_int} GB data set" if request.dataset_gb == request.dataset_gb_int
                else f"the {request.dataset_gb:g} GB data set, counted as the stack's datasetGb"
                     f" {request.dataset_gb_int}")
    inside = low <= row.memory_gib <= high
    lines.append(f"RAM: {row.memory_gb:.0f} GB >= {fit.ram_needed_gb} GB (2x {as_given}{floor}, the spec's rule);"
                 f" {row.memory_gib:g} GiB " + (f"within the tier's {low:.0f}-{high:.0f}" if inside else
                 f"outside the tier's {low:.0f}-{high:.0f} (the guide's advice, not a rule: its cost counts it)"))
    disk = ev.offer.profile.disks.data_disk(tier.disk_class, fit.data_disk_gb, None)
    level = f" {disk.performance_level}" if disk.performance_level else ""
    fs, fs_gb = shared_storage(ev)
    fs_text = (f"shared FS: {fs} {fs_gb:,} GiB at /shared ({ev.offer.profile.shared_fs.kinds.get(fs, fs)})"
               if fs != "none" else "shared FS: none (single node; data on the local disk)")
    lines.append(f"disk: {fit.data_disk_gb:,} GiB {disk.category}{level} per node (data set x1.5 + 50 GB for"
                 f" checkpoints, tier minimum {tier.data_disk_min_gb}); {fs_text}")
    global_batch = fit.batch * ev.gpus
    if global_batch > LARGE_BATCH:
        lines.append(f"warning: a global batch of {global_batch:,} is past the ~{LARGE_BATCH:,} up to which plain SGD"
                     " with a scaled learning rate keeps ResNet-50's ImageNet accuracy (Goyal et al. 2017,"
                     " arXiv:1706.02677): use LARS/LAMB, a smaller per-GPU batch, or fewer GPUs")
    scale = ev.scaling
    if ev.gpus > 1:
        lines.append(f"scaling: {ev.nodes} x {row.gpu_count} GPUs at {scale.efficiency:.0%} of linear ({scale.link})")
    model_note = f"{request.model.name}: {request.model.basis}" if request.model.estimate else None
    gpu_note = f"{row.gpu}: {ev.offer.gpu.basis}" if ev.offer.gpu.estimate else None
    estimates = [n for n in (gpu_note, model_note) if n]
    if estimates:
        lines.append("estimates: " + "; ".join(estimates))
    if row.note:
        lines.append(f"catalog note: {row.note}")
    lines.append(cost_line(ev, request))
    return lines


def cost_line(ev: Evaluation, request) -> str:
    """What the pick costs to the deadline, what spot would save, and where the price comes from."""
    run, row = ev.run, ev.offer.instance
    price = row.price
    if run.on_demand is None:
        why = price.why_unknown or f"no dated price for {row.name}"
        return (f"cost: unknown: {why}; {catalog.refresh_command(ev.offer.provider, ev.offer.region)} fills it"
                + (f" (today's price: {price.check})" if price.check else ""))
    old = price.age_days(clock.now().date())
    when = f"{price.date}" + (f", {old} days old" if old is not None and old > catalog.STALE_AFTER_DAYS else "")
    where = f"{price.region}, {price.source}, {when}"
    if ev.billing == "spot":
        saved = run.on_demand - run.spot
        return (f"cost: {run.spot:,.0f} {run.currency} on spot, reclaims included; on-demand would be"
                f" {run.on_demand:,.0f} (spot saves {saved:,.0f}, {saved / run.on_demand:.0%}) ({where})")
    if run.spot is None:
        return f"cost: {run.on_demand:,.0f} {run.currency} on-demand; spot is not viable for this run ({where})"
    saved = run.on_demand - run.spot
    allowed = "" if request.spot else "; --spot allows it"
    return (f"cost: {run.on_demand:,.0f} {run.currency} on-demand; spot would cost {run.spot:,.0f} with reclaims,"
            f" {run.spot_hours:.1f} h (saves {saved:,.0f}, {saved / run.on_demand:.0%}{allowed}) ({where})")


def rejection_groups(rejections: list[Rejection], limit: int = 6) -> list[tuple[str, list[str], int]]:
    """(title, up to `limit` lines, how many more) per constraint, most frequent first."""
    groups: dict[str, list[str]] = {}
    for rejection in rejections:
        billing = f" [{rejection.billing}]" if rejection.billing == "spot" else ""
        groups.setdefault(rejection.constraint, []).append(f"{rejection.offer.label}{billing}: {rejection.message}")
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    result = []
    for key, lines in ordered:
        title = CONSTRAINT_TITLES.get(key, key)
        if key == "tier":
            title += f" ({tier_summary()})"
        result.append((title, lines[:limit], max(0, len(lines) - limit)))
    return result


def ranking_note(result: Result) -> str:
    if not result.ranked:
        return ""
    after = [ev for ev in result.ranked if ev.cost is None or ev.run.currency != result.currency]
    if result.mode == "cost":
        note = (f"ranked by total cost to the deadline ({result.currency}), spot including reclaim overhead,"
                " at list prices (the price book's date is in each cost line)")
        if after:
            unknown = sum(1 for ev in after if ev.cost is None)
            other = sorted({ev.run.currency for ev in after if ev.cost is not None})
            why = ", ".join(part for part in (f"{unknown} with no known price" if unknown else "",
                                              f"{len(after) - unknown} priced in {'/'.join(other)} (not converted)"
                                              if other else "") if part)
            note += f"; then {len(after)} more by GPU-hours ({why})"
        return note
    unknown = sum(1 for ev in result.ranked if ev.cost is None)
    return (f"ranked by GPU-hours, not cost: none of the {len(result.ranked)} fitting configurations has a known"
            f" price ({unknown} unknown; `gpu-training prices refresh --provider P` fills them); the guide's named"
            " GPUs come before stand-ins, spot GPU-hours are weighted by the provider's typical spot fraction, and"
            " among equal GPU-hours the slower GPU class comes first")
