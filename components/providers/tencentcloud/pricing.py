"""Tencent Cloud prices for scripts/prices.py: CVM InquiryPriceRunInstances, pay-as-you-go by the hour
(POSTPAID_BY_HOUR) and, with spot, SPOTPAID. The API prices a launch, so it needs a zone and an image
id. SDK: tencentcloud-sdk-python (common + cvm), imported only when prices are fetched. Credentials
come from the environment, never from files here.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Union
from urllib.parse import urlsplit

from components.providers import apikeys

DISPLAY = "Tencent Cloud"
CREDENTIALS = ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY")
TOKEN = "TENCENTCLOUD_SESSION_TOKEN"  # optional: temporary credentials
NEEDS = ("zone", "image")  # InquiryPriceRunInstances requires Placement.Zone and ImageId
# The answer carries no currency: the account's site decides it (China site CNY, international site USD), as
# --site says; it is recorded with the figure, never converted.
CURRENCY = {"china": "CNY", "intl": "USD"}


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    return apikeys.unset(env, CREDENTIALS, f"a CAM user or role allowed cvm:InquiryPriceRunInstances; {TOKEN} for temporary keys")


def source(endpoint: Optional[str], region: str) -> str:
    host = urlsplit(endpoint).netloc if endpoint else "cvm.tencentcloudapi.com"
    return f"Tencent Cloud CVM API InquiryPriceRunInstances ({host})"


def cvm_client(region: str, endpoint: Optional[str], env: Mapping[str, str]):
    from tencentcloud.common.credential import Credential
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile
    from tencentcloud.cvm.v20170312.cvm_client import CvmClient

    parts = urlsplit(endpoint) if endpoint else None
    # endpoint None lets the SDK use cvm.tencentcloudapi.com.
    profile = HttpProfile(endpoint=parts.netloc if parts else None, protocol=parts.scheme if parts else None,
                          reqTimeout=20)
    return CvmClient(Credential(env[CREDENTIALS[0]], env[CREDENTIALS[1]], env.get(TOKEN) or None), region,
                     ClientProfile(httpProfile=profile))


def _unit_price(answer: Mapping) -> float:
    price = answer["Price"]["InstancePrice"]
    if price.get("ChargeUnit") not in (None, "HOUR"):
        raise ValueError(f"charge unit {price.get('ChargeUnit')!r}, not HOUR")
    value = price.get("UnitPriceDiscount")
    return float(value if value is not None else price["UnitPrice"])


def fetch(types: Iterable[str], *, region: str, zone: Optional[str], image: Optional[str],
          endpoint: Optional[str], spot: bool, env: Mapping[str, str], site: str = "china",
          **_) -> dict[str, Union[dict, str]]:
    """{type: {"onDemandPerHour", "currency", "caveat", "spotPerHour"?} or the reason it has no price}."""
    client, result = cvm_client(region, endpoint, env), {}
    caveat = f"the answer names no currency: {CURRENCY[site]} is the {site} site's (--site {site})"
    for name in types:
        launch = {"Placement": {"Zone": zone}, "ImageId": image, "InstanceType": name}
        try:
            answer = client.call_json("InquiryPriceRunInstances", {**launch, "InstanceChargeType": "POSTPAID_BY_HOUR"})
            quote = {"onDemandPerHour": _unit_price(answer["Response"]), "currency": CURRENCY[site], "caveat": caveat}
        except Exception as error:  # TencentCloudSDKException, transport errors, an unexpected answer
            result[name] = f"InquiryPriceRunInstances failed: {getattr(error, 'code', '') or ''} {getattr(error, 'message', '') or error}".strip()
            continue
        if spot:
            try:
                answer = client.call_json("InquiryPriceRunInstances", {
                    **launch, "InstanceChargeType": "SPOTPAID",
                    "InstanceMarketOptions": {"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time"}}})
                quote["spotPerHour"] = _unit_price(answer["Response"])
            except Exception:  # spot is optional: the on-demand price stands alone
                quote["spotPerHour"] = None
        result[name] = quote
    return result
