"""A cloud data disk stand-in: a loop device whose reads the block layer throttles to a disk's IOPS and MB/s.

How: a sparse file, a loop device over it (`losetup`), ext4 on it, mounted under a work folder; a child
cgroup of the cgroup v1 blkio hierarchy with `blkio.throttle.read_iops_device` and
`blkio.throttle.read_bps_device` set for the loop device's major:minor; the calling process moves into
that cgroup, so it and every process it forks afterwards (DataLoader workers, a copy) have their reads
from that device held to the limits by the kernel's block throttle. Reads of other devices (the local
disk) are not throttled, and neither are writes. Why this and not dm-delay or a FUSE layer: blkio
throttling counts requests and bytes at the block layer, which is what a cloud disk's IOPS and
throughput caps count; dm-delay adds a fixed latency per request (not a rate cap), and FUSE would add
its own per-request cost in user space. `check()` measures what the device really does (4 KiB random
reads and 1 MiB sequential reads with O_DIRECT, so the page cache cannot answer) so a bench can print
the measured IOPS and MB/s next to the set limits.

`cold()` unmounts and mounts the file system again: that drops its page cache, inodes and dentries
(the last close of the block device invalidates its buffer cache) without /proc/sys/vm/drop_caches,
which a container may not write. Everything is undone on exit, also on error: the process goes back to
its own cgroup, the child cgroup is removed, the file system unmounted, the loop device detached and
its file deleted. Needs root, /dev/loop-control, losetup, mkfs.ext4 and a writable blkio hierarchy;
`Unavailable` says which is missing, for a bench to print and skip.
"""
from __future__ import annotations

import mmap
import os
import random
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

BLKIO = Path("/sys/fs/cgroup/blkio")
TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")


class Unavailable(Exception):
    """The throttled disk cannot be made here; the message says why."""


@dataclass
class Measured:
    iops: float      # 4 KiB random reads per second, O_DIRECT
    mb_s: float      # 1 MiB sequential reads, MB/s (10^6 bytes), O_DIRECT


def why_unavailable() -> Optional[str]:
    """None when the throttled disk can be made here, else the reason it cannot."""
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "not a POSIX system"
    if os.geteuid() != 0:
        return "not root (a loop device and a blkio cgroup need root)"
    if not Path("/dev/loop-control").exists():
        return "no /dev/loop-control"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    if not (BLKIO / "blkio.throttle.read_iops_device").exists():
        return f"no cgroup v1 blkio throttle at {BLKIO}"
    if not os.access(BLKIO, os.W_OK):
        return f"{BLKIO} is not writable"
    return None


