"""The ModelArts training job a stack declares: its v2 request body, its rules, and its state and logs.

The request follows the field names of huaweicloudsdkmodelarts 3.1.219 and terraform-provider-huaweicloud
(resource_huaweicloud_modelarts_training_job.go at 10c32cbf; api.yaml cites each). On the public pool the job
gets its files the way the API documents for it: the code through algorithm.code_dir (ModelArts downloads it
to ${MA_JOB_DIR}/code), the data set through an input channel, the checkpoints through an output channel
(synced to OBS while the job runs); spec.volumes (the whole prefix mounted) is taken only with a dedicated
pool's pool_id (api.yaml onlyWith). OBS paths are /bucket/path, as those fields take them.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Optional

from components.platforms import training_contract
from components.platforms.jobapi import ApiReference, JobApiError, JobClient, NoCredentials
from components.platforms.offer import PlatformOffer, load_offer
from node_agent import layout

HERE = Path(__file__).resolve().parent
API = ApiReference.load(HERE / "api.yaml")
# The first worker's task, whose log the preview API returns (SDK ShowTrainingJobLogsPreview takes a task_id): a
# one-node job's task is "worker-0" (ModelArts API ShowObsUrlOfTrainingJobLogs: "单节点默认为worker-0").
FIRST_TASK = "worker-0"


def job_name(spec) -> str:
    return f"gpu-training-{spec.stack}"


def obs_url(spec, relative: str = "") -> str:
    """obs://bucket/<prefix>/<stack>/<relative>: the form of log_export_path.obs_url only (api.yaml)."""
    return f"obs://{spec.checkpoint.bucket}/{training_contract.stack_root(spec)}{relative}"


def obs_path(spec, relative: str = "") -> str:
    """/bucket/<prefix>/<stack>/<relative>: the form of code_dir, the channels' obs_url and a volume's obs_path."""
    return f"/{spec.checkpoint.bucket}/{training_contract.stack_root(spec)}{relative}"


def paths(spec) -> training_contract.JobPaths:
    """Where the job finds its files: the mounted prefix on a dedicated pool; on the public pool the code where
    ModelArts downloads code_dir (${MA_JOB_DIR}/<its last folder>, MA_JOB_DIR's documented default in the
    command's fallback) and the channels' local folders."""
    if spec.platform.pool == "dedicated":
        return training_contract.mounted(OFFER.data["mounts"]["stack"])
    channels = OFFER.data["channels"]
    return training_contract.JobPaths(f"${{MA_JOB_DIR:-{OFFER.data['jobDir']}}}/{layout.CODE}".rstrip("/"),
                             channels["checkpoints"], channels["data"])


def request(spec) -> dict:
    """POST /v2/{project_id}/training-jobs body for the stack (api.yaml `submit`)."""
    platform = spec.platform
    where = paths(spec)
    resource = {"node_count": spec.nodes}
    if platform.pool == "dedicated":
        resource["pool_id"] = platform.pool_id
    # A dedicated pool takes the pool's card-count flavor, a public pool the training flavor (flavors.yaml).
    resource["flavor_id"] = (OFFER.data["dedicatedFlavors"][spec.gpus_per_node] if platform.pool == "dedicated"
                             else spec.instance.name)
    metadata = {"name": job_name(spec), "description": f"gpu-training stack {spec.stack} ({spec.tier.name} tier)"}
    if platform.workspace_id:
        metadata["workspace_id"] = platform.workspace_id
    algorithm = {"command": training_contract.command(spec, where), "engine": {"image_url": platform.image},
                 "environments": training_contract.environment(spec, where)}
    job_spec = {
        "resource": resource,
        # maxHours as the job's own limit, whole hours up (api.yaml: time_unit HOURS, duration >= 1).
        "auto_stop": {"time_unit": "HOURS", "duration": max(1, math.ceil(spec.max_hours))},
        "log_export_path": {"obs_url": obs_url(spec, training_contract.LOGS)},
    }
    if platform.pool == "dedicated":  # a pool of yours mounts the whole prefix
        job_spec["volumes"] = [{"obs": {"obs_path": obs_path(spec), "local_path": OFFER.data["mounts"]["stack"]}}]
    else:  # the public pool: code, data and checkpoints through the algorithm's own fields
        algorithm["code_dir"] = obs_path(spec, layout.CODE)
        algorithm["outputs"] = [{"name": "checkpoints", "local_dir": where.checkpoints,
                                 "remote": {"obs": {"obs_url": obs_path(spec, training_contract.CHECKPOINTS)}}}]
        if spec.data.stage:
            algorithm["inputs"] = [{"name": "data", "local_dir": where.data,
                                    "remote": {"obs": {"obs_url": obs_path(spec, layout.DATA)}}}]
    return {"kind": "job", "metadata": metadata, "algorithm": algorithm, "spec": job_spec}


