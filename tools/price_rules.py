"""The price APIs' request rules (components/providers/<cloud>/price_api.yaml) and the check a stand-in
runs against each request it is sent.

A rule file holds, per call, its rules in components/requestrules.py's vocabulary (required, values,
requiredWhen, anyOf, together, with the call's source), plus `defaults`: the value the cloud assumes for a
parameter left out, applied before the check. RPC-style flat names with dots (Alibaba's
`DataDisk.1.Category`) are looked up as they are first. `problems` returns what a cloud would refuse, as
(code, message) pairs; an empty list means the request passes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from components import providers, requestrules

MISSING, INVALID, UNKNOWN_CALL = "MissingParameter", "InvalidParameterValue", "InvalidAction"


@dataclass(frozen=True)
class CallRule:
    call: str
    name: str
    rules: Mapping[str, Any]  # the call's row: components/requestrules.py's vocabulary, `source` among it
    defaults: Mapping[str, Any]

    @property
    def source(self) -> str:
        return self.rules["source"]


@dataclass(frozen=True)
class Rules:
    provider: str
    wire: str
    calls: Mapping[str, CallRule]

    def problems(self, call: Optional[str], params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(error code, message) for each rule of the call the request breaks (components/requestrules.py), the
        call's defaults applied first as the API applies them."""
        rule = self.calls.get(call or "")
        if rule is None:
            return [(UNKNOWN_CALL, f"{call!r} is not a price call this API answers; known: {', '.join(self.calls)}")]
        return [(MISSING if problem.kind == "missing" else INVALID, f"{rule.name}: {problem.message}")
                for problem in requestrules.problems(rule.rules, {**rule.defaults, **params})]


def path_of(provider: str) -> Path:
    return providers.package_dir(provider) / "price_api.yaml"


def load(provider: str) -> Rules:
    raw = yaml.safe_load(path_of(provider).read_text(encoding="utf-8"))
    calls = {}
    for call, row in raw["calls"].items():
        calls[call] = CallRule(call, row.get("name", call), row, dict(row.get("defaults") or {}))
    return Rules(provider, raw["wire"], calls)
