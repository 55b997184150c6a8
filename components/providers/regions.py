"""Each provider's declared regions and zones (components/providers/<cloud>/regions.yaml), as data.

The spec checks the region key and `zone`/`spotZones` against them, offline. The file says where
its lists come from and when they were read; `scripts/regions.py refresh --provider <cloud>` rewrites
it from the cloud's own API (DescribeRegions + DescribeZones). A region listed with `zones: null`
is known, but its zones are not: a zone there is checked only for belonging to the region.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import yaml

REPO = Path(__file__).resolve().parents[2]
FILE_NAME = "regions.yaml"


@dataclass(frozen=True)
class RegionTable:
    provider: str
    date: str  # when the sources were read, or the API asked
    sources: tuple[str, ...]  # titles (with their URL) or the API that answered
    regions: Mapping[str, Optional[tuple[str, ...]]]  # region -> zones (None: not declared)
    path: Path

    def refresh_hint(self) -> str:
        return (f"{self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path} lists them as of {self.date}; if the"
                f" cloud has opened it since, refresh the list: scripts/regions.py refresh --provider {self.provider}")


def table_path(provider: str, providers_dir: Optional[Path] = None) -> Path:
    """regions.yaml in the provider's package (providers_dir: a folder of <provider>/ copies instead)."""
    from components import providers as registry

    return (providers_dir / provider if providers_dir else registry.package_dir(provider)) / FILE_NAME


@functools.lru_cache(maxsize=8)
def load(provider: str, providers_dir: Optional[Path] = None) -> Optional[RegionTable]:
    """The provider's table, or None when it declares none (nothing is checked then)."""
    path = table_path(provider, providers_dir)
    if not path.is_file():
        return None
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    regions = {str(name): (tuple(str(z) for z in zones) if zones is not None else None)
               for name, zones in (data.get("regions") or {}).items()}
    sources = tuple(f"{s.get('title')} ({s.get('url')})" if isinstance(s, dict) else str(s)
                    for s in data.get("sources") or ())
    return RegionTable(str(data.get("provider", provider)), str(data.get("date")), sources, regions, path)
