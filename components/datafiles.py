"""Locating and reading the YAML data files under components/data (tiers, GPUs, catalogs)."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

DATA_DIR = Path(__file__).resolve().parent / "data"


@functools.lru_cache(maxsize=None)
def load(relative: str) -> Any:
    """Parse one data file once per process; callers must treat the result as read-only."""
    path = DATA_DIR / relative
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)
