"""Render a node's cloud-init user-data from the Jinja2 template files and encode it for the cloud API.

Templates are looked up in the provider's folder first (components/providers/<cloud>/templates/),
then in the neutral node/bootstrap/, so a cloud adds or overrides snippets (shared-FS mounts,
NCCL extras) without a provider test in neutral code. StrictUndefined makes a missing variable fail.

Encoding: the whole #cloud-config document is gzip-compressed once and base64-encoded for the API.
cloud-init unpacks gzip user-data itself; one gzip over everything compresses better than per-file
gz+b64 (which pays base64 twice and cannot share a dictionary across files).

Size: each provider declares what its instance API accepts (profile `node.user_data`, with the source);
the smallest known limit is 16 KB after base64. So user-data is only the loader (node_agent/loader.py,
what it imports, the cloud runtime and loader.json): the rest of what a node boots with (node.json, the
bootstrap, the agent's unit, the rest of the boot set) is the *boot payload*, one JSON object the program
uploads to `<prefix>/<stack>/boot/<sha256>.json`, which the loader fetches with the node role and runs
only when its sha256 is the one in user-data (docs/bootstrap.md, "The loader"). A stack's own values
(command, env) live in node.json, in the payload, and never count against the limit.
"""
from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jinja2

from components import providers as registry
from components import shipped
from components.artifacts import BOOT_SET, LOADER_SET, TextObject
from components.bootstrap.agentfiles import AGENT_SRC, EmbeddedFile, boot_files
from components.bootstrap.config import BootstrapConfigError, bootstrap_values
from node_agent import layout

TEMPLATES = shipped.folder("bootstrap")
NODE_JSON = "/etc/gpu-training/node.json"
LOADER_JSON = "/etc/gpu-training/loader.json"
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
    cloud_config: str              # the decoded '#cloud-config' document: the loader
    encoded: str                   # base64(gzip(cloud_config)): the cloud's user_data argument
    encoded_size: int              # len(encoded)
    files: tuple[FileSize, ...] = ()   # what rides in user-data
    payload: Optional[TextObject] = None  # the boot payload: its key in the bucket and its JSON

    def node_files(self) -> dict[str, str]:
        """{path on the node: content} of everything the node boots with: user-data's files and the payload's."""
        return {**write_files(self.cloud_config), **(payload_files(self.payload.content) if self.payload else {})}


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


def _payload(files: list[EmbeddedFile]) -> str:
    """The boot payload's JSON (compact, keys in a fixed order: the same inputs give the same digest)."""
    return json.dumps({"version": 1, "files": [{"path": f.path, "mode": f.permissions, "content": f.content}
                                               for f in files], "run": BOOTSTRAP_PATH}, separators=(",", ":")) + "\n"


def loader_config(node_config: dict, payload: TextObject) -> dict:
    """loader.json: what the loader needs to fetch and verify the payload with the node role, and no more.
    The cloud runtime reads endpoints.metadata and identity.roleName (never a credential)."""
    k = node_config["checkpoint"]
    return {"version": 1, "stack": node_config["stack"], "provider": node_config["provider"],
            "region": node_config["region"], "endpoints": {"metadata": node_config["endpoints"]["metadata"]},
            "identity": node_config.get("identity") or {}, "paths": {"logs": node_config["paths"]["logs"]},
            "checkpoint": {key: k.get(key) for key in ("bucket", "endpoint", "region", "addressingStyle",
                                                        "signatureVersion")},
            "agent": {key: value for key, value in (node_config.get("agent") or {}).items()
                      if key in ("uploadAttempts", "retryBaseSeconds")},
            "payload": {"key": payload.key, "sha256": payload.sha256},
            # Where a node whose boot stopped says so (loader.report_stopped): the agent's marker folder.
            "markers": layout.stack_root(k.get("prefix"), node_config["stack"]) + layout.MARKERS}


