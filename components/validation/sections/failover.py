"""The `failover` section: where `gpu-training up` tries next on a stock-out (docs/capacity.md).

Each alternative is judged as the stack's own value would be: a zone must be a declared zone of the
region (and not the stack's own `zone`), an instance type a catalog row with the same GPU and count as
the stack's type (the plan, the disks and the tier rules stay true), a region one of the cloud's.
Failover re-plans VM nodes only: a Kubernetes or platform stack is refused with the reason.
"""
from __future__ import annotations

from typing import Optional

from components.catalog import Catalog, InstanceType
from components.providers import regions as region_tables
from components.providers.base import ProviderProfile
from components.spec import FailoverSpec
from components.validation.read import _Problems, _suggest

KEY = "failover"


def check_failover(values: dict, region: str, zone: Optional[str], instance: Optional[InstanceType], catalog: Catalog,
                   profile: ProviderProfile, problems: _Problems) -> FailoverSpec:
    raw = values.get(KEY) or {}
    if not raw:
        return FailoverSpec()
    if values.get("kubernetes") is not None or values.get("platform") is not None:
        problems.error(KEY, "failover re-plans VM nodes; a Kubernetes cluster's node pool or a platform job picks"
                            " its own capacity: remove failover (docs/capacity.md)")
        return FailoverSpec()
    table = region_tables.load(profile.name)
    zones = _strings(raw, "zones", problems)
    known_zones = table.regions.get(region) if table is not None else None
    if zones and zone is None:
        problems.error(f"{KEY}.zones", "set zone too: the first attempt's zone must be known for the next ones to"
                                       " be tried in order (default zone: the first of the region selling the type)")
    for i, value in enumerate(zones):
        key = f"{KEY}.zones[{i}]"
        # The stack's own zone may be listed: once `up` has moved on, the file names the zone it moved to.
        if known_zones is not None and value not in known_zones:
            problems.error(key, f"{value!r} is not a zone of {region}{_suggest(value, known_zones)}; known:"
                                f" {', '.join(known_zones)}")
    _no_repeats(zones, f"{KEY}.zones", problems)
    types = _strings(raw, "instanceTypes", problems)
    for i, name in enumerate(types):
        key = f"{KEY}.instanceTypes[{i}]"
        row = catalog.get(name)
        if row is None:
            problems.error(key, f"{name!r} is not in the {profile.display_name} catalog"
                           + (_suggest(name, [r.name for r in catalog.instances])
                              or f" (components/providers/{profile.name}/catalog.yaml)"))
        elif instance is not None and (row.gpu, row.gpu_count) != (instance.gpu, instance.gpu_count):
            problems.error(key, f"{name!r} has {row.gpu_count}x {row.gpu}; an alternative keeps the stack's"
                                f" {instance.gpu_count}x {instance.gpu} (the plan, tier and disks are sized for it)")
    _no_repeats(types, f"{KEY}.instanceTypes", problems)
    regions = _strings(raw, "regions", problems)
    for i, value in enumerate(regions):
        key = f"{KEY}.regions[{i}]"
        if table is not None and value not in table.regions:
            problems.error(key, f"{value!r} is not among {profile.display_name}'s regions"
                                f"{_suggest(value, sorted(table.regions))}")
    _no_repeats(regions, f"{KEY}.regions", problems)
    if regions and zones:
        problems.info(f"{KEY}.regions", "a region change starts in that region's first zone selling the type;"
                                        " failover.zones apply to the stack's own region only")
    return FailoverSpec(tuple(zones), tuple(types), tuple(regions))


def _strings(raw: dict, name: str, problems: _Problems) -> list[str]:
    items = raw.get(name) or []
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            problems.error(f"{KEY}.{name}[{i}]", f"{item!r} is not a name (a non-empty string)")
        else:
            out.append(item)
    return out


def _no_repeats(items: list[str], key: str, problems: _Problems) -> None:
    repeated = sorted({i for i in items if items.count(i) > 1})
    if repeated:
        problems.error(key, f"{', '.join(repeated)} listed more than once")
