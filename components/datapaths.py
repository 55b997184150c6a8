"""One grammar for a path into nested data, and its one reader.

The rules kept as data name places in request bodies, resource inputs and API answers with it: the
safety rules (<cloud>/conformance.yaml), the platforms' job APIs (api.yaml), Baidu's BCC API (bce_api.yaml),
the price APIs (price_api.yaml), the clouds' egress evidence and the provider facts.

    a.b     `b` inside the mapping at `a`
    a[]     every item of the list at `a` (a lone mapping there counts as one item)
    a.0     item 0 of the list at `a`

A name that meets a one-item list reads inside its item: a Terraform block of one (`instanceConfig`) comes
from the bridged SDKs either as an object or as a list of one. Readers of a shape that is checked as it is
(a price feed's recorded answer, the node config) pass `blocks=False`: there a list is never a mapping.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()  # where a path leads nowhere


def located(data: Any, path: str, *, blocks: bool = True) -> list[tuple[str, Any]]:
    """(concrete path, value) for every place `path` names; a place that is absent is there with MISSING,
    so a rule can say "required"; a fan-out over nothing (absent, None, []) names no place. `blocks=False`:
    a name that meets a list of one finds nothing there (MISSING) instead of reading inside the item."""
    found: list[tuple[str, Any]] = [("", data)]
    for part in path.split("."):
        fan = part.endswith("[]")
        name = part[:-2] if fan else part
        step: list[tuple[str, Any]] = []
        for where, value in found:
            here = f"{where}.{name}" if where else name
            if isinstance(value, (list, tuple)) and name.isdigit():
                child = value[int(name)] if int(name) < len(value) else MISSING
            else:
                if blocks and isinstance(value, (list, tuple)) and len(value) == 1:
                    value = value[0]
                child = value.get(name, MISSING) if isinstance(value, Mapping) else MISSING
            if not fan:
                step.append((here, child))
            elif isinstance(child, (list, tuple)):
                step += [(f"{here}[{i}]", item) for i, item in enumerate(child)]
            elif child is not MISSING and child is not None:
                step.append((here, child))
        found = step
    return found


def rewrite(data: Any, path: str, change: Callable[[Any], Any]) -> None:
    """Replace, in place, every value `path` names with change(value); places that are absent stay absent."""
    places: list[tuple[Any, Any, Any]] = [(None, None, data)]  # (container, key, value)
    for part in path.split("."):
        fan = part.endswith("[]")
        name = part[:-2] if fan else part
        step: list[tuple[Any, Any, Any]] = []
        for _, _, value in places:
            if isinstance(value, list) and name.isdigit():
                if int(name) < len(value):
                    step.append((value, int(name), value[int(name)]))
                continue
            if isinstance(value, list) and len(value) == 1:
                value = value[0]
            if not isinstance(value, dict) or name not in value:
                continue
            child = value[name]
            if fan and isinstance(child, list):
                step += [(child, i, item) for i, item in enumerate(child)]
            elif not fan or child is not None:
                step.append((value, name, child))
        places = step
    for container, key, value in places:
        if container is not None:
            container[key] = change(value)


def values(data: Any, path: str, *, blocks: bool = True) -> list[Any]:
    """Every value `path` names; [] when it names none."""
    return [value for _, value in located(data, path, blocks=blocks) if value is not MISSING]


def first(data: Any, path: str, default: Any = None, *, blocks: bool = True) -> Any:
    """The first value `path` names, else `default` (a value that is there as None is None, not `default`)."""
    return next(iter(values(data, path, blocks=blocks)), default)