def checks(spec) -> list[tuple[str, str]]:
    """ModelArts' rules on the resolved stack, by key."""
    found = []
    if spec.spot:
        found.append(("billing", f"spot is not offered on a ModelArts public pool: {OFFER.data['spot']['why']};"
                      " allowed: on-demand"))
    if not float(spec.max_hours).is_integer():
        found.append(("maxHours", f"{spec.max_hours:g}: a ModelArts job's limit is whole hours"
                      " (spec.auto_stop time_unit HOURS, SDK model/auto_stop.py:32); allowed: an integer >= 1"))
    for problem in API.problems("submit", request(spec)):
        found.append(("platform", f"the job request would be refused: {problem}"))
    return found


def client(region: str, project_id: Optional[str] = None, base_url: Optional[str] = None,
           credentials: Optional[tuple] = None) -> JobClient:
    """A client of the job API: the stand-in's when `base_url` (or GPU_TRAINING_PLATFORM_ENDPOINT) is given,
    its requests signed only with `credentials` ((AK, SK) or (AK, SK, security token)); else the region's
    endpoint, in project `project_id` or HW_PROJECT_ID, with requests signed by huaweicloudsdkcore's AK/SK
    signer with HW_ACCESS_KEY / HW_SECRET_KEY (HW_SECURITY_TOKEN for temporary ones), the variables
    pulumi-huaweicloud reads (unverified against an account: docs/platforms.md)."""
    base_url = base_url or os.environ.get("GPU_TRAINING_PLATFORM_ENDPOINT")
    project = project_id or os.environ.get(PROJECT_ENV)
    if base_url:
        return JobClient(API, base_url, {"project_id": project or "standin"}, "training_job_id",
                         signer=credentials and _signer(*credentials))
    problem = _needs([name for name in KEY_ENVS if credentials is None and not os.environ.get(name)]
                     + ([] if project else [PROJECT_ENV]))
    if problem:
        raise NoCredentials(problem)
    credentials = credentials or (*(os.environ[name] for name in KEY_ENVS), os.environ.get("HW_SECURITY_TOKEN") or None)
    return JobClient(API, API.data["endpoint"].format(region=region), {"project_id": project}, "training_job_id",
                     signer=_signer(*credentials))


PROJECT_ENV = "HW_PROJECT_ID"  # ModelArts' paths name the project (api.yaml: /v2/{project_id}/training-jobs)
KEY_ENVS = ("HW_ACCESS_KEY", "HW_SECRET_KEY")


def missing_credentials(env) -> Optional[str]:
    """Why the job API's requests could not be made from `env` (None: they can): the AK/SK to sign them and
    the project their paths name. Only the environment counts: the calls run in the dynamic provider's
    process, which Pulumi config credentials do not reach."""
    return _needs([name for name in (*KEY_ENVS, PROJECT_ENV) if not env.get(name)])


