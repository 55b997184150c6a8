"""Check the parts of the node config that the bootstrap reads and turn them into template values.

The node config is the contract in docs/node-config.md. Every value that ends up inside the
bootstrap's bash is checked here against a strict pattern (then shell-quoted by the templates), so a
stack file can never inject shell. All problems are collected and reported at once, each naming
the dotted key, the bad value and what is allowed.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from components import datapaths

# Optional bootstrap keys and their defaults (documented in docs/node-config.md, "bootstrap").
CUDA_REPO_DEFAULT = "https://developer.download.nvidia.com/compute/cuda/repos"  # NVIDIA CUDA Installation Guide for Linux, "Network repo"
ASCEND_HOME_DEFAULT = "/usr/local/Ascend"
# Python packages CANN's operator compiler imports at run time (Ascend CANN install guide, "dependencies").
ASCEND_PIP_DEFAULT = ("attrs", "cloudpickle", "decorator", "ml-dtypes", "numpy", "psutil", "scipy", "tornado")

KINDS = ("nvidia", "ascend")
FRAMEWORKS = ("pytorch", "paddle")
SECRET_KEY = re.compile(r"(secret|password|passwd|accesskey|access_key|securitytoken|privatekey)", re.I)

_PATH = re.compile(r"^/[A-Za-z0-9._/-]*$")
_URL = re.compile(r"^https?://[A-Za-z0-9.:_/~%+-]+$")
_WORD = re.compile(r"^[A-Za-z0-9._-]+$")
_PIP_REQ = re.compile(r"^[A-Za-z0-9._-]+(\[[A-Za-z0-9,._-]+\])?([<>=!~]=?[A-Za-z0-9.*+!_-]+(,[<>=!~]=?[A-Za-z0-9.*+!_-]+)*)?$")
_MOUNT_OPTS = re.compile(r"^[A-Za-z0-9_=.,:-]+$")
# A mount target, or the "<...>" placeholder that offline previews use before the FS exists.
_FS_ADDRESS = re.compile(r"^([A-Za-z0-9.-]+(:/[A-Za-z0-9._/-]*)?|<[A-Za-z0-9_-]+>)$")
_ASCEND_PKG = re.compile(r"^[A-Za-z0-9._+-]+\.run$")


@dataclass(frozen=True)
class ValueRule:
    """What a stack key that reaches the bootstrap's bash may hold: one copy of the rule. The spec
    checks the user's key with it (components/validation: exit 2, naming the key); bootstrap_values
    asserts it again on the node config, the contract every other writer must keep too."""
    pattern: re.Pattern
    allowed: str

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and self.pattern.fullmatch(value) is not None


DRIVER_BRANCH = ValueRule(re.compile(r"[0-9]{3,4}(-server|-open)?"),
                          "a driver branch such as '550' (optionally '550-server' or '550-open')")
CUDA_TOOLKIT = ValueRule(re.compile(r"[0-9]{2}-[0-9]{1,2}"), "a CUDA version such as '12-4'")
FRAMEWORK_VERSION = ValueRule(re.compile(r"[0-9][0-9A-Za-z.+]*"), "a version such as '2.4.1'")
FRAMEWORK_INDEX_URL = ValueRule(re.compile(_URL.pattern[1:-1]), "an http(s) URL of a pip index")
ASCEND_PACKAGES_URL = ValueRule(re.compile(rf"{_URL.pattern[1:-1]}|{_PATH.pattern[1:-1]}"),
                                "an http(s) URL or an absolute path on the node (e.g. on the shared FS)")


class BootstrapConfigError(ValueError):
    """The node config cannot be rendered; `problems` lists every 'key: message' found."""

    def __init__(self, problems: list[str]):
        self.problems = sorted(problems)
        super().__init__("node config not usable for the bootstrap:\n  " + "\n  ".join(self.problems))


_MISSING = object()


class _Reader:
    """Dotted-key access that records a problem instead of raising on the first one."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.problems: list[str] = []

    def bad(self, key: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{key}: {value!r} is not allowed; expected {allowed}")

    def get(self, key: str, default: Any = ..., *, required: bool = True) -> Any:
        node = datapaths.first(self.cfg, key, _MISSING, blocks=False)
        if node is _MISSING:
            if default is not ...:
                return default
            if required:
                self.problems.append(f"{key}: missing (see docs/node-config.md)")
        return node

    def pattern(self, key: str, regex: re.Pattern, allowed: str, default: Any = ..., *, null_ok: bool = False):
        value = self.get(key, default)
        if value is _MISSING or (value is None and (null_ok or default is None)):
            return None
        if not isinstance(value, str) or not regex.fullmatch(value):  # fullmatch: '$' would pass "550\n"
            self.bad(key, value, allowed)
            return None
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: Any = ...):
        value = self.get(key, default)
        if value is _MISSING:
            return choices[0]
        if value not in choices:
            self.bad(key, value, "one of " + ", ".join(choices))
            return choices[0]
        return value

    def integer(self, key: str, low: int, high: int, default: Any = ..., *, null_ok: bool = False):
        value = self.get(key, default)
        if value is _MISSING or (value is None and null_ok):
            return None if value is None else low
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.bad(key, value, f"an integer from {low} to {high}")
            return low
        return value