def render_user_data(node_config: dict, *, max_encoded: Optional[int] = PROVIDER_LIMIT,
                     agent_src: Path = AGENT_SRC, runtime: Optional[Path] = None) -> RenderedUserData:
    """Render and encode the user-data (the loader) and the boot payload of one node; raises
    BootstrapConfigError or UserDataTooLarge.

    max_encoded: the provider's limit by default; a number; None renders whatever the size."""
    v = bootstrap_values(node_config)
    k = node_config.get("checkpoint") or {}
    if not (k.get("bucket") and k.get("endpoint")):
        raise BootstrapConfigError([f"checkpoint.bucket / checkpoint.endpoint: {k.get('bucket')!r} /"
                                    f" {k.get('endpoint')!r}: the loader fetches the boot payload from the"
                                    " stack's bucket; both are required"])
    if max_encoded is PROVIDER_LIMIT:
        max_encoded = user_data_limit(v["provider"])
    env = environment(v["provider"])
    agent_dir = v["paths"]["agent"]
    boot = [
        EmbeddedFile(NODE_JSON, "0644", json.dumps(node_config, indent=1) + "\n", "node config"),
        EmbeddedFile(BOOTSTRAP_PATH, "0755", render_bootstrap(node_config, v), "node/bootstrap/bootstrap.sh.j2"),
        EmbeddedFile(f"/etc/systemd/system/{AGENT_UNIT}", "0644",
                     env.get_template("agent.service.j2").render(v=v, node_json=NODE_JSON),
                     "node/bootstrap/agent.service.j2"),
        *[EmbeddedFile(f"{agent_dir}/node_agent/{name}", "0644", (agent_src / name).read_text(encoding="utf-8"),
                       f"node_agent/{name}")
          for name in BOOT_SET if name not in LOADER_SET and (agent_src / name).is_file()],
    ]
    document = _payload(boot)
    digest = hashlib.sha256(document.encode()).hexdigest()
    payload = TextObject(f"{layout.stack_root(k.get('prefix'), v['stack'])}{layout.BOOT}{digest}.json", document)
    files = [
        EmbeddedFile(LOADER_JSON, "0644", json.dumps(loader_config(node_config, payload), indent=1) + "\n",
                     "loader config"),
        *boot_files(v["provider"], agent_dir, agent_src, runtime, LOADER_SET),
    ]
    loader = f"{agent_dir}/node_agent/loader.py"
    text = env.get_template("user-data.yaml.j2").render(v=v, files=files, loader=loader, loader_json=LOADER_JSON)
    encoded = _encode(text)
    sizes = tuple(FileSize(f.path, len(f.content.encode()), len(gzip.compress(f.content.encode(), 9, mtime=0)),
                           f.source) for f in files)
    if max_encoded is not None and len(encoded) > max_encoded:
        top = sorted(sizes, key=lambda s: -s.gzip_bytes)[:6]
        raise UserDataTooLarge(
            f"stack {v['stack']}: encoded user-data is {len(encoded)} bytes, limit {max_encoded}; largest parts"
            " (gzip alone): " + ", ".join(f"{s.path} {s.gzip_bytes}" for s in top))
    return RenderedUserData(text, encoded, len(encoded), sizes, payload)


def decode(encoded: str) -> str:
    """The #cloud-config text inside an encoded user-data string (what cloud-init will see): the one
    decoder for the preview, the tests and the benches. Plain base64 (not gzip'd) is read too."""
    raw = base64.b64decode(encoded)
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")


def write_files(cloud_config: str) -> dict[str, str]:
    """{path: content} of a #cloud-config document's write_files."""
    import yaml

    return {entry["path"]: entry["content"] for entry in yaml.safe_load(cloud_config).get("write_files") or []}


def payload_files(payload: str) -> dict[str, str]:
    """{path: content} of a boot payload's JSON."""
    return {f["path"]: f["content"] for f in json.loads(payload)["files"]}


def loader_config_of(cloud_config: str) -> dict:
    """The loader config (loader.json) a #cloud-config document writes."""
    try:
        return json.loads(write_files(cloud_config)[LOADER_JSON])
    except KeyError:
        raise ValueError(f"the user-data writes no {LOADER_JSON}") from None


def node_config_of(payload: str) -> dict:
    """The node config (node.json) a boot payload holds."""
    try:
        return json.loads(payload_files(payload)[NODE_JSON])
    except KeyError:
        raise ValueError(f"the boot payload holds no {NODE_JSON}") from None


def node_config_in_plan(encoded_user_data: str, resources) -> dict:
    """node.json of a planned node: its user-data names the boot payload's key, and the plan's object at that
    key holds the payload as content. `resources`: the plan's resources (with .inputs) or their input dicts."""
    key = loader_config_of(decode(encoded_user_data))["payload"]["key"]
    for resource in resources:
        inputs = getattr(resource, "inputs", resource)
        if inputs.get("key") == key and isinstance(inputs.get("content"), str):
            return node_config_of(inputs["content"])
    raise ValueError(f"no object in the plan holds the boot payload {key}")
