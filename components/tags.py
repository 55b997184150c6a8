"""The tags gpu-training puts on every cloud resource, and each cloud's rules for tags.

One scheme on all four clouds: the keys below (lowercase letters and '-') and values of letters,
digits, '.', '_' and '-', the expiry in ISO 8601 basic format (`20261207T134800Z`). That is inside
what every cloud's tag API admits; the strictest is Huawei's (VPC tag API: keys of letters, digits,
'_' and '-', at most 36; values also '.', at most 43), which refuses the ':' of a key such as
`gpu-training:stack` and of an RFC 3339 time. Each cloud's rules are data in its provider package
(components/providers/<cloud>/tags.yaml, every limit with its source): validation checks the user's
`tags` and the generated values against them, the conformance suite every tag input of every plan,
and the Huawei and Baidu stand-ins refuse what the rules refuse.

Everything that reads a tag (the node runtimes' peer and release lookups through the node config's
`cluster.tagKey`, the RAM/CAM policy conditions, the policy pack, the stand-ins) takes the key from here.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Optional

import yaml

from components import clock

RESERVED = "gpu-training"  # user tag keys may not start with it: the program sets these
PROJECT = f"{RESERVED}-project"
STACK = f"{RESERVED}-stack"
TIER = f"{RESERVED}-tier"
EXPIRES_AT = f"{RESERVED}-expires-at"
STANDARD = (PROJECT, STACK, TIER, EXPIRES_AT)
EXPIRY_TAG_FORMAT = "%Y%m%dT%H%M%SZ"  # ISO 8601 basic format, UTC: letters and digits only
RULES_FILE = "tags.yaml"


def expiry_value(moment: str) -> str:
    """The expiry tag's value for an RFC 3339 time (clock.expiry's): `2026-12-07T13:48:00Z` -> `20261207T134800Z`."""
    return clock.parse(moment).strftime(EXPIRY_TAG_FORMAT)


def standard(project: str, stack: str, tier: str, expiry: Any) -> dict[str, Any]:
    """The program's own tags; `expiry` is the tag value already (expiry_value) or an Output of one."""
    return {PROJECT: project, STACK: stack, TIER: tier, EXPIRES_AT: expiry}


# ---------------------------------------------------------------- a cloud's rules (tags.yaml)

@dataclass(frozen=True)
class TextRule:
    """What a tag key (or value) may be: its length, the characters it may hold (`characters`, a regex
    that each character must match; None: any), no space at either end (`trimmed`), and the prefixes
    and substrings the cloud refuses (compared case-insensitively where `ignore_case`)."""
    min_length: int
    max_length: Optional[int]  # None: no limit is known (the source does not state one)
    characters: Optional[str]
    allowed: str  # the characters, in words, for messages
    trimmed: bool = False
    forbidden_prefixes: tuple[str, ...] = ()
    forbidden_substrings: tuple[str, ...] = ()
    ignore_case: bool = False
    source: str = ""

    def problems(self, text: str) -> list[str]:
        found = []
        if len(text) < self.min_length:
            found.append(f"is empty; at least {self.min_length} character{'s' if self.min_length > 1 else ''}")
        if self.max_length is not None and len(text) > self.max_length:
            found.append(f"is {len(text)} characters; at most {self.max_length}")
        if self.characters:
            bad = sorted({c for c in text if not re.fullmatch(self.characters, c)})
            if bad:
                found.append(f"holds {' '.join(repr(c) for c in bad)}; allowed: {self.allowed}")
        if self.trimmed and text != text.strip(" "):
            found.append("starts or ends with a space")
        folded = text.lower() if self.ignore_case else text
        for prefix in self.forbidden_prefixes:
            if folded.startswith(prefix.lower() if self.ignore_case else prefix):
                found.append(f"starts with {prefix!r}, which the cloud reserves")
        for part in self.forbidden_substrings:
            if (part.lower() if self.ignore_case else part) in folded:
                found.append(f"contains {part!r}, which the cloud refuses")
        return found


