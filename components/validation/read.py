"""Reading the flat config map: keys of our namespace, values coerced to their schema type, problems collected.

Problems collects every Finding on the way; suggest and show word the messages ("did you mean",
the bad value cut short); read_namespace turns the engine's strings and JSON into typed values.
"""
from __future__ import annotations

import difflib
import json
import math
import re
from typing import Any, Mapping

from components import providers, schema
from components.spec import Finding
from components.teardown import TEARDOWN_ENV, tearing_down


class Problems:
    def __init__(self) -> None:
        self.items: list[Finding] = []

    def error(self, key: str, message: str) -> None:
        self.items.append(Finding("error", key, message))

    def creation_error(self, key: str, message: str) -> None:
        """A rule about what `up` creates (an image to pull, a start deadline): an error at `up`, a warning
        while tearing down, so an existing stack that breaks a newer rule can still be destroyed."""
        if tearing_down():
            self.warning(key, f"{message} (not enforced: {TEARDOWN_ENV}=1, a teardown)")
        else:
            self.error(key, f"{message}. A stack created before this rule is torn down with {TEARDOWN_ENV}=1"
                       " set (`gpu-training down` and scripts/run.py set it)")

    def warning(self, key: str, message: str) -> None:
        self.items.append(Finding("warning", key, message))

    def up_blocker(self, key: str, message: str) -> None:
        """A warning in the preview, an error for `gpu-training up` (Finding.blocks_up)."""
        self.items.append(Finding("warning", key, message, blocks_up=True))

    def info(self, key: str, message: str) -> None:
        self.items.append(Finding("info", key, message))

    def has_key(self, key: str) -> bool:
        """Whether an error names `key` already (a later rule about its value would say nothing new)."""
        return any(f.level == "error" and f.key == key for f in self.items)

    @property
    def has_errors(self) -> bool:
        return any(f.level == "error" for f in self.items)


def suggest(word: str, choices, n: int = 3) -> str:
    lowered = {c.lower(): c for c in choices}
    # Short names (T4, A10) differ by one character in half their length: loosen the cutoff for them.
    cutoff = 0.5 if len(word) <= 4 else 0.6
    close = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=cutoff)
    return f"; did you mean {' or '.join(repr(lowered[c]) for c in close)}?" if close else ""


def show(value: Any, width: int = 80) -> str:
    """A value as the user wrote it, cut short: messages quote the bad value, not 30 KB of it."""
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= width else f"{text[:width - 20]}... ({len(text):,} characters)"


_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "array": "a list", "object": "an object", "map": "a map of strings",
               "commands": "a list of shell commands (or one command as a string)"}
# Beyond any count, size, duration or price a stack can mean, and small enough that every later
# comparison, product and message stays exact and finite (a float holds integers to 2**53 exactly).
MAX_MAGNITUDE = 2 ** 53


def _parse_number(value: Any) -> Any:
    """An int or float from an engine value (native, or text as Pulumi passes it); None if not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        return int(text)  # exact for integer literals (float() would round 2**60 + 1)
    except ValueError:
        pass
    try:
        return float(text)  # also "1e400" -> inf, "nan", "Infinity": refused by the caller, by name
    except ValueError:
        return None


def _coerce_number(kind: str, value: Any, key: str, problems: Problems) -> Any:
    number = _parse_number(value)
    if number is None:
        return problems.error(key, f"{show(value)} is not {_TYPE_WORDS[kind]}")
    if isinstance(number, float) and not math.isfinite(number):
        return problems.error(key, f"{show(value)} is not a finite number; give {_TYPE_WORDS[kind]}")
    if abs(number) > MAX_MAGNITUDE:
        return problems.error(key, f"{show(value)} is out of range; no {key} is larger than {MAX_MAGNITUDE:,}")
    if kind == "integer":
        if isinstance(number, float) and not number.is_integer():
            return problems.error(key, f"{show(value)} is not an integer")
        return int(number)
    return float(number)


def _parse_json(text: str) -> Any:
    """JSON as the engine passes lists and objects; ValueError for text that is not JSON (or nests absurdly)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _coerce(kind: str, value: Any, key: str, problems: Problems) -> Any:
    """Convert an engine value (string/JSON or native) to `kind`; record an error and return None if it can't."""
    def bad() -> None:
        problems.error(key, f"{show(value)} is not {_TYPE_WORDS[kind]}")

    if kind == "string":
        if isinstance(value, (dict, list)):
            return bad()
        return str(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return bad()
    if kind in ("integer", "number"):
        return _coerce_number(kind, value, key, problems)
    if kind == "commands":
        return _coerce_commands(value, bad)
    if kind in ("array", "object", "map"):
        if isinstance(value, str):
            text = value.strip()
            if kind == "array" and text and not text.startswith("["):
                return [part.strip() for part in text.split(",") if part.strip()]
            try:
                value = _parse_json(text) if text else ([] if kind == "array" else {})
            except ValueError:
                return bad()
        if kind == "array" and not isinstance(value, list):
            return bad()
        if kind in ("object", "map") and not isinstance(value, dict):
            return bad()
        if kind == "map":
            if any(not isinstance(v, (str, int, float, bool)) for v in value.values()):
                return bad()
            return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}
        return value
    raise AssertionError(kind)


