"""The safety rules every stack must keep, one table for the conformance suite and the policy pack.

Each rule reads a plan (resources with their type, name and inputs, and what each input refers to)
through its provider's adapter, `components/providers/<cloud>/conformance.yaml`, which says which of
that cloud's types and inputs hold each property. No rule names a cloud: a new provider is checked
by adding its adapter. The same RULES run

- in tests/test_conformance.py, on every stack's plan from the mock engine (`from_plan`), and
- in the policy pack (policy/__main__.py), on a user's real `pulumi preview --policy-pack policy`
  (`from_policy_resources`), where values unknown until apply are skipped, never guessed.

A rule returns Violations naming the resource and the input path. `check(resources, stack)` runs
them all.
"""
from __future__ import annotations

import functools
import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import yaml

from components import datapaths, tags
from components.providers import facts as provider_facts
from components.providers.facts import UNKNOWN

ADAPTER_FILE = "conformance.yaml"
STACK_TAG = tags.STACK
MISSING = datapaths.MISSING  # a path that leads nowhere (distinct from an explicit null)
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


# ---------------------------------------------------------------- the plan, neutrally

@dataclass(eq=False)  # one object per resource: identity is what a reference finds
class Resource:
    """One custom resource of a plan: what the rules see, from the mock engine or the policy engine."""
    type: str
    name: str
    inputs: Mapping[str, Any]
    urn: str = ""
    # (input name, value) -> the resources that value names; set by the builders below.
    resolver: Callable[["Resource", str, Any], list["Resource"]] = field(default=lambda r, i, v: [], repr=False)

    def refers_to(self, top_input: str, value: Any, type_token: str) -> list["Resource"]:
        return [r for r in self.resolver(self, top_input, value) if r.type == type_token]


def from_plan(planned: Iterable[Any]) -> list[Resource]:
    """Resources of a tools.mockrun Plan: ids are "<name>-id" (the mock engine's answer)."""
    resources = [Resource(r.type, r.name, r.inputs, f"{r.type}::{r.name}") for r in planned if r.custom]
    by_id = {f"{r.name}-id": r for r in resources}

    def resolve(_: Resource, __: str, value: Any) -> list[Resource]:
        return [by_id[value]] if isinstance(value, str) and value in by_id else []

    for resource in resources:
        resource.resolver = resolve
    return resources


