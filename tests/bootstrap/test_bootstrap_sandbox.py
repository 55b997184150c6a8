"""The rendered bootstrap run for real in a sandbox (localcloud/sandbox.py): a temp root and
recording stand-ins for apt-get, nvidia-smi, npu-smi, blkid, mkfs.xfs, mount, systemctl, pip, curl...

Expected values come from the node config under test (driver branch, toolkit, counts), never from
the stand-ins: the stand-ins only record calls and keep the emulated machine's state.
"""
from __future__ import annotations

import pytest
from bootstrap_helpers import ALL_CONFIGS, SAMPLE_FS_EFFECTS, load_config

from components.bootstrap import render_user_data
from localcloud.sandbox import Disk, Sandbox, Scenario

MUTATING = {"apt-get": "install", "dpkg": "-i", "mkfs.xfs": "", "mount": "", "venv-pip": "install",
            "curl": "", "useradd": "", "ascend-run-package": ""}


def sandbox(tmp_path, cfg, scenario=Scenario(), **kw):
    r = render_user_data(cfg)
    return Sandbox(tmp_path / "sb", r, cfg, scenario, **kw)


def mutating_calls(result):
    out = []
    for call in result.calls:
        marker = MUTATING.get(call[0])
        if marker is not None and (marker == "" or marker in call):
            out.append(call)
        if call[0] == "systemctl" and "enable" in call:
            out.append(call)
    return out


def results(status):
    return {s["name"]: s["result"] for s in status["steps"]}


def subsequence(items, wanted):
    it = iter(items)
    return all(any(w == x for x in it) for w in wanted)


@pytest.mark.parametrize("name", [n for n in ALL_CONFIGS if "ascend" not in n])
def test_fast_path_installs_no_driver_and_a_second_run_changes_nothing(name, tmp_path):
    cfg = load_config(name)
    effects = SAMPLE_FS_EFFECTS.get(cfg["bootstrap"]["sharedFs"]["type"])
    sb = sandbox(tmp_path, cfg, Scenario(gpus=cfg["accelerator"]["count"], effects=effects))
    first = sb.run()
    assert first.rc == 0, first.log
    assert first.status["state"] == "ready" and first.status["path"] == "fast"
    installed = first.installs()
    assert not [p for p in installed if p.startswith(("cuda-", "linux-headers", "libnccl", "cudnn"))], installed
    fabric = [p for p in installed if p.startswith("nvidia-fabricmanager")]
    if cfg["accelerator"]["nvswitch"]:
        # The image's driver stays; the fabric manager (from the CUDA repo) must match its exact version.
        assert fabric == ["nvidia-fabricmanager-550=550.54.15-1"]
    else:
        assert fabric == [] and not any("cuda-keyring" in p for p in installed)
    assert ["-pm", "1"] in first.called("nvidia-smi")
    assert sb.path("/etc/gpu-training/train.env").exists()
    assert ["enable", "--now", "--no-block", "gpu-training-agent.service"] in first.called("systemctl")

    before = sb.snapshot()
    second = sb.run()
    assert second.rc == 0, second.log
    assert sb.snapshot() == before
    assert mutating_calls(second) == []
    assert set(results(second.status).values()) <= {"unchanged", "skipped"}, results(second.status)


@pytest.mark.parametrize("name", ["stack:large-h20", "stack:entry-t4"])
def test_bare_path_installs_the_pinned_packages_in_order(name, tmp_path):
    cfg = load_config(name)
    b = cfg["bootstrap"]
    sb = sandbox(tmp_path, cfg, Scenario(gpus=None, driver_version=f"{b['driverBranch']}.54.15"))
    r = sb.run()
    assert r.rc == 0, r.log
    assert r.status["path"] == "bare"
    cuda = b["cudaToolkit"].replace("-", ".")
    wanted = ["cuda-keyring.deb", "linux-headers-", f"cuda-drivers-{b['driverBranch']}"]
    if cfg["accelerator"]["nvswitch"]:
        wanted.append(f"nvidia-fabricmanager-{b['driverBranch']}={b['driverBranch']}.54.15-1")
    wanted += [f"cuda-toolkit-{b['cudaToolkit']}", f"cudnn9-cuda-{b['cudaToolkit'].split('-')[0]}",
               f"libnccl2=2.21.5-1+cuda{cuda}", f"libnccl-dev=2.21.5-1+cuda{cuda}"]
    installed = r.installs()
    got = [next((p for p in installed if w in p), None) for w in wanted]
    assert None not in got, (wanted, installed)
    assert [installed.index(p) for p in got] == sorted(installed.index(p) for p in got), installed
    keyring = [c for c in r.called("curl") if c[-1].endswith("cuda-keyring_1.1-1_all.deb")]
    assert keyring and keyring[0][-1].endswith("/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb")
    assert ["hold", f"cuda-drivers-{b['driverBranch']}"] in r.called("apt-mark")
    assert sb.path("/etc/modprobe.d/blacklist-nouveau.conf").exists()
    if cfg["accelerator"]["nvswitch"]:
        assert ["enable", "--now", "nvidia-fabricmanager"] in r.called("systemctl")
    assert sb.run().installs() == []


