"""The samples of a data set to pack: an image folder with one subfolder per class, or a list file.

Folder: ``<root>/<class>/**/<image>``; the classes are the subfolder names, sorted, so the labels
are the same on every machine. List file: one sample per line, ``<path> <class>`` (whitespace
between; paths relative to the list file's folder; ``#`` starts a comment). Files that are not
images by their extension are counted and left out, never packed.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp"})


class SourceError(Exception):
    """The input cannot be packed as given (usage error, exit 2)."""


@dataclass(frozen=True)
class Sample:
    path: Path  # absolute
    name: str  # relative to the input, for messages and the manifest
    label: int
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Source:
    root: Path
    classes: tuple[str, ...]
    samples: tuple[Sample, ...]
    ignored: int  # files left out because they are not images by extension

    @property
    def bytes(self) -> int:
        return sum(s.size for s in self.samples)

    def fingerprint(self) -> str:
        """Changes when any sample's name, label, size or modification time does: a resume checks it."""
        h = hashlib.sha256()
        h.update("\0".join(self.classes).encode())
        for s in self.samples:
            h.update(f"\n{s.name}\0{s.label}\0{s.size}\0{s.mtime_ns}".encode())
        return h.hexdigest()


def _sample(path: Path, name: str, label: int) -> Sample:
    st = path.stat()
    return Sample(path, name, label, st.st_size, st.st_mtime_ns)


def from_folder(root: Path) -> Source:
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise SourceError(f"{root}: no class subfolders; expected <folder>/<class>/<image> (or give a list file)")
    samples, ignored = [], 0
    for label, name in enumerate(classes):
        for dirpath, dirnames, filenames in os.walk(root / name):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for filename in sorted(filenames):
                path = Path(dirpath) / filename
                if filename.startswith(".") or path.suffix.lower() not in IMAGE_SUFFIXES:
                    ignored += 1
                    continue
                samples.append(_sample(path, path.relative_to(root).as_posix(), label))
    if not samples:
        raise SourceError(f"{root}: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) under its class subfolders")
    return Source(root, tuple(classes), tuple(samples), ignored)


def from_list(list_file: Path) -> Source:
    base, rows = list_file.parent, []
    for number, line in enumerate(list_file.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.rsplit(None, 1)
        if len(parts) != 2:
            raise SourceError(f"{list_file}:{number}: {line!r}: expected '<path> <class>'")
        rows.append((number, *parts))
    if not rows:
        raise SourceError(f"{list_file}: no samples; expected lines '<path> <class>'")
    classes = sorted({cls for _, _, cls in rows})
    labels, samples = {c: i for i, c in enumerate(classes)}, []
    for number, name, cls in rows:
        path = (base / name).resolve()
        if not path.is_file():
            raise SourceError(f"{list_file}:{number}: {name}: no such file")
        samples.append(_sample(path, name, labels[cls]))
    return Source(base, tuple(classes), tuple(samples), 0)


def read(path: Path) -> Source:
    """The samples under a folder, or named by a list file."""
    if path.is_dir():
        return from_folder(path)
    if path.is_file():
        return from_list(path)
    raise SourceError(f"{path}: no such folder or list file")
