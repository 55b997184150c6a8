"""Tencent Cloud regions and zones for scripts/regions.py: CVM DescribeRegions, then DescribeZones per
region (zones in state AVAILABLE). SDK: tencentcloud-sdk-python (the client of pricing.py), imported only
when asked. Credentials come from the environment, never from files here.
"""
from __future__ import annotations

from typing import Mapping, Optional
from urllib.parse import urlsplit

from components.providers import apikeys
from components.providers.tencentcloud.pricing import CREDENTIALS, TOKEN, cvm_client

DISPLAY = "Tencent Cloud"


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    return apikeys.unset(env, CREDENTIALS, f"a CAM user or role allowed cvm:DescribeRegions and cvm:DescribeZones;"
                                           f" {TOKEN} for temporary keys")


def source(endpoint: Optional[str]) -> str:
    return f"Tencent Cloud CVM API DescribeRegions + DescribeZones ({urlsplit(endpoint).netloc if endpoint else 'cvm.tencentcloudapi.com'})"


def fetch(*, endpoint: Optional[str], env: Mapping[str, str], home_region: str = "ap-guangzhou") -> dict[str, list[str]]:
    """{region: [zone, ...]} of every available region; RuntimeError naming the call that failed."""
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
    from tencentcloud.cvm.v20170312 import models

    try:
        regions = cvm_client(home_region, endpoint, env).DescribeRegions(models.DescribeRegionsRequest()).RegionSet
    except TencentCloudSDKException as error:
        raise RuntimeError(f"DescribeRegions failed: {error.code}: {error.message}") from None
    result: dict[str, list[str]] = {}
    for region in regions or []:
        if region.RegionState not in (None, "AVAILABLE"):
            continue
        try:
            zones = cvm_client(region.Region, endpoint, env).DescribeZones(models.DescribeZonesRequest()).ZoneSet
        except TencentCloudSDKException as error:
            raise RuntimeError(f"DescribeZones {region.Region} failed: {error.code}: {error.message}") from None
        result[region.Region] = sorted(z.Zone for z in zones or [] if z.ZoneState in (None, "AVAILABLE"))
    return result
