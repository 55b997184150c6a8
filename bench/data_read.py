"""Random-access read throughput: a folder of JPEG files vs the same images packed into tar shards,
on the local disk and on a stand-in for the tiers' cloud data disks (IOPS- and MB/s-throttled).

Readers: the example trainer's (examples/cnn/cnn_shards.py: FolderImages, one open and read per
image; PackedImages, one pread at the manifest's offset), each through a torch DataLoader with decode,
resize and normalise, in a shuffled order, with workers = half this machine's vCPUs (the selection
guide's rule; --workers overrides). Prints the median images/s of several rounds and the ratios.

1. Local disk, with a warm page cache (the per-file overhead alone) and cold (every file evicted with
   posix_fadvise(DONTNEED) before each round).
2. Throttled disk (localcloud/clouddisk.py: a loop device with ext4, its reads capped by the kernel's
   cgroup v1 blkio throttle, remounted before each round so nothing is cached), emulating the data
   disk of entry-t4 (ESSD PL1, 200 GiB) and medium-a100 (ESSD PL2, 1,000 GiB) with the IOPS and MB/s
   Alibaba Cloud documents for them (components/providers/alicloud/profile.py, data_disk_performance).
   Two settings per disk: the whole disk's limits for this machine's workers, and this machine's share
   of them (limits x workers here / workers on the node: the node runs half its vCPUs as workers, all
   reading the same disk). Layouts: the folder, the packed set read randomly (the trainer's reader),
   the packed set streamed shard by shard (each shard one sequential read, shuffled within the shard,
   the WebDataset way; the trainer does not do this), and the packed set staged (copied to the local,
   unthrottled disk first, the copy's time included; then read by the trainer's reader, cold). Each
   row also gives the device reads per image (blkio.throttle.io_serviced), and each layout is read once
   more without decoding (the bytes alone, one reader: the ceiling the disk sets; with the MB/s that asks
   of the disk and how long the pass took: blk-throttle grants its allowance in slices of about 100 ms,
   so a pass can finish up to 0.1 s early; the bench spends the allowance that holds each layout first,
   requests for the folder and the random reads, bytes for the streamed shards, and flags passes under
   1 s).
   Before the runs it measures
   the device: 4 KiB random and 1 MiB sequential reads with O_DIRECT, next to the limits set.
   Needs root; where the disk cannot be made (not root, no loop device, no blkio), it prints why and
   skips part 2.

Run: .venv/bin/python bench/data_read.py [--images 2000] [--rounds 5] [--workers N] [--quick]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "examples" / "cnn")]  # this checkout first; the trainer's modules are no package

import torch  # noqa: E402
from cnn_shards import FolderImages, PackedImages, decode  # noqa: E402

from components.providers.alicloud.profile import ESSD_PERFORMANCE_SOURCE, data_disk_performance  # noqa: E402
from localcloud.clouddisk import Unavailable, throttled_disk  # noqa: E402
from tools.datapack import example, packer, source  # noqa: E402
from tools.stackfiles import stack_spec  # noqa: E402

STACKS = ("entry-t4", "medium-a100")  # the entry and medium tiers' Alibaba stacks (stacks/*.yaml)
BATCH, IMAGE_SIDE = 64, 64
FOLDER, RANDOM, STREAMED = "folder of JPEG files", "packed, random reads", "packed, shard streaming"


class ShardStream(torch.utils.data.IterableDataset):
    """The packed set read shard by shard: each shard in one read, its samples in a shuffled order, the
    shards in a shuffled order and split between the workers. Bench-only (not the example trainer's)."""

    def __init__(self, packed: PackedImages, seed: int = 0):
        self.packed, self.seed = packed, seed

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        rng = random.Random(self.seed)
        order = list(range(len(self.packed.shards)))
        rng.shuffle(order)
        by_shard: dict[int, list[tuple[int, int, int]]] = {}
        for shard, offset, size, label in self.packed.items:
            by_shard.setdefault(shard, []).append((offset, size, label))
        for shard in order[worker::workers]:
            data = (self.packed.folder / self.packed.shards[shard]).read_bytes()
            samples = by_shard.get(shard, [])
            rng.shuffle(samples)
            for offset, size, label in samples:
                yield decode(data[offset:offset + size], self.packed.image_size), label


def read_only_rate(layout: str, folder: FolderImages, packed: PackedImages) -> float:
    """Images/s of reading the bytes alone, no decode, one reader, in a shuffled order: what the disk
    allows, the ceiling the decoding workers run under."""
    rng = random.Random(0)
    began = time.perf_counter()
    if layout == FOLDER:
        paths = [path for path, _ in folder.items]
        rng.shuffle(paths)
        for path in paths:
            path.read_bytes()
        count = len(paths)
    elif layout == STREAMED:
        names = list(packed.shards)
        rng.shuffle(names)
        for name in names:
            (packed.folder / name).read_bytes()
        count = len(packed.items)
    else:
        items = list(packed.items)
        rng.shuffle(items)
        fds = {n: os.open(packed.folder / name, os.O_RDONLY) for n, name in enumerate(packed.shards)}
        try:
            for shard, offset, size, _ in items:
                os.pread(fds[shard], size, offset)
        finally:
            for fd in fds.values():
                os.close(fd)
        count = len(items)
    return count / (time.perf_counter() - began)


def layout_bytes(layout: str, folder: FolderImages, packed: PackedImages) -> int:
    """What one pass of read_only_rate reads: the files, the images' bytes in the shards, or whole shards."""
    if layout == FOLDER:
        return sum(path.stat().st_size for path, _ in folder.items)
    if layout == STREAMED:
        return sum((packed.folder / name).stat().st_size for name in packed.shards)
    return sum(size for _, _, size, _ in packed.items)


def half_the_vcpus() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def rate(dataset, workers: int) -> float:
    shuffle = not isinstance(dataset, torch.utils.data.IterableDataset)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=shuffle, num_workers=workers,
                                         generator=torch.Generator().manual_seed(0) if shuffle else None)
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


