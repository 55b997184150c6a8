"""ModelArts' job API stand-in (localcloud/standins/jobserver.py) with ModelArts' field names, its gateway's
signature check and the account's side (its authorizations, the public pool's flavors).

The platform's api.yaml and platform.yaml are in components/providers/huaweicloud/modelarts/. Registered for the
`modelarts` platform in localcloud/standins/__init__.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from components.providers.huaweicloud.modelarts.job import API, OFFER
from localcloud import signatures
from localcloud.standins.jobserver import StandIn
from node_agent import layout

# An authorization as GetAuthorizations lists one (SDK model/authorization_response.py: type agency, content the
# agency's name, user_id all = every IAM user): what the stand-in's account has unless a test removes it.
AUTHORIZED = {"user_id": "all", "type": "agency", "content": "modelarts_agency", "user_type": "all-users"}


def job_api(bucket_dir: Path, workdir: Path, keys: Optional[dict] = None, tokens: Optional[dict] = None) -> StandIn:
    """The job API's local stand-in (localcloud/standins/jobserver.py) with ModelArts' field names: the command
    and environment under `algorithm`, the id at metadata.id, the phase at status.phase (api.yaml). keys
    ({AK: SK}): it checks each request's SDK-HMAC-SHA256 signature as API Gateway does
    (localcloud/signatures.py, written from Huawei's "API Request Signing Guide"), and for a key in `tokens`
    ({AK: security token}) its token in a signed X-Security-Token; it refuses the others with APIG.0301, 401
    (Huawei API Gateway error codes)."""
    def authorize(operation: str, method: str, path: str, headers: dict, body: bytes):
        refused = signatures.sdk_hmac_sha256(method, path, headers, body, keys.get)
        fields = signatures.authorization_fields(headers.get("authorization", ""), "SDK-HMAC-SHA256")
        if refused is None and (tokens or {}).get(key := fields["Access"]):
            if (headers.get("x-security-token") != tokens[key]
                    or "x-security-token" not in fields["SignedHeaders"].split(";")):
                refused = "mismatch", f"the temporary key {key} needs its token in a signed X-Security-Token"
        return None if refused is None else (401, {"error_code": "APIG.0301", "error_msg": refused[1]})

    def unpack(body: dict):
        """The job's command and environment, and where its container paths are here: `bucket_dir` is the stack's
        prefix, so a channel's or a volume's OBS path maps to the folder under it, and MA_JOB_DIR to the folder
        holding code_dir's last folder (what ModelArts downloads the code into)."""
        algorithm = body["algorithm"]
        volumes = [v["obs"] for v in body["spec"].get("volumes") or [] if "obs" in v]
        root = volumes[0]["obs_path"] if volumes else algorithm["code_dir"][:-len(layout.CODE)]
        local = lambda path: bucket_dir / path[len(root):]  # noqa: E731
        mounts = {v["local_path"]: local(v["obs_path"]) for v in volumes}
        for channel in (*algorithm.get("inputs", ()), *algorithm.get("outputs", ())):
            mounts[channel["local_dir"]] = local(channel["remote"]["obs"]["obs_url"])
            mounts[channel["local_dir"]].mkdir(parents=True, exist_ok=True)
        env = dict(algorithm["environments"])
        if "code_dir" in algorithm:
            env["MA_JOB_DIR"] = str(local(algorithm["code_dir"]).parent)
        return algorithm["command"], env, mounts

    def account(standin, name: str, body: dict):
        """The account's side: its authorizations (standin.facts), listed, and required by a submit."""
        authorizations = standin.facts.setdefault("authorizations", [AUTHORIZED])
        if name == "authorizations":
            return 200, {"total_count": len(authorizations), "auth": authorizations}
        if name == "flavors":  # what flavors.yaml says the public pool sells (unverified: the stand-in is not the cloud)
            flavors = standin.facts.setdefault("flavors", [row.name for row in OFFER.catalog().instances])
            return 200, {"total_count": len(flavors), "flavors": [{"flavor_id": f, "flavor_type": "Ascend"}
                                                                  for f in flavors]}
        if name == "submit" and not authorizations:
            # ModelArts' error code for it is not documented where the rule is: unverified.
            return 403, {"error_code": "unverified", "error_msg": "ModelArts is not authorized in this account"
                         f" ({OFFER.data['prerequisites'][0]['source']})"}
        return None

    return StandIn.for_api(API, unpack, "metadata.id", "status.phase", {}, workdir,
                           launcher_env=OFFER.data["launcherEnv"], authorize=authorize if keys else None,
                           account=account)
