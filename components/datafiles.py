"""Reading the YAML data files (components/data: tiers, GPUs, perf; a provider's catalog.yaml), and
replacing a file atomically (catalog price updates, written stack files)."""
from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

DATA_DIR = Path(__file__).resolve().parent / "data"


def load(relative: str) -> Any:
    """Parse one file under components/data once per process; callers must treat the result as read-only."""
    return load_path(DATA_DIR / relative)


@functools.lru_cache(maxsize=None)
def load_path(path: Path) -> Any:
    """Parse one data file once per process; callers must treat the result as read-only."""
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def atomic_write(path: Path, text: str) -> None:
    """Replace the file atomically: a crash leaves the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