def device_reads(cgroup: Path, major_minor: str) -> int:
    for line in (cgroup / "blkio.throttle.io_serviced").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == major_minor and parts[1] == "Read":
            return int(parts[2])
    return 0


def show(results: dict[str, list[float]], base: str, extra: dict[str, str] | None = None) -> dict[str, float]:
    medians = {name: statistics.median(r) for name, r in results.items()}
    for name, median in medians.items():
        rounds = ", ".join(f"{r:.0f}" for r in results[name])
        ratio = "" if name == base else f"  {median / medians[base]:5.2f}x {base}"
        note = f"  {extra[name]}" if extra and name in extra else ""
        print(f"    {name:28s} median {median:7.0f} images/s{ratio}{note}  (rounds: {rounds})")
    return medians


def local_disk(tmp: Path, count: int, args, workers: int) -> None:
    images, packed = tmp / "images", tmp / "packed"
    readers = {"folder of JPEG files": (FolderImages(images, IMAGE_SIDE), images),
               "packed, random reads": (PackedImages(packed, IMAGE_SIDE), packed)}
    results = {(cache, name): [] for cache in ("warm", "cold") for name in readers}
    for _ in range(args.rounds):
        for cache in ("warm", "cold"):
            for name, (dataset, folder) in readers.items():  # interleaved, so drift hits both alike
                if cache == "cold":
                    evict(folder)
                results[cache, name].append(rate(dataset, workers))
    print(f"1. local disk: {count} images, {args.rounds} rounds")
    for cache in ("warm", "cold"):
        print(f"  {cache} page cache:")
        show({name: results[cache, name] for name in readers}, "folder of JPEG files")


