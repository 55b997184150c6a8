"""A local stand-in of a platform's job API (submit, state, logs, stop, delete) as a real HTTP server on 127.0.0.1.

It refuses a request that breaks the platform's API data (api.yaml, via ApiReference.problems) with 400,
runs a submitted job's command locally (`sh -c`, the job's environment), and restarts it once when the
caller asks (`restart(job_id)`: the process is killed, as a platform's fault-tolerant restart would after a
lost worker, and started again with the same environment and mounts). Its phases are the platform's own,
from api.yaml's `states` table: a test may put a job in any of them (`set_phase`), and a stop in a phase the
table says the API refuses is refused. Where api.yaml says names must be unique (`uniqueName`), a submit under
the name of a job that exists (ended or not, until deleted) is refused. It is not the cloud: it knows only
the rules written as data. `mounts` maps container paths to local folders; a platform's `unpack` adds a
job's own (its code, input and output folders).
"""
from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Optional

from components import datapaths
from components.platforms.jobapi import ApiReference
from localcloud.processes import kill_tree


@dataclass
class Job:
    job_id: str
    command: str
    env: dict
    log: Path
    phase: str
    process: Optional[subprocess.Popen] = None
    restarts: int = 0
    stopped: bool = False
    name: Optional[str] = None  # the job's name in the request (api.yaml submit.name)
    body: Optional[dict] = None  # the request as the stand-in received it
    restarted_at: list = field(default_factory=list)  # the log's size in bytes at each restart (before the new start)


