"""The `failover` section: where `gpu-training up` tries next on a stock-out (docs/capacity.md).

Each alternative is judged as the stack's own value would be: a zone must be a declared zone of the
region (and not the stack's own `zone`), an instance type a catalog row with the same GPU and count as
the stack's type (the plan, the disks and the tier rules stay true), a region one of the cloud's.
Failover re-plans VM nodes only: a Kubernetes or platform stack is refused with the reason.
"""
from __future__ import annotations

from typing import Callable, Optional

from components.catalog import Catalog, InstanceType
from components.providers import regions as region_tables
from components.providers.profile_records import ProviderProfile
from components.spec import FailoverSpec
from components.validation.read import Problems, suggest

KEY = "failover"


def check_failover(values: dict, region: str, zone: Optional[str], instance: Optional[InstanceType], catalog: Catalog,
                   profile: ProviderProfile, problems: Problems) -> FailoverSpec:
    raw = values.get(KEY) or {}
    if not raw:
        return FailoverSpec()
    if values.get("kubernetes") is not None or values.get("platform") is not None:
        problems.error(KEY, "failover re-plans VM nodes; a Kubernetes cluster's node pool or a platform job picks"
                            " its own capacity: remove failover (docs/capacity.md)")
        return FailoverSpec()
    table = region_tables.load(profile.name)
    known_zones = table.regions.get(region) if table is not None else None

    def zone_refusal(value: str) -> Optional[str]:
        # The stack's own zone may be listed: once `up` has moved on, the file names the zone it moved to.
        if known_zones is not None and value not in known_zones:
            return f"{value!r} is not a zone of {region}{suggest(value, known_zones)}; known: {', '.join(known_zones)}"
        return None

    def type_refusal(name: str) -> Optional[str]:
        row = catalog.get(name)
        if row is None:
            return (f"{name!r} is not in the {profile.display_name} catalog"
                    + (suggest(name, [r.name for r in catalog.instances])
                       or f" (components/providers/{profile.name}/catalog.yaml)"))
        if instance is not None and (row.gpu, row.gpu_count) != (instance.gpu, instance.gpu_count):
            return (f"{name!r} has {row.gpu_count}x {row.gpu}; an alternative keeps the stack's"
                    f" {instance.gpu_count}x {instance.gpu} (the plan, tier and disks are sized for it)")
        return None

    def region_refusal(value: str) -> Optional[str]:
        if table is not None and value not in table.regions:
            return f"{value!r} is not among {profile.display_name}'s regions{suggest(value, sorted(table.regions))}"
        return None

    zones = _alternatives(raw, "zones", zone_refusal, problems)
    if zones and zone is None:
        problems.error(f"{KEY}.zones", "set zone too: the first attempt's zone must be known for the next ones to"
                                       " be tried in order (default zone: the first of the region selling the type)")
    types = _alternatives(raw, "instanceTypes", type_refusal, problems)
    regions = _alternatives(raw, "regions", region_refusal, problems)
    if regions and zones:
        problems.info(f"{KEY}.regions", "a region change starts in that region's first zone selling the type;"
                                        " failover.zones apply to the stack's own region only")
    return FailoverSpec(tuple(zones), tuple(types), tuple(regions))


def _alternatives(raw: dict, name: str, refusal: Callable[[str], Optional[str]], problems: Problems) -> list[str]:
    """The names listed under failover.<name>: each a non-empty string, each judged by `refusal` (why it is refused,
    or None), none listed twice; every fault an error under its own key."""
    items = _strings(raw, name, problems)
    for i, item in enumerate(items):
        why = refusal(item)
        if why:
            problems.error(f"{KEY}.{name}[{i}]", why)
    _no_repeats(items, f"{KEY}.{name}", problems)
    return items


def _strings(raw: dict, name: str, problems: Problems) -> list[str]:
    items = raw.get(name) or []
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            problems.error(f"{KEY}.{name}[{i}]", f"{item!r} is not a name (a non-empty string)")
        else:
            out.append(item)
    return out


def _no_repeats(items: list[str], key: str, problems: Problems) -> None:
    repeated = sorted({i for i in items if items.count(i) > 1})
    if repeated:
        problems.error(key, f"{', '.join(repeated)} listed more than once")