def test_cuda_repo_follows_the_images_ubuntu_release(tmp_path):
    sb = sandbox(tmp_path, load_config("stack:entry-t4"), Scenario(os_release='ID=ubuntu\nVERSION_ID="24.04"\n'))
    r = sb.run()
    assert any(c[-1].endswith("/ubuntu2404/x86_64/cuda-keyring_1.1-1_all.deb") for c in r.called("curl"))


def test_a_non_ubuntu_image_fails_clearly_on_the_bare_path(tmp_path):
    sb = sandbox(tmp_path, load_config("stack:entry-t4"), Scenario(os_release='ID=debian\nVERSION_ID="12"\n'))
    r = sb.run()
    assert r.rc == 1 and results(r.status)["driver"] == "failed"
    assert "needs Ubuntu; this image is 'debian'" in r.log
    assert not [p for p in r.installs() if p.startswith("cuda-drivers")]


@pytest.mark.parametrize("fstype", ["xfs", "ext4"])
def test_a_disk_that_already_has_a_file_system_is_not_formatted(fstype, tmp_path):
    cfg = load_config("stack:entry-t4")
    size = cfg["bootstrap"]["dataDisk"]["sizeGb"]
    disks = [Disk("vda", 40, fstype="ext4", partitions=1, mountpoint="/"), Disk("vdb", size, fstype=fstype)]
    sb = sandbox(tmp_path, cfg, Scenario(gpus=1, disks=disks))
    r = sb.run()
    assert r.rc == 0, r.log
    assert r.called("mkfs.xfs") == []
    assert ["-t", fstype, "-o", "noatime", "/dev/vdb", str(sb.path(cfg["paths"]["data"]))] in r.called("mount")
    fstab = sb.path("/etc/fstab").read_text()
    assert f"UUID=1111bbbb-vdb-4000-8000-existing {cfg['paths']['data']} {fstype} defaults,noatime,nofail 0 2" in fstab


def test_a_blank_disk_is_formatted_once_and_mounted_by_uuid(tmp_path):
    cfg = load_config("stack:entry-t4")
    sb = sandbox(tmp_path, cfg, Scenario(gpus=1))
    r = sb.run()
    assert r.called("mkfs.xfs") == [["-q", "-L", "gpu-data", "/dev/vdb"]]
    assert "UUID=0000aaaa-vdb-4000-8000-sandbox /data xfs defaults,noatime,nofail 0 2" in sb.path("/etc/fstab").read_text()
    assert sb.run().called("mkfs.xfs") == []


def test_a_partition_table_without_file_system_is_not_formatted(tmp_path):
    cfg = load_config("stack:entry-t4")
    disks = [Disk("vda", 40, fstype="ext4", partitions=1, mountpoint="/"),
             Disk("vdb", cfg["bootstrap"]["dataDisk"]["sizeGb"], pttype="gpt")]
    sb = sandbox(tmp_path, cfg, Scenario(gpus=1, disks=disks))
    r = sb.run()
    assert r.rc == 1 and r.called("mkfs.xfs") == []
    assert results(r.status)["data_disk"] == "failed"
    assert "refusing to format" in r.log
    assert sb.path(cfg["paths"]["state"] + "/UNHEALTHY").exists()


def test_the_serial_picks_the_disk_when_sizes_are_equal(tmp_path):
    cfg = load_config("stack:entry-t4")
    size = cfg["bootstrap"]["dataDisk"]["sizeGb"]
    cfg["bootstrap"]["dataDisk"]["serial"] = "bp1datadisk2"
    disks = [Disk("vda", 40, fstype="ext4", partitions=1, mountpoint="/"), Disk("vdb", size, serial="bp1other"),
             Disk("vdc", size, serial="bp1datadisk2")]
    r = sandbox(tmp_path, cfg, Scenario(gpus=1, disks=disks)).run()
    assert r.rc == 0, r.log
    assert r.called("mkfs.xfs") == [["-q", "-L", "gpu-data", "/dev/vdc"]]


def test_without_a_serial_two_candidate_disks_are_never_guessed(tmp_path):
    cfg = load_config("stack:entry-t4")
    size = cfg["bootstrap"]["dataDisk"]["sizeGb"]
    disks = [Disk("vda", 40, fstype="ext4", partitions=1, mountpoint="/"), Disk("vdb", size), Disk("vdc", size)]
    r = sandbox(tmp_path, cfg, Scenario(gpus=1, disks=disks)).run()
    assert r.rc == 1 and r.called("mkfs.xfs") == [] and r.called("mount") == []
    assert "2 candidates (/dev/vdb /dev/vdc)" in r.log


