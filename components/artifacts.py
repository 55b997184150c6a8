"""Files the nodes download from object storage: the node agent (beyond the boot set that rides in
user-data) and the training code. One list, used by every provider's storage part (uploads), the
node config (names + sha256 the fetcher verifies) and the local rehearsal."""
from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import node_agent
from components import project
from node_agent import fetch, layout

# The agent's own package, wherever it is installed (node/node_agent in a clone, site-packages in a wheel).
AGENT_SRC = Path(node_agent.__file__).resolve().parent
# Delivered at boot so a node can fetch the rest (docs/node-config.md, "Agent delivery"): in the boot payload.
BOOT_SET = ("__init__.py", "s3.py", "fetch.py", "layout.py")
# What rides in user-data itself, with the cloud runtime: the loader that fetches the boot payload
# (docs/bootstrap.md, "The loader"), and what it imports.
LOADER_SET = ("__init__.py", "s3.py", "loader.py")
# A pod's boot set (a ConfigMap, no user-data limit) adds the Kubernetes half its cloud runtime subclasses.
POD_BOOT_SET = BOOT_SET + ("pod.py",)
SKIP_PARTS = {"__pycache__", ".git", ".ipynb_checkpoints", ".pytest_cache"}


class Md5Spellings:
    """The two spellings of an object's MD5 (its md5()) that the clouds' object resources take."""

    def md5(self) -> bytes:
        raise NotImplementedError

    @property
    def md5_base64(self) -> str:
        """Content-MD5 header value: stores check the upload, and a changed content is a changed input."""
        return base64.b64encode(self.md5()).decode()

    @property
    def md5_hex(self) -> str:
        """The MD5 as an S3-style ETag (hex) for a store whose object resource compares that."""
        return self.md5().hex()


@dataclass(frozen=True)
class Artifact(Md5Spellings):
    key: str  # object key in the checkpoint bucket
    relative: str  # path under the node's target folder
    path: Path
    sha256: str

    @property
    def source(self) -> str:
        """The path the provider uploads from, relative to the project directory (where `pulumi` runs the
        program and its provider plugins) when the file is inside it: an absolute path would make a
        `pulumi up` from another checkout show every object as changed. A file outside the project (the
        installed agent, the example trainer of an installed package, a code folder elsewhere) keeps its
        absolute path."""
        try:
            return self.path.resolve().relative_to(project.root().resolve()).as_posix()
        except ValueError:
            return str(self.path)

    def md5(self) -> bytes:
        """The file's MD5 digest, the one both spellings (Md5Spellings) are made from."""
        return hashlib.md5(self.path.read_bytes()).digest()


@dataclass(frozen=True)
class TextObject(Md5Spellings):
    """One object whose content the program makes (the boot payload), not a file: the same digests
    as an Artifact's, for the clouds' object resources."""
    key: str
    content: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content.encode()).hexdigest()

    def md5(self) -> bytes:
        return hashlib.md5(self.content.encode()).digest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(root: Path) -> list[Path]:
    return [path for path in sorted(root.rglob("*"))
            if path.is_file() and not SKIP_PARTS.intersection(path.relative_to(root).parts)
            and path.suffix != ".pyc"]


def agent_artifacts(prefix: str, stack: str, source: Optional[Path] = None) -> list[Artifact]:
    source = source or AGENT_SRC  # read at call time: the day-2 test plans a changed copy of the agent
    base = layout.stack_root(prefix, stack) + layout.AGENT
    result = []
    for path in _files(source):
        relative = f"node_agent/{path.relative_to(source).as_posix()}"
        if path.suffix == ".py" and path.name not in BOOT_SET + LOADER_SET:
            result.append(Artifact(base + relative, relative, path, _sha256(path)))
    return result


def code_artifacts(prefix: str, stack: str, code_dir: Optional[Path]) -> list[Artifact]:
    if code_dir is None:
        return []
    base = layout.stack_root(prefix, stack) + layout.CODE
    return [Artifact(base + path.relative_to(code_dir).as_posix(), path.relative_to(code_dir).as_posix(), path,
                     _sha256(path)) for path in _files(code_dir)]


def all_artifacts(spec) -> list[Artifact]:
    """Everything `pulumi up` uploads for a Spec (components.spec.Spec); nothing without a bucket."""
    if not spec.checkpoint.bucket:
        return []
    prefix = spec.checkpoint.prefix
    return agent_artifacts(prefix, spec.stack) + code_artifacts(prefix, spec.stack, spec.train.code_dir)


def agent_section(prefix: str, stack: str) -> dict:
    """node.json's `artifacts.agent`: the files the fetcher downloads and the one digest they must match."""
    artifacts = agent_artifacts(prefix, stack)
    return {"prefix": layout.stack_root(prefix, stack) + layout.AGENT, "files": sorted(a.relative for a in artifacts),
            "sha256": fetch.digest({a.relative: a.sha256 for a in artifacts})}


def node_config_section(spec) -> dict:
    """node.json's `artifacts`: what the fetcher downloads and verifies before the agent starts."""
    root = layout.stack_root(spec.checkpoint.prefix, spec.stack)
    return {"agent": agent_section(spec.checkpoint.prefix, spec.stack), "code": {"prefix": root + layout.CODE}}
