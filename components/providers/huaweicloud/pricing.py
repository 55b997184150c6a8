"""Huawei Cloud prices for scripts/prices.py: BSS ListOnDemandResourceRatings (POST
/v2/bills/ratings/on-demand-resources on the global endpoint bss.myhuaweicloud.com), the pay-per-use
price of one hour of a flavor in a region. All catalog flavors go in one request (`product_infos`,
matched back by `id`).

Spot: no Huawei API that returns a spot market price was found (ECS ListFlavorSellPolicies returns a
flavor's spot options, not a price; an AS spot configuration bids the on-demand price when no cap is
set, per huaweicloudsdkecs PostPaidServerExtendParam.spot_price), so `--spot` records nothing and
says so: spot stays the profile's estimate.

Requests are signed with huaweicloudsdkcore's Signer (SDK-HMAC-SHA256): huaweicloudsdkbss is on PyPI
but not installed in this toolkit, and one signed POST does not need it. Credentials come from the
environment (HW_ACCESS_KEY / HW_SECRET_KEY, the names the Pulumi provider reads; HW_SECURITY_TOKEN for
temporary ones), never from files here. Field names: huaweicloud/huaweicloud-sdk-python-v3@0d032bf5,
huaweicloud-sdk-bss/huaweicloudsdkbss/v2/model/{rate_on_demand_req,demand_product_info,
demand_product_rating_result}.py.
"""
from __future__ import annotations

import json
from typing import Iterable, Mapping, Optional, Union
from urllib.parse import urlsplit

from components.providers import apikeys

DISPLAY = "Huawei Cloud"
CREDENTIALS = ("HW_ACCESS_KEY", "HW_SECRET_KEY")
TOKEN = "HW_SECURITY_TOKEN"  # optional: temporary credentials
# Optional: the account (domain) id. huaweicloudsdkcore's GlobalCredentials sends it as X-Domain-Id on
# global services such as BSS and otherwise looks it up through IAM first; without it the request goes
# unscoped, which is unverified against the real BSS.
DOMAIN = "HW_DOMAIN_ID"
NEEDS = ("project_id",)  # BSS asks for any valid project id of the account (not the priced region's)
ENDPOINT = "https://bss.myhuaweicloud.com"
PATH = "/v2/bills/ratings/on-demand-resources"
SERVICE_TYPE, RESOURCE_TYPE = "hws.service.type.ec2", "hws.resource.type.vm"
HOUR_MEASURE = 4  # BSS measure unit 4 = hour (ListMeasureUnits); amounts come in measure 1 = yuan
CURRENCY = "CNY"  # the China site's BSS; the answer's `currency` field wins when present
SPOT_NOTE = "no Huawei spot price API (spot stays the profile's estimate)"


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    return apikeys.unset(env, CREDENTIALS, f"an IAM user allowed to query BSS prices; {TOKEN} too for temporary"
                                           f" credentials; {DOMAIN} names the account for the global BSS endpoint")


def source(endpoint: Optional[str], region: str) -> str:
    host = urlsplit(endpoint or ENDPOINT).netloc
    return f"Huawei Cloud BSS API ListOnDemandResourceRatings ({host})"


def _post(endpoint: str, body: dict, env: Mapping[str, str]) -> tuple[int, dict]:
    import requests
    from huaweicloudsdkcore.auth.credentials import GlobalCredentials
    from huaweicloudsdkcore.sdk_request import SdkRequest
    from huaweicloudsdkcore.signer.signer import Signer

    parts = urlsplit(endpoint)
    headers = {"Content-Type": "application/json;charset=UTF-8"}
    if env.get(TOKEN):
        headers["X-Security-Token"] = env[TOKEN]
    if env.get(DOMAIN):
        headers["X-Domain-Id"] = env[DOMAIN]
    request = SdkRequest(method="POST", schema=parts.scheme, host=parts.netloc, resource_path=PATH, uri=PATH,
                         query_params=[], header_params=headers, body=json.dumps(body))
    Signer(GlobalCredentials(env[CREDENTIALS[0]], env[CREDENTIALS[1]])).sign(request)
    answer = requests.post(f"{parts.scheme}://{parts.netloc}{PATH}", data=request.body,
                           headers=request.header_params, timeout=20)
    try:
        return answer.status_code, answer.json()
    except ValueError:
        return answer.status_code, {"error_msg": answer.text[:300]}


def request_body(types: list[str], region: str, project_id: str) -> dict:
    """One rating request for every flavor: Linux, one hour, one instance each."""
    return {"project_id": project_id, "product_infos": [
        {"id": str(index), "cloud_service_type": SERVICE_TYPE, "resource_type": RESOURCE_TYPE,
         # BSS names a VM's spec with its OS: "<flavor>.linux" (demand_product_info.py resource_spec).
         "resource_spec": f"{name}.linux", "region": region, "usage_factor": "Duration", "usage_value": 1,
         "usage_measure_id": HOUR_MEASURE, "subscription_num": 1}
        for index, name in enumerate(types, 1)]}


def fetch(types: Iterable[str], *, region: str, zone: Optional[str], image: Optional[str],
          endpoint: Optional[str], spot: bool, env: Mapping[str, str], project_id: Optional[str] = None,
          **_) -> dict[str, Union[dict, str]]:
    """{type: {"onDemandPerHour", "currency"} or the reason it has no price}."""
    names = list(types)
    try:
        status, answer = _post(endpoint or ENDPOINT, request_body(names, region, project_id or ""), env)
    except ModuleNotFoundError:  # the signer is the `prices` extra: prices.py names the pip line
        raise
    except Exception as error:  # transport errors: every type is unpriced, with the reason
        return {name: f"ListOnDemandResourceRatings failed: {error}" for name in names}
    if status != 200:
        why = f"ListOnDemandResourceRatings failed: HTTP {status} {answer.get('error_code', '')} {answer.get('error_msg', '')}"
        return {name: why.strip() for name in names}
    currency = answer.get("currency") or CURRENCY
    by_id = {str(row.get("id")): row for row in answer.get("product_rating_results") or []}
    result: dict[str, Union[dict, str]] = {}
    for index, name in enumerate(names, 1):
        row = by_id.get(str(index))
        if row is None or row.get("amount") is None:
            result[name] = "ListOnDemandResourceRatings returned no rating for it (not sold in the region?)"
            continue
        quote = {"onDemandPerHour": float(row["amount"]), "currency": currency}
        if spot:
            quote["spotNote"] = SPOT_NOTE
        result[name] = quote
    return result