def emulated_disks(workers: int, settings: tuple[str, ...]) -> list[tuple[str, int, float]]:
    """(label, IOPS, MB/s) per setting: each stack's data disk, this machine's share of it and/or the whole."""
    rows = []
    for stack in STACKS:
        _, spec = stack_spec(stack)
        disk, vcpus = spec.data_disk, spec.instance.vcpus
        performance = data_disk_performance(disk)
        if performance is None:
            print(f"  {stack}: {disk.category} has no documented performance here; not emulated")
            continue
        iops, mb_s = performance
        node_workers = max(1, vcpus // 2)
        what = f"{stack} ({spec.tier.name}): {disk.category} {disk.performance_level} {disk.size_gb} GiB"
        share = workers / node_workers
        if "share" in settings:
            rows.append((f"{what}, the share of {workers} of the node's {node_workers} workers ({vcpus} vCPUs)",
                         round(iops * share), mb_s * share))
        if "whole" in settings:
            rows.append((f"{what}, the whole disk", iops, mb_s))
    return rows


def throttled(tmp: Path, count: int, args, workers: int) -> None:
    print("2. throttled disk (localcloud/clouddisk.py: loop device + ext4 + cgroup v1 blkio read limits)")
    try:
        with throttled_disk(tmp / "clouddisk", size_mb=512) as disk:
            images, packed = disk.mount / "images", disk.mount / "packed"
            shutil.copytree(tmp / "images", images)
            shutil.copytree(tmp / "packed", packed)
            os.sync()
            print(f"  device {disk.device} ({disk.major_minor}); limits: ESSD figures from {ESSD_PERFORMANCE_SOURCE}")
            rows = emulated_disks(workers, args.settings)
            disk.limit(None, None)
            free = disk.check()
            print(f"  unthrottled: {free.iops:8.0f} IOPS (4 KiB random, 4 threads)  {free.mb_s:7.1f} MB/s (1 MiB seq)")
            folder_reader, random_reader = FolderImages(images, IMAGE_SIDE), PackedImages(packed, IMAGE_SIDE)
            layouts = {FOLDER: folder_reader, RANDOM: random_reader, STREAMED: ShardStream(random_reader)}
            staged_name = "packed, staged to local disk"
            for label, iops, mb_s in rows:
                disk.limit(iops, int(mb_s * 1e6))
                got = disk.check()
                print(f"  {label}")
                print(f"    limit {iops:6d} IOPS, {mb_s:6.1f} MB/s; measured {got.iops:6.0f} IOPS "
                      f"({got.iops / iops:.2f}x), {got.mb_s:6.1f} MB/s ({got.mb_s / mb_s:.2f}x)")
                if free.iops < iops:
                    print(f"    (the IOPS limit is above the {free.iops:.0f} IOPS this device does unthrottled: this row"
                          " measures this machine's device, not the cloud disk's cap)")
                results: dict[str, list[float]] = {name: [] for name in (*layouts, staged_name)}
                reads: dict[str, list[float]] = {name: [] for name in results}
                copy_s: list[float] = []
                for n in range(args.rounds):
                    for name, dataset in layouts.items():  # interleaved, so drift hits every layout alike
                        disk.cold()
                        before = device_reads(disk.cgroup, disk.major_minor)
                        results[name].append(rate(dataset, workers))
                        reads[name].append((device_reads(disk.cgroup, disk.major_minor) - before) / count)
                    disk.cold()
                    staged = tmp / f"staged-{n}"
                    before = device_reads(disk.cgroup, disk.major_minor)
                    began = time.perf_counter()
                    shutil.copytree(packed, staged)
                    evict(staged)  # written by the copy: read it from the local disk, not the page cache
                    copied = time.perf_counter() - began
                    reads[staged_name].append((device_reads(disk.cgroup, disk.major_minor) - before) / count)
                    read_rate = rate(PackedImages(staged, IMAGE_SIDE), workers)
                    results[staged_name].append(count / (copied + count / read_rate))
                    copy_s.append(copied)
                    shutil.rmtree(staged)
                print("    decode, resize and normalise in the DataLoader (what training sees):")
                per_image = {name: statistics.median(r) for name, r in reads.items()}
                notes = {}
                for name, r in results.items():
                    used = per_image[name] * statistics.median(r)  # device reads/s while reading
                    notes[name] = f"{per_image[name]:5.2f} device reads/image"
                    if name != staged_name:
                        notes[name] += f" = {used:5.0f} reads/s, {used / iops:4.0%} of the limit"
                notes[staged_name] += f" (the copy), copy {statistics.median(copy_s):.2f} s included"
                medians = show(results, FOLDER, notes)
                fewer = per_image[FOLDER] / max(per_image["packed, random reads"], 1e-9)
                streamed = per_image[FOLDER] / max(per_image["packed, shard streaming"], 1e-9)
                raw: dict[str, list[float]] = {name: [] for name in layouts}
                for _ in range(args.rounds):
                    for name in layouts:
                        disk.cold()
                        # a pass this short would otherwise ride on the throttle's slice allowance: spend the
                        # one that holds this layout (whole shards: bytes; one read per image: requests)
                        disk.drain("bytes" if name == STREAMED else "iops")
                        raw[name].append(read_only_rate(name, folder_reader, random_reader))
                print("    the bytes alone, no decode, one reader (what this disk allows):")
                raw_notes = {}
                for name in raw:  # bytes a pass reads, spread over its images: the MB/s it asks of the disk
                    mb = statistics.median(raw[name]) * layout_bytes(name, folder_reader, random_reader) / count / 1e6
                    seconds = count / statistics.median(raw[name])
                    raw_notes[name] = f"= {mb:6.1f} MB/s, {mb / mb_s:4.0%} of the limit, pass {seconds:.2f} s"
                    if seconds < 1:  # what is left of a 100 ms slice allowance after the drain shows most here
                        raw_notes[name] += " (short pass)"
                raw_medians = show(raw, FOLDER, raw_notes)
                print(f"    device reads per image: packed random {fewer:.1f}x fewer than the folder, streamed"
                      f" {streamed:.0f}x fewer; images/s packed (trainer's reader) / folder"
                      f" {medians['packed, random reads'] / medians[FOLDER]:.2f}x, streamed / folder"
                      f" {medians['packed, shard streaming'] / medians[FOLDER]:.2f}x, staged / folder"
                      f" {medians[staged_name] / medians[FOLDER]:.2f}x; bytes alone: packed random / folder"
                      f" {raw_medians[RANDOM] / raw_medians[FOLDER]:.2f}x, streamed / folder"
                      f" {raw_medians[STREAMED] / raw_medians[FOLDER]:.2f}x (goal: packed >= 3x folder)")
    except Unavailable as e:
        print(f"  skipped: {e}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=None, help="DataLoader workers (default: half the vCPUs)")
    ap.add_argument("--size", type=int, default=96, help="stored image side in pixels (default 96)")
    ap.add_argument("--settings", default="share,whole",
                    help="throttle settings, comma-separated: share (this machine's share of the node's disk), "
                         "whole (the whole disk's limits); default both, --quick: share")
    ap.add_argument("--no-throttle", action="store_true", help="local disk only")
    ap.add_argument("--quick", action="store_true", help="800 images, 3 rounds (make bench)")
    args = ap.parse_args()
    if args.quick:
        args.images, args.rounds, args.settings = min(args.images, 800), min(args.rounds, 3), "share"
    args.settings = tuple(x.strip() for x in args.settings.split(",") if x.strip())
    wrong = [x for x in args.settings if x not in ("share", "whole")]
    if wrong or not args.settings:
        print(f"data_read: --settings {','.join(args.settings)!r}: allowed are share, whole (comma-separated)",
              file=sys.stderr)
        return 2
    for key in ("images", "rounds", "size", "workers"):
        value = getattr(args, key)
        if value is not None and value < 1:
            print(f"data_read: --{key} {value}: must be at least 1", file=sys.stderr)
            return 2
    workers = args.workers or half_the_vcpus()
    print(f"DataLoader workers: {workers}"
          + ("" if args.workers else f" (half of this machine's {os.cpu_count()} vCPUs, the guide's rule)"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        classes = 8
        example.make_folder(tmp / "images", classes=classes, per_class=args.images // classes, size=args.size)
        packer.pack(source.read(tmp / "images"), tmp / "packed", per_shard=256, workers=2)
        count = len(PackedImages(tmp / "packed", IMAGE_SIDE))
        print(f"{count} images of {args.size}x{args.size} -> {IMAGE_SIDE}x{IMAGE_SIDE}, batch {BATCH}, shuffled")
        local_disk(tmp, count, args, workers)
        if args.no_throttle:
            print("2. throttled disk: skipped (--no-throttle)")
        else:
            throttled(tmp, count, args, workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