def test_a_gpu_count_mismatch_marks_the_node_unhealthy_and_training_does_not_start(tmp_path):
    cfg = load_config("stack:medium-a100")
    want = cfg["accelerator"]["count"]
    sb = sandbox(tmp_path, cfg, Scenario(gpus=want - 1))
    r = sb.run()
    assert r.rc == 1
    marker = sb.path(cfg["paths"]["state"] + "/UNHEALTHY")
    assert f"{want - 1} of {want}" in marker.read_text()
    assert r.status["state"] == "unhealthy"
    assert r.status["accelerators"] == {"kind": "nvidia", "expected": want, "found": want - 1}
    steps = results(r.status)
    assert steps["health"] == "failed" and steps["framework"] == "not-run"
    assert not any(a.startswith("torch") for c in r.called("venv-pip") for a in c)
    # The agent still comes up (to report FAILED), and the marker was there before it started.
    assert steps["agent"] == "done"
    at_start = sb.state / "units" / "gpu-training-agent.unhealthy-at-start"
    assert at_start.exists() and f"{want - 1} of {want}" in at_start.read_text()
    trainer = cfg["train"]["command"].split()[-1]
    assert not any(trainer in " ".join(c) for c in r.calls)

    (sb.state / "gpus").write_text(str(want))   # the missing GPU is back (e.g. after a reboot)
    again = sb.run()
    assert again.rc == 0 and again.status["state"] == "ready"
    assert not marker.exists()


def test_ascend_bare_path_installs_driver_firmware_cann_then_torch_npu(tmp_path):
    cfg = load_config("fixture:large-ascend-910b")
    a = cfg["bootstrap"]["ascend"]
    sb = sandbox(tmp_path, cfg, Scenario(npus=None))
    r = sb.run()
    assert r.rc == 0, r.log
    runs = [(c[0].rsplit("/", 1)[-1], c[1:]) for c in r.called("ascend-run-package")]
    assert runs == [(a["packages"]["driver"], ["--full", "--install-for-all", "--quiet"]),
                    (a["packages"]["firmware"], ["--full", "--quiet"]),
                    (a["packages"]["toolkit"], ["--install", "--install-for-all", "--quiet"]),
                    (a["packages"]["kernels"], ["--install", "--install-for-all", "--quiet"])]
    assert [c[-1] for c in r.called("curl")][:1] == [f"{a['packagesUrl']}/{a['packages']['driver']}"]
    assert ["-g", "HwHiAiUser", "-d", "/home/HwHiAiUser", "-m", "-s", "/bin/bash", "HwHiAiUser"] in r.called("useradd")
    pip = [x for c in r.called("venv-pip") for x in c]
    assert f"torch=={cfg['bootstrap']['frameworkVersion']}" in pip and f"torch-npu=={a['torchNpuVersion']}" in pip
    env = sb.path("/etc/gpu-training/train.env").read_text()
    assert "ASCEND_TOOLKIT_HOME=" in env and "LD_LIBRARY_PATH=" in env and "HCCL_SOCKET_IFNAME=eth0" in env
    before = sb.snapshot()
    assert mutating_calls(sb.run()) == [] and sb.snapshot() == before


def test_ascend_npu_count_mismatch_is_unhealthy(tmp_path):
    cfg = load_config("fixture:large-ascend-910b")
    sb = sandbox(tmp_path, cfg, Scenario(npus=7, cann_installed=True))
    r = sb.run()
    assert r.rc == 1 and r.called("ascend-run-package") == []
    assert "7 of 8" in sb.path(cfg["paths"]["state"] + "/UNHEALTHY").read_text()


def test_alibaba_nas_mount_uses_nfs_v3_with_fstab_nofail(tmp_path):
    cfg = load_config("stack:entry-t4")
    cfg["paths"]["shared"] = "/shared"
    cfg["bootstrap"]["sharedFs"] = {"type": "nas", "address": "0a1b2c.cn-hangzhou.nas.aliyuncs.com", "mountOptions": None}
    sb = sandbox(tmp_path, cfg, Scenario(gpus=1))
    r = sb.run()
    assert r.rc == 0, r.log
    assert "nfs-common" in r.installs()
    mount = [c for c in r.called("mount") if "nfs" in c]
    assert mount and mount[0][:2] == ["-t", "nfs"] and mount[0][3].startswith("vers=3,")
    assert mount[0][4] == "0a1b2c.cn-hangzhou.nas.aliyuncs.com:/"
    assert "0a1b2c.cn-hangzhou.nas.aliyuncs.com:/ /shared nfs vers=3," in sb.path("/etc/fstab").read_text()
    assert ",_netdev,nofail 0 0" in sb.path("/etc/fstab").read_text()


def test_mirrors_point_apt_and_pip_at_the_configured_ones(tmp_path):
    cfg = load_config("stack:entry-t4")
    sb = sandbox(tmp_path, cfg, Scenario(gpus=1))
    sb.run()
    sources = sb.path("/etc/apt/sources.list").read_text()
    assert "archive.ubuntu.com" not in sources and f"{cfg['bootstrap']['aptMirror']}/ubuntu jammy" in sources
    pip = sb.path("/etc/pip.conf").read_text()
    assert f"index-url = {cfg['bootstrap']['pipIndex']}" in pip
