"""Baidu's API reference as data (bce_api.yaml): which call a request is, and what it lacks.

The stand-in (localcloud/standins/baiducloud.py) routes every request with `match` and refuses, as `leaves_billing`
says, a release that leaves a data disk or a public IP billing; the conformance test
(tests/providers/test_baiducloud_conformance.py) runs our code against the stand-in and checks each
request it sent with `problems`: the method and path of a known call, its required query keys and
body fields, and the flags our code must send.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from components import requestrules
from components.datapaths import values

DATA = Path(__file__).with_name("bce_api.yaml")


@dataclass(frozen=True)
class Call:
    action: str
    method: str
    path: str  # a regular expression of the full path
    query: dict = field(default_factory=dict)  # selecting query keys: None = present, a string = that value
    query_required: tuple = ()
    body_required: tuple = ()
    flags: dict = field(default_factory=dict)  # body path -> {"value", "why"}
    leaves_billing: Optional[dict] = None  # {"holds": [...], "unless": {field: value}, "why"}
    doc: str = ""
    sdk: str = ""

    @property
    def source(self) -> str:
        return self.doc or self.sdk

    @property
    def query_rules(self) -> dict:
        """The query's rules in components/requestrules.py's vocabulary."""
        return {"required": list(self.query_required), "source": self.source}

    @property
    def body_rules(self) -> dict:
        """The body's rules in components/requestrules.py's vocabulary: required fields, and the flags our code
        must send (`equals`)."""
        return {"required": list(self.body_required), "equals": dict(self.flags), "source": self.source}

    def selects(self, method: str, path: str, query: dict) -> bool:
        if method != self.method or not re.fullmatch(self.path, path):
            return False
        return all(key in query and (want is None or query[key] == want) for key, want in self.query.items())

    def leaves(self, body: dict, has: set) -> list[str]:
        """What this request would leave billing on an instance that has `has` ({"dataDisks", "eip"})."""
        rule = self.leaves_billing
        if not rule:
            return []
        unless = rule.get("unless") or {}
        if unless and all(values(body, key) == [want] for key, want in unless.items()):
            return []
        return [held for held in rule["holds"] if held in has]


@lru_cache(maxsize=1)
def calls() -> tuple[Call, ...]:
    import yaml

    loaded = yaml.safe_load(DATA.read_text())
    return tuple(Call(c["action"], c["method"], c["path"], dict(c.get("query") or {}),
                      tuple(c.get("query_required") or ()), tuple(c.get("body_required") or ()),
                      dict(c.get("flags") or {}), c.get("leaves_billing"), c.get("doc", ""), c.get("sdk", ""))
                 for c in loaded["calls"])


def by_action(action: str) -> Call:
    return next(c for c in calls() if c.action == action)


def match(method: str, path: str, query: dict) -> Optional[Call]:
    """The first call of the data this request is (calls are in order: a more specific one first)."""
    return next((c for c in calls() if c.selects(method, path, query)), None)


def problems(method: str, path: str, query: dict, body: dict) -> list[str]:
    """Why this request of our code breaks the reference: an unknown call, a missing query key or body
    field, a release that leaves a node's data disk or public IP billing, a flag with another value
    (each message names the call and its source)."""
    call = match(method, path, query)
    if call is None:
        return [f"{method} {path}: no call of {DATA.name} is this request"]
    out = [f"{call.action}: query {p.message}" for p in requestrules.problems(call.query_rules, query)]
    out += [f"{call.action}: body {p.message}" for p in requestrules.problems(call.body_rules, body)]
    left = call.leaves(body, {"dataDisks", "eip"})  # every node the program makes has both
    if left:
        out.append(f"{call.action}: leaves the instance's {' and '.join(left)} billing: {call.leaves_billing['why']}"
                   f" ({call.source})")
    return out
