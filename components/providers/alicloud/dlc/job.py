"""The PAI-DLC job a stack declares: its CreateJob body, its rules, and its state and logs.

Field names are those of alibabacloud-pai-dlc20201203 1.11.6 (api.yaml cites each). The stack's OSS prefix
is mounted in every pod (DataSources Uri + MountPath, RW) and the contract's environment points into it
(components/platforms/contract.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

from components.platforms import contract
from components.platforms.jobapi import ApiReference, JobClient
from components.platforms.offer import PlatformOffer, load_offer

HERE = Path(__file__).resolve().parent
API = ApiReference.load(HERE / "api.yaml")


def job_name(spec) -> str:
    return f"gpu-training-{spec.stack}"


def oss_uri(spec) -> str:
    """oss://<bucket>.<endpoint host>/<prefix>/<stack>/: the form DLC's OSS data sources take (unverified)."""
    host = urlsplit(spec.checkpoint.endpoint_for_nodes).netloc
    return f"oss://{spec.checkpoint.bucket}.{host}/{contract.stack_root(spec)}"


def spot_price_per_minute(spec) -> Optional[float]:
    """SpotPriceLimit is CNY per minute (SDK models/_spot_spec.py:16); spotMaxPricePerHour is per node-hour."""
    return None if spec.spot_max_price is None else round(spec.spot_max_price / 60, 6)


def request(spec) -> dict:
    """CreateJob body for the stack (api.yaml `submit`)."""
    platform = spec.platform
    mount = OFFER.data["mounts"]["stack"]
    worker = {"Type": "Worker", "Image": platform.image, "PodCount": spec.nodes, "EcsSpec": spec.instance.name}
    if spec.spot:
        worker["UseSpotInstance"] = True
        worker["SpotSpec"] = {"SpotStrategy": "SpotWithPriceLimit", "SpotPriceLimit": spot_price_per_minute(spec)}
    body = {
        "DisplayName": job_name(spec),
        "JobType": "PyTorchJob",
        "WorkspaceId": platform.workspace_id,
        "UserCommand": contract.command(spec, mount),
        "JobSpecs": [worker],
        "DataSources": [{"Uri": oss_uri(spec), "MountPath": mount, "MountAccess": "RW"}],
        "Envs": contract.environment(spec, mount),
        "JobMaxRunningTimeMinutes": platform.max_running_minutes,
    }
    if platform.quota_id:
        body["ResourceId"] = platform.quota_id
    return body


def checks(spec) -> list[tuple[str, str]]:
    """PAI-DLC's rules on the resolved stack, by key."""
    found = []
    if spec.spot and spec.spot_max_price is None:
        found.append(("spotMaxPricePerHour", "not set; DLC's only listed spot strategy is SpotWithPriceLimit"
                      " (SDK models/_spot_spec.py:18-20), which needs a price limit, and the spec's price is"
                      " unknown here: give your cap per node-hour (sent as CNY per minute)"))
    if spec.platform.workspace_id:
        for problem in API.problems("submit", request(spec)):
            found.append(("platform", f"the job request would be refused: {problem}"))
    return found


def client(region: str, base_url: Optional[str] = None) -> JobClient:
    """A client of the job API: the stand-in's when `base_url` (or GPU_TRAINING_PLATFORM_ENDPOINT) is given.
    Against the cloud, requests go through alibabacloud_tea_openapi (installed), which signs ROA calls; that
    path is unverified without an account (docs/platforms.md)."""
    base_url = base_url or os.environ.get("GPU_TRAINING_PLATFORM_ENDPOINT")
    if base_url:
        return JobClient(API, base_url, {}, "JobId")
    return JobClient(API, API.data["endpoint"].format(region=region), {}, "JobId", signer=_unsupported_signer)


def _unsupported_signer(method: str, url: str, headers: dict, body: bytes) -> dict:
    raise RuntimeError("PAI-DLC requests to the cloud are signed by alibabacloud_tea_openapi's ROA signer, which"
                       " this client does not wire yet (docs/platforms.md, 'Unverified'); use the stand-in"
                       " (GPU_TRAINING_PLATFORM_ENDPOINT) or the PAI console")


def state(job_id: str, region: str, **client_args) -> dict:
    """The job's state (`phase` DLC's, `state` running|succeeded|failed|stopped): for status/report."""
    return client(region, **client_args).state(job_id)


def logs(job_id: str, region: str, **client_args) -> str:
    """The first pod's log (GetPodLogs, the pod from GetJob's Pods): for the logs command."""
    api = client(region, **client_args)
    pods = api.state(job_id)["raw"].get("Pods") or []
    if not pods:
        return ""
    return api.logs(job_id, PodId=pods[0]["PodId"])


def stand_in(bucket_dir: Path, workdir: Path):
    """The job API's local stand-in (components/platforms/standin.py) with DLC's field names: UserCommand and
    Envs, the id at JobId, the phase at Status (api.yaml)."""
    from components.platforms.standin import StandIn

    return StandIn.for_api(API, lambda body: (body["UserCommand"], body["Envs"]), "JobId", "Status",
                           {OFFER.data["mounts"]["stack"]: bucket_dir}, workdir,
                           launcher_env=OFFER.data["launcherEnv"])


OFFER: PlatformOffer = load_offer(HERE, checks=checks, request=request)