def _find_secret_keys(node: Any, prefix: str = "") -> list[str]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            if SECRET_KEY.search(str(key)):
                found.append(f"{dotted}: looks like a credential; user-data is readable on the node and in the"
                             " cloud console, so the node config must never carry one (nodes use their role)")
            found.extend(_find_secret_keys(value, dotted))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_find_secret_keys(value, f"{prefix}[{i}]"))
    return found


def _host(url: str | None) -> str:
    return urlsplit(url).hostname or "" if url else ""


def bootstrap_values(cfg: dict) -> dict[str, Any]:
    """The checked, normalised values the templates use; raises BootstrapConfigError listing every problem."""
    if not isinstance(cfg, dict):
        raise BootstrapConfigError([f"node config: expected a JSON object, got {type(cfg).__name__}"])
    r = _Reader(cfg)
    r.problems.extend(_find_secret_keys(cfg))
    v: dict[str, Any] = {}
    v["stack"] = r.pattern("stack", re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"),
                           "letters, digits, '.', '_' or '-' (a Pulumi stack name)")
    v["provider"] = r.pattern("provider", re.compile(r"^[a-z][a-z0-9_]{1,30}$"),
                              "a provider registry name such as alicloud")
    v["node_count"] = r.integer("nodeCount", 1, 4096)
    v["kind"] = r.choice("accelerator.kind", KINDS)
    v["model"] = r.pattern("accelerator.model", _WORD, "letters, digits, '.', '_' or '-'")
    v["count"] = r.integer("accelerator.count", 1, 64)
    nvswitch = r.get("accelerator.nvswitch", False)
    if not isinstance(nvswitch, bool):
        r.bad("accelerator.nvswitch", nvswitch, "true or false")
    v["nvswitch"] = nvswitch is True
    # "none", or the RDMA kind the provider set up end to end (its profile's interconnect.rdma_enabled: a catalog
    # name such as erdma); the bootstrap treats every kind alike, as verbs devices for NCCL.
    v["rdma"] = r.pattern("host.rdma", _WORD, "none or an RDMA kind the provider sets up (letters, digits, '.', '_', '-')",
                          "none")

    paths = {}
    for name in ("data", "checkpoints", "state", "logs", "venv", "agent"):
        paths[name] = r.pattern(f"paths.{name}", _PATH, "an absolute path of letters, digits, '.', '_', '-', '/'")
    paths["shared"] = r.pattern("paths.shared", _PATH, "null or an absolute path", None)
    paths["workdir"] = r.pattern("train.workdir", _PATH, "an absolute path", "/data/work")
    paths["train_env"] = r.pattern("paths.trainEnv", _PATH, "an absolute path", "/etc/gpu-training/train.env")
    v["paths"] = paths
    v["grace_seconds"] = r.integer("agent.maxGraceSeconds", 1, 86400, 120)

    b = "bootstrap"
    apt = r.pattern(f"{b}.aptMirror", _URL, "null or an http(s) URL without spaces", None)
    pip = r.pattern(f"{b}.pipIndex", _URL, "null or an http(s) URL without spaces", None)
    v["apt_mirror"] = apt.rstrip("/") if apt else ""
    v["pip_index"] = pip or ""
    # pip refuses plain-http indexes unless the host is trusted; in-VPC mirrors are plain http.
    v["pip_trusted_host"] = _host(pip) if pip and pip.startswith("http://") else ""
    reqs = r.get(f"{b}.nodeRequirements", [])
    if not isinstance(reqs, list) or not all(isinstance(x, str) and _PIP_REQ.fullmatch(x) for x in reqs):
        r.bad(f"{b}.nodeRequirements", reqs, "a list of pip requirement strings such as 'boto3' or 'boto3>=1.36'")
        reqs = []
    v["node_requirements"] = list(reqs)
    v["framework"] = r.choice(f"{b}.framework", FRAMEWORKS, "pytorch")
    v["framework_version"] = r.pattern(f"{b}.frameworkVersion", FRAMEWORK_VERSION.pattern, FRAMEWORK_VERSION.allowed)
    v["framework_index"] = r.pattern(f"{b}.frameworkIndexUrl", _URL, "null or an http(s) URL", None) or ""
    v["cuda_repo"] = (r.pattern(f"{b}.cudaRepoUrl", _URL, "an http(s) URL", CUDA_REPO_DEFAULT)
                      or CUDA_REPO_DEFAULT).rstrip("/")

    if v["kind"] == "nvidia":
        v["driver_branch"] = r.pattern(f"{b}.driverBranch", DRIVER_BRANCH.pattern, DRIVER_BRANCH.allowed)
        toolkit = r.pattern(f"{b}.cudaToolkit", CUDA_TOOLKIT.pattern, CUDA_TOOLKIT.allowed)
        v["cuda_toolkit"] = toolkit or "12-4"
        v["cuda_major"] = (toolkit or "12-4").split("-")[0]
        v["cuda_dotted"] = (toolkit or "12-4").replace("-", ".")
    else:
        v["driver_branch"] = v["cuda_toolkit"] = v["cuda_major"] = v["cuda_dotted"] = ""

    v["shared_type"] = r.pattern(f"{b}.sharedFs.type", re.compile(r"^[a-z][a-z0-9_-]*$"),
                                 "a shared file system type such as none, nas or cpfs", "none") or "none"
    v["shared_address"] = r.pattern(f"{b}.sharedFs.address", _FS_ADDRESS,
                                    "null or a mount target such as 'host.example:/path'", None) or ""
    v["shared_options"] = r.pattern(f"{b}.sharedFs.mountOptions", _MOUNT_OPTS,
                                    "null or comma-separated mount options", None) or ""
    if v["shared_type"] != "none":
        if not paths["shared"]:
            r.problems.append(f"paths.shared: missing while {b}.sharedFs.type is {v['shared_type']!r}")
        if not v["shared_address"]:
            r.problems.append(f"{b}.sharedFs.address: missing while {b}.sharedFs.type is {v['shared_type']!r}")

    v["disk_serial"] = r.pattern(f"{b}.dataDisk.serial", re.compile(r"^[A-Za-z0-9._-]+$"),
                                 "null or a disk serial such as 'bp1abc...'", None) or ""
    v["disk_gb"] = r.integer(f"{b}.dataDisk.sizeGb", 0, 1048576, 0, null_ok=True) or 0

    agent = r.get("artifacts.agent")
    if agent is not None and agent is not _MISSING:
        files = agent.get("files") if isinstance(agent, dict) else None
        if not isinstance(agent, dict) or not isinstance(agent.get("prefix"), str) or not isinstance(files, list) \
                or not isinstance(agent.get("sha256"), str):
            r.bad("artifacts.agent", agent, "{prefix, files: [relative paths], sha256} (docs/node-config.md)")
    # A re-run fetches again only when the listed agent files changed.
    v["agent_files_digest"] = hashlib.sha256(json.dumps(agent if isinstance(agent, dict) else None,
                                                        sort_keys=True).encode()).hexdigest()
    v["ascend"] = _ascend(r, cfg) if v["kind"] == "ascend" else None
    if r.problems:
        raise BootstrapConfigError(r.problems)
    return v


