"""Egress: every endpoint a node's bootstrap and agent use, and the route that reaches it.

A node talks to its cloud's metadata service, object storage (agent files, code, checkpoints), the
cloud API (self-release, peers, spot pool retire), package mirrors, the CUDA repository on the bare
path and whatever the bootstrap templates download (a shared-FS client). A node that cannot reach
its cloud API cannot release itself, so its GPUs bill until the cloud-side TTL.

Nothing here knows a cloud. Each provider declares, as data in its profile's `egress` group:
- `routes(spec)`: the ways out its plan gives the nodes ("vpc": nothing to create; "internet": what
  the plan creates for it, as `evidence`), with what each costs;
- `endpoint_rules(region)`: which routes reach which hosts (first matching rule);
- `cloud_api(region)` / `cloud_api_default(spec)`: the API endpoint the agent calls.
This module joins them: `findings(spec)` (validation: an endpoint that no route reaches is an error,
a warning when the endpoint is used only in some cases), `describe(spec, resources)` (the preview's
`egress` section) and `routes_in_plan(routes, resources)` (proof that a plan holds each route).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Optional, Sequence
from urllib.parse import urlsplit

from components import datapaths
from components.providers.profile_records import Route

SHARED_FS_PLACEHOLDER = "<shared-fs-mount-address>"
_URL = re.compile(r"https?://[A-Za-z0-9._~%+:/@-]+")
_JINJA_COMMENT = re.compile(r"\{##.*?##\}", re.S)


@dataclass(frozen=True)
class NodeEndpoint:
    name: str
    url: str
    used_by: str  # bootstrap | agent | bootstrap, agent
    key: str  # the config key a finding names
    required: bool  # False: used only in some cases (`when`), so a missing route is a warning
    when: str
    reached_by: tuple[str, ...]  # routes that reach the host (provider rules), preferred first
    rule: str  # why those routes
    route: Optional[str]  # the first of `reached_by` this stack has; None: unreachable

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or self.url

    def as_dict(self) -> dict:
        return {"name": self.name, "url": self.url, "usedBy": self.used_by, "when": self.when,
                "required": self.required, "route": self.route, "reachedBy": list(self.reached_by),
                "why": self.rule}


@lru_cache(maxsize=None)
def template_urls(provider: str, shared_type: str) -> tuple[tuple[str, str], ...]:
    """(template, URL) literals of the bootstrap templates a node runs: downloads no config key names.

    Jinja comments and shell comment lines are skipped: they cite sources, nothing fetches them.
    """
    from components.bootstrap.render import environment

    env = environment(provider)
    names = ["bootstrap.sh.j2", f"sharedfs-{shared_type}.sh.j2", "nccl-extra.sh.j2"]
    found = []
    for name in names:
        try:
            source = env.loader.get_source(env, name)[0]
        except Exception:  # jinja2.TemplateNotFound: an optional snippet this provider does not have
            continue
        for line in _JINJA_COMMENT.sub("", source).splitlines():
            if line.lstrip().startswith("#"):
                continue
            found += [(name, url) for url in _URL.findall(line)]
    return tuple(found)


def _declared(spec, config: dict) -> list[tuple[str, str, str, str, bool, str]]:
    """(name, url, used by, config key, required, when) of everything a node contacts."""
    from components.bootstrap.config import CUDA_REPO_DEFAULT

    profile = spec.profile
    boot = config["bootstrap"]
    default_image = spec.image is None  # the provider's public image: no GPU driver, no FS client
    items = [("instance metadata", config["endpoints"]["metadata"], "bootstrap, agent", "provider", True,
              "always: identity, role credentials, spot notice")]
    api = config["endpoints"].get("cloudApi")
    for url in [api] if api else [f"https://{host}" for host in profile.egress.cloud_api_default(spec)]:
        items.append(("cloud API", url, "agent", "publicEgress", True,
                      "self-release when training ends, peers" + (", spot pool retire" if spec.spot else "")))
    if config["checkpoint"].get("endpoint"):
        items.append(("object storage", config["checkpoint"]["endpoint"], "bootstrap, agent",
                      "checkpoint.endpoint", True, "agent files, training code, checkpoints, markers, report"))
    if boot.get("aptMirror"):
        items.append(("apt mirror", boot["aptMirror"], "bootstrap", "publicEgress", True, "every apt install"))
    if boot.get("pipIndex"):
        items.append(("pip index", boot["pipIndex"], "bootstrap", "publicEgress", True,
                      "the agent's packages and the framework"))
    if spec.gpu.kind == "nvidia":
        items.append(("CUDA repository", boot.get("cudaRepoUrl") or CUDA_REPO_DEFAULT, "bootstrap", "image",
                      default_image, "the bare path, when the image has no GPU driver (the default image has"
                      " none), and the NVSwitch fabric manager"))
    if boot.get("frameworkIndexUrl"):
        items.append(("framework index", boot["frameworkIndexUrl"], "bootstrap", "bootstrap", True,
                      "the framework's wheels"))
    ascend = boot.get("ascend") or {}
    if str(ascend.get("packagesUrl", "")).startswith(("http://", "https://")):
        items.append(("Ascend packages", ascend["packagesUrl"], "bootstrap", "bootstrap.ascendPackagesUrl",
                      True, "driver, firmware and CANN run-packages"))
    shared = boot["sharedFs"]["type"]
    for template, url in template_urls(spec.provider, shared):
        items.append((f"download in {template}", url, "bootstrap", "publicEgress", default_image,
                      "installing a client the image lacks (the default image has none)"))
    return items


def node_endpoints(spec, config: Optional[dict] = None) -> list[NodeEndpoint]:
    """Each endpoint of `spec`'s nodes (deduplicated by URL) and the route of this stack that reaches it."""
    from components.nodeconfig import build_node_config

    config = config or build_node_config(spec, shared_fs_address=SHARED_FS_PLACEHOLDER)
    have = [route.name for route in spec.profile.egress.routes(spec)]
    rules = spec.profile.egress.endpoint_rules(spec.region)
    found: dict[str, NodeEndpoint] = {}
    for name, url, used_by, key, required, when in _declared(spec, config):
        host = urlsplit(url).hostname or url
        rule = next((r for r in rules if re.match(r.pattern, host)), None)
        reached_by = rule.routes if rule else ("internet",)
        route = next((r for r in reached_by if r in have), None)
        if url not in found:
            found[url] = NodeEndpoint(name, url, used_by, key, required, when, reached_by,
                                      rule.note if rule else "no rule matches: outside the VPC", route)
    if spec.shared_storage != "none":
        # The mount target is made in the stack's VPC (or attached to it over the stack's CCN).
        found["shared-fs"] = NodeEndpoint("shared file system", f"<{spec.shared_storage} mount target>",
                                          "bootstrap", "sharedStorage", True, "mounting /shared", ("vpc",),
                                          "created by the stack inside its own network", "vpc" if "vpc" in have
                                          else None)
    return list(found.values())