def _needs(missing: list) -> Optional[str]:
    """The message for the variables `missing` (None when none is)."""
    if not missing:
        return None
    return (f"ModelArts: set {' and '.join(missing)} in the environment of `pulumi up` (HW_SECURITY_TOKEN too for"
            " temporary keys; the project id of the stack's region: IAM console, 'My Credentials', 'Projects');"
            " credentials in Pulumi config do not reach the job API's calls")


def _signer(access: str, secret: str, token: Optional[str] = None):
    from huaweicloudsdkcore.auth.credentials import BasicCredentials  # noqa: F401  (requirements.txt: the runtime)
    from huaweicloudsdkcore.signer.signer import Signer
    from huaweicloudsdkcore.sdk_request import SdkRequest

    def sign(operation: str, method: str, url: str, headers: dict, body: bytes) -> dict:
        from urllib.parse import parse_qsl, urlsplit

        parts = urlsplit(url)
        headers = dict(headers)
        if token:
            # Temporary keys: the token rides in X-Security-Token, signed with the rest, as the SDK's own
            # BasicCredentials.process_auth_request does (huaweicloudsdkcore 3.1.219 auth/credentials.py).
            headers["X-Security-Token"] = token
        # query_params: the Signer iterates them (huaweicloudsdkcore 3.1.219 signer.py
        # _process_canonical_query_string), so a request without a query must still carry an empty list.
        request = SdkRequest(method=method, schema=parts.scheme, host=parts.netloc, resource_path=parts.path,
                             query_params=parse_qsl(parts.query), header_params=headers,
                             body=body.decode() if body else "")
        signed = Signer(_Credentials(access, secret)).sign(request)
        return dict(signed.header_params)

    return sign


class _Credentials:
    def __init__(self, ak: str, sk: str):
        self.ak, self.sk = ak, sk


def preflight(api: JobClient, body: dict) -> Optional[str]:
    """Why the submit of `body` would fail before it is sent, where the API shows it (None: go): a project that
    lists no ModelArts authorization at all (api.yaml `authorizations`), or, on the public pool, a flavor the
    region does not list for training jobs (api.yaml `flavors`). A listing the user may not read stops nothing:
    whether this user is authorized is also what the listing cannot tell without the user's id."""
    authorizations = _listing(api, "authorizations")
    if authorizations is not None and not authorizations:
        need = OFFER.data["prerequisites"][0]
        return (f"ModelArts: this account lists no ModelArts authorization, so no training job can run: set up"
                f" {need['what']} ({need['source']}), then `pulumi up` again; nothing was submitted")
    resource = body["spec"]["resource"]
    flavors = None if resource.get("pool_id") else _listing(api, "flavors")
    if flavors is not None:
        offered = sorted({str(f.get(API.operation("flavors")["answer"]["id"])) for f in flavors if isinstance(f, dict)})
        if resource["flavor_id"] not in offered:
            return (f"ModelArts: flavor {resource['flavor_id']} is not a training flavor of this region's public pool"
                    f" (ShowTrainingJobFlavors lists: {', '.join(offered) or 'none'}): set that flavor in"
                    " components/providers/huaweicloud/modelarts/flavors.yaml, or use pool: dedicated with your pool's"
                    " poolId; nothing was submitted")
    return None


def _listing(api: JobClient, name: str) -> Optional[list]:
    """The list a listing operation answers (api.yaml answer.list); None when this user may not read it."""
    try:
        answer = api.ask(name)
    except JobApiError as error:
        if error.status in (401, 403):
            return None
        raise
    return (answer.get(API.operation(name)["answer"]["list"]) if isinstance(answer, dict) else None) or []


def state(job_id: str, region: str, **client_args) -> dict:
    """The job's state (`phase` ModelArts', `state` running|succeeded|failed|stopped): for status/report."""
    return client(region, **client_args).state(job_id)


def logs(job_id: str, region: str, **client_args) -> str:
    """The first worker's log (the preview API): for the logs command."""
    return client(region, **client_args).logs(job_id, task_id=FIRST_TASK)


OFFER: PlatformOffer = load_offer(HERE, checks=checks, request=request)
