"""The cloud sections: what the provider supports, its regions and zones, its tag rules, the platform offer."""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from components import tags as tag_scheme
from components.providers import regions as region_tables
from components.providers.profile_records import ProviderProfile
from components.validation.read import Problems, show, suggest

_REGION_RE = re.compile(r"[a-z][a-z0-9-]{1,49}")
# A stand-in for the expiry tag's value at validation (the real one is known at deploy time): the same shape.
_EXPIRY_STANDIN = tag_scheme.expiry_value("2026-12-31T23:59:00Z")


def check_tags(values: dict, profile: ProviderProfile, stack: str, project: str, tier: Optional[str],
                problems: Problems) -> dict:
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


def check_capabilities(values: dict, who: str, unsupported: Mapping[str, str], problems: Problems) -> None:
    """Refuse each key (or key=value) that `who` (the cloud, or the platform of a platform stack) does not support."""
    for name, value in values.items():
        shown = str(value).lower() if isinstance(value, bool) else value
        for declared in (f"{name}={shown}", name):
            if declared in unsupported:
                problems.error(name, f"{who} does not support {declared}: {unsupported[declared]}")


def resolve_region(config: Mapping[str, Any], profile: ProviderProfile, problems: Problems) -> str:
    """The region is the provider's own key (alicloud:region), outside our namespace."""
    region = config.get(profile.region_key)
    if not region:
        problems.error(profile.region_key, f"not set; the region is {profile.display_name}'s own key:"
                       f" `pulumi config set {profile.region_key} <region>` or add it to the stack file")
        return ""
    region = str(region)
    if not _REGION_RE.fullmatch(region):
        problems.error(profile.region_key, f"{show(region)} is not a region id (lowercase letters, digits and"
                       " '-', e.g. cn-hangzhou)")
    return region


def check_placement(region: str, zone: Optional[str], spot_zones: tuple[str, ...], profile: ProviderProfile,
                     problems: Problems) -> None:
    """The region and the zones against the provider's declared ones (components/providers/regions.py)."""
    table = region_tables.load(profile.name)
    if table is None or not region or not _REGION_RE.fullmatch(region):
        return
    if region not in table.regions:
        known = sorted(table.regions)
        problems.error(profile.region_key, f"{show(region)} is not among {profile.display_name}'s regions"
                       f"{suggest(region, known)}; known: {', '.join(known)}. {table.refresh_hint()}")
        return
    zones = table.regions[region]
    for key, value in [("zone", zone), *((f"spotZones[{i}]", z) for i, z in enumerate(spot_zones))]:
        if value is None:
            continue
        if zones is None:
            if not re.fullmatch(rf"{re.escape(region)}-[a-z0-9]+", value):
                problems.error(key, f"{show(value)} is not a zone of {region} (zones of {region} are named"
                               f" {region}-<letter or number>; the declared list does not name them)")
        elif value not in zones:
            problems.error(key, f"{show(value)} is not a zone of {region}{suggest(value, zones)}; known:"
                           f" {', '.join(zones)}. {table.refresh_hint()}")


def platform_offer(values: dict, profile: ProviderProfile):
    """The platform the stack's `platform.kind` names, when the provider offers it (else None: the
    section's checker says why, by key)."""
    raw = values.get("platform")
    return None if raw is None else profile.platforms().get(raw.get("kind"))
