"""The stack's data set (`data` config): a packed folder (scripts/pack.py) the nodes stage before training.

`data.localDir` names a packed folder (manifest.json and shards); its size comes from the manifest.
`data.sizeGb` says how big a set already uploaded to <prefix>/<stack>/data/ is. Either turns staging
on. The data set lives inside the stack's root in the bucket, so the node role's existing grant
covers it (docs/data.md). Validation checks that the data disk holds it: the staged shards plus
DISK_HEADROOM of their size plus WORK_GIB for checkpoints and the work folder.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from node_agent import layout

DISK_HEADROOM = 0.10  # file system overhead and a partly downloaded shard: our margin, not a sourced figure
WORK_GIB = 20  # checkpoints (keep-last 3) and the code: our margin for the example trainer's scale


@dataclass(frozen=True)
class DataSpec:
    stage: bool
    local_dir: Optional[Path] = None
    size_gb: Optional[float] = None  # decimal GB
    shards: Optional[int] = None
    samples: Optional[int] = None
    # The manifest's sha256 (data.localDir): a node stages only this set, never an earlier run's.
    manifest_sha256: Optional[str] = None
    # How long a booting node waits for the manifest; None: the agent's default (30 minutes).
    wait_minutes: Optional[float] = None

    def disk_needed_gib(self) -> Optional[int]:
        if not self.stage or self.size_gb is None:
            return None
        return math.ceil(self.size_gb * 1e9 / 2**30 * (1 + DISK_HEADROOM) + WORK_GIB)

    def staging_minutes(self, network_gbps: Optional[float]) -> Optional[float]:
        """The fastest the node's network baseline allows (the disk or the store may be slower); None: unknown."""
        if self.size_gb is None or not network_gbps:
            return None
        return self.size_gb * 8 / network_gbps / 60


def read_manifest(folder: Path) -> dict:
    """The manifest of a packed folder; ValueError naming the folder when it is not one."""
    path = folder / layout.DATA_MANIFEST
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{folder} is not a packed data set ({layout.DATA_MANIFEST}: "
                         f"{getattr(error, 'strerror', None) or error}); make one with scripts/pack.py") from None
    if not isinstance(value, dict) or value.get("format") != layout.DATA_FORMAT:
        raise ValueError(f"{path}: format {value.get('format') if isinstance(value, dict) else None!r}, "
                         f"expected {layout.DATA_FORMAT!r}")
    return value


def describe(spec) -> dict:
    """The preview's `data` section: the data set's size, where it goes, and the least staging time."""
    data: DataSpec = spec.data
    gbps = spec.instance.network_gbps
    minutes = data.staging_minutes(gbps)
    return {"stage": data.stage, "localDir": data.local_dir.name if data.local_dir else None, "sizeGb": data.size_gb,
            "shards": data.shards, "samples": data.samples, "diskNeededGiB": data.disk_needed_gib(),
            "stagingMinutesAtLeast": None if minutes is None else round(minutes, 1),
            "basis": (f"size / the instance's {gbps:g} Gbit/s network baseline (catalog); the disk's write rate or"
                      " the store's bandwidth may be lower" if minutes is not None else
                      "no data set configured" if not data.stage else
                      "unknown: the catalog has no network baseline for this instance type")}