def _coerce_commands(value: Any, bad) -> Any:
    """A list of shell commands, as dstack's `commands:` writes it, or one string, as SkyPilot's `setup:` does
    (one command, newlines allowed). Never split at commas, as other lists are: a comma is shell text here
    (`pip install 'numpy>=1.26,<2'`). A string holding a JSON list (`--set 'train.setup=["a","b"]'`) is the list;
    one that starts with '[' and is no JSON is a command (`[ -d data ] || ./fetch.sh`)."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = _parse_json(value.strip())
        except ValueError:
            if re.match(r"\[\s*[\"']", value.strip()):  # meant as a list (["a", "b"]), not the shell's `[ test ]`
                return bad()
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        return bad()
    return value


def read_namespace(config: Mapping[str, Any], problems: Problems) -> dict[str, Any]:
    values: dict[str, Any] = {}
    prefix = schema.NAMESPACE + ":"
    for full_key, raw in config.items():
        if not isinstance(full_key, str):
            problems.error(str(full_key), "config keys are strings such as 'gpu-training:tier'")
            continue
        namespace, sep, name = full_key.partition(":")
        if namespace == schema.NAMESPACE and not name:
            problems.error(full_key, f"no key name after {prefix!r}; known keys: {', '.join(sorted(schema.BY_NAME))}")
            continue
        if not name or namespace != schema.NAMESPACE:
            continue  # keys of no namespace, the clouds' and others': components/validation/namespaces.py
        key = schema.BY_NAME.get(name)
        if key is None and (name.lower() == "region" or not suggest(name, schema.BY_NAME)
                            and difflib.get_close_matches(name.lower(), ["region"], cutoff=0.8)):
            problems.error(full_key, _region_hint(config))
            continue
        if key is None:
            problems.error(full_key, "unknown key" + (_name_with_a_path(name, {k.name: k.type for k in schema.KEYS})
                                                      or suggest(name, schema.BY_NAME)
                                                      or f"; known keys: {', '.join(sorted(schema.BY_NAME))}"))
            continue
        value = _coerce(key.type, raw, name, problems)
        if value is None:
            continue
        if key.type == "object":
            value = _read_object(key, value, problems)
        values[name] = value
    return values


def _region_hint(config: Mapping[str, Any]) -> str:
    """The region is the cloud's own key (alicloud:region, ...), chosen by the stack's provider."""
    provider = str(config.get(f"{schema.NAMESPACE}:provider", schema.BY_NAME["provider"].default))
    if provider in providers.names():
        region_key = providers.profile(provider).region_key
        return (f"unknown key; did you mean {region_key!r}? The region is {providers.profile(provider).display_name}'s"
                f" own key: `pulumi config set {region_key} <region>`, or `--set {region_key}=<region>`")
    keys = ", ".join(providers.profile(p).region_key for p in providers.names())
    return f"unknown key; the region is the cloud's own key, one of {keys} (after the provider)"


def _read_object(key: schema.Key, value: dict, problems: Problems) -> dict:
    assert key.fields is not None
    if "*" in key.fields:  # a free-form map (tags)
        return _coerce("map", value, key.name, problems) or {}
    result: dict[str, Any] = {}
    for field_name, raw in value.items():
        dotted = f"{key.name}.{field_name}"
        if field_name not in key.fields:
            hint = (_name_with_a_path(field_name, key.fields, key.name) or suggest(field_name, key.fields)
                    or f"; allowed fields: {', '.join(sorted(key.fields))}")
            problems.error(dotted, f"unknown field{hint}")
            continue
        if raw is None:
            continue
        converted = _coerce(key.fields[field_name], raw, dotted, problems)
        if converted is not None:
            result[field_name] = converted
    return result


def _name_with_a_path(name: str, known: Mapping[str, str], owner: str = "") -> str:
    """Why `name` is refused when it is a known name then a '.' or '[' (`env.WANDB_MODE` in train): one name
    holding a dot, not a path into the known one, which it must not be offered as allowed; "" for any other
    name. A map's or an object's own keys are written nested under it (as `pulumi config set --path` writes
    them); any other value has none."""
    head = re.split(r"[.\[]", name, maxsplit=1)[0]
    if head == name or head not in known:
        return ""
    path = f"{owner}.{name}" if owner else name
    inside = f"{owner}.{head}" if owner else head
    if known[head] in ("map", "object"):
        rest = name[len(head):].lstrip(".")
        nested = f"`{head}: {{{rest}: ...}}` under {schema.NAMESPACE}:{owner}" if owner else \
            f"`{schema.NAMESPACE}:{head}: {{{rest}: ...}}` in the stack file"
        how = (f"write it nested, {nested} (as `--set {path}=...` and"
               f" `pulumi config set --path {schema.NAMESPACE}:{path} ...` do)")
    else:
        how = f"{inside} is {_TYPE_WORDS.get(known[head], known[head])}, with no fields; set {inside} itself"
    return f": {name!r} is one name holding a {name[len(head)]!r}, not a path into {inside}; {how}"


def choice(values: dict, name: str, allowed, problems: Problems, default=None):
    value = values.get(name, default)
    if value is not None and value not in allowed:
        problems.error(name, f"{show(value)} is not allowed; allowed: {', '.join(map(str, allowed))}"
                       + suggest(str(value), [str(a) for a in allowed]))
        return None
    return value
