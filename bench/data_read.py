"""Random-access read throughput: a folder of JPEG files vs the same images packed into tar shards.

Both go through the example trainer's readers (examples/cnn/cnn_shards.py: FolderImages, one open
and read per image; PackedImages, one pread at the manifest's offset) and a torch DataLoader with
decode, resize and normalise, in a shuffled order, on the local disk. Prints the median images/s of
several rounds per reader and their ratio, twice: with a warm page cache (the per-file overhead
alone, the best case for the folder), and cold (every file evicted from the page cache with
posix_fadvise(DONTNEED) before each round, so each image is read from the disk again: the first
epoch on a node). On a network file system every small file costs a metadata round trip more.

Run: .venv/bin/python bench/data_read.py [--images 2000] [--rounds 5] [--workers 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples" / "cnn"))  # the example trainer's modules are not a package

import torch  # noqa: E402
from cnn_shards import FolderImages, PackedImages  # noqa: E402

from tools.datapack import example, packer, source  # noqa: E402


def rate(dataset, workers: int, batch: int = 64) -> float:
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers,
                                         generator=torch.Generator().manual_seed(0))
    began, seen = time.perf_counter(), 0
    for images, _ in loader:
        seen += len(images)
    return seen / (time.perf_counter() - began)


def evict(folder: Path) -> None:
    """Drop every file under folder from the page cache (no root needed: the files are ours)."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--size", type=int, default=96, help="stored image side in pixels (default 96)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        images, packed = Path(tmp) / "images", Path(tmp) / "packed"
        classes = 8
        example.make_folder(images, classes=classes, per_class=args.images // classes, size=args.size)
        packer.pack(source.read(images), packed, per_shard=256, workers=2)
        readers = {"folder of JPEG files": (FolderImages(images, 64), images),
                   "packed tar shards": (PackedImages(packed, 64), packed)}
        count = len(readers["packed tar shards"][0])
        results = {(cache, name): [] for cache in ("warm", "cold") for name in readers}
        for _ in range(args.rounds):
            for cache in ("warm", "cold"):
                for name, (dataset, folder) in readers.items():  # interleaved, so drift hits both alike
                    if cache == "cold":
                        evict(folder)
                    results[cache, name].append(rate(dataset, args.workers))
    print(f"{count} images of {args.size}x{args.size} -> 64x64, DataLoader workers {args.workers}, "
          f"{args.rounds} rounds, shuffled, local disk")
    for cache in ("warm", "cold"):
        medians = {name: statistics.median(results[cache, name]) for name in readers}
        print(f"{cache} page cache:")
        for name, median in medians.items():
            rounds = ", ".join(f"{r:.0f}" for r in results[cache, name])
            print(f"  {name:22s} median {median:8.0f} images/s  (rounds: {rounds})")
        print(f"  packed / folder: {medians['packed tar shards'] / medians['folder of JPEG files']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
