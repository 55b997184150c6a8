"""What a managed training platform offers the platform path, and the stack's validated `platform:` section.

A platform stack (docs/platforms.md) is a tier plus `platform: {kind: ...}`: the tier, GPU, nodes, billing,
data and checkpoint rules of components/validation apply unchanged; the platform's flavors stand in for
instance types (its flavors.yaml, read by components/catalog.py). A provider lists its platforms in its
profile (`ProviderProfile.platforms`); nothing here knows a cloud.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional

from components import datafiles, schema
from components.catalog import Catalog, catalog_from

KINDS_FIELD = "platform.kind"
# Ids the clouds hand out (workspace, quota, pool): letters, digits, '-', '_' and '.'; no spaces or slashes.
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A container image reference ([registry/]path[:tag][@digest]): what both job APIs take as an image URL.
_IMAGE_RE = re.compile(r"[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?")


@dataclass(frozen=True)
class PlatformOffer:
    """One platform, as data with sources (its package's platform.yaml) plus the hooks its package gives."""
    kind: str  # the value of platform.kind, e.g. "modelarts"
    provider: str  # the provider whose region, credentials and bucket the job uses
    display_name: str
    package: str  # the module holding its job API client (components.providers.<cloud>.<platform>)
    directory: Path  # where platform.yaml, flavors.yaml and api.yaml live
    data: Mapping  # platform.yaml
    # Stack keys the platform does not honour, with why (checked like a profile's `rules.unsupported`; each must
    # be a stack key, or the offer does not load).
    unsupported: Mapping[str, str] = field(default_factory=dict)
    # (spec) -> [(key, message)]: the platform's own rules on the resolved spec.
    checks: Callable = lambda spec: []
    # (spec) -> the job API request body (its api.yaml names the fields and their sources).
    request: Callable = lambda spec: {}

    def __post_init__(self):
        schema.check_refusals(f"the {self.kind} platform (platform.yaml unsupported)", self.unsupported)

    def catalog(self) -> Catalog:
        return catalog_from(datafiles.load_path(self.directory / "flavors.yaml"), self.provider)

    @property
    def default_image(self) -> str:
        return self.data["image"]["default"]

    @property
    def pools(self) -> tuple[str, ...]:
        return tuple(self.data["pools"])

    @property
    def unverified(self) -> tuple[str, ...]:
        return tuple(self.data.get("unverified", ()))

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(self.data.get("requires", ()))


@dataclass(frozen=True)
class PlatformSpec:
    offer: PlatformOffer
    image: str
    pool: str  # public | dedicated
    pool_id: Optional[str]  # dedicated: the pool the user owns (the stack creates none)
    workspace_id: Optional[str]
    quota_id: Optional[str]
    max_running_minutes: int  # maxHours, as the job's own limit


def check(raw: dict, offers: Mapping[str, PlatformOffer], provider_name: str, max_hours: float,
          problems) -> Optional[PlatformSpec]:
    """The validated section (None when it could not be built; every problem recorded by dotted key)."""
    kind = raw.get("kind")
    if kind is None:
        problems.error(KINDS_FIELD, f"not set; allowed on {provider_name}: {', '.join(offers) or 'none'}")
        return None
    offer = offers.get(kind)
    if offer is None:
        problems.error(KINDS_FIELD, f"{kind!r} is not a training platform of {provider_name}; allowed:"
                       f" {', '.join(offers) or 'none (this provider offers no platform path yet)'}")
        return None
    image = raw.get("image", offer.default_image)
    if not _IMAGE_RE.fullmatch(image):
        problems.error("platform.image", f"{image!r} is not a container image reference (registry/path:tag);"
                       f" default: {offer.default_image}")
    pool = raw.get("pool", offer.pools[0])
    if pool not in offer.pools:
        problems.error("platform.pool", f"{pool!r} is not allowed on {offer.display_name}; allowed:"
                       f" {', '.join(offer.pools)}")
    pool_id = raw.get("poolId")
    if pool == "dedicated" and not pool_id:
        problems.error("platform.poolId", "not set; a dedicated pool is one you own (the stack creates none:"
                       " it would bill until destroyed): give its id, or use pool: public")
    if pool_id is not None and pool != "dedicated":
        problems.error("platform.poolId", f"{pool_id!r} is set but pool is {pool!r}; allowed: pool: dedicated"
                       " with a poolId, or no poolId")
    for name in ("poolId", "workspaceId", "resourceQuotaId"):
        value = raw.get(name)
        if value is not None and not _ID_RE.fullmatch(value):
            problems.error(f"platform.{name}", f"{value!r} is not an id (letters, digits, '.', '_' and '-')")
    for name in offer.requires:
        if not raw.get(name):
            problems.error(f"platform.{name}", f"not set; {offer.display_name} needs it: "
                           f"{offer.data['requiresWhy'][name]}")
    return PlatformSpec(offer=offer, image=image, pool=pool, pool_id=pool_id, workspace_id=raw.get("workspaceId"),
                        quota_id=raw.get("resourceQuotaId"), max_running_minutes=int(round(max_hours * 60)))


def load_offer(directory: Path, **hooks) -> PlatformOffer:
    """A platform's offer from its platform.yaml; `hooks` are its package's functions (checks, request)."""
    data = datafiles.load_path(directory / "platform.yaml")
    return PlatformOffer(kind=data["kind"], provider=data["provider"], display_name=data["displayName"],
                         package=data["package"], directory=directory, data=data,
                         unsupported=data.get("unsupported", {}), **hooks)
