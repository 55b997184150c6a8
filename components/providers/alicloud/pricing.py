"""Alibaba Cloud prices for scripts/prices.py: DescribePrice (pay-as-you-go per hour) and, with spot,
DescribeSpotPriceHistory (the latest price, lowest across zones). SDK: alibabacloud_ecs20140526,
imported only when prices are fetched. Credentials come from the environment, never from files here.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Iterable, Mapping, Optional, Union
from urllib.parse import urlsplit

from components.providers import apikeys

DISPLAY = "Alibaba Cloud"
CREDENTIALS = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET")
TOKEN = "ALIBABA_CLOUD_SECURITY_TOKEN"  # optional: STS credentials
NEEDS: tuple[str, ...] = ()  # no extra options beyond --region


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    return apikeys.unset(env, CREDENTIALS, f"a RAM user or role allowed ecs:DescribePrice"
                                           f" and ecs:DescribeSpotPriceHistory; {TOKEN} too for STS credentials")


def ecs_client(region: str, endpoint: Optional[str], env: Mapping[str, str]):
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi.models import Config

    parts = urlsplit(endpoint) if endpoint else None
    # endpoint None lets the SDK resolve the region's ECS endpoint.
    return Client(Config(access_key_id=env[CREDENTIALS[0]], access_key_secret=env[CREDENTIALS[1]],
                         security_token=env.get(TOKEN) or None, region_id=region,
                         endpoint=parts.netloc if parts else None, protocol=parts.scheme if parts else None))


def runtime_options():
    from darabonba.runtime import RuntimeOptions

    return RuntimeOptions(autoretry=False, connect_timeout=5000, read_timeout=15000)


def error_reason(error: Exception) -> str:
    code = getattr(error, "code", None)
    message = getattr(error, "message", None) or str(error)
    return f"{code}: {message}" if code else message.splitlines()[0][:300]


def source(endpoint: Optional[str], region: str) -> str:
    return f"Alibaba Cloud ECS API DescribePrice ({urlsplit(endpoint).netloc if endpoint else f'ecs.{region}.aliyuncs.com'})"


def fetch(types: Iterable[str], *, region: str, zone: Optional[str], image: Optional[str],
          endpoint: Optional[str], spot: bool, env: Mapping[str, str], **_) -> dict[str, Union[dict, str]]:
    """{type: {"onDemandPerHour", "currency", "spotPerHour"?} or the reason it has no price}."""
    from alibabacloud_ecs20140526 import models

    client, runtime, result = ecs_client(region, endpoint, env), runtime_options(), {}
    for name in types:
        request = models.DescribePriceRequest(region_id=region, resource_type="instance", instance_type=name,
                                              price_unit="Hour", period=1, instance_network_type="vpc", zone_id=zone)
        try:
            price = client.describe_price_with_options(request, runtime).body.price_info.price
            quote = {"onDemandPerHour": float(price.trade_price), "currency": price.currency}
        except Exception as error:  # the SDK raises its own exception types for API and transport errors
            result[name] = f"DescribePrice failed: {error_reason(error)}"
            continue
        if spot:
            quote["spotPerHour"] = _latest_spot(client, runtime, models, name, region, zone)
        result[name] = quote
    return result


DISK_PROBE_GIB = 100  # the size asked about: the price per GiB-hour is its price / 100


def fetch_disks(kinds: Iterable[tuple[str, Optional[str]]], *, region: str, zone: Optional[str],
                endpoint: Optional[str], env: Mapping[str, str], **_) -> dict[tuple, Union[dict, str]]:
    """{(category, level): {"perGiBHour", "currency"} or the reason}: DescribePrice ResourceType=disk, which
    prices pay-as-you-go disks by the hour only (help.aliyun.com/document_detail/107829.html)."""
    from alibabacloud_ecs20140526 import models

    client, runtime, result = ecs_client(region, endpoint, env), runtime_options(), {}
    for category, level in kinds:
        disk = models.DescribePriceRequestDataDisk(category=category, size=DISK_PROBE_GIB, performance_level=level)
        request = models.DescribePriceRequest(region_id=region, resource_type="disk", price_unit="Hour",
                                              data_disk=[disk], zone_id=zone)
        try:
            price = client.describe_price_with_options(request, runtime).body.price_info.price
            result[(category, level)] = {"perGiBHour": float(price.trade_price) / DISK_PROBE_GIB,
                                         "currency": price.currency}
        except Exception as error:  # the SDK's API and transport errors
            result[(category, level)] = f"DescribePrice (disk) failed: {error_reason(error)}"
    return result


def _latest_spot(client, runtime, models, name: str, region: str, zone: Optional[str]) -> Optional[float]:
    start = (datetime.now(timezone.utc) - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    request = models.DescribeSpotPriceHistoryRequest(region_id=region, instance_type=name, network_type="vpc",
                                                     zone_id=zone, start_time=start)
    try:
        body = client.describe_spot_price_history_with_options(request, runtime).body
    except Exception:  # spot history is optional: the on-demand price stands alone
        return None
    latest: dict[str, tuple[str, float]] = {}
    for entry in (body.spot_prices.spot_price_type if body.spot_prices else None) or []:
        seen = latest.get(entry.zone_id)
        if seen is None or entry.timestamp > seen[0]:
            latest[entry.zone_id] = (entry.timestamp, float(entry.spot_price))
    return min((price for _, price in latest.values()), default=None)
