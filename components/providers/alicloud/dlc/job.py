"""The PAI-DLC job a stack declares: its CreateJob body, its rules, and its state and logs.

Field names are those of alibabacloud-pai-dlc20201203 1.11.6 (api.yaml cites each). The stack's OSS prefix
is mounted in every pod (DataSources Uri + MountPath, RW) and the contract's environment points into it
(components/platforms/training_contract.py). Spot is taken only on a resource quota: on the public (general-purpose)
resources a reclaim fails the job and nothing restarts it (checks, platform.yaml spot).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Optional
from urllib.parse import parse_qsl, urlsplit

from components.platforms import training_contract
from components.platforms.jobapi import ApiReference, JobClient, NoCredentials
from components.providers.alicloud.cpfs_export import credentials_from
from components.platforms.offer import PlatformOffer, load_offer

HERE = Path(__file__).resolve().parent
API = ApiReference.load(HERE / "api.yaml")


def job_name(spec) -> str:
    return f"gpu-training-{spec.stack}"


def oss_uri(spec) -> str:
    """oss://<bucket>.oss-<region>-internal.aliyuncs.com/<prefix>/<stack>/: an OSS path with the region's internal
    OSS endpoint, the form of DLC's data sources (api.yaml DataSources[].Uri, from the PAI API's DataSourceItem);
    not the S3-compatible host the nodes' agent uses."""
    return f"oss://{spec.checkpoint.bucket}.oss-{spec.region}-internal.aliyuncs.com/{training_contract.stack_root(spec)}"


def spot_price_per_minute(spec) -> Optional[float]:
    """SpotPriceLimit is CNY per minute (SDK models/_spot_spec.py:16); spotMaxPricePerHour is per node-hour."""
    return None if spec.spot_max_price is None else round(spec.spot_max_price / 60, 6)


def paths(spec) -> training_contract.JobPaths:
    """Where the job finds its files: every pod mounts the stack's prefix (DataSources)."""
    return training_contract.mounted(OFFER.data["mounts"]["stack"])


def request(spec) -> dict:
    """CreateJob body for the stack (api.yaml `submit`)."""
    platform = spec.platform
    mount = OFFER.data["mounts"]["stack"]
    where = paths(spec)
    worker = {"Type": "Worker", "Image": platform.image, "PodCount": spec.nodes, "EcsSpec": spec.instance.name}
    if spec.spot:
        worker["UseSpotInstance"] = True
        worker["SpotSpec"] = {"SpotStrategy": "SpotWithPriceLimit", "SpotPriceLimit": spot_price_per_minute(spec)}
    body = {
        "DisplayName": job_name(spec),
        "JobType": "PyTorchJob",
        "WorkspaceId": platform.workspace_id,
        "UserCommand": training_contract.command(spec, where),
        "JobSpecs": [worker],
        "DataSources": [{"Uri": oss_uri(spec), "MountPath": mount, "MountAccess": "RW"}],
        "Envs": training_contract.environment(spec, where),
        "JobMaxRunningTimeMinutes": platform.max_running_minutes,
    }
    if platform.quota_id:
        body["ResourceId"] = platform.quota_id
    return body


def checks(spec) -> list[tuple[str, str]]:
    """PAI-DLC's rules on the resolved stack, by key."""
    found = []
    if spec.spot and not spec.platform.quota_id:
        spot = OFFER.data["spot"]
        found.append(("billing", f"spot on DLC's public resources: {spot['publicWhy']} ({spot['publicSource']});"
                      " allowed: on-demand, or spot with platform.resourceQuotaId naming your quota"))
    if spec.spot and spec.spot_max_price is None:
        found.append(("spotMaxPricePerHour", "not set; DLC's only listed spot strategy is SpotWithPriceLimit"
                      " (SDK models/_spot_spec.py:18-20), which needs a price limit, and the spec's price is"
                      " unknown here: give your cap per node-hour (sent as CNY per minute)"))
    if spec.platform.workspace_id:
        for problem in API.problems("submit", request(spec)):
            found.append(("platform", f"the job request would be refused: {problem}"))
    return found


def client(region: str, base_url: Optional[str] = None, credentials: Optional[dict] = None) -> JobClient:
    """A client of the job API: the stand-in's when `base_url` (or GPU_TRAINING_PLATFORM_ENDPOINT) is given,
    its requests signed only with `credentials`; else the region's endpoint, every request signed with the
    deploying user's credentials (`pulumi up`'s: ALICLOUD_ACCESS_KEY / ALICLOUD_SECRET_KEY /
    ALICLOUD_SECURITY_TOKEN) by alibabacloud_tea_openapi's ACS3 signer (unverified against an account:
    docs/platforms.md)."""
    base_url = base_url or os.environ.get("GPU_TRAINING_PLATFORM_ENDPOINT")
    if base_url:
        return JobClient(API, base_url, {}, "JobId", signer=credentials and acs3_signer(credentials))
    credentials = credentials or credentials_from(os.environ)
    if credentials is None:
        raise NoCredentials(missing_credentials(os.environ))
    return JobClient(API, API.data["endpoint"].format(region=region), {}, "JobId", signer=acs3_signer(credentials))


def missing_credentials(env) -> Optional[str]:
    """Why the job API's requests could not be signed from `env` (None: they can). Only the environment
    counts: the calls run in the dynamic provider's process, which Pulumi config credentials do not reach."""
    if credentials_from(env) is not None:
        return None
    return ("PAI-DLC: no credentials to sign the job API's requests with: set ALICLOUD_ACCESS_KEY and"
            " ALICLOUD_SECRET_KEY (ALICLOUD_SECURITY_TOKEN too for STS ones) in the environment of `pulumi up`;"
            " credentials in Pulumi config (alicloud:accessKey) do not reach the job API's calls")


def acs3_signer(credentials: dict):
    """The job API's request signer: ACS3-HMAC-SHA256 (Alibaba Cloud "V3 request structure and signature",
    api.yaml), its headers as the Tea OpenAPI client sends them (alibabacloud_tea_openapi 0.4.6, client.py
    do_request: host, x-acs-action, x-acs-version, x-acs-date, x-acs-signature-nonce, x-acs-content-sha256,
    and x-acs-accesskey-id with x-acs-security-token for STS credentials), the Authorization from its
    `Utils.get_authorization`, which signs every header it is given (urllib adds a few of its own unsigned,
    User-Agent and Content-Length among them, as the specification allows)."""
    access, secret, token = (credentials["access_key_id"], credentials["access_key_secret"],
                             credentials.get("security_token"))

    def sign(operation: str, method: str, url: str, headers: dict, body: bytes) -> dict:
        from alibabacloud_tea_openapi.utils import Utils

        parts = urlsplit(url)
        signed = {"host": parts.netloc, "x-acs-action": API.operation(operation)["action"],
                  "x-acs-version": API.data["version"], "x-acs-date": Utils.get_timestamp(),
                  "x-acs-signature-nonce": Utils.get_nonce(), "x-acs-content-sha256": hashlib.sha256(body).hexdigest(),
                  "accept": "application/json", **{k.lower(): v for k, v in headers.items()}}
        if token:
            signed.update({"x-acs-accesskey-id": access, "x-acs-security-token": token})
        request = SimpleNamespace(method=method, pathname=parts.path, query=dict(parse_qsl(parts.query)),
                                  headers=signed)
        signed["authorization"] = Utils.get_authorization(request, "ACS3-HMAC-SHA256",
                                                          signed["x-acs-content-sha256"], access, secret)
        return signed

    return sign


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


OFFER: PlatformOffer = load_offer(HERE, checks=checks, request=request)
