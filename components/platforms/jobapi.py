"""A platform's job API as data (its api.yaml: method, path, required fields, allowed values, integer fields,
every job state with what it means, sources) and one small client over it: submit, state, logs, stop, delete.

The rules are the platform's, kept in its package; this module only reads them. The same `problems()`
is what the stand-in (a real local HTTP server) refuses a request with, what the Pulumi dynamic resource
checks its inputs with, and what the plan tests check the declared job against, so a rule lives once.
"""
from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from components import datafiles, datapaths, requestrules

# The neutral states status and run.py show, whatever the platform calls them (api.yaml `states`).
NEUTRAL_STATES = ("pending", "running", "stopping", "succeeded", "failed", "stopped")
ENDED = ("succeeded", "failed", "stopped")


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
        """What the API would refuse in `body` for operation `name`: each message names the field and its source
        (components/requestrules.py reads the operation's rules)."""
        return [problem.message for problem in requestrules.problems(self.operation(name), body)]

    def wire(self, name: str, body: dict) -> dict:
        """`body` as the API takes it: the integer fields api.yaml names as integers. Pulumi hands a dynamic
        provider every number as a float (pulumi/runtime/rpc.py deserialize_property: a protobuf number_value),
        so `"PodCount": 1.0` would reach an API whose SDK types the field int."""
        body = copy.deepcopy(body)
        for path in self.operation(name).get("integers") or {}:
            datapaths.rewrite(body, path, lambda v: int(v) if isinstance(v, float) and v.is_integer() else v)
        return body

    def named(self, body: dict, suffix: str) -> dict:
        """`body` with `suffix` added to the job's name (api.yaml submit.name), within its length limit: a
        name of its own per submit, which a platform that keeps names of ended jobs requires."""
        rule = self.operation("submit")["name"]
        body = copy.deepcopy(body)
        datapaths.rewrite(body, rule["field"], lambda v: f"{str(v)[:rule['max'] - len(suffix) - 1]}-{suffix}")
        return body

    def gone(self, error: "JobApiError") -> bool:
        """Whether a refused call means the job does not exist (api.yaml notFound; 404 where it says nothing)."""
        rule = self.data.get("notFound") or {"statuses": [404]}
        if error.status in rule.get("statuses", ()):
            return True
        try:
            code = json.loads(error.body).get("error_code")
        except (ValueError, AttributeError):
            return False
        return error.status == 400 and code in rule.get("codes", ())

    def phase(self, phase: Optional[str]) -> Optional[dict]:
        """The states table's row of a platform phase ({state, bills, stop}); None for a phase it does not list."""
        return self.data["states"]["phases"].get(phase) if phase is not None else None

    def path(self, name: str, **ids: str) -> str:
        return self.operation(name)["path"].format(**ids)

    def answer_field(self, name: str, what: str) -> str:
        return self.operation(name)["answer"][what]

    def neutral_state(self, phase: Optional[str]) -> str:
        """The platform's own job phase as one of NEUTRAL_STATES ('unknown' if the table does not list it)."""
        row = self.phase(phase)
        return row["state"] if row else "unknown"


class JobApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.body = status, message


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
        values = datapaths.values(answer, self.api.answer_field("submit", "id"))
        if not values:
            raise JobApiError(502, f"{self.api.service} answered no job id: {str(answer)[:300]}")
        return str(values[0])

    def state(self, job_id: str) -> dict:
        """{'phase': the platform's, 'state': the neutral one, 'raw': the answer}."""
        answer = self._call("state", **{self.job_id_name: job_id})
        phase = next(iter(datapaths.values(answer, self.api.answer_field("state", "phase"))), None)
        return {"phase": phase, "state": self.api.neutral_state(phase), "raw": answer}

    def logs(self, job_id: str, **ids: str) -> str:
        answer = self._call("logs", **{self.job_id_name: job_id}, **ids)
        return answer if isinstance(answer, str) else json.dumps(answer)

    def stop(self, job_id: str) -> None:
        body = self.api.data["operations"]["stop"].get("body")
        self._call("stop", body, **{self.job_id_name: job_id})

    def ask(self, name: str, **ids: str) -> Any:
        """Any other operation api.yaml lists (a listing a platform's preflight reads)."""
        return self._call(name, **ids)

    def delete(self, job_id: str) -> None:
        """DELETE the job (api.yaml `delete`; a platform without one keeps its ended jobs)."""
        self._call("delete", **{self.job_id_name: job_id})
