"""Alibaba Cloud regions and zones for scripts/regions.py: ECS DescribeRegions, then DescribeZones per
region. SDK: alibabacloud_ecs20140526 (the client of pricing.py), imported only when asked.
Credentials come from the environment, never from files here.
"""
from __future__ import annotations

from typing import Mapping, Optional
from urllib.parse import urlsplit

from components.providers import apikeys
from components.providers.alicloud.pricing import CREDENTIALS, TOKEN, ecs_client, runtime_options, error_reason

DISPLAY = "Alibaba Cloud"


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    return apikeys.unset(env, CREDENTIALS, f"a RAM user or role allowed ecs:DescribeRegions and ecs:DescribeZones;"
                                           f" {TOKEN} too for STS credentials")


def source(endpoint: Optional[str]) -> str:
    return f"Alibaba Cloud ECS API DescribeRegions + DescribeZones ({urlsplit(endpoint).netloc if endpoint else 'ecs.aliyuncs.com'})"


def fetch(*, endpoint: Optional[str], env: Mapping[str, str], home_region: str = "cn-hangzhou") -> dict[str, list[str]]:
    """{region: [zone, ...]} of every region the account sees; RuntimeError naming the call that failed."""
    from alibabacloud_ecs20140526 import models

    runtime = runtime_options()
    try:
        body = ecs_client(home_region, endpoint, env).describe_regions_with_options(
            models.DescribeRegionsRequest(accept_language="en-US"), runtime).body
    except Exception as error:  # the SDK raises its own types for API and transport errors
        raise RuntimeError(f"DescribeRegions failed: {error_reason(error)}") from None
    result: dict[str, list[str]] = {}
    for region in body.regions.region if body.regions else []:
        try:
            zones = ecs_client(region.region_id, endpoint, env).describe_zones_with_options(
                models.DescribeZonesRequest(region_id=region.region_id, accept_language="en-US"), runtime).body
        except Exception as error:
            raise RuntimeError(f"DescribeZones {region.region_id} failed: {error_reason(error)}") from None
        result[region.region_id] = sorted(z.zone_id for z in (zones.zones.zone if zones.zones else []))
    return result
