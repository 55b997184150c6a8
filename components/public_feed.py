"""What the public price feeds share: HTTP without an account, and refusing an answer whose shape changed.

Each cloud's `public_prices.py` (alicloud, tencentcloud, huaweicloud) reads the prices its website shows
without credentials and returns one price_book.Snapshot, or raises FeedError saying what was expected and
what came back. A feed answer that no longer has the recorded shape, a price that is not a positive number,
or no price at all for the catalog's types is an error: nothing is written, never a zero. `--endpoint`
(tests: a local server on 127.0.0.1) replaces the scheme and host of every URL a feed asks, keeping the path.
"""
from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from typing import Any, Optional
from urllib.parse import urlsplit, urlunsplit

from components import datapaths

TIMEOUT_S = 30
AGENT = "gpu-training-price-refresh"


class FeedError(Exception):
    """The feed could not be read or its answer has not the recorded shape; nothing was written."""


def at(url: str, endpoint: Optional[str]) -> str:
    """`url` sent to `endpoint`'s scheme and host instead (a local stand-in), path and query kept."""
    if not endpoint:
        return url
    target, parts = urlsplit(endpoint), urlsplit(url)
    return urlunsplit((target.scheme, target.netloc, parts.path, parts.query, ""))


def get_text(url: str, headers: Optional[dict] = None) -> str:
    return _send(urllib.request.Request(url, headers={"User-Agent": AGENT, **(headers or {})}))


def get_json(url: str, headers: Optional[dict] = None) -> Any:
    return _decode(url, get_text(url, headers))


def post_json(url: str, body: dict, headers: Optional[dict] = None) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"User-Agent": AGENT, "Content-Type": "application/json; charset=UTF-8",
                                              **(headers or {})})
    return _decode(url, _send(request))


def _send(request: urllib.request.Request) -> str:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return answer.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        raise FeedError(f"{request.full_url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise FeedError(f"{request.full_url}: {getattr(error, 'reason', error)}") from None


def _decode(url: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise FeedError(f"{url}: the answer is not JSON (starts {text[:80]!r}); the feed changed") from None


def field(value: Any, path: str, kind: type, where: str) -> Any:
    """The value at `path` (components/datapaths.py; a list is never read as its item) of type `kind`, or
    FeedError naming the path: the recorded shape, checked."""
    current = datapaths.first(value, path, datapaths.MISSING, blocks=False)
    if current is datapaths.MISSING:
        raise FeedError(f"{where}: no `{path}` in the answer (expected the recorded shape); the feed changed")
    if not isinstance(current, kind):
        raise FeedError(f"{where}: `{path}` is {type(current).__name__}, expected {kind.__name__}; the feed changed")
    return current


def positive_price(value: Any, what: str) -> float:
    """A price as the feeds write it (a number or a numeric string), refused unless finite and above 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise FeedError(f"{what}: price {value!r} is not a number; the feed changed") from None
    if not math.isfinite(number) or number <= 0:
        raise FeedError(f"{what}: price {value!r} is not a positive amount; nothing is written rather than a zero")
    return number
