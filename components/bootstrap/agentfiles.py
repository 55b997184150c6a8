"""The agent's boot set for user-data, without docstrings or comments.

The whole agent does not fit in 16 KB of user-data, so only its boot set rides there
(docs/node-config.md, "Agent delivery"): components.artifacts.BOOT_SET from node/node_agent/
plus the provider's components/providers/<cloud>/node_runtime.py as node_agent/cloud_runtime.py.
The bootstrap then runs `python -m node_agent.fetch`, which downloads the rest as listed in
node.json's `artifacts.agent`. Files travel as compact code: `ast` parses each one and unparses it
without docstrings; comments do not survive the round trip.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from components import providers as registry
from components.artifacts import AGENT_SRC, BOOT_SET

INSTALLED = Path(__file__).resolve().parents[2]  # the clone, or site-packages: where the files are shown from
RUNTIME_NAME = "cloud_runtime.py"


@dataclass(frozen=True)
class EmbeddedFile:
    path: str          # absolute path on the node
    permissions: str   # octal string, as cloud-init's write_files wants it
    content: str
    source: str        # where it came from, for size reports


@functools.lru_cache(maxsize=64)  # a pure function of its arguments; the spec renders user-data per validation
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


def boot_files(provider: str, agent_dir: str, src: Path = AGENT_SRC, runtime: Path | None = None,
               boot_set: tuple[str, ...] = BOOT_SET) -> list[EmbeddedFile]:
    """The boot set that exists now (the agent may be partial) and the provider's cloud runtime."""
    files = []
    for name in boot_set:
        path = src / name
        if path.is_file():
            files.append(EmbeddedFile(f"{agent_dir}/node_agent/{name}", "0644",
                                      strip_python(path.read_text(encoding="utf-8"), str(path)), _shown(path)))
    if runtime is None and provider in registry.REGISTRY:
        runtime = registry.node_runtime_path(provider)
    # A node config of no registered cloud (the bootstrap's Ascend fixture) renders without a runtime.
    if runtime is not None and runtime.is_file():
        files.append(EmbeddedFile(f"{agent_dir}/node_agent/{RUNTIME_NAME}", "0644",
                                  strip_python(runtime.read_text(encoding="utf-8"), str(runtime)), _shown(runtime)))
    return files


def _shown(path: Path) -> str:
    return str(path.relative_to(INSTALLED)) if path.is_relative_to(INSTALLED) else str(path)
