"""Collect the node agent's Python files for embedding in user-data, without docstrings or comments.

User-data is capped at 16 KB (Tencent, AWS), so the agent travels as compact code: `ast` parses
each file and unparses it without docstrings; comments do not survive the round trip. The agent is
scripts/node_agent/**.py plus the provider's components/providers/<cloud>/node_runtime.py, which
lands on the node as node_agent/cloud_runtime.py (docs/node-config.md, DESIGN.md).

When the whole agent does not fit, it travels as a bundle through the checkpoint bucket instead and
only the cloud runtime plus scripts/bootstrap/fetch_agent.py ride in user-data (docs/bootstrap.md).
"""
from __future__ import annotations

import ast
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AGENT_SRC = REPO / "scripts" / "node_agent"
PROVIDERS = REPO / "components" / "providers"
RUNTIME_NAME = "cloud_runtime.py"


@dataclass(frozen=True)
class EmbeddedFile:
    path: str          # absolute path on the node
    permissions: str   # octal string, as cloud-init's write_files wants it
    content: str
    source: str        # where it came from, for size reports


def strip_python(source: str, filename: str = "<agent>") -> str:
    """The same program without docstrings and comments (raises SyntaxError naming the file)."""
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body.pop(0)
                if not body:
                    body.append(ast.Pass())
    text = ast.unparse(tree) + "\n"
    compile(text, filename, "exec")
    return text


def agent_files(provider: str, agent_dir: str, src: Path = AGENT_SRC,
                providers: Path = PROVIDERS) -> list[EmbeddedFile]:
    """Whatever agent code exists now (possibly none): node_agent/** and the provider's cloud runtime."""
    files = []
    sources = sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts) if src.is_dir() else []
    for path in sources:
        rel = path.relative_to(src).as_posix()
        files.append(EmbeddedFile(f"{agent_dir}/node_agent/{rel}", "0644",
                                  strip_python(path.read_text(encoding="utf-8"), str(path)),
                                  str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)))
    runtime = providers / provider / "node_runtime.py"
    if runtime.is_file():
        files.append(EmbeddedFile(f"{agent_dir}/node_agent/{RUNTIME_NAME}", "0644",
                                  strip_python(runtime.read_text(encoding="utf-8"), str(runtime)),
                                  str(runtime.relative_to(REPO)) if runtime.is_relative_to(REPO) else str(runtime)))
    return files


FETCHER = REPO / "scripts" / "bootstrap" / "fetch_agent.py"


@dataclass(frozen=True)
class AgentBundle:
    """The agent package as a deterministic tar.gz, for when it does not fit in user-data."""
    key: str      # object key in the checkpoint bucket: <prefix>/<stack>/agent/node-agent-<sha16>.tar.gz
    data: bytes
    sha256: str


def make_bundle(files: list[EmbeddedFile], agent_dir: str, prefix: str, stack: str) -> AgentBundle:
    """Same bytes for the same agent code: sorted members, zero times and owners, gzip mtime 0."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for f in sorted(files, key=lambda f: f.path):
            body = f.content.encode("utf-8")
            info = tarfile.TarInfo(f.path[len(agent_dir) + 1:])
            info.size, info.mode, info.mtime = len(body), 0o644, 0
            tar.addfile(info, io.BytesIO(body))
    data = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    digest = hashlib.sha256(data).hexdigest()
    return AgentBundle(f"{prefix.strip('/')}/{stack}/agent/node-agent-{digest[:16]}.tar.gz", data, digest)
