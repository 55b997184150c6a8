"""Run a rendered bootstrap for real in a throwaway root, with recording stand-ins for system tools.

What cloud-init would do is done literally: every `write_files` entry of the rendered #cloud-config
is written under a temp root, then its `runcmd` runs with GPU_TRAINING_ROOT pointing there: the loader
(node_agent/loader.py), which fetches the boot payload, verifies its sha256, writes its files and runs
the bootstrap. Scenario.fetch "copy" hands the loader the rendered payload as a file (no network, still
verified); "real" lets it fetch from the loader config's bucket and metadata endpoints. PATH
holds only sandbox_shim.sh (linked under each privileged tool's name: apt-get, nvidia-smi, mkfs.xfs,
blkid, mount, systemctl, ...) and links to a short list of harmless real tools, so a tool that is
neither shimmed nor allowed fails with "command not found" instead of touching this machine.
Used by tests/bootstrap/ and bench/bootstrap_overhead.py; docs/bootstrap.md shows it for debugging.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

SHIM = Path(__file__).with_name("sandbox_shim.sh")
SHIMMED = ("nvidia-smi", "npu-smi", "apt-get", "apt-cache", "apt-mark", "dpkg", "dpkg-query", "mkfs.xfs", "blkid",
           "lsblk", "mount", "mountpoint", "systemctl", "modprobe", "curl", "wget", "id", "groupadd", "useradd",
           "sysctl", "ip", "nproc", "python3", "venv-python", "venv-pip", "ascend-run-package", "downloaded")
REAL = ("bash", "env", "cat", "cp", "mv", "rm", "mkdir", "touch", "chmod", "ln", "date", "sed", "grep", "awk", "find",
        "readlink", "mktemp", "cmp", "sort", "comm", "paste", "head", "tail", "tr", "wc", "dirname", "basename",
        "flock", "tee", "uname", "seq", "sleep")
# Files the bootstrap rewrites on every run by design (timings); everything else must stay identical.
VOLATILE = ("bootstrap.log", "bootstrap-status.json", "bootstrap.lock", "bootstrap-run")
GIB = 1 << 30


@dataclass
class Disk:
    name: str                # kernel name: vdb -> /dev/vdb
    size_gb: int
    serial: str = ""         # appears as /dev/disk/by-id/virtio-<serial>
    fstype: str = ""         # an existing file system ("" = blank)
    pttype: str = ""         # a partition table without a file system
    partitions: int = 0
    mountpoint: str = ""


@dataclass
class Scenario:
    """The machine the bootstrap wakes up on. None for gpus/npus means no working driver."""
    gpus: Optional[int] = None
    gpus_after_install: Optional[int] = None     # what the driver sees once installed (default: expected)
    npus: Optional[int] = None
    npus_after_install: Optional[int] = None
    driver_version: str = "550.54.15"
    disks: Optional[list[Disk]] = None           # default: a root disk plus a blank data disk of the config's size
    nproc: Optional[int] = None                  # default: the node config's host.vcpus
    os_release: str = 'ID=ubuntu\nVERSION_ID="22.04"\n'
    rdma_devices: tuple[str, ...] = ()
    preinstalled: tuple[str, ...] = ()
    cann_installed: bool = False
    cann_version: str = "8.0.RC2"                # what ascend_toolkit_install.info says when cann_installed
    npu_health: tuple[str, ...] = ()             # npu-smi's Health per card (default OK)
    npu_needs_reboot: bool = False               # a fresh driver + firmware answer only after a reboot
    madison: Optional[dict[str, str]] = None     # apt-cache madison answers (default: derived from the config)
    # Bash run when a downloaded file of that name is executed; GPU_TRAINING_ROOT is the sandbox root.
    effects: Optional[dict[str, str]] = None
    # The loader and node_agent.fetch: "copy" (the loader reads the rendered payload from a file, the
    # fetcher copies the listed files from the repository: no network), or run both for "real" against
    # the configs' endpoints (tests point those at local servers on 127.0.0.1).
    fetch: str = "copy"


@dataclass
class RunResult:
    rc: int
    seconds: float
    calls: list[list[str]]
    status: Optional[dict]
    log: str
    output: str

    def called(self, tool: str) -> list[list[str]]:
        return [c[1:] for c in self.calls if c[0] == tool]

    def installs(self) -> list[str]:
        """Packages passed to `apt-get install` and `dpkg -i`, in call order."""
        out = []
        for c in self.calls:
            if c[0] == "apt-get" and "install" in c:
                skip = False
                for a in c[c.index("install") + 1:]:
                    if skip:
                        skip = False
                    elif a == "-o":
                        skip = True
                    elif not a.startswith("-"):
                        out.append(a)
            elif c[0] == "dpkg" and c[1:2] == ["-i"]:
                out.append(c[2])
        return out


def agent_sources() -> Path:
    """The folder of the node_agent package this process imports (node/node_agent of the checkout under
    test: pytest.ini and the editable install put node/ on the path), where "copy" fetches take the
    agent's files from. Found by import lookup, not through components/ (the floor above this one)."""
    spec = importlib.util.find_spec("node_agent")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the node_agent package is not importable (put node/ on PYTHONPATH)")
    return Path(list(spec.submodule_search_locations)[0])


