"""The cloud data disk stand-in (localcloud/clouddisk.py) and the ESSD figures it is throttled to.

The throttle's effect is measured by bench/data_read.py (IOPS and MB/s next to the limits), not here:
these tests check the documented formulas, the refusal without root, that the limits reach the kernel
and that everything is undone, also when the body fails. The device tests need root, a loop device and
cgroup v1 blkio, and skip elsewhere with the reason.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.providers.alicloud.profile import data_disk_performance
from components.providers.profile_records import DataDisk
from localcloud import clouddisk


@pytest.mark.parametrize("level,size,expected", [
    ("PL1", 200, (1800 + 50 * 200, 120 + 0.5 * 200)),   # entry-t4's data disk
    ("PL1", 2000, (50_000, 350)),                         # past both caps
    ("PL2", 1000, (1800 + 50 * 1000, 120 + 0.5 * 1000)),  # medium-a100's data disk
    ("PL2", 4000, (100_000, 750)),
    ("PL0", 100, (1800 + 12 * 100, 100 + 0.25 * 100)),
])
def test_essd_performance_follows_the_documented_formulas(level, size, expected):
    assert data_disk_performance(DataDisk("cloud_essd", level, size)) == expected


def test_a_disk_without_documented_figures_has_none():
    assert data_disk_performance(DataDisk("cloud_ssd", None, 200)) is None


def test_not_root_is_refused_before_anything_is_made(monkeypatch, tmp_path):
    monkeypatch.setattr(clouddisk.os, "geteuid", lambda: 1000)
    assert "not root" in clouddisk.why_unavailable()
    with pytest.raises(clouddisk.Unavailable, match="not root"):
        with clouddisk.throttled_disk(tmp_path / "disk"):
            pass
    assert not (tmp_path / "disk").exists()


needs_device = pytest.mark.skipif(clouddisk.why_unavailable() is not None,
                                  reason=f"throttled disk unavailable: {clouddisk.why_unavailable()}")


def _attached(image: Path) -> bool:
    return str(image) in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


@needs_device
def test_limits_reach_the_cgroup_and_everything_is_undone(tmp_path):
    with clouddisk.throttled_disk(tmp_path / "disk", size_mb=64) as disk:
        cgroup, image = disk.cgroup, disk.image
        assert str(os.getpid()) in (cgroup / "cgroup.procs").read_text().split()
        disk.limit(1234, 5_000_000)
        assert (cgroup / "blkio.throttle.read_iops_device").read_text().split() == [disk.major_minor, "1234"]
        assert (cgroup / "blkio.throttle.read_bps_device").read_text().split() == [disk.major_minor, "5000000"]
        (disk.mount / "kept").write_text("survives a remount")
        disk.cold()
        assert (disk.mount / "kept").read_text() == "survives a remount"
        assert _attached(image)
    assert not cgroup.exists()
    assert not _attached(image)
    assert not image.exists()


@needs_device
def test_clean_up_runs_when_the_body_fails(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with clouddisk.throttled_disk(tmp_path / "disk", size_mb=64) as disk:
            cgroup, image, mount = disk.cgroup, disk.image, disk.mount
            raise RuntimeError("boom")
    assert not cgroup.exists()
    assert not _attached(image)
    assert not image.exists()
    assert not any(line.split()[1] == str(mount) for line in Path("/proc/mounts").read_text().splitlines())