@dataclass(frozen=True)
class TagRules:
    provider: str
    key: TextRule
    value: TextRule
    max_tags: Optional[int]  # per resource; None: not known
    max_tags_source: str = ""
    unverified: tuple[str, ...] = field(default=())

    def problems(self, key: str, value: str) -> list[str]:
        """Why the cloud refuses the tag key=value (empty: it accepts it), each naming the key or the value."""
        return ([f"key {key!r} {why}" for why in self.key.problems(key)]
                + [f"value {value!r} {why}" for why in self.value.problems(str(value))])

    def describe(self) -> str:
        limit = f", at most {self.key.max_length} characters" if self.key.max_length else ""
        vlimit = f", at most {self.value.max_length}" if self.value.max_length else ""
        return f"keys of {self.key.allowed}{limit}; values of {self.value.allowed}{vlimit}"


def _text_rule(data: Mapping[str, Any]) -> TextRule:
    return TextRule(min_length=int(data.get("min_length", 0)), max_length=data.get("max_length"),
                    characters=data.get("characters"), allowed=data["allowed"], trimmed=bool(data.get("trimmed")),
                    forbidden_prefixes=tuple(data.get("forbidden_prefixes", ())),
                    forbidden_substrings=tuple(data.get("forbidden_substrings", ())),
                    ignore_case=bool(data.get("ignore_case", False)), source=data["source"])


@functools.lru_cache(maxsize=None)
def rules(provider: str) -> TagRules:
    """The provider's tag rules (its package's tags.yaml)."""
    from components import providers

    data = yaml.safe_load((providers.package_dir(provider) / RULES_FILE).read_text())
    count = data.get("max_tags") or {}
    return TagRules(provider=provider, key=_text_rule(data["key"]), value=_text_rule(data["value"]),
                    max_tags=count.get("limit"), max_tags_source=count.get("source", ""),
                    unverified=tuple(data.get("unverified", ())))


# ---------------------------------------------------------------- tags in a plan

# Inputs that hold tags: `tags`, `volumeTags`, `instanceTags`, `templateTags`, ... (a map, or a list of
# {key, value} / {tagKey, tagValue} objects, as Baidu's API and some Pulumi types take them).
_TAG_INPUT = re.compile(r"(?:^|.*[a-z])(?:tags|Tags)$|^tag$")
_PAIR_FIELDS = (("key", "value"), ("tagKey", "tagValue"), ("Key", "Value"), ("TagKey", "TagValue"))


def as_pairs(value: Any) -> Optional[list[tuple[str, Any]]]:
    """The (key, value) pairs of a tag input, map- or list-shaped; None when it holds no tags."""
    if isinstance(value, Mapping):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        pairs = []
        for item in value:
            if not isinstance(item, Mapping):
                return None
            names = next(((k, v) for k, v in _PAIR_FIELDS if k in item), None)
            if names is None:
                return None
            pairs.append((str(item[names[0]]), item.get(names[1], "")))
        return pairs
    return None


def tag_inputs(inputs: Any, path: str = "") -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """Every tag input inside a resource's inputs, nested objects and lists included: (dotted path, pairs)."""
    if isinstance(inputs, Mapping):
        for name, value in inputs.items():
            where = f"{path}.{name}" if path else str(name)
            pairs = as_pairs(value) if _TAG_INPUT.fullmatch(str(name)) else None
            if pairs is not None:
                yield where, pairs
            else:
                yield from tag_inputs(value, where)
    elif isinstance(inputs, (list, tuple)):
        for index, item in enumerate(inputs):
            yield from tag_inputs(item, f"{path}[{index}]")


def violations(rules_: TagRules, pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """Why the cloud refuses this set of tags on one resource: each tag's problems, and the count."""
    pairs = list(pairs)
    found = [problem for key, value in pairs if isinstance(value, str) or value is None
             for problem in rules_.problems(key, "" if value is None else value)]
    if rules_.max_tags is not None and len(pairs) > rules_.max_tags:
        found.append(f"{len(pairs)} tags; {rules_.provider} takes at most {rules_.max_tags} per resource"
                     f" ({rules_.max_tags_source})")
    return found
