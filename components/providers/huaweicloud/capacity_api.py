"""Huawei Cloud's read-only capacity calls for `gpu-training check` (tools/runlib/check.py): whether a
flavor is on sale in a zone now (ECS ListFlavors with availability_zone: each flavor's os_extra_specs
`cond:operation:status` for the region and `cond:operation:az` "az(state), ..." per zone) and the
project's ECS quotas (ShowServerLimits: instances, cores, spot instances, floating IPs). Through
huaweicloudsdkecs 3.1.219's own request models; the calls need the region's project id (HW_PROJECT_ID).
"""
from __future__ import annotations

import logging
import os
import re
from typing import Mapping, Optional

from components.capacity import of

PROJECT_ENV = "HW_PROJECT_ID"


def _client(region: str, endpoint: Optional[str], creds):
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkecs.v2 import EcsClient

    project = os.environ.get(PROJECT_ENV)
    if not project:
        raise ValueError(f"set {PROJECT_ENV} (the project id of region {region}: console, My Credentials)")
    credentials = BasicCredentials(creds.access_key, creds.secret_key, project)
    if creds.token:
        credentials = credentials.with_security_token(creds.token)
    # The SDK logs a connection failure itself ("ConnectionException occurred ...") to a logger of its own with no
    # handler, which Python prints on stderr beside our table: the error it raises is the row's reason already.
    logging.getLogger(f"HuaweiCloud-SDK-{EcsClient.__name__}").addHandler(logging.NullHandler())
    return (EcsClient.new_builder().with_credentials(credentials)
            .with_endpoints([endpoint or f"https://ecs.{region}.myhuaweicloud.com"]).build())


def zone_state(specs: Mapping, zone: str) -> str:
    """A flavor's state in `zone`: its cond:operation:az entry, else the region-wide cond:operation:status."""
    for name, state in re.findall(r"([\w-]+)\((\w+)\)", str(specs.get("cond:operation:az") or "")):
        if name == zone:
            return state
    return str(specs.get("cond:operation:status") or "normal")  # absent means normal (the SDK model's doc)


def offers(region: str, zones: list[str], types: list[str], spot: bool, endpoint: Optional[str], creds) -> dict:
    from huaweicloudsdkecs.v2 import ListFlavorsRequest

    statuses, client, found = of("huaweicloud"), _client(region, endpoint, creds), {}
    for zone in zones:
        answer = client.list_flavors(ListFlavorsRequest(availability_zone=zone))
        for flavor in answer.flavors or []:
            if flavor.name in types:
                specs = flavor.os_extra_specs.to_dict() if flavor.os_extra_specs else {}
                specs = {"cond:operation:status": specs.get("condoperationstatus"),
                         "cond:operation:az": specs.get("condoperationaz")}
                state = zone_state(specs, zone)
                found[(zone, flavor.name)] = ("on sale" if state in statuses.available
                                              else "sold out" if state in statuses.sold_out else state)
    return {(z, t): found.get((z, t), "not offered") for z in zones for t in types}


def quotas(region: str, spot: bool, endpoint: Optional[str], creds) -> dict:
    from huaweicloudsdkecs.v2 import ShowServerLimitsRequest

    limits = _client(region, endpoint, creds).show_server_limits(ShowServerLimitsRequest()).absolute
    if spot:
        return {"instances": {"limit": limits.max_total_spot_instances, "used": limits.total_spot_instances_used},
                "vcpus": {"limit": limits.max_total_spot_cores, "used": limits.total_spot_cores_used}}
    return {"instances": {"limit": limits.max_total_instances, "used": limits.total_instances_used},
            "vcpus": {"limit": limits.max_total_cores, "used": limits.total_cores_used},
            "publicIps": {"limit": limits.max_total_floating_ips, "used": limits.total_floating_ips_used}}


SOURCE: Mapping[str, str] = {
    "offers": "ECS ListFlavors (huaweicloudsdkecs 3.1.219; os_extra_specs cond:operation:status / cond:operation:az)",
    "quotas": "ECS ShowServerLimits (huaweicloudsdkecs 3.1.219 ServerLimits)",
}