class Sandbox:
    """rendered: what components.bootstrap.render_user_data returns (its cloud_config, and payload.content
    for the "copy" fetch)."""

    def __init__(self, base: Path, rendered, node_config: dict, scenario: Scenario = Scenario(),
                 agent_python: str = sys.executable, env: Optional[dict] = None):
        self.base, self.root, self.state = Path(base), Path(base) / "root", Path(base) / "state"
        self.shims, self.calls_file = Path(base) / "bin", Path(base) / "calls.log"
        self.cloud = yaml.safe_load(rendered.cloud_config)
        self.payload = rendered.payload.content
        self.cfg, self.scenario, self.env_extra = node_config, scenario, env or {}
        self.agent_python = agent_python
        self._seen = 0
        self._setup()

    # -- building the machine -------------------------------------------------------------
    def _setup(self) -> None:
        s, cfg = self.scenario, self.cfg
        for d in (self.root, self.state, self.shims):
            d.mkdir(parents=True, exist_ok=True)
        for tool in SHIMMED:
            (self.shims / tool).symlink_to(SHIM)
        for tool in REAL:
            real = shutil.which(tool)
            if real:
                (self.shims / tool).symlink_to(real)
        self.calls_file.touch()
        (self.state / "payload.json").write_text(self.payload)
        for f in self.cloud.get("write_files", []):
            path = self.root / f["path"].lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f["content"])
            path.chmod(int(str(f.get("permissions", "0644")), 8))
        etc = self.root / "etc"
        (etc / "apt").mkdir(parents=True, exist_ok=True)
        (etc / "os-release").write_text(s.os_release)
        (etc / "apt" / "sources.list").write_text(
            "deb http://archive.ubuntu.com/ubuntu jammy main restricted universe\n"
            "deb http://security.ubuntu.com/ubuntu jammy-security main restricted universe\n")
        (etc / "fstab").write_text("LABEL=cloudimg-rootfs / ext4 defaults 0 1\n")
        count = cfg["accelerator"]["count"]
        self._put("nproc", s.nproc if s.nproc is not None else cfg.get("host", {}).get("vcpus", 8))
        self._put("driver_version", s.driver_version)
        self._put("gpus_after_install", count if s.gpus_after_install is None else s.gpus_after_install)
        self._put("npus_after_install", count if s.npus_after_install is None else s.npus_after_install)
        if s.gpus is not None:
            self._put("gpus", s.gpus)
        if s.npus is not None:
            self._put("npus", s.npus)
        for pkg in s.preinstalled:
            self._put(f"pkgs/{pkg}", "")
        for dev in s.rdma_devices:
            (self.root / "sys/class/infiniband" / dev).mkdir(parents=True, exist_ok=True)
        ascend_home = ((cfg.get("bootstrap") or {}).get("ascend") or {}).get("home", "/usr/local/Ascend")
        self.ascend_home = self.root / ascend_home.lstrip("/")
        if s.cann_installed:
            (self.ascend_home / "ascend-toolkit" / "latest" / "x86_64-linux").mkdir(parents=True, exist_ok=True)
            (self.ascend_home / "ascend-toolkit" / "set_env.sh").write_text("export ASCEND_TOOLKIT_HOME=/x\n")
            (self.ascend_home / "ascend-toolkit" / "latest" / "x86_64-linux" / "ascend_toolkit_install.info").write_text(
                f"package_name=Ascend-cann-toolkit\nversion={s.cann_version}\n")
        if s.npu_health:
            self._put("npu_health", "\n".join(s.npu_health))
        if s.npu_needs_reboot:
            self._put("npu_needs_reboot", "")
        size = (cfg["bootstrap"].get("dataDisk") or {}).get("sizeGb") or 200
        disks = s.disks if s.disks is not None else [Disk("vda", 40, fstype="ext4", partitions=1, mountpoint="/"),
                                                     Disk("vdb", size)]
        for d in disks:
            self._put(f"disks/{d.name}/size", d.size_gb * GIB)
            for key in ("fstype", "pttype", "mountpoint"):
                if getattr(d, key):
                    self._put(f"disks/{d.name}/{key}", getattr(d, key))
            if d.fstype:
                self._put(f"disks/{d.name}/uuid", f"1111bbbb-{d.name}-4000-8000-existing")
            self._put(f"disks/{d.name}/partitions", d.partitions)
            if d.serial:
                by_id = self.root / "dev/disk/by-id"
                by_id.mkdir(parents=True, exist_ok=True)
                (by_id / f"virtio-{d.serial}").symlink_to(f"../../{d.name}")
            if d.mountpoint:
                with open(self.state / "mounts", "a") as f:
                    f.write(d.mountpoint + "\n")
        madison = s.madison
        if madison is None:
            branch = s.driver_version.split(".")[0]
            toolkit = (cfg["bootstrap"].get("cudaToolkit") or "12-4").replace("-", ".")
            madison = {
                f"nvidia-fabricmanager-{branch}": "".join(
                    f" nvidia-fabricmanager-{branch} | {v}-1 | https://developer.download.nvidia.com/compute/cuda/repos"
                    f"/ubuntu2204/x86_64  Packages\n" for v in (f"{branch}.999.1", s.driver_version, f"{branch}.1.1")),
                "libnccl2": f" libnccl2 | 2.99.9-1+cuda99.9 | repo Packages\n libnccl2 | 2.21.5-1+cuda{toolkit} | repo"
                            " Packages\n",
            }
        for pkg, text in madison.items():
            self._put(f"madison/{pkg}", text)
        for name, script in (s.effects or {}).items():
            self._put(f"effects/{name}", script)

    def _put(self, rel: str, value) -> None:
        path = self.state / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(value))

    # -- running ----------------------------------------------------------------------------
    def bootstrap_command(self) -> list[str]:
        cmd = [str(a) for a in self.cloud["runcmd"][0]]
        return [cmd[0]] + [str(self.root / a.lstrip("/")) if a.startswith("/") else a for a in cmd[1:]]

    def run(self, timeout: float = 120) -> RunResult:
        env = {"PATH": str(self.shims), "HOME": str(self.base), "LANG": "C",
               "GPU_TRAINING_ROOT": str(self.root), "SANDBOX_STATE": str(self.state),
               "SANDBOX_CALLS": str(self.calls_file), "SANDBOX_SHIMS": str(self.shims),
               "SANDBOX_REAL_PYTHON": sys.executable, "SANDBOX_AGENT_PYTHON": self.agent_python,
               "SANDBOX_ASCEND_HOME": str(self.ascend_home),
               "SANDBOX_MARKER": str(self.path(self.cfg["paths"]["state"]) / "UNHEALTHY"),
               "SANDBOX_FETCH": self.scenario.fetch, "SANDBOX_AGENT_SRC": str(agent_sources()), **self.env_extra}
        t0 = time.perf_counter()
        proc = subprocess.run(self.bootstrap_command(), env=env, capture_output=True, text=True, timeout=timeout)
        seconds = time.perf_counter() - t0
        lines = self.calls_file.read_text().splitlines()
        calls = [line.split("\x1f") for line in lines[self._seen:]]
        self._seen = len(lines)
        state_dir = self.root / self.cfg["paths"]["state"].lstrip("/")
        status_file = state_dir / "bootstrap-status.json"
        log_file = self.root / self.cfg["paths"]["logs"].lstrip("/") / "bootstrap.log"
        status = json.loads(status_file.read_text()) if status_file.exists() else None
        return RunResult(proc.returncode, seconds, calls, status,
                         log_file.read_text() if log_file.exists() else "", proc.stdout + proc.stderr)

    def path(self, node_path: str) -> Path:
        """Where a node path lives inside the sandbox root."""
        return self.root / node_path.lstrip("/")

    def snapshot(self) -> dict[str, str]:
        """Hash of every file under the root and of the emulated system state, volatile files excluded."""
        out = {}
        for top in (self.root, self.state):
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames[:] = [d for d in dirnames if d not in VOLATILE]
                for name in filenames:
                    if name in VOLATILE:
                        continue
                    p = Path(dirpath) / name
                    rel = str(p.relative_to(self.base))
                    out[rel] = "link:" + os.readlink(p) if p.is_symlink() else \
                        hashlib.sha256(p.read_bytes()).hexdigest()
                for d in dirnames:
                    out.setdefault(str((Path(dirpath) / d).relative_to(self.base)) + "/", "dir")
        return out

