"""AWS prices for scripts/prices.py. On-demand: the AWS Price List Query API (pricing:GetProducts,
the documented programmatic source of EC2 on-demand rates; Linux, shared tenancy, no pre-installed
software), hourly USD. Spot, optional: EC2 DescribeSpotPriceHistory, the latest price per zone,
lowest across zones. SDK: boto3, imported only when prices are fetched; credentials from boto3's
usual chain (environment, profile, role), never from files here.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Iterable, Mapping, Optional, Union
from urllib.parse import urlsplit

DISPLAY = "AWS"
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
NEEDS: tuple[str, ...] = ()
PRICING_REGION = "us-east-1"  # the Price List API is served from a few regions; its data covers all


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    import boto3

    if boto3.session.Session().get_credentials() is not None:
        return None
    return (f"set {' and '.join(CREDENTIALS)} (or AWS_PROFILE) for an identity allowed pricing:GetProducts"
            " and ec2:DescribeSpotPriceHistory")


def source(endpoint: Optional[str], region: str) -> str:
    host = urlsplit(endpoint).netloc if endpoint else f"api.pricing.{PRICING_REGION}.amazonaws.com"
    return f"AWS Price List Query API GetProducts ({host})"


def _clients(region: str, endpoint: Optional[str]):
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=20)
    pricing = boto3.client("pricing", region_name=PRICING_REGION, endpoint_url=endpoint, config=config)
    ec2 = boto3.client("ec2", region_name=region, endpoint_url=endpoint, config=config)
    return pricing, ec2


def _filters(name: str, region: str) -> list[dict]:
    wanted = {"instanceType": name, "regionCode": region, "operatingSystem": "Linux", "tenancy": "Shared",
              "preInstalledSw": "NA", "capacitystatus": "Used"}
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in wanted.items()]


def _hourly_usd(price_list: list[str]) -> float:
    rates = set()
    for document in price_list:
        product = json.loads(document)
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                if dimension.get("unit") == "Hrs" and "USD" in dimension.get("pricePerUnit", {}):
                    rates.add(float(dimension["pricePerUnit"]["USD"]))
    rates.discard(0.0)
    if len(rates) != 1:
        raise ValueError(f"expected one hourly on-demand rate, found {sorted(rates) or 'none'}")
    return rates.pop()


def fetch(types: Iterable[str], *, region: str, zone: Optional[str], image: Optional[str],
          endpoint: Optional[str], spot: bool, env: Mapping[str, str]) -> dict[str, Union[dict, str]]:
    """{type: {"onDemandPerHour", "currency", "spotPerHour"?} or the reason it has no price}."""
    pricing, ec2 = _clients(region, endpoint)
    result = {}
    for name in types:
        try:
            answer = pricing.get_products(ServiceCode="AmazonEC2", Filters=_filters(name, region), MaxResults=10)
            quote = {"onDemandPerHour": _hourly_usd(answer.get("PriceList", [])), "currency": "USD"}
        except Exception as error:  # botocore ClientError/EndpointConnectionError, or an unexpected answer
            result[name] = f"GetProducts failed: {error}"
            continue
        if spot:
            quote["spotPerHour"] = _latest_spot(ec2, name, zone)
        result[name] = quote
    return result


def _latest_spot(ec2, name: str, zone: Optional[str]) -> Optional[float]:
    arguments = {"InstanceTypes": [name], "ProductDescriptions": ["Linux/UNIX"],
                 "StartTime": datetime.now(timezone.utc)}
    if zone:
        arguments["AvailabilityZone"] = zone
    try:
        history = ec2.describe_spot_price_history(**arguments).get("SpotPriceHistory", [])
    except Exception:  # spot is optional: the on-demand price stands alone
        return None
    latest: dict[str, tuple] = {}
    for entry in history:
        seen = latest.get(entry["AvailabilityZone"])
        if seen is None or entry["Timestamp"] > seen[0]:
            latest[entry["AvailabilityZone"]] = (entry["Timestamp"], float(entry["SpotPrice"]))
    return min((price for _, price in latest.values()), default=None)
