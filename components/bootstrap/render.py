"""Render a node's cloud-init user-data from the Jinja2 template files and encode it for the cloud API.

Templates are looked up in the provider's folder first (components/providers/<cloud>/templates/),
then in the neutral node/bootstrap/, so a cloud adds or overrides snippets (shared-FS mounts,
NCCL extras) without a provider test in neutral code. StrictUndefined makes a missing variable fail.

Encoding: the whole #cloud-config document is gzip-compressed once and base64-encoded for the API.
cloud-init unpacks gzip user-data itself; one gzip over everything compresses better than per-file
gz+b64 (which pays base64 twice and cannot share a dictionary across files).

Size: each provider declares what its instance API accepts (profile `node.user_data`, with the source);
the boot set is sized for the smallest known limit (16 KB after base64), so the whole agent does not
ride in user-data: the rest comes from object storage (docs/node-config.md, "Agent delivery").
"""
from __future__ import annotations

import base64
import functools
import gzip
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jinja2

from components import providers as registry
from components import shipped
from components.bootstrap.agentfiles import AGENT_SRC, EmbeddedFile, boot_files
from components.bootstrap.config import BootstrapConfigError, bootstrap_values

TEMPLATES = shipped.folder("bootstrap")
NODE_JSON = "/etc/gpu-training/node.json"
BOOTSTRAP_PATH = "/usr/local/sbin/gpu-training-bootstrap"
AGENT_UNIT = "gpu-training-agent.service"
# The limit of the provider's profile applies (render_user_data's default); this is the smallest one
# known (Tencent CVM: 16 KB after base64), which the agent's boot set is sized for.
MAX_ENCODED_BYTES = 16384
PROVIDER_LIMIT: Any = object()  # render_user_data(max_encoded=PROVIDER_LIMIT): the profile's limit


def user_data_limit(provider: str) -> int:
    """The longest encoded user-data the provider's instance API accepts (the smallest known limit
    for a node config of no registered provider)."""
    try:
        return registry.profile(provider).node.user_data.max_encoded
    except registry.UnknownProvider:
        return MAX_ENCODED_BYTES


class UserDataTooLarge(ValueError):
    """The encoded user-data exceeds the limit; the message lists the largest embedded files."""


@dataclass(frozen=True)
class FileSize:
    path: str
    bytes: int
    gzip_bytes: int   # this file compressed alone: its rough share of the encoded size
    source: str


@dataclass(frozen=True)
class RenderedUserData:
    cloud_config: str              # the decoded '#cloud-config' document
    encoded: str                   # base64(gzip(cloud_config)): the cloud's user_data argument
    encoded_size: int              # len(encoded)
    files: tuple[FileSize, ...] = ()


def _yaml_block(text: str, indent: int) -> str:
    """A YAML scalar that loads back to exactly `text`: a literal block when possible, else JSON-quoted."""
    printable = all(c in "\n\t" or (" " <= c and c not in "\x7f\ufeff") for c in text)
    if not text or not printable or text[0] in " \n" or "\r" in text or "\u2028" in text or "\u2029" in text:
        return json.dumps(text)
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    pad = " " * indent
    lines = [pad + line if line else "" for line in body.split("\n")]
    # The template's own newline ends the last line; extra trailing newlines become kept empty lines.
    return f"|{chomp}\n" + "\n".join(lines) + "\n" * max(trailing - 1, 0)


def _sq(value: Any) -> str:
    return shlex.quote(str(value))


def template_folders(provider: str) -> list[Path]:
    """Where the bootstrap's templates come from, first match wins: the provider's own snippets
    (templates/ in its package, when it has one) before the neutral ones. A node config of no
    registered cloud (the Ascend fixture) gets the neutral ones only."""
    own = registry.package_dir(provider) / "templates" if provider in registry.REGISTRY else None
    return ([own] if own is not None and own.is_dir() else []) + [TEMPLATES]


