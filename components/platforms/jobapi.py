"""A platform's job API as data (its api.yaml: method, path, required fields, allowed values, sources) and
one small client over it: submit, state, logs, stop.

The rules are the platform's, kept in its package; this module only reads them. The same `problems()`
is what the stand-in (a real local HTTP server) refuses a request with, what the Pulumi dynamic resource
checks its inputs with, and what the plan tests check the declared job against, so a rule lives once.
"""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from components import datafiles

NEUTRAL_STATES = ("running", "succeeded", "failed", "stopped")


def _lookup(body: Any, dotted: str) -> list[Any]:
    """Every value at a dotted path ('a.b', 'list.0.x', 'list.*.x'); [] when the path is absent."""
    found = [body]
    for part in dotted.split("."):
        nxt = []
        for value in found:
            if isinstance(value, dict) and part in value:
                nxt.append(value[part])
            elif isinstance(value, list) and part == "*":
                nxt.extend(value)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                nxt.append(value[int(part)])
        found = nxt
    return found


@dataclass(frozen=True)
class ApiReference:
    service: str
    data: dict

    @classmethod
    def load(cls, path: Path) -> "ApiReference":
        data = datafiles.load_path(path)
        return cls(data["service"], data)

    def operation(self, name: str) -> dict:
        return self.data["operations"][name]

    def problems(self, name: str, body: dict) -> list[str]:
        """What the API would refuse in `body` for operation `name`: each message names the field and its source."""
        op = self.operation(name)
        found = []
        for path, source in (op.get("required") or {}).items():
            values = _lookup(body, path)
            if not values or any(v in (None, "", [], {}) for v in values):
                found.append(f"{path}: required ({source})")
        for path, rule in (op.get("values") or {}).items():
            for value in _lookup(body, path):
                if "allowed" in rule and value not in rule["allowed"]:
                    found.append(f"{path}: {value!r} is not allowed; allowed: {', '.join(rule['allowed'])}"
                                 f" ({rule['source']})")
                if "min" in rule and not (isinstance(value, (int, float)) and value >= rule["min"]):
                    found.append(f"{path}: {value!r} is below the minimum {rule['min']} ({rule['source']})")
                if "pattern" in rule and not (isinstance(value, str) and re.fullmatch(rule["pattern"], value)):
                    found.append(f"{path}: {value!r} does not match {rule['pattern']} ({rule['source']})")
        return found

    def path(self, name: str, **ids: str) -> str:
        return self.operation(name)["path"].format(**ids)

    def answer_field(self, name: str, what: str) -> str:
        return self.operation(name)["answer"][what]

    def neutral_state(self, phase: Optional[str]) -> str:
        """The platform's own job phase as running | succeeded | failed | stopped ('unknown' if unlisted)."""
        for neutral, phases in self.data["phases"].items():
            if phase in phases:
                return neutral
        return "unknown"


class JobApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class NoCredentials(Exception):
    """No request was made: the client has nothing to sign it with; the message names the variables."""


# (operation name in api.yaml, method, url, headers, body bytes) -> headers to add: the cloud's request
# signer (some clouds sign the operation's own name: PAI-DLC's x-acs-action); None for a stand-in.
Signer = Callable[[str, str, str, dict, bytes], dict]


@dataclass
class JobClient:
    """submit / state / logs / stop against `base_url` (the cloud's endpoint, or a stand-in's)."""
    api: ApiReference
    base_url: str
    path_ids: dict  # ids every path holds besides the job's ({project_id} on ModelArts)
    job_id_name: str  # the job id's name in the paths (training_job_id, JobId)
    signer: Optional[Signer] = None
    timeout_s: float = 30.0

    def _call(self, name: str, body: Optional[dict] = None, **ids: str) -> Any:
        op = self.api.operation(name)
        url = self.base_url.rstrip("/") + self.api.path(name, **self.path_ids, **ids)
        data = json.dumps(body).encode() if body is not None else b""
        # No body, no type (as the SDKs send), and no data for urllib, which would add a form Content-Type of
        # its own to an empty POST, unsigned.
        headers = {"Content-Type": "application/json"} if data else {}
        if self.signer is not None:
            headers.update(self.signer(name, op["method"], url, headers, data))
        request = urllib.request.Request(url, data=data or None, headers=headers,
                                         method=op["method"])
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read().decode()
                kind = response.headers.get("Content-Type") or ""
        except urllib.error.HTTPError as error:
            raise JobApiError(error.code, error.read().decode(errors="replace")[:2000]) from None
        content = text.strip()
        # A log is text, and a log line may start with "[" (torch's "[W1204 ...]" warnings): JSON only
        # where the answer says so, or where an untyped answer parses as JSON.
        if "json" in kind:
            return json.loads(content)
        if "text/" not in kind and content.startswith(("{", "[")):
            try:
                return json.loads(content)
            except ValueError:
                pass
        return content

    def submit(self, body: dict) -> str:
        answer = self._call("submit", body)
        values = _lookup(answer, self.api.answer_field("submit", "id"))
        if not values:
            raise JobApiError(502, f"{self.api.service} answered no job id: {str(answer)[:300]}")
        return str(values[0])

    def state(self, job_id: str) -> dict:
        """{'phase': the platform's, 'state': the neutral one, 'raw': the answer}."""
        answer = self._call("state", **{self.job_id_name: job_id})
        phase = next(iter(_lookup(answer, self.api.answer_field("state", "phase"))), None)
        return {"phase": phase, "state": self.api.neutral_state(phase), "raw": answer}

    def logs(self, job_id: str, **ids: str) -> str:
        answer = self._call("logs", **{self.job_id_name: job_id}, **ids)
        return answer if isinstance(answer, str) else json.dumps(answer)

    def stop(self, job_id: str) -> None:
        body = self.api.data["operations"]["stop"].get("body")
        self._call("stop", body, **{self.job_id_name: job_id})