def plain(value: Any) -> Any:
    """A policy engine's props as plain data, with values unknown during preview as UNKNOWN."""
    from pulumi_policy.proxy import UnknownValueError

    if isinstance(value, Mapping):
        out = {}
        for key in value:
            try:
                out[key] = plain(value[key])
            except UnknownValueError:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = []
        for index in range(len(value)):
            try:
                items.append(plain(value[index]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value


def from_policy_resources(policy_resources: Sequence[Any]) -> list[Resource]:
    """Resources of a pulumi_policy StackValidationArgs: references come from property dependencies."""
    by_urn: dict[str, Resource] = {}
    deps: dict[str, dict[str, list[str]]] = {}
    for pr in policy_resources:
        if pr.resource_type.startswith("pulumi:"):
            continue
        by_urn[pr.urn] = Resource(pr.resource_type, pr.name, plain(pr.props), pr.urn)
        deps[pr.urn] = {key: [d.urn for d in value] for key, value in (pr.property_dependencies or {}).items()}

    def resolve(resource: Resource, top_input: str, value: Any) -> list[Resource]:
        return [by_urn[u] for u in deps.get(resource.urn, {}).get(top_input, []) if u in by_urn]

    for resource in by_urn.values():
        resource.resolver = resolve
    return list(by_urn.values())


def stack_of_urn(urn: str) -> str:
    """urn:pulumi:<stack>::<project>::<type>::<name> -> <stack>."""
    return urn.split(":", 3)[2].split("::", 1)[0] if urn.startswith("urn:pulumi:") else ""


# ---------------------------------------------------------------- adapters

@functools.lru_cache(maxsize=None)
def adapter(cloud: str) -> dict:
    path = provider_facts.package_dir(cloud) / ADAPTER_FILE
    return yaml.safe_load(path.read_text()) if path.is_file() else {}


def adapters() -> dict[str, dict]:
    """Every registered provider's adapter (empty when it has none: the conformance suite says so)."""
    from components.providers import names

    return {cloud: adapter(cloud) for cloud in names()}


def adapter_for(type_token: str) -> dict:
    from components.providers import owner_of

    cloud = owner_of(type_token)
    return adapter(cloud) if cloud else {}


# ---------------------------------------------------------------- paths

def requirement_failures(resource: Resource, requirements: Sequence[dict], prefix: str = "",
                         data: Any = None) -> Iterator[str]:
    """Why `resource` (or the object `data` inside it) misses the adapter's requirements."""
    data = resource.inputs if data is None else data
    for requirement in requirements:
        for where, value in datapaths.located(data, requirement["path"]):
            path = f"{prefix}{where}"
            if value is UNKNOWN:
                continue  # known only after apply: not judged
            if "equals" in requirement and not _equal(value, requirement["equals"]):
                yield f"{path} is {_show(value)}, must be {_show(requirement['equals'])}"
            if "in" in requirement and value not in requirement["in"]:
                yield f"{path} is {_show(value)}, must be one of {requirement['in']}"
            if requirement.get("is_time") and not (isinstance(value, str) and _TIME.match(value)):
                yield f"{path} is {_show(value)}, must be a time (YYYY-MM-DDThh:mm:ssZ)"
            if "refers_to" in requirement:
                top = requirement["path"].split(".")[0].removesuffix("[]")
                targets = resource.refers_to(top, value, requirement["refers_to"])
                if value in (MISSING, None):
                    yield f"{path} is not set; it must name a {requirement['refers_to']}"
                elif not targets:
                    yield f"{path} ({_show(value)}) names no {requirement['refers_to']} of this stack"
                for target in targets:
                    yield from requirement_failures(target, requirement.get("then", []),
                                                    f"{path} -> {target.name}: ")


def _equal(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, bool) or isinstance(value, bool):
        return value is wanted
    if isinstance(wanted, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(wanted)
    return value == wanted


def _show(value: Any) -> str:
    return "missing" if value is MISSING else json.dumps(value, default=str)


# ---------------------------------------------------------------- the rules

@dataclass(frozen=True)
class Violation:
    rule: str
    resource: str  # name
    type: str
    urn: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.type.split(':')[-1]} {self.resource}: {self.message}"


@dataclass(frozen=True)
class Context:
    stack: str


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    scope: str  # "resource": judged one resource at a time; "stack": needs the whole plan
    check: Callable[[Resource, Sequence[Resource], Context], Iterable[str]]
    remediation: str


def _by_type(entries: Sequence[dict], type_token: str) -> list[dict]:
    return [e for e in entries if e.get("type") == type_token]


def encrypted_disks(resource, resources, ctx):
    for entry in _by_type(adapter_for(resource.type).get("disks", []), resource.type):
        yield from requirement_failures(resource, entry["require"])


def metadata_tokens(resource, resources, ctx):
    for entry in _by_type(adapter_for(resource.type).get("metadata_tokens", []), resource.type):
        yield from requirement_failures(resource, entry["require"])


_SSH = 22


def _ports(text: Any, style: str) -> Optional[tuple[int, int]]:
    """(low, high) of a rule's port text; (0, 65535) for all ports; None when unreadable."""
    if text in (MISSING, None, UNKNOWN):
        return (0, 65535) if text in (MISSING, None) else None
    text = str(text).strip()
    if style == "slash_range":  # "22/22", "-1/-1"
        low, _, high = text.partition("/")
        low, high = int(low), int(high or low)
        return (0, 65535) if low < 0 else (low, high)
    if style == "list_or_range":  # "ALL", "22", "80-90", "80,90"
        if text.upper() == "ALL":
            return (0, 65535)
        numbers = [int(n) for n in re.split(r"[-,]", text) if n.strip()]
        return (min(numbers), max(numbers))
    raise ValueError(f"unknown port format {style}")


def world_open_ingress(resource, resources, ctx):
    """An accepted inbound rule from 0.0.0.0/0 or ::/0: named with its ports; SSH said so."""
    for entry in _by_type(adapter_for(resource.type).get("ingress", []), resource.type):
        if any(resource.inputs.get(k) != v for k, v in entry.get("when", {}).items()):
            continue
        rules = [(f"{entry['list']}[{i}].", r) for i, r in enumerate(resource.inputs.get(entry["list"]) or [])] \
            if "list" in entry else [("", resource.inputs)]
        accept = entry["accept"]
        for prefix, rule in rules:
            if not isinstance(rule, Mapping):
                continue
            verdict = rule.get(accept["path"], accept.get("default"))
            if verdict is UNKNOWN or str(verdict).lower() not in {v.lower() for v in accept["values"]}:
                continue
            for key in entry["sources"]:
                source = rule.get(key)
                if not isinstance(source, str) or source is UNKNOWN:
                    continue
                try:
                    network = ipaddress.ip_network(source, strict=False)
                except ValueError:
                    yield f"{prefix}{key} {source!r} is not a CIDR"
                    continue
                if network.prefixlen == 0:
                    ports = _ports(rule.get(entry["ports"]["path"], MISSING), entry["ports"]["format"])
                    what = ("ports unknown until apply" if ports is None else "SSH (22)" if ports[0] <= _SSH <= ports[1]
                            else f"ports {ports[0]}-{ports[1]}")
                    yield f"{prefix}{key} {source} admits the whole Internet on {what}; list your own CIDRs"


def cloud_side_ttl(resource, resources, ctx):
    entries = _by_type(adapter_for(resource.type).get("ttl", []), resource.type)
    applying = [e for e in entries if all(resource.inputs.get(k) == v for k, v in e.get("when", {}).items())]
    if entries and not applying:  # e.g. a charging mode no entry names: never a silent pass
        yield f"none of the adapter's TTL entries applies ({'; '.join(str(e.get('when')) for e in entries)})"
    for entry in applying:
        if "unenforceable" in entry:
            continue  # the cloud offers no TTL there: the adapter says why, the profile warns in the preview
        if "require" in entry:
            yield from requirement_failures(resource, entry["require"])
        companion = entry.get("companion")
        if companion:
            mates = [r for r in resources if r.type == companion["type"]
                     and any(t is resource for t in r.refers_to(companion["refers_by"],
                                                                r.inputs.get(companion["refers_by"]), resource.type))]
            if not mates:
                yield f"no {companion['type']} with {companion['refers_by']} naming it: nothing deletes it at expiry"
            for mate in mates:
                yield from requirement_failures(mate, companion["require"], f"{mate.name}: ")


def _stack_named(text: str, stack: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(stack)}(?![\w.-])", text) is not None


def least_privilege_role(resource, resources, ctx):
    """Node role documents: no wildcard actions; changes scoped to this stack's tag or one named
    resource; object storage only under the stack's own prefix; `*` resources only for reads."""
    policies = adapter_for(resource.type).get("role_policies")
    if not policies:
        return
    for entry in _by_type(policies["documents"], resource.type):
        raw = resource.inputs.get(entry["path"])
        if raw is UNKNOWN or raw is None:
            continue
        try:
            document = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            yield f"{entry['path']} is not JSON"
            continue
        syntax = policies["syntax"]
        read_only, storage = re.compile(policies["read_only"]), re.compile(policies["object_storage"])
        for index, statement in enumerate(document.get(syntax["statement"], [])):
            where = f"{entry['path']} statement {index}"
            if str(statement.get(syntax["effect"], "")).lower() != syntax["allow"].lower():
                continue
            actions = _as_list(statement.get(syntax["action"]))
            # No Resource element means every resource (Huawei's grammar allows leaving it out).
            targets = _as_list(statement.get(syntax["resource"])) or ["*"]
            condition = json.dumps(statement.get(syntax["condition"]) or {})
            scoped = STACK_TAG in condition and _stack_named(condition, ctx.stack)
            for action in actions:
                if action.endswith("*"):
                    yield f"{where}: wildcard action {action}"
                    continue
                if action in policies.get("unscopable", {}):
                    continue  # the provider's grammar cannot scope it: the adapter says why
                if storage.search(action):
                    for target in targets:
                        if not (_stack_named(target, ctx.stack) or _stack_named(condition, ctx.stack)):
                            yield f"{where}: {action} on {target} reaches beyond this stack's prefix"
                    continue
                if read_only.search(action):
                    continue
                for target in targets:
                    specific = target != "*" and not target.endswith("/*")
                    if not (scoped or specific):
                        yield (f"{where}: {action} on {target} is not limited to this stack (no {STACK_TAG}"
                               f" condition naming {ctx.stack!r}, no single resource)")


def _as_list(value: Any) -> list:
    if value in (None, MISSING):
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def stack_tags(resource, resources, ctx):
    """Every tag input the provider's schema gives this type carries the stack tag (components/tags.py STACK) = the stack."""
    known = provider_facts.for_type(resource.type)
    if known is None or not known.knows(resource.type):
        return
    inputs = known.inputs(resource.type)
    for name in adapter_for(resource.type).get("tags", {}).get("inputs", []):
        if name not in inputs or inputs[name].get("output_only"):
            continue
        given = resource.inputs.get(name)
        if given is UNKNOWN:
            continue
        value = given.get(STACK_TAG, MISSING) if isinstance(given, Mapping) else MISSING
        if value is UNKNOWN:
            continue
        if value != ctx.stack:
            yield f"{name}[{STACK_TAG!r}] is {_show(value)}, must be {ctx.stack!r}"


def provider_schema(resource, resources, ctx):
    """The inputs pass the Terraform provider's own validation (components/providers/<cloud>/provider_facts.json)."""
    known = provider_facts.for_type(resource.type)
    if known is None:
        return
    for problem in known.check(resource.type, resource.inputs):
        if problem.kind != "unchecked":
            yield str(problem)


RULES: tuple[Rule, ...] = (
    Rule("encrypted-disks", "Data disks, system disks where the provider allows it, and buckets are encrypted.",
         "stack", encrypted_disks, "set the encryption input the message names (see the provider's conformance.yaml)"),
    Rule("metadata-tokens-required", "Nodes serve instance metadata only with a session token.",
         "resource", metadata_tokens, "require metadata tokens on the node or its template"),
    Rule("no-world-open-ingress", "No inbound rule admits 0.0.0.0/0 or ::/0 (SSH only from listed CIDRs).",
         "resource", world_open_ingress, "list your own addresses in sshAllowCidrs"),
    Rule("cloud-side-ttl", "The cloud itself deletes nodes and pools at expiry, even if the agent never runs.",
         "stack", cloud_side_ttl, "give every node an expiry the cloud enforces (auto release, timer, schedule)"),
    Rule("least-privilege-node-role", "The node role acts only on its own stack's resources and object prefix.",
         "resource", least_privilege_role, "scope each statement by the stack tag, one resource id or the stack's prefix"),
    Rule("stack-tags", f"Every taggable resource carries {STACK_TAG} = the stack.",
         "resource", stack_tags, "pass the stack's tags to every tag input"),
    Rule("provider-schema", "Inputs pass the Terraform provider's validators (allowed values, ranges, patterns, lengths).",
         "resource", provider_schema, "fix the input; the message says what the provider accepts"),
)


def check(resources: Sequence[Resource], stack: str, rules: Sequence[Rule] = RULES) -> list[Violation]:
    ctx = Context(stack)
    found = []
    for rule in rules:
        for resource in resources:
            for message in rule.check(resource, resources, ctx):
                found.append(Violation(rule.name, resource.name, resource.type, resource.urn, message))
    return found