def findings(spec) -> Iterable[tuple[str, str, str]]:
    """(level, config key, message) for every endpoint that no route of this stack reaches."""
    routes = spec.profile.egress.routes(spec)
    if not routes:
        yield ("warning", "provider", f"{spec.profile.display_name} declares no egress routes: the nodes'"
               " endpoints are not checked (add routes and endpoint_rules to its profile)")
        return
    have = ", ".join(r.name for r in routes)
    for endpoint in node_endpoints(spec):
        if endpoint.route:
            continue
        fix = ""
        if "internet" in endpoint.reached_by and not spec.public_egress:
            fix = "; set publicEgress: true"
            if endpoint.key == "image":
                fix += ", or set image to one with the GPU driver installed"
        message = (f"{endpoint.name} {endpoint.url} (the {endpoint.used_by}: {endpoint.when}) has no route:"
                   f" only {' or '.join(endpoint.reached_by)} reaches it ({endpoint.rule}), and this stack's nodes"
                   f" have {have}{fix}")
        if endpoint.name == "cloud API":
            message += ". A node that cannot reach it cannot release itself: its GPUs bill until maxHours"
        yield ("error" if endpoint.required else "warning", endpoint.key,
               message if endpoint.required else message + " (needed only in that case)")


def routes_in_plan(routes: Sequence[Route], resources: Sequence[Any]) -> dict[str, Optional[list[str]]]:
    """route name -> names of the plan resources that make it, [] when it needs none, None when missing.

    `resources` carry `.type`, `.name` and `.inputs` (tools.mockrun.PlannedResource).
    """
    result: dict[str, Optional[list[str]]] = {}
    for route in routes:
        if not route.evidence:
            result[route.name] = []
            continue
        types = {t for t, _ in route.evidence}
        found = [r for r in resources if r.type in types]
        ok = bool(found) and all(_set(datapaths.first(r.inputs, key)) for t, key in route.evidence
                                 for r in found if r.type == t)
        result[route.name] = [r.name for r in found] if ok else None
    return result


def _set(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    return bool(value)


def describe(spec, resources: Sequence[Any] = ()) -> dict:
    """The preview's `egress` section: the routes (with cost and the resources that make them) and endpoints."""
    routes = spec.profile.egress.routes(spec)
    made = routes_in_plan(routes, resources)
    return {
        "publicEgress": spec.public_egress,
        "routes": [{"name": r.name, "description": r.description, "cost": r.cost,
                    "resources": made[r.name], "inPlan": made[r.name] is not None} for r in routes],
        "endpoints": [e.as_dict() for e in node_endpoints(spec)],
    }
