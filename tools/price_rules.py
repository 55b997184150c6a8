"""The price APIs' request rules (components/providers/<cloud>/price_api.yaml) and the check a stand-in
runs against each request it is sent.

A rule file names, per call, the parameters the cloud requires (`required`, dotted paths into the
request; `name[]` means every element of the list `name`, which must not be empty), the values a
parameter may take (`values`), parameters required only when another has a value (`requiredWhen`:
NAME=VALUE -> paths; `defaults` gives the value the cloud assumes for a parameter left out), groups of which at least one must be given (`anyOf`), parameters that only go
together (`together`: a parameter name, or NAME=VALUE), and the source of all of it. RPC-style flat
names with dots (Alibaba's `DataDisk.1.Category`) are looked up as they are first. `problems`
returns what a cloud would refuse, as (code, message) pairs; an empty list means the request passes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from components import datapaths, providers

MISSING, INVALID, UNKNOWN_CALL = "MissingParameter", "InvalidParameterValue", "InvalidAction"


@dataclass(frozen=True)
class CallRule:
    call: str
    name: str
    required: tuple[str, ...]
    values: Mapping[str, tuple]
    required_when: Mapping[str, tuple[str, ...]]
    defaults: Mapping[str, Any]
    any_of: tuple[tuple[str, ...], ...]
    together: tuple[tuple[str, ...], ...]
    source: str


@dataclass(frozen=True)
class Rules:
    provider: str
    wire: str
    calls: Mapping[str, CallRule]

    def problems(self, call: Optional[str], params: Mapping[str, Any]) -> list[tuple[str, str]]:
        rule = self.calls.get(call or "")
        if rule is None:
            return [(UNKNOWN_CALL, f"{call!r} is not a price call this API answers; known: {', '.join(self.calls)}")]
        found = []
        params = {**rule.defaults, **params}
        for path in rule.required:
            if not _present(params, path):
                found.append((MISSING, f"{rule.name}: {path} is required ({rule.source})"))
        for condition, paths in rule.required_when.items():
            if _holds(params, condition):
                for path in paths:
                    if not _present(params, path):
                        found.append((MISSING, f"{rule.name}: {path} is required with {condition} ({rule.source})"))
        for path, allowed in rule.values.items():
            for value in _values(params, path):
                if value not in allowed:
                    found.append((INVALID, f"{rule.name}: {path}={value!r} is not one of {', '.join(map(str, allowed))}"))
        for group in rule.any_of:
            if not any(_present(params, path) for path in group):
                found.append((MISSING, f"{rule.name}: one of {', '.join(group)} is required ({rule.source})"))
        for group in rule.together:
            given = [_holds(params, item) for item in group]
            if any(given) and not all(given):
                found.append((INVALID, f"{rule.name}: {' and '.join(group)} go together ({rule.source})"))
        return found


def path_of(provider: str) -> Path:
    return providers.package_dir(provider) / "price_api.yaml"


def load(provider: str) -> Rules:
    raw = yaml.safe_load(path_of(provider).read_text(encoding="utf-8"))
    calls = {}
    for call, row in raw["calls"].items():
        calls[call] = CallRule(call, row.get("name", call), tuple(row.get("required", ())),
                               {k: tuple(v) for k, v in (row.get("values") or {}).items()},
                               {k: tuple(v) for k, v in (row.get("requiredWhen") or {}).items()},
                               dict(row.get("defaults") or {}),
                               tuple(tuple(g) for g in row.get("anyOf", ())),
                               tuple(tuple(g) for g in row.get("together", ())), row["source"])
    return Rules(provider, raw["wire"], calls)


def _present(params: Mapping[str, Any], path: str) -> bool:
    """Whether the request gives `path`: a flat parameter of that name (a query string's `Filters.0.Name`), or
    every place the path names holds a value (`list[].field`: a non-empty list, each item with the field)."""
    if params.get(path) not in (None, ""):
        return True
    places = datapaths.located(params, path)
    return bool(places) and all(value not in (datapaths.MISSING, None, "") for _, value in places)


def _values(params: Mapping[str, Any], path: str) -> list[Any]:
    if params.get(path) not in (None, ""):
        return [params[path]]
    return [value for value in datapaths.values(params, path) if value not in (None, "")]


def _holds(params: Mapping[str, Any], item: str) -> bool:
    name, sep, value = item.partition("=")
    found = _values(params, name)
    return bool(found) and (not sep or value in [str(v) for v in found])
