"""Checkpoint files of the example trainer: atomic writes, rotation, and finding the newest good one.

One checkpoint is one file, ``ckpt-<step, 8 digits>.pt``, directly under CKPT_DIR. It is written
to a hidden temporary file in the same directory (``.ckpt-<step>.pt.<pid>.tmp``), flushed and
fsync'ed, then renamed over the final name, and the directory is fsync'ed: a reader (the node
agent's sync) either sees a complete file under the final name or nothing, even after a crash
or a power loss. Temporary names start with a dot and end in ``.tmp`` so that syncs skip them.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

CHECKPOINT_RE = re.compile(r"^ckpt-(\d{8,})\.pt$")
FORMAT = "gpu-training/train_cnn/v1"
# How deep RESUME_FROM is searched: the agent may restore a checkpoint as <dir>/<name>/<file>.
SEARCH_DEPTH = 3


def checkpoint_name(step: int) -> str:
    return f"ckpt-{step:08d}.pt"


@dataclass(frozen=True)
class Candidate:
    step: int
    path: Path


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[Any], None]) -> Path:
    """Write a file through ``write(fileobj)`` so that ``path`` never holds a partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        # Nothing half-written may survive under any name a sync or a resume would pick up.
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def find_candidates(root: Path, depth: int = SEARCH_DEPTH, pattern: re.Pattern = CHECKPOINT_RE) -> list[Candidate]:
    """Checkpoint files under ``root`` (a file or a directory), newest step first; ``pattern`` names
    them and captures the step (train_paddle.py's files end in .npz)."""
    root = Path(root)
    if root.is_file():
        match = pattern.match(root.name)
        return [Candidate(int(match.group(1)) if match else -1, root)]
    found: list[Candidate] = []

    def walk(directory: Path, level: int) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue  # temporary files of an unfinished write, or hidden state
            if entry.is_file():
                match = pattern.match(entry.name)
                if match:
                    found.append(Candidate(int(match.group(1)), Path(entry.path)))
            elif entry.is_dir() and level < depth:
                walk(Path(entry.path), level + 1)

    walk(root, 1)
    # Same step in two places (a restored copy and a local one): prefer the most recently written.
    found.sort(key=lambda c: (c.step, _mtime(c.path)), reverse=True)
    return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def remove_temporaries(directory: Path) -> list[Path]:
    """Delete what writes killed mid-way left behind (only one trainer writes a CKPT_DIR)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    stale = [p for p in directory.glob(".ckpt-*.tmp") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


class NoUsableCheckpoint(Exception):
    """Checkpoints exist but none of them can be loaded."""


def load_newest(candidates: Iterable[Candidate], load: Callable[[Path], dict],
                warn: Callable[[str], None], fmt: str = FORMAT) -> tuple[Candidate, dict] | None:
    """Load the newest candidate that is complete and ours; older ones are the fallback.

    Returns None when there is no candidate at all; raises NoUsableCheckpoint when every
    candidate is broken, because starting from scratch then would later rotate away the
    evidence and silently throw the run's progress away.
    """
    problems = []
    for candidate in candidates:
        try:
            state = load(candidate.path)
            if not isinstance(state, dict) or state.get("format") != fmt:
                raise ValueError(f"not a {fmt} checkpoint")
            return candidate, state
        except Exception as exc:  # a truncated or foreign file: fall back to the previous one
            problems.append(f"{candidate.path}: {type(exc).__name__}: {exc}")
            warn(f"skipping unusable checkpoint {candidate.path} ({type(exc).__name__}: {exc})")
    if problems:
        raise NoUsableCheckpoint("; ".join(problems))
    return None


def rotate(directory: Path, keep_last: int, current_step: int, pattern: re.Pattern = CHECKPOINT_RE) -> list[Path]:
    """Delete old checkpoints in ``directory``, keeping the newest ``keep_last`` (0 keeps all).

    Files with a step beyond ``current_step`` are never touched: they belong to a later run that
    the user rolled back from with RESUME_FROM, and deleting them is not our call.
    """
    if keep_last <= 0:
        return []
    ours = [c for c in find_candidates(directory, depth=1, pattern=pattern) if c.step <= current_step]
    removed = []
    for candidate in ours[keep_last:]:
        candidate.path.unlink(missing_ok=True)
        removed.append(candidate.path)
    return removed