@dataclass
class StandIn:
    api: ApiReference
    # request body -> (command, environment): where this platform keeps them (job.py knows its fields)
    unpack: Callable[[dict], tuple[str, dict]]
    phases: dict  # neutral -> the platform's phase name it reports (api.yaml states)
    id_field: str  # the submit answer's id field (api.yaml answer.id), dotted
    phase_field: str  # the state answer's phase field, dotted
    mounts: dict  # container path -> local folder
    workdir: Path
    # The variables the platform sets for torchrun (platform.yaml launcherEnv: neutral name -> its variable):
    # for a one-node job the stand-in sets them as the platform would, the master port a free one of
    # 127.0.0.1 at each start (a fixed default port collides with another job's on the same machine).
    launcher_env: dict = field(default_factory=dict)
    # (operation name in api.yaml, method, path, lower-cased headers, body) -> None, or the answer (status,
    # payload) of the platform's API gateway to a request it refuses (a bad signature): the cloud's own check,
    # from its specification.
    authorize: Optional[Callable[[str, str, str, dict, bytes], Optional[tuple[int, dict]]]] = None
    # (stand-in, operation name, body) -> None, or the answer of the account's side: a listing the API has besides
    # the job's operations, or a refusal of what the account lacks (a platform's one-time authorization). It reads
    # and keeps what it knows of the account in `facts`, which a test may change.
    account: Optional[Callable[["StandIn", str, dict], Optional[tuple[int, object]]]] = None
    facts: dict = field(default_factory=dict)
    jobs: dict = field(default_factory=dict)
    stops: list = field(default_factory=list)  # (job id, its phase) of every stop asked, accepted or refused
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def for_api(cls, api: ApiReference, unpack: Callable[[dict], tuple[str, dict]], id_field: str, phase_field: str,
                mounts: dict, workdir: Path, launcher_env: Optional[dict] = None,
                authorize: Optional[Callable] = None, account: Optional[Callable] = None) -> "StandIn":
        """A stand-in that reports, for each neutral state, the platform's own phase name from its api.yaml."""
        phases: dict = {}
        for name, row in api.data["states"]["phases"].items():
            # The first phase of each neutral state that no longer bills once ended; "Running" for running.
            if row["state"] not in phases or name == "Running" or (phases[row["state"]] != "Running"
                                                                    and api.phase(phases[row["state"]])["bills"]
                                                                    and not row["bills"]):
                phases[row["state"]] = name
        return cls(api, unpack, phases, id_field, phase_field, mounts, workdir, dict(launcher_env or {}), authorize,
                   account)

    def platform_env(self) -> dict:
        """What the platform sets in a one-node job's environment for its launcher (launcher_env); where it sets
        no port variable, the contract's own (contract.MASTER_PORT_ENV) gets the free port here."""
        from components.platforms.training_contract import MASTER_PORT_ENV

        values = {"nnodes": "1", "nodeRank": "0", "masterAddr": "127.0.0.1", "masterHosts": "127.0.0.1",
                  "masterPort": str(free_port())}
        env = {variable: values[name] for name, variable in self.launcher_env.items() if name in values}
        if self.launcher_env and "masterPort" not in self.launcher_env:
            env[MASTER_PORT_ENV] = values["masterPort"]
        return env

    def _localize(self, text: str, mounts: Optional[dict] = None) -> str:
        for container, local in sorted((mounts or self.mounts).items(), key=lambda item: -len(item[0])):
            text = text.replace(container, str(local))
        return text

    def set_phase(self, job_id: str, phase: str) -> None:
        """Report `phase` (one api.yaml lists) for the job from now on, as the platform would while it pulls an
        image, bids for spot capacity or is terminating."""
        if self.api.phase(phase) is None:
            raise ValueError(f"{phase!r} is not a phase of {self.api.service} (api.yaml states)")
        self.jobs[job_id].phase = phase
        if self.api.phase(phase)["state"] == "stopping":  # on its way out: stopped once its processes are gone
            self.stop(job_id)

    def refusal(self, name: str, body: dict) -> Optional[tuple[int, dict]]:
        """The API's own refusal of a request the rules as data forbid beyond the body's fields, or None."""
        answered = self.account(self, name, body) if self.account else None
        if answered is not None:
            return answered
        if name == "submit" and self.api.operation("submit").get("uniqueName"):
            taken = _lookup_name(self.api, body)
            if any(job.name == taken for job in self.jobs.values()):
                # The error code ModelArts answers is not documented where the rule is: unverified.
                return 400, {"error_code": "unverified", "error_msg": f"a training job named {taken} exists"
                             f" ({self.api.operation('submit')['uniqueName']})"}
        return None

    def _start(self, job: Job) -> None:
        handle = job.log.open("ab")
        job.process = subprocess.Popen(["sh", "-c", job.command], env={**os.environ, **self.platform_env(), **job.env},
                                       stdout=handle,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        job.phase = self.phases["running"]
        threading.Thread(target=self._watch, args=(job, job.process), daemon=True).start()

    def _watch(self, job: Job, process: subprocess.Popen) -> None:
        code = process.wait()
        if process is not job.process:
            return  # a restart replaced it
        job.phase = self.phases["stopped"] if job.stopped else self.phases["succeeded" if code == 0 else "failed"]

    def submit(self, body: dict) -> str:
        command, env, *extra = self.unpack(body)
        mounts = {**self.mounts, **(extra[0] if extra else {})}
        job_id = f"job-{next(self._ids)}"
        job = Job(job_id, self._localize(command, mounts), {k: self._localize(str(v), mounts) for k, v in env.items()},
                  self.workdir / f"{job_id}.log", self.phases["running"])
        job.name, job.body = _lookup_name(self.api, body), body
        self.jobs[job_id] = job
        self._start(job)
        return job_id

    def restart(self, job_id: str) -> None:
        """Kill the job's processes (no signal to save: a lost worker) and start it again."""
        job = self.jobs[job_id]
        old = job.process
        kill_tree(old.pid)
        old.wait()
        job.restarts += 1
        job.restarted_at.append(job.log.stat().st_size if job.log.exists() else 0)
        self._start(job)

    def stop(self, job_id: str) -> None:
        """The job stops: its processes get SIGTERM (a platform stop reaches every worker) and it reads as stopped
        once they are gone; a job with none running reads as stopped at once."""
        job = self.jobs[job_id]
        job.stopped = True
        if job.process and job.process.poll() is None:
            kill_tree(job.process.pid, signal.SIGTERM)
        else:
            job.phase = self.phases["stopped"]

    def delete(self, job_id: str) -> None:
        """The job and its name are gone (its processes killed, if any still ran)."""
        job = self.jobs.pop(job_id)
        job.stopped = True
        if job.process and job.process.poll() is None:
            kill_tree(job.process.pid)

    def close(self, server: ThreadingHTTPServer) -> None:
        """Stop `server` (what serve() started), then kill every job still running (all its processes): in
        that order, so no submit in flight adds a job while they are killed."""
        server.shutdown()
        server.server_close()
        for job in self.jobs.values():
            if job.process and job.process.poll() is None:
                kill_tree(job.process.pid)

    def serve(self) -> ThreadingHTTPServer:
        """Start the HTTP server on a free port of 127.0.0.1 (its `server_address` gives the port)."""
        standin = self
        routes = [(name, op["method"], re.compile("^" + re.sub(r"\{[^}]+\}", "([^/]+)", op["path"]) + "$"))
                  for name, op in self.api.data["operations"].items()]

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, status: int, payload) -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8" if isinstance(payload, str)
                                 else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                for name, verb, pattern in routes:  # noqa: B007  (name is used after the break)
                    match = pattern.match(self.path.split("?")[0])
                    if verb == method and match:
                        break
                else:
                    return self._answer(404, {"error": f"no route {method} {self.path}"})
                if standin.authorize is not None:
                    refused = standin.authorize(name, method, self.path,
                                                {k.lower(): v for k, v in self.headers.items()}, raw)
                    if refused is not None:
                        return self._answer(*refused)
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    return self._answer(400, {"error": "body is not JSON"})
                problems = standin.api.problems(name, body) if name in ("submit", "stop") else []
                if problems:
                    return self._answer(400, {"error": "malformed request", "problems": problems})
                refused = standin.refusal(name, body)
                if refused is not None:
                    return self._answer(*refused)
                ids = match.groups()
                job = standin.jobs.get(ids[-1]) if name != "submit" else None
                if name == "logs":
                    job = next((j for j in standin.jobs.values() if j.job_id in ids), None)
                if name != "submit" and job is None:  # as the API says it (api.yaml notFound)
                    codes = (standin.api.data.get("notFound") or {}).get("codes")
                    return self._answer(400, {"error_code": codes[0], "error_msg": "no such job"}) if codes \
                        else self._answer(404, {"error": "no such job"})
                if name == "submit":
                    return self._answer(200, _nest(standin.id_field, standin.submit(body)))
                if name == "state":
                    answer = _nest(standin.phase_field, job.phase)
                    answer["Pods"] = [{"PodId": f"{job.job_id}-worker-0"}]
                    return self._answer(200, answer)
                if name == "logs":
                    return self._answer(200, job.log.read_text(errors="replace") if job.log.exists() else "")
                if name == "delete":
                    standin.delete(job.job_id)
                    return self._answer(200, {})
                standin.stops.append((job.job_id, job.phase))
                if not standin.api.phase(job.phase)["stop"]:
                    return self._answer(400, {"error": f"a job in {job.phase} cannot be stopped"
                                              f" ({standin.api.data['states']['source']})"})
                standin.stop(job.job_id)
                return self._answer(200, {})

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def do_DELETE(self):
                self._route("DELETE")

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def _lookup_name(api: ApiReference, body: dict) -> Optional[str]:
    rule = api.operation("submit").get("name")
    name = datapaths.first(body, rule["field"]) if rule else None
    return name if isinstance(name, str) else None


def free_port() -> int:
    """A TCP port of 127.0.0.1 free now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _nest(dotted: str, value) -> dict:
    result: dict = {}
    node = result
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return result
