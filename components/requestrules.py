"""One checker of request rules kept as data: what an API refuses in a request, each rule with its source.

The platforms' job APIs (<platform>/api.yaml), the clouds' price APIs (<cloud>/price_api.yaml) and Baidu's
BCC API (baiducloud/bce_api.yaml) write their rules in this one vocabulary, with paths in
components/datapaths.py's grammar (`a.b`, `a[]`, `a.0`). A rule table (one operation, call or action):

    required      {path: source} or [path, ...]      the place holds a value (`a[].b`: a non-empty list,
                                                     each item with b); a flat parameter of that very name
                                                     counts (a query string's `Filters.0.Name`)
    requiredWhen  {condition: [path, ...]}           required while the condition holds
    anyOf         [[path, ...], ...]                 one of them is given
    together      [[condition, ...], ...]            all hold, or none
    onlyWith      {path: {field, source}}            the place may be given only when `field` is
    integers      {path: source}                     each value is an integer (not a float, not a bool)
    values        {path: {allowed | min | pattern, source}} or {path: [allowed, ...]}
    equals        {path: {value, why}}               each value is exactly `value`, and there is one

A condition is `path` (given) or `path=value` (one of its values, as text). A source a rule does not carry
is the table's `source`. Every problem says its path, what is wrong and the source; its kind is `missing`
(a required place is empty) or `invalid` (a value the API refuses), as the APIs tell them apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from components import datapaths

EMPTY = (None, "", [], {})


@dataclass(frozen=True)
class Problem:
    kind: str  # missing | invalid
    path: str
    message: str  # "<path>: <what is wrong> (<source>)"


def problems(table: Mapping[str, Any], data: Any) -> list[Problem]:
    """Every rule of `table` that `data` breaks, in the vocabulary's order."""
    return list(_problems(table, data))


def given(data: Any, path: str) -> bool:
    """Whether the request gives `path` (see `required` above)."""
    if isinstance(data, Mapping) and data.get(path) not in EMPTY:
        return True
    places = datapaths.located(data, path)
    return bool(places) and all(value is not datapaths.MISSING and value not in EMPTY for _, value in places)


def values(data: Any, path: str) -> list[Any]:
    """The non-empty values at `path` (a flat parameter of that name first)."""
    if isinstance(data, Mapping) and data.get(path) not in EMPTY:
        return [data[path]]
    return [value for value in datapaths.values(data, path) if value not in (None, "")]


def holds(data: Any, condition: str) -> bool:
    path, has_value, wanted = condition.partition("=")
    found = values(data, path)
    return bool(found) and (not has_value or wanted in [str(v).lower() if isinstance(v, bool) else str(v)
                                                         for v in found])


def _required(table: Mapping[str, Any]) -> dict[str, str]:
    rule = table.get("required") or {}
    return dict(rule) if isinstance(rule, Mapping) else {path: table.get("source", "") for path in rule}


def _problems(table: Mapping[str, Any], data: Any) -> Iterator[Problem]:
    source = table.get("source", "")
    for path, why in _required(table).items():
        if not given(data, path):
            yield Problem("missing", path, f"{path}: required ({why})")
    for condition, paths in (table.get("requiredWhen") or {}).items():
        if holds(data, condition):
            for path in paths:
                if not given(data, path):
                    yield Problem("missing", path, f"{path}: required with {condition} ({source})")
    for group in table.get("anyOf") or ():
        if not any(given(data, path) for path in group):
            yield Problem("missing", group[0], f"{' or '.join(group)}: one of them is required ({source})")
    for group in table.get("together") or ():
        held = [holds(data, condition) for condition in group]
        if any(held) and not all(held):
            yield Problem("invalid", group[0], f"{' and '.join(group)}: go together ({source})")
    for path, rule in (table.get("onlyWith") or {}).items():
        if values(data, path) and not values(data, rule["field"]):
            yield Problem("invalid", path, f"{path}: taken only with {rule['field']} ({rule.get('source', source)})")
    for path, why in (table.get("integers") or {}).items():
        for value in datapaths.values(data, path):
            if not isinstance(value, int) or isinstance(value, bool):
                yield Problem("invalid", path, f"{path}: {value!r} is not an integer ({why})")
    for path, rule in (table.get("values") or {}).items():
        rule = rule if isinstance(rule, Mapping) else {"allowed": list(rule), "source": source}
        for value in values(data, path):
            if "allowed" in rule and value not in rule["allowed"]:
                yield Problem("invalid", path, f"{path}: {value!r} is not allowed; allowed:"
                                               f" {', '.join(map(str, rule['allowed']))} ({rule['source']})")
            if "min" in rule and not (isinstance(value, (int, float)) and value >= rule["min"]):
                yield Problem("invalid", path, f"{path}: {value!r} is below the minimum {rule['min']} ({rule['source']})")
            if "pattern" in rule and not (isinstance(value, str) and re.fullmatch(rule["pattern"], value)):
                yield Problem("invalid", path, f"{path}: {value!r} does not match {rule['pattern']} ({rule['source']})")
    for path, rule in (table.get("equals") or {}).items():
        found = datapaths.values(data, path)
        if not found or any(value != rule["value"] for value in found):
            yield Problem("invalid", path, f"{path}: must be {rule['value']!r}, sent {found or 'nothing'}: {rule['why']}")