@functools.lru_cache(maxsize=16)
def environment(provider: str) -> jinja2.Environment:
    """One environment per provider, kept: Jinja caches compiled templates in it (and reloads a
    template whose file changed), so validation can render user-data on every spec cheaply."""
    loaders = [jinja2.FileSystemLoader(str(folder)) for folder in template_folders(provider)]
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                             autoescape=False,
                             # Bash's ${#array[@]} would open a standard Jinja comment ({#).
                             comment_start_string="{##", comment_end_string="##}")
    env.filters["sq"] = _sq
    env.filters["yaml_block"] = _yaml_block
    return env


def shared_fs_types(provider: str) -> list[str]:
    """The shared-FS types that have a mount snippet for this provider (neutral 'none' included)."""
    names = set()
    for folder in template_folders(provider):
        names.update(p.name[len("sharedfs-"):-len(".sh.j2")] for p in folder.glob("sharedfs-*.sh.j2"))
    return sorted(names)


def render_bootstrap(node_config: dict, values: Optional[dict] = None) -> str:
    """The bootstrap bash script of this node config (what cloud-init writes to BOOTSTRAP_PATH)."""
    v = values or bootstrap_values(node_config)
    available = shared_fs_types(v["provider"])
    if v["shared_type"] not in available:
        raise BootstrapConfigError([
            f"bootstrap.sharedFs.type: {v['shared_type']!r} has no mount snippet for provider "
            f"{v['provider']!r}; available: {', '.join(available)} "
            f"(add components/providers/{v['provider']}/templates/sharedfs-{v['shared_type']}.sh.j2)"])
    return environment(v["provider"]).get_template("bootstrap.sh.j2").render(
        v=v, unit=AGENT_UNIT, node_json=NODE_JSON)


def _encode(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def render_user_data(node_config: dict, *, max_encoded: Optional[int] = PROVIDER_LIMIT,
                     agent_src: Path = AGENT_SRC, runtime: Optional[Path] = None) -> RenderedUserData:
    """Render and encode the user-data of one node; raises BootstrapConfigError or UserDataTooLarge.

    max_encoded: the provider's limit by default; a number; None renders whatever the size."""
    v = bootstrap_values(node_config)
    if max_encoded is PROVIDER_LIMIT:
        max_encoded = user_data_limit(v["provider"])
    env = environment(v["provider"])
    files = [
        EmbeddedFile(NODE_JSON, "0644", json.dumps(node_config, indent=1) + "\n", "node config"),
        EmbeddedFile(BOOTSTRAP_PATH, "0755", render_bootstrap(node_config, v),
                     "node/bootstrap/bootstrap.sh.j2"),
        EmbeddedFile(f"/etc/systemd/system/{AGENT_UNIT}", "0644",
                     env.get_template("agent.service.j2").render(v=v, node_json=NODE_JSON),
                     "node/bootstrap/agent.service.j2"),
        *boot_files(v["provider"], v["paths"]["agent"], agent_src, runtime),
    ]
    text = env.get_template("user-data.yaml.j2").render(v=v, files=files, bootstrap_path=BOOTSTRAP_PATH)
    encoded = _encode(text)
    sizes = tuple(FileSize(f.path, len(f.content.encode()), len(gzip.compress(f.content.encode(), 9, mtime=0)),
                           f.source) for f in files)
    if max_encoded is not None and len(encoded) > max_encoded:
        top = sorted(sizes, key=lambda s: -s.gzip_bytes)[:6]
        raise UserDataTooLarge(
            f"stack {v['stack']}: encoded user-data is {len(encoded)} bytes, limit {max_encoded}; largest parts"
            " (gzip alone): " + ", ".join(f"{s.path} {s.gzip_bytes}" for s in top))
    return RenderedUserData(text, encoded, len(encoded), sizes)


def decode(encoded: str) -> str:
    """The #cloud-config text inside an encoded user-data string (what cloud-init will see): the one
    decoder for the preview, the tests and the benches. Plain base64 (not gzip'd) is read too."""
    raw = base64.b64decode(encoded)
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")


def node_config_of(cloud_config: str) -> dict:
    """The node config (node.json) a #cloud-config document writes."""
    import yaml

    for entry in yaml.safe_load(cloud_config).get("write_files") or []:
        if entry.get("path") == NODE_JSON:
            return json.loads(entry["content"])
    raise ValueError(f"the user-data writes no {NODE_JSON}")


