"""Real images for the example trainer: a packed data set (scripts/pack.py, docs/data.md) or a plain folder.

Packed: manifest.json lists every shard and, per sample, the byte offset and size of its image in
the shard and its label, so a read is one pread at a known offset: no per-file open, no tar scan.
Each DataLoader worker opens the shards itself (file descriptors are not shared across fork). A
plain class-per-subfolder folder still works, one file per image. Images are decoded with Pillow,
resized (shorter side) and centre-cropped to SIZE x SIZE, and normalised; no random augmentation, so
image i is the same tensor in every run and a resumed run sees the batches an uninterrupted one would.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import torch
from torch.utils.data import Dataset

MANIFEST = "manifest.json"
SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)  # the usual ImageNet statistics
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def decode(data: bytes, size: int) -> torch.Tensor:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image = image.convert("RGB")
        scale = size / min(image.size)
        w, h = max(size, round(image.width * scale)), max(size, round(image.height * scale))
        image = image.resize((w, h), Image.BILINEAR)
        left, top = (w - size) // 2, (h - size) // 2
        image = image.crop((left, top, left + size, top + size))
        pixels = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).view(size, size, 3)
    return (pixels.permute(2, 0, 1).float() / 255 - MEAN) / STD


class PackedImages(Dataset):
    FORMAT = "packed"  # what the trainer reports (GPU_TRAINING_STATS_FILE "format")

    def __init__(self, folder: Path, image_size: int):
        manifest = json.loads((folder / MANIFEST).read_text())
        self.folder, self.image_size, self.classes = folder, image_size, list(manifest["classes"])
        self.shards = [s["name"] for s in manifest["shards"]]
        self.items = [(n, offset, size, label) for n, s in enumerate(manifest["shards"])
                      for offset, size, label in s["index"]]
        self._fds: dict[int, int] = {}
        self._pid = None

    def __len__(self) -> int:
        return len(self.items)

    def _fd(self, shard: int) -> int:
        if self._pid != os.getpid():  # a forked worker: its own descriptors
            self._fds, self._pid = {}, os.getpid()
        if shard not in self._fds:
            self._fds[shard] = os.open(self.folder / self.shards[shard], os.O_RDONLY)
        return self._fds[shard]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        shard, offset, size, label = self.items[index]
        return decode(os.pread(self._fd(shard), size, offset), self.image_size), label


class FolderImages(Dataset):
    FORMAT = "folder"  # what the trainer reports (GPU_TRAINING_STATS_FILE "format")

    def __init__(self, folder: Path, image_size: int):
        self.classes = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        self.items = [(path, label) for label, name in enumerate(self.classes)
                      for path in sorted((folder / name).rglob("*")) if path.suffix.lower() in SUFFIXES]
        self.image_size = image_size

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.items[index]
        return decode(path.read_bytes(), self.image_size), label


def open_images(folder: Path, image_size: int) -> Dataset:
    """The packed set in `folder` (it holds manifest.json), else the class-per-subfolder images in it."""
    dataset = (PackedImages if (folder / MANIFEST).exists() else FolderImages)(folder, image_size)
    if len(dataset) == 0 or len(dataset.classes) < 2:
        raise ValueError(f"{folder}: {len(dataset)} images in {len(dataset.classes)} classes; at least 2 classes "
                         "needed (a folder made by scripts/pack.py, or <folder>/<class>/<image>)")
    return dataset
