"""PlatformTraining: the platform path's component (docs/platforms.md): the training code uploaded to the
stack's bucket prefix, and one training job submitted to the platform (a dynamic resource over its job API).

Nothing here knows a cloud: the offer (components/platforms/offer.py) gives the request and the upload.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import secrets
import time
from typing import Optional

import pulumi
import pulumi.dynamic as dyn
import pulumiverse_time

from components import artifacts, clock, providers
from components.dynamic_pickle import pickler_kept
from components.platforms.jobapi import JobApiError
from components.spec import Spec
from components.targets.base import common_outputs


class JobProvider(dyn.ResourceProvider):
    """submit on create, state on read, stop and delete on delete; any change replaces the job (a job's spec is
    fixed). The check refuses what the platform's API data (api.yaml) says the API would refuse; the request goes
    out as the API takes it (api.yaml `integers` as integers, a name of its own per submit)."""

    # How long a destroy waits for a stopped job to stop billing (and a deleted one to be gone), and how often it
    # asks. A platform that takes longer leaves the destroy failed, saying which job in which state.
    wait_s: float = 1200.0
    poll_s: float = 10.0

    def __init__(self, package: str, region: str):
        self.package, self.region = package, region

    def _job(self):
        import importlib

        return importlib.import_module(f"{self.package}.job")

    def check(self, olds: dict, news: dict) -> dyn.CheckResult:
        api = self._job().API
        problems = api.problems("submit", api.wire("submit", news.get("request") or {}))
        return dyn.CheckResult(news, [dyn.CheckFailure("request", p) for p in problems])

    def create(self, props: dict) -> dyn.CreateResult:
        job = self._job()
        body = job.API.named(job.API.wire("submit", props["request"]), secrets.token_hex(4))
        client = job.client(self.region)
        # What the account lacks that the API can show before a submit (a platform's one-time authorization).
        problem = job.preflight(client, body) if hasattr(job, "preflight") else None
        if problem:
            raise RuntimeError(problem)
        job_id = client.submit(body)
        return dyn.CreateResult(job_id, {**props, "jobId": job_id})

    def diff(self, id_: str, olds: dict, news: dict) -> dyn.DiffResult:
        changed = olds.get("request") != news.get("request")
        return dyn.DiffResult(changes=changed, replaces=["request"] if changed else [], delete_before_replace=True)

    def delete(self, id_: str, props: dict) -> None:
        """Stop the job in every state that bills and takes a stop (api.yaml `states`), never in one the API
        refuses it in, wait until it bills no more, then delete it where the API has a delete (its name is
        then free again). A job already gone is done."""
        job = self._job()
        api = job.client(self.region)
        stopped, deadline = False, time.monotonic() + self.wait_s
        while True:
            state = _state_or_gone(api, id_)
            if state is None:
                return
            row = job.API.phase(state["phase"])
            if row is None:
                raise RuntimeError(f"{job.API.service} job {id_} is in {state['phase']!r}, a state api.yaml does not"
                                   " list: not stopped (stop it in the console, then destroy again)")
            if not row["bills"]:
                break
            if row["stop"] and not stopped:
                api.stop(id_)
                stopped = True
            if time.monotonic() >= deadline:
                raise RuntimeError(f"{job.API.service} job {id_} still {state['phase']} after {self.wait_s:g} s:"
                                   " destroy again to keep waiting")
            time.sleep(self.poll_s)
        if "delete" in job.API.data["operations"]:
            api.delete(id_)
            while _state_or_gone(api, id_) is not None:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"{job.API.service} job {id_} still listed after its delete")
                time.sleep(self.poll_s)


def _state_or_gone(api, job_id: str) -> Optional[dict]:
    """The job's state, or None once the API says there is no such job (404)."""
    try:
        return api.state(job_id)
    except JobApiError as error:
        if api.api.gone(error):
            return None
        raise


class TrainingJob(dyn.Resource):
    jobId: pulumi.Output[str]

    def __init__(self, name: str, package: str, region: str, request: dict,
                 opts: Optional[pulumi.ResourceOptions] = None):
        with pickler_kept():  # components/dynamic_pickle.py
            super().__init__(JobProvider(package, region), name, {"request": request, "jobId": None}, opts)


class PlatformTraining(pulumi.ComponentResource):
    def __init__(self, name: str, spec: Spec, opts: Optional[pulumi.ResourceOptions] = None, *, target):
        super().__init__("gpu-training:index:PlatformTraining", name, None, opts)
        offer = spec.platform.offer
        request = offer.request(spec)
        if not pulumi.runtime.is_dry_run() and not os.environ.get("GPU_TRAINING_PLATFORM_ENDPOINT"):
            # The job is submitted from the dynamic provider's process, with the environment's credentials:
            # say what is missing here, before anything is created, not in a provider's traceback after the
            # code is uploaded.
            problem = importlib.import_module(f"{offer.package}.job").missing_credentials(os.environ)
            if problem:
                raise pulumi.RunError(problem)
        # The training code at <prefix>/<stack>/code/ (the contract's <mount>/code/), before the job starts.
        code = artifacts.code_artifacts(spec.checkpoint.prefix, spec.stack, spec.train.code_dir)
        # The cloud's own object upload, the one its storage part uses for the VM path (registry: providers.module).
        uploaded = providers.module(spec.provider, "storage").upload(spec, name, code, pulumi.ResourceOptions(parent=self))
        job = TrainingJob(f"{name}-job", offer.package, spec.region, request,
                          opts=pulumi.ResourceOptions(parent=self, depends_on=uploaded))
        # The stack's one clock (components/clock.py): the moment the job was submitted, kept in state and renewed
        # with the job (any change of its request replaces it); the platform ends it maxHours after it starts.
        submitted = pulumiverse_time.Static(f"{name}-submitted", triggers={"request": request_digest(request)},
                                            opts=pulumi.ResourceOptions(parent=self, depends_on=[job]))
        expires = submitted.rfc3339.apply(lambda moment: clock.expiry(moment, spec.max_hours))
        self.outputs = {
            **common_outputs(target, spec, expires_at=expires, keeps_billing=target.keeps_billing(spec)),
            "platform": offer.kind,  # which platform: the target is `platform`
            "jobId": job.jobId,
            "maxRunningMinutes": spec.platform.max_running_minutes,
            "unverified": list(offer.unverified),
        }
        self.register_outputs(self.outputs)


def request_digest(request: dict) -> str:
    """A short digest of the job request: what renews the submit time with the job."""
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]
