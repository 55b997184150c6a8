"""A cloud's "no stock" and "no quota" answers, as data: what `gpu-training up` moves on from.

Each provider package holds `capacity.yaml`: the error codes its API answers when a create finds
the type sold out where it was asked (kind `stock`: another zone, type or region may have it) or the
account's limit reached (kind `quota`: another zone of the region does not help), each with the
cloud's own text and its source, and (`offer_statuses`) which states of the cloud's sale-status
answer mean on sale or sold out, for `gpu-training check`. `classify` finds a documented code (or,
where a cloud documents only a message, that message) in the text of a failed `pulumi up`: the
bridged providers put the cloud's code into their error text, and a Python dynamic provider's
error names it too (components/providers/baiducloud/bceapi.py BceApiError).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Optional

import yaml

from components import providers

STOCK, QUOTA = "stock", "quota"


@dataclass(frozen=True)
class Answer:
    """One documented answer: a code (or a message where no code is documented), its kind, the
    cloud's text for it and the source."""
    kind: str
    meaning: str
    source: str
    code: str = ""
    message: str = ""

    @property
    def name(self) -> str:
        return self.code or repr(self.message)

    def found_in(self, text: str) -> bool:
        if self.code:
            # The code as a whole word: OperationDenied.NoStock, not OperationDenied.NoStockX.
            return re.search(r"(?<![\w.])" + re.escape(self.code) + r"(?![\w])", text) is not None
        return self.message.lower() in text.lower()


@dataclass(frozen=True)
class Capacity:
    cloud: str
    answers: tuple[Answer, ...]
    available: tuple[str, ...]
    sold_out: tuple[str, ...]
    status_source: str

    def classify(self, text: str) -> Optional[Answer]:
        """The documented stock or quota answer in `text` (a failed up's error), if any; codes first."""
        found = [a for a in self.answers if a.found_in(text or "")]
        return sorted(found, key=lambda a: not a.code)[0] if found else None


@functools.lru_cache(maxsize=None)
def of(cloud: str) -> Capacity:
    """The cloud's capacity.yaml, checked: every answer has a kind, a meaning and a source."""
    path = providers.package_dir(cloud) / "capacity.yaml"
    data = yaml.safe_load(path.read_text()) or {}
    answers = []
    for i, item in enumerate(data.get("codes") or []):
        missing = [k for k in ("kind", "meaning", "source") if not item.get(k)]
        if missing or item["kind"] not in (STOCK, QUOTA) or not (item.get("code") or item.get("message")):
            raise ValueError(f"{path}: codes[{i}]: needs code or message, kind ({STOCK}|{QUOTA}), meaning and "
                             f"source (missing: {', '.join(missing) or 'a valid kind'})")
        answers.append(Answer(item["kind"], item["meaning"], item["source"], item.get("code", ""),
                              item.get("message", "")))
    statuses = data.get("offer_statuses") or {}
    return Capacity(cloud, tuple(answers), tuple(statuses.get("available") or ()),
                    tuple(statuses.get("sold_out") or ()), statuses.get("source", ""))


def classify(cloud: str, text: str) -> Optional[Answer]:
    return of(cloud).classify(text)