def _run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise Unavailable(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def _own_blkio_cgroup() -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return BLKIO / path.lstrip("/")
    return BLKIO


class ThrottledDisk:
    """A mounted ext4 file system on a loop device, with read limits for the current process's cgroup."""

    def __init__(self, image: Path, mount: Path, device: str, cgroup: Path):
        self.image, self.mount, self.device, self.cgroup = image, mount, device, cgroup
        self.major_minor = Path(f"/sys/block/{Path(device).name}/dev").read_text().strip()
        self.iops: Optional[int] = None
        self.bytes_s: Optional[int] = None

    def limit(self, iops: Optional[int], bytes_s: Optional[int]) -> None:
        """Cap reads from the device at iops requests/s and bytes_s bytes/s; None lifts that cap."""
        for name, value in (("read_iops_device", iops), ("read_bps_device", bytes_s)):
            (self.cgroup / f"blkio.throttle.{name}").write_text(f"{self.major_minor} {int(value or 0)}\n")
        self.iops, self.bytes_s = iops, bytes_s

    def cold(self) -> None:
        """Unmount and mount again: nothing of this file system stays cached."""
        os.sync()
        _run("umount", str(self.mount))
        _run("mount", "-o", "noatime", self.device, str(self.mount))

    def drain(self, kind: str = "iops", seconds: float = 0.25) -> None:
        """Spend the throttle's allowance before a short timed read: blk-throttle grants a group its limit in
        slices of about 100 ms, so a pass starts with up to a slice's worth in hand, which would flatter a
        pass of a fraction of a second. kind "iops": 4 KiB random reads, 4 threads (so the limit, not one
        thread's latency, sets their pace), for a pass that the IOPS cap holds; "bytes": 1 MiB sequential
        reads, for a pass that the MB/s cap holds (each kind leaves the other allowance unspent). O_DIRECT
        on a file of its own, so nothing lands in the page cache."""
        probe = self.mount / ".drain"
        if not probe.exists():
            probe.write_bytes(os.urandom(16 * 2**20))
            os.sync()
        if kind == "bytes":
            _sequential_reads(probe, 16 * 2**20, seconds)
        else:
            _random_reads(probe, 16 * 2**20, seconds, 4)

    def check(self, seconds: float = 1.5, threads: int = 4) -> Measured:
        """Measured 4 KiB random-read IOPS (with `threads` readers: one Python thread alone may issue fewer
        than the limit) and 1 MiB sequential-read MB/s, O_DIRECT, on a file written for it."""
        probe, size = self.mount / ".probe", 64 * 2**20  # O_DIRECT: no page cache, so 64 MiB is enough
        if not probe.exists():  # kept for the next check; it goes with the disk
            with open(probe, "wb") as out:
                block = os.urandom(2**20)
                for _ in range(size // 2**20):
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
        return Measured(_random_reads(probe, size, seconds, threads), _sequential_reads(probe, size, seconds))


def _random_reads(path: Path, size: int, seconds: float, threads: int) -> float:
    from concurrent.futures import ThreadPoolExecutor

    def reader(seed: int) -> int:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        buf, rng, count = mmap.mmap(-1, 4096), random.Random(seed), 0  # mmap: page-aligned, as O_DIRECT needs
        try:
            stop = time.perf_counter() + seconds
            while time.perf_counter() < stop:
                os.preadv(fd, [buf], rng.randrange(size // 4096) * 4096)
                count += 1
        finally:
            os.close(fd)
            buf.close()
        return count

    began = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(reader, range(threads)))
    return total / (time.perf_counter() - began)


def _sequential_reads(path: Path, size: int, seconds: float) -> float:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf, offset, done = mmap.mmap(-1, 2**20), 0, 0
    try:
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            done += os.preadv(fd, [buf], offset)
            offset = (offset + 2**20) % size
        return done / 1e6 / (time.perf_counter() - began)
    finally:
        os.close(fd)
        buf.close()


def _leave(cgroup: Path, own: Path) -> None:
    """Move this process and anything it forked that still runs (a DataLoader worker that an interrupt left
    behind) back to our own cgroup, so the child cgroup can be removed."""
    pids = {os.getpid(), *(int(p) for p in (cgroup / "cgroup.procs").read_text().split())}
    for pid in pids:
        try:
            (own / "cgroup.procs").write_text(f"{pid}\n")
        except ProcessLookupError:
            pass  # it ended meanwhile


def _umount(mount: Path) -> None:
    """Unmount; if a straggler still holds a file open, detach lazily so the loop device can go."""
    try:
        _run("umount", str(mount))
    except Unavailable:
        _run("umount", "-l", str(mount))


@contextmanager
def throttled_disk(workdir: Path, size_mb: int = 1024) -> Iterator[ThrottledDisk]:
    """Make the disk under workdir and move this process into its cgroup; undo it all on exit.
    Raises Unavailable (before anything is left behind) when it cannot be made here."""
    reason = why_unavailable()
    if reason:
        raise Unavailable(reason)
    workdir.mkdir(parents=True, exist_ok=True)
    image, mount = workdir / "disk.img", workdir / "mnt"
    own = _own_blkio_cgroup()
    cgroup = own / f"clouddisk-{os.getpid()}"
    undo: list[tuple[str, callable]] = []
    try:
        with open(image, "wb") as f:
            f.truncate(size_mb * 2**20)
        undo.append(("remove the image file", lambda: image.unlink(missing_ok=True)))
        device = _run("losetup", "--find", "--show", str(image))
        undo.append((f"losetup -d {device}", lambda: _run("losetup", "-d", device)))
        _run("mkfs.ext4", "-q", "-F", device)
        mount.mkdir(exist_ok=True)
        _run("mount", "-o", "noatime", device, str(mount))
        undo.append((f"umount {mount}", lambda: _umount(mount)))
        try:
            cgroup.mkdir()
        except OSError as e:
            raise Unavailable(f"cannot create the blkio cgroup {cgroup}: {e}") from e
        undo.append((f"rmdir {cgroup}", lambda: cgroup.rmdir()))
        try:
            (cgroup / "cgroup.procs").write_text(f"{os.getpid()}\n")
        except OSError as e:
            raise Unavailable(f"cannot move this process into {cgroup}: {e}") from e
        undo.append(("leave the cgroup", lambda: _leave(cgroup, own)))
        disk = ThrottledDisk(image, mount, device, cgroup)
        undo.append(("lift the limits", lambda: disk.limit(None, None)))
        yield disk
    finally:
        failures = []
        for what, step in reversed(undo):
            try:
                step()
            except (OSError, Unavailable) as e:
                failures.append(f"{what}: {e}")
        if failures:
            print("clouddisk: clean-up incomplete: " + "; ".join(failures))
