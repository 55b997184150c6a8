"""The mount address of the CPFS export (protocol service mount target) the nodes mount over NFSv3.

pulumi-alicloud 4.0's `nas.ProtocolMountTarget` reads back the export's id but not its domain
(terraform-provider-alicloud 81c43b67, resource_alicloud_nas_protocol_mount_target.go: Read sets
export_id, path, status, vpc/vswitch ids only), and no data source lists exports (`nas.get_protocols`
lists the protocol types a zone supports). The NAS API's DescribeProtocolMountTarget (version
2017-06-26, filter ExportIds) returns `ProtocolMountTargetDomain` ("cpfs-123****.cn-hangzhou.cpfs.
aliyuncs.com", CPFS API reference), so the program asks it once the export exists, with the
credentials `pulumi up` deploys with (the ones pulumi-alicloud reads: ALICLOUD_ACCESS_KEY /
ALICLOUD_SECRET_KEY / ALICLOUD_SECURITY_TOKEN, or the alicloud:accessKey/secretKey/securityToken
config). The SDK (alibabacloud_tea_openapi) is imported only when that call is made.
"""
from __future__ import annotations

from typing import Mapping, Optional
from urllib.parse import urlsplit

API_VERSION = "2017-06-26"
ENV_KEYS = {  # pulumi-alicloud's names first, then the Alibaba Cloud SDKs' own
    "access_key_id": ("ALICLOUD_ACCESS_KEY", "ALIBABA_CLOUD_ACCESS_KEY_ID"),
    "access_key_secret": ("ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    "security_token": ("ALICLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_SECURITY_TOKEN"),
}
PLACEHOLDER = "<cpfs-export-domain>"
NAS_ENDPOINT_ENV = "GPU_TRAINING_NAS_ENDPOINT"  # e.g. http://127.0.0.1:8080: a local stand-in of the NAS API  # a preview without credentials: the address is read at deploy time


class ExportLookupError(RuntimeError):
    """The export's domain could not be read; the message says why and what to do."""


def credentials_from(env: Mapping[str, str], config: Mapping[str, Optional[str]] = {}) -> Optional[dict]:
    """Access key, secret and optional STS token from the stack config or the environment; None if absent."""
    found = {name: config.get(name) or next((env[k] for k in keys if env.get(k)), None)
             for name, keys in ENV_KEYS.items()}
    if not found["access_key_id"] or not found["access_key_secret"]:
        return None
    return found


def rpc_call(region: str, url: str, version: str, action: str, query: dict, credentials: dict) -> dict:
    """One signed RPC-style call of an Alibaba Cloud API (its JSON body); the SDK's errors pass through."""
    from alibabacloud_tea_openapi import utils_models
    from alibabacloud_tea_openapi.client import Client
    from alibabacloud_tea_openapi.utils_models import Config
    from darabonba.runtime import RuntimeOptions

    parts = urlsplit(url)
    client = Client(Config(access_key_id=credentials["access_key_id"],
                           access_key_secret=credentials["access_key_secret"],
                           security_token=credentials.get("security_token") or None, region_id=region,
                           endpoint=parts.netloc, protocol=parts.scheme))
    params = utils_models.Params(action=action, version=version, protocol=parts.scheme.upper(),
                                 pathname="/", method="POST", auth_type="AK", style="RPC",
                                 req_body_type="formData", body_type="json")
    return client.call_api(params, utils_models.OpenApiRequest(query=query),
                           RuntimeOptions(autoretry=True, max_attempts=3, connect_timeout=5000,
                                          read_timeout=15000))["body"]


def export_domain(region: str, file_system_id: str, export_id: str, credentials: dict,
                  endpoint: Optional[str] = None) -> str:
    """DescribeProtocolMountTarget -> the export's ProtocolMountTargetDomain (raises ExportLookupError)."""
    query = {"FileSystemId": file_system_id, "Filters.1.Key": "ExportIds", "Filters.1.Value": export_id}
    try:
        body = rpc_call(region, endpoint or f"https://nas.{region}.aliyuncs.com", API_VERSION,
                        "DescribeProtocolMountTarget", query, credentials)
    except Exception as error:  # the SDK raises its own types for API and transport errors
        raise ExportLookupError(f"DescribeProtocolMountTarget({file_system_id}, {export_id}) failed: {error}"
                                " (the deploying user needs nas:DescribeProtocolMountTarget)") from None
    for target in (body or {}).get("ProtocolMountTargets") or []:
        if target.get("ExportId") == export_id and target.get("ProtocolMountTargetDomain"):
            return target["ProtocolMountTargetDomain"]
    raise ExportLookupError(f"DescribeProtocolMountTarget returned no domain for export {export_id} of"
                            f" {file_system_id}")
