"""Write price quotes into a catalog file in place, keeping its comments, layout and every other field.

Catalog rows are one-line flow mappings (`- {type: X, ..., price: *unknown}`); only the `price:`
value of a quoted row is replaced. The edited text is parsed again and compared with the original
before anything is written: all rows and fields but the refreshed prices must be unchanged, and each
refreshed price must read back as quoted. Anything else is an error and the file stays as it was.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import yaml

from components.datafiles import atomic_write

_ROW = re.compile(r"^(?P<head>\s*-\s*\{\s*type:\s*(?P<type>[^,\s}]+)\s*,.*?\bprice:\s*)"
                  r"(?P<price>\*[A-Za-z0-9_-]+|\{[^{}]*\})(?P<tail>\s*\}\s*)$")


class CatalogEditError(Exception):
    """The catalog could not be edited safely; nothing was written."""


@dataclass(frozen=True)
class Quote:
    instance_type: str
    on_demand_per_hour: float
    currency: str
    region: str
    source: str
    spot_per_hour: Optional[float] = None  # the cloud's spot/bid price; the cost model prefers it to its estimate
    caveat: Optional[str] = None  # what the API's answer leaves unverified (e.g. the unit)


def _scalar(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def price_mapping(quote: Quote, date: str) -> dict:
    mapping = {"onDemandPerHour": round(quote.on_demand_per_hour, 6), "currency": quote.currency,
               "region": quote.region, "date": date, "source": quote.source, "status": "refreshed"}
    if quote.spot_per_hour is not None:
        mapping["spotPerHour"] = round(quote.spot_per_hour, 6)
    if quote.caveat:
        mapping["caveat"] = quote.caveat
    return mapping


def render_price(mapping: Mapping) -> str:
    return "{" + ", ".join(f"{key}: {_scalar(value)}" for key, value in mapping.items()) + "}"


def edit(text: str, quotes: Mapping[str, Quote], date: str) -> str:
    """The catalog text with the quoted rows' prices replaced; raises CatalogEditError."""
    done: set[str] = set()
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        ending = "\n" if line.endswith("\n") else ""
        match = _ROW.match(line.rstrip("\n"))
        if not match or match.group("type") not in quotes:
            continue
        name = match.group("type")
        lines[index] = (match.group("head") + render_price(price_mapping(quotes[name], date))
                        + match.group("tail") + ending)
        done.add(name)
    missing = sorted(set(quotes) - done)
    if missing:
        raise CatalogEditError(f"no one-line row `- {{type: NAME, ..., price: ...}}` for {', '.join(missing)};"
                               " the catalog was not changed")
    edited = "".join(lines)
    verify(text, edited, quotes, date)
    return edited


def verify(before: str, after: str, quotes: Mapping[str, Quote], date: str) -> None:
    try:
        old, new = yaml.safe_load(before), yaml.safe_load(after)
    except yaml.YAMLError as error:
        raise CatalogEditError(f"the edited catalog is not valid YAML ({error}); the catalog was not changed") from None
    strip = lambda doc: [{k: v for k, v in row.items() if not (k == "price" and row["type"] in quotes)}  # noqa: E731
                         for row in doc["instances"]]
    if {k: v for k, v in old.items() if k != "instances"} != {k: v for k, v in new.items() if k != "instances"} \
            or strip(old) != strip(new):
        raise CatalogEditError("editing the prices would change other catalog fields; the catalog was not changed")
    for row in new["instances"]:
        if row["type"] in quotes and row["price"] != price_mapping(quotes[row["type"]], date):
            raise CatalogEditError(f"{row['type']}: the written price does not read back as quoted;"
                                   " the catalog was not changed")


def write(path: Path, text: str) -> None:
    """Replace the catalog atomically: a crash leaves the old catalog or the new one."""
    atomic_write(path, text)
