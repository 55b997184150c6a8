"""Alibaba Cloud's read-only capacity calls for `gpu-training check` (tools/runlib/check.py): whether a
type is on sale in a zone now (ECS DescribeAvailableResource, DestinationResource=InstanceType) and the
account's vCPU quotas (DescribeAccountAttributes). Both through alibabacloud_ecs20140526's own request
models (7.11.8), so the requests are the SDK's; which states mean sold out: capacity.yaml.
"""
from __future__ import annotations

from typing import Mapping, Optional

from components.capacity import of
from components.providers import apikeys

QUOTA_NAMES = {"vcpus": ("max-postpaid-instance-vcpu-count", "used-postpaid-instance-vcpu-count"),
               "spotVcpus": ("max-spot-instance-vcpu-count", None)}


def _client(region: str, endpoint: Optional[str], creds):
    from components.providers.alicloud.pricing import CREDENTIALS, TOKEN, ecs_client as client

    return client(region, endpoint, apikeys.as_env(creds, CREDENTIALS, TOKEN))


def offers(region: str, zones: list[str], types: list[str], spot: bool, endpoint: Optional[str], creds) -> dict:
    """{(zone, type): "on sale" | "sold out" | "not offered"}."""
    from alibabacloud_ecs20140526 import models

    from components.providers.alicloud.pricing import runtime_options

    statuses = of("alicloud")
    client, found = _client(region, endpoint, creds), {}
    for name in types:
        request = models.DescribeAvailableResourceRequest(
            region_id=region, destination_resource="InstanceType", instance_type=name,
            instance_charge_type="PostPaid", spot_strategy="SpotAsPriceGo" if spot else "NoSpot")
        body = client.describe_available_resource_with_options(request, runtime_options()).body
        for zone in (body.available_zones.available_zone if body.available_zones else []) or []:
            for group in (zone.available_resources.available_resource if zone.available_resources else []) or []:
                for item in (group.supported_resources.supported_resource if group.supported_resources else []) or []:
                    if item.value == name:
                        state = item.status_category or item.status or ""
                        found[(zone.zone_id, name)] = ("on sale" if state in statuses.available
                                                       else "sold out" if state in statuses.sold_out else state)
    return {(z, t): found.get((z, t), "not offered") for z in zones for t in types}


def quotas(region: str, spot: bool, endpoint: Optional[str], creds) -> dict:
    """{name: {"limit", "used"}}: the pay-as-you-go (or spot) vCPU quota of the region."""
    from alibabacloud_ecs20140526 import models

    from components.providers.alicloud.pricing import runtime_options

    names = [n for pair in QUOTA_NAMES.values() for n in pair if n]
    body = _client(region, endpoint, creds).describe_account_attributes_with_options(
        models.DescribeAccountAttributesRequest(region_id=region, attribute_name=names), runtime_options()).body
    values: dict[str, Optional[float]] = {}
    for item in body.account_attribute_items.account_attribute_item or []:
        items = item.attribute_values.value_item if item.attribute_values else []
        total = sum(float(v.value) for v in items or [] if v.value not in (None, ""))
        values[item.attribute_name] = total if items else None
    key = "spotVcpus" if spot else "vcpus"
    limit_name, used_name = QUOTA_NAMES[key]
    return {"vcpus": {"limit": values.get(limit_name), "used": values.get(used_name) if used_name else None}}


SOURCE: Mapping[str, str] = {
    "offers": "ECS DescribeAvailableResource (alibabacloud_ecs20140526 7.11.8 DescribeAvailableResourceRequest)",
    "quotas": "ECS DescribeAccountAttributes (max-/used-postpaid-instance-vcpu-count, max-spot-instance-vcpu-count)",
}