def _ascend(r: _Reader, cfg: dict) -> dict[str, Any]:
    key = "bootstrap.ascend"
    a = r.get(key, None)
    if not isinstance(a, dict):
        r.problems.append(f"{key}: missing; an Ascend node needs at least {{'packagesUrl': ...}}")
        return {"url": "", "local": False, "packages": {}, "home": ASCEND_HOME_DEFAULT, "torch_npu": "", "pip": [],
                "releases": []}
    url = a.get("packagesUrl")
    local = isinstance(url, str) and bool(_PATH.fullmatch(url))
    if not ASCEND_PACKAGES_URL.accepts(url):
        r.bad(f"{key}.packagesUrl", url, ASCEND_PACKAGES_URL.allowed)
        url = ""
    packages = a.get("packages") or {}
    names = {}
    if not isinstance(packages, dict):
        r.bad(f"{key}.packages", packages, "an object {driver, firmware, toolkit, kernels} of .run file names")
        packages = {}
    for part in ("driver", "firmware", "toolkit", "kernels"):
        name = packages.get(part)
        if name is None:
            continue
        if not isinstance(name, str) or not _ASCEND_PKG.fullmatch(name):
            r.bad(f"{key}.packages.{part}", name, "a .run file name")
            continue
        names[part] = name
    # Over http there is no directory listing to search, so the names must be given.
    if url and not local:
        for part in ("driver", "firmware", "toolkit"):
            if part not in names:
                r.problems.append(f"{key}.packages.{part}: missing; needed when packagesUrl is an http(s) URL"
                                  " (on a local path the bootstrap finds the .run files by name pattern)")
    torch_npu = a.get("torchNpuVersion")
    if torch_npu is not None and not (isinstance(torch_npu, str) and FRAMEWORK_VERSION.accepts(torch_npu)):
        r.bad(f"{key}.torchNpuVersion", torch_npu, "a version such as '2.4.0.post2'")
        torch_npu = None
    pip = a.get("pipPackages", list(ASCEND_PIP_DEFAULT))
    if not isinstance(pip, list) or not all(isinstance(x, str) and _PIP_REQ.fullmatch(x) for x in pip):
        r.bad(f"{key}.pipPackages", pip, "a list of pip requirement strings")
        pip = []
    home = a.get("home", ASCEND_HOME_DEFAULT)
    if not isinstance(home, str) or not _PATH.fullmatch(home):
        r.bad(f"{key}.home", home, "an absolute path")
        home = ASCEND_HOME_DEFAULT
    return {"url": url.rstrip("/"), "local": local, "packages": names, "home": home.rstrip("/"),
            # torch_npu releases carry torch's version plus a suffix (2.4.0.post2 for torch 2.4.0);
            # unset, the node picks the release for its CANN version from torch_npu_releases().
            "torch_npu": torch_npu or "", "pip": list(pip), "releases": torch_npu_releases()}


def torch_npu_releases() -> list[str]:
    """"<CANN> <torch> <torch-npu>" lines of components/data/torch_npu.yaml, for the node's lookup."""
    from components import datafiles

    return [f"{r['cann']} {r['torch']} {r['torchNpu']}" for r in datafiles.load("torch_npu.yaml")["releases"]]
