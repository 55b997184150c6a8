"""PAI-DLC's job API stand-in (localcloud/standins/jobserver.py) with DLC's field names and its gateway's checks.

The job's command and environment are UserCommand and Envs, its id JobId, its phase Status (the platform's
api.yaml, components/providers/alicloud/dlc/). Registered for the `pai-dlc` platform in
localcloud/standins/__init__.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from components.providers.alicloud.dlc.job import API, OFFER
from localcloud import signatures
from localcloud.standins.jobserver import StandIn

# Alibaba's API gateway's answer to a request it refuses, by the kind of refusal (localcloud/signatures.py):
# the error codes of Alibaba Cloud's "V3 request structure and signature" troubleshooting (IncompleteSignature,
# InvalidAccessKeyId.NotFound, SignatureDoesNotMatch). The rules below them (x-acs-action naming the
# operation, an STS key's token) are the specification's; the codes the stand-in answers for them
# (InvalidAction.NotFound, InvalidSecurityToken.MismatchWithAccessKey) are Alibaba's common error codes, and
# which one DLC's gateway answers is unverified without an account.
SIGNATURE_ERRORS = {"malformed": (400, "IncompleteSignature"), "unknown key": (404, "InvalidAccessKeyId.NotFound"),
                    "mismatch": (400, "SignatureDoesNotMatch")}
# The common headers every V3 request carries (the specification's "common request headers"), signed.
V3_HEADERS = ("host", "x-acs-action", "x-acs-version", "x-acs-date", "x-acs-signature-nonce", "x-acs-content-sha256")


def job_api(bucket_dir: Path, workdir: Path, keys: Optional[dict] = None, tokens: Optional[dict] = None) -> StandIn:
    """The job API's local stand-in with DLC's field names: UserCommand and Envs, the id at JobId, the phase at
    Status (api.yaml). keys ({access key id: secret}): the stand-in checks every request as the gateway does:
    its ACS3-HMAC-SHA256 signature (localcloud/signatures.py, written from the specification), the common
    headers present, x-acs-action naming the operation of the path and x-acs-version the API's; for a key in
    `tokens` ({access key id: STS token}), its token in x-acs-security-token and the key in
    x-acs-accesskey-id. Refused requests get the gateway's error."""
    def authorize(operation: str, method: str, path: str, headers: dict, body: bytes):
        missing = [h for h in V3_HEADERS if not headers.get(h)]
        if missing:
            return 400, {"Code": "IncompleteSignature", "Message": f"missing common headers: {', '.join(missing)}"}
        refused = signatures.acs3(method, path, headers, body, keys.get)
        if refused is not None:
            status, code = SIGNATURE_ERRORS[refused[0]]
            return status, {"Code": code, "Message": refused[1]}
        action, version = API.operation(operation)["action"], API.data["version"]
        if (headers["x-acs-action"], headers["x-acs-version"]) != (action, version):
            return 400, {"Code": "InvalidAction.NotFound", "Message": f"{method} {path} is {action} {version}, not"
                         f" {headers['x-acs-action']} {headers['x-acs-version']}"}
        key = signatures.authorization_fields(headers["authorization"], "ACS3-HMAC-SHA256")["Credential"]
        if (tokens or {}).get(key) and (headers.get("x-acs-security-token") != tokens[key]
                                        or headers.get("x-acs-accesskey-id") != key):
            return 400, {"Code": "InvalidSecurityToken.MismatchWithAccessKey",
                         "Message": f"the STS key {key} needs its token in x-acs-security-token"}
        return None

    return StandIn.for_api(API, lambda body: (body["UserCommand"], body["Envs"]), "JobId", "Status",
                           {OFFER.data["mounts"]["stack"]: bucket_dir}, workdir,
                           launcher_env=OFFER.data["launcherEnv"], authorize=authorize if keys else None)
