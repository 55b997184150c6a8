"""One shard of a packed data set, and the manifest that lists the shards (docs/data.md).

A shard is a plain POSIX tar in the WebDataset layout: for sample ``k`` (its index in the whole data
set, 9 digits) a member ``<k>.<jpg|png|webp|bmp>`` with the image file's bytes as they were, and a
member ``<k>.cls`` with the label as decimal text, so WebDataset readers and `tar` read it too. The
manifest records, per shard, the byte offset and size of every image member and its label: a reader
seeks straight to a sample without scanning the tar. The tar headers carry no times, owners or
modes, so packing the same images again gives byte-identical shards (the same sha256).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Iterable

from node_agent import layout

from .source import Sample

# What the trainer (Pillow) decodes; the member's extension says the real format, not the file name.
EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "BMP": "bmp"}


def shard_name(number: int) -> str:
    return f"shard-{number:06d}.tar"


def check_image(data: bytes) -> str:
    """The member extension for an image that decodes completely; ValueError saying why it does not.

    A full decode, not Image.verify(): a truncated JPEG passes verify() and fails in the DataLoader.
    """
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            kind = image.format
    except Image.UnidentifiedImageError:
        raise ValueError("not an image Pillow can read") from None
    except Exception as error:  # Pillow raises many kinds (OSError, SyntaxError, DecompressionBombError)
        raise ValueError(f"{type(error).__name__}: {error}") from None
    if kind not in EXTENSIONS:
        raise ValueError(f"{kind} image: the packed format takes {', '.join(EXTENSIONS)}")
    return EXTENSIONS[kind]


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = size, 0, 0o444, 0, 0, "", ""
    return info


def write_shard(samples: Iterable[tuple[int, Sample]], path: Path, check: bool = True) -> dict:
    """Write the shard at `path` (through a temporary file) and return its manifest record.

    samples: (index in the data set, sample). A sample that cannot be read, or (check) does not decode
    completely, is left out and listed under 'bad' with its path and the error; nothing else is.
    """
    index, bad = [], []
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for number, sample in samples:
            try:
                data = sample.path.read_bytes()
                ext = check_image(data) if check else sample.path.suffix.lower().lstrip(".").replace("jpeg", "jpg")
            except (OSError, ValueError) as error:
                bad.append({"path": sample.name, "error": str(error) if isinstance(error, ValueError)
                            else f"{type(error).__name__}: {error.strerror or error}"})
                continue
            tar.addfile(_member(f"{number:09d}.{ext}", len(data)), io.BytesIO(data))
            # The data ends the member, padded to the tar's 512-byte blocks: its offset follows.
            index.append([tar.offset - -(-len(data) // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE, len(data),
                          sample.label])
            label = str(sample.label).encode()
            tar.addfile(_member(f"{number:09d}.cls", len(label)), io.BytesIO(label))
    digest = hashlib.sha256()
    with open(tmp, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
        size = f.tell()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return {"name": path.name, "sha256": digest.hexdigest(), "size": size, "samples": len(index),
            "index": index, "bad": bad}


def manifest(classes: Iterable[str], records: list[dict], source: str, skipped: list[dict]) -> dict:
    """The data set's manifest: what staging verifies and what the trainer's reader indexes."""
    shards = [{k: r[k] for k in ("name", "sha256", "size", "samples", "index")} for r in records]
    return {"format": layout.DATA_FORMAT, "source": source, "classes": list(classes),
            "samples": sum(s["samples"] for s in shards), "bytes": sum(s["size"] for s in shards),
            "shards": shards, "skipped": skipped}


def write_json(path: Path, value: dict) -> None:
    """Atomically: a reader finds the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(value, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)
