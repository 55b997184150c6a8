"""A platform stack's job (ModelArts, PAI-DLC: docs/platforms.md) for `up`, `status`, `logs` and `down` (the
`job` run style, tools/runlib/targets.py): its state and its first worker's log, through the job API client of
the platform's package (`job.state`, `job.logs`), from the stack's outputs (`platform`: which platform,
`provider`, `region`, `jobId`). GPU_TRAINING_PLATFORM_ENDPOINT points the client
at a stand-in; otherwise it is the cloud's endpoint, with the caveats docs/platforms.md lists.
"""
from __future__ import annotations

import importlib
from typing import Mapping, Optional


class JobUnreachable(Exception):
    """The job API could not be asked (no job id yet, a refused or failed call): the message says which."""


def _job_module(outputs: Mapping):
    from components import providers

    offers = providers.profile(str(outputs.get("provider"))).platforms()
    offer = offers.get(outputs["platform"])
    if offer is None:
        raise JobUnreachable(f"platform {outputs['platform']!r} is not offered by {outputs.get('provider')}"
                             f" (known: {', '.join(offers) or 'none'})")
    return importlib.import_module(f"{offer.package}.job")


def _job_id(outputs: Mapping) -> str:
    job_id = outputs.get("jobId")
    if not isinstance(job_id, str) or not job_id:
        raise JobUnreachable("the stack has no jobId output yet (`gpu-training up` submits the job)")
    return job_id


def _ask(outputs: Mapping, what: str, call):
    """`call(job module, job id, region)`, its failures (JobApiError, transport errors, the client's own
    refusal such as a bad signature or no credentials) as JobUnreachable naming the job and `what` was asked."""
    job_id, module = _job_id(outputs), _job_module(outputs)
    try:
        return call(module, job_id, str(outputs.get("region")))
    except Exception as error:
        raise JobUnreachable(f"{outputs['platform']} job {job_id}{what}: {error}") from None


def job_state(outputs: Mapping) -> dict:
    """{jobId, platform, state (running|succeeded|failed|stopped), phase (the platform's word)}."""
    answer = _ask(outputs, "", lambda job, job_id, region: job.state(job_id, region))
    return {"jobId": outputs["jobId"], "platform": outputs["platform"], "state": answer.get("state"),
            "phase": answer.get("phase")}


def job_log(outputs: Mapping) -> str:
    return _ask(outputs, " log", lambda job, job_id, region: job.logs(job_id, region))


def status_line(job: Optional[Mapping]) -> Optional[str]:
    if not job:
        return None
    if job.get("error"):
        return f"platform job: unknown ({job['error']})"
    return f"platform job {job['jobId']} on {job['platform']}: {job['state']} ({job['phase']})"
