"""Baidu AI Cloud prices for scripts/prices.py: BCC getPriceBySpec (POST /v2/instance/price,
paymentTiming Postpaid) for the pay-as-you-go price and, with spot, the bid instances' market price
(POST /v2/instance/bidPrice). Both price a spec in a zone, so --zone is required.

SDK: bce-python-sdk 0.9.79 (BccClient.get_price_by_spec; the bid price is sent through the same
client's signer with the body the current API reference asks for, {spec, zoneName, purchaseCount}:
the SDK's get_bid_instance_price still sends the older instanceType/cpuCount/memoryCapacityInGB
form). Answers: getPriceBySpec {price: [{specId, specPrices: [{spec, status, specPrice, tradePrice}]}]}
(https://cloud.baidu.com/doc/BCC/s/uk5dt23r8, SpecIdPrices/SpecPrices in the BCC data types),
bidPrice {money, count, perMoney} (baidubce/bce-sdk-go services/bcc/api/model.go
GetBidInstancePriceResult). Neither reference states the unit of a Postpaid or bid price; both
are recorded as per hour and the row says the unit is unverified.
Credentials: BAIDUCLOUD_ACCESS_KEY / BAIDUCLOUD_SECRET_KEY (+ BAIDUCLOUD_SESSION_TOKEN), as bceapi.py.
"""
from __future__ import annotations

import json
from typing import Iterable, Mapping, Optional, Union

from components.providers import apikeys
from components.providers.baiducloud import bceapi

DISPLAY = "Baidu AI Cloud"
CREDENTIALS = (bceapi.ACCESS_KEY_ENV, bceapi.SECRET_KEY_ENV)
TOKEN = bceapi.TOKEN_ENV
NEEDS = ("zone",)  # both price calls require zoneName
# The answers carry no currency: the account's site decides it (--site), recorded with the figure, never converted.
CURRENCY = {"china": "CNY", "intl": "USD"}
# getPriceBySpec requires purchaseLength, documented in months ("时长,[1,...,36],单位:月",
# https://cloud.baidu.com/doc/BCC/s/uk5dt23r8), and states no unit for a Postpaid answer. Each Postpaid spec is
# therefore asked for 1 and for 2 months: a rate (per hour or minute) does not change with the length, a
# total for the months asked doubles. A changed answer is refused, never recorded as hourly.
LENGTHS = (1, 2)
UNIT_CAVEAT = ("hourly unit assumed: the Postpaid answer did not change with purchaseLength (1 and 2 months), so it"
               " is a rate, but the API reference does not state per hour or per minute")


def missing_credentials(env: Mapping[str, str]) -> Optional[str]:
    return apikeys.unset(env, CREDENTIALS, f"an IAM user allowed to read BCC prices; {TOKEN} for STS credentials")


def source(endpoint: Optional[str], region: str) -> str:
    return f"Baidu AI Cloud BCC API getPriceBySpec ({_host(endpoint, region)})"


def _host(endpoint: Optional[str], region: str) -> str:
    return (endpoint or bceapi.endpoint("bcc", region)).split("://", 1)[-1]


def _client(region: str, endpoint: Optional[str], env: Mapping[str, str]):
    from baidubce.auth.bce_credentials import BceCredentials
    from baidubce.bce_client_configuration import BceClientConfiguration
    from baidubce.retry.retry_policy import NoRetryPolicy
    from baidubce.services.bcc.bcc_client import BccClient

    config = BceClientConfiguration(credentials=BceCredentials(env[CREDENTIALS[0]], env[CREDENTIALS[1]]),
                                    security_token=env.get(TOKEN) or None,
                                    endpoint=endpoint or bceapi.endpoint("bcc", region),
                                    retry_policy=NoRetryPolicy(), connection_timeout_in_mills=20_000)
    return bceapi.with_security_token(BccClient(config), env.get(TOKEN))


def _why(call: str, error: Exception) -> str:
    translated = bceapi.translate("price", call, error)
    return str(translated).splitlines()[0][:300]


def _spec_price(answer: dict, name: str) -> float:
    for family in answer.get("price") or []:
        for row in family.get("spec_prices") or family.get("specPrices") or []:
            if row.get("spec") == name:
                value = row.get("trade_price", row.get("tradePrice"))
                if value is None:
                    value = row.get("spec_price", row.get("specPrice"))
                return float(value)
    raise ValueError(f"the answer has no price row for {name}")


def fetch(types: Iterable[str], *, region: str, zone: Optional[str], image: Optional[str],
          endpoint: Optional[str], spot: bool, env: Mapping[str, str], site: str = "china",
          **_) -> dict[str, Union[dict, str]]:
    """{type: {"onDemandPerHour", "currency", "spotPerHour"?, "caveat"} or the reason it has no price}."""
    from baidubce.http import http_methods
    from baidubce.services.bcc.bcc_client import generate_client_token

    client, result = _client(region, endpoint, env), {}
    caveat = f"{UNIT_CAVEAT}; the answer names no currency: {CURRENCY[site]} is the {site} site's (--site {site})"
    for name in types:
        try:
            asked = [_spec_price(bceapi.body(client.get_price_by_spec(spec=name, payment_timing="Postpaid",
                                                                      zone_name=zone, purchase_num=1,
                                                                      purchase_length=months)), name)
                     for months in LENGTHS]
        except Exception as error:  # BceHttpClientError / BceServerError, transport errors, an unexpected answer
            result[name] = f"getPriceBySpec failed: {_why('getPriceBySpec', error)}"
            continue
        if abs(asked[1] - asked[0]) > 1e-9 * max(asked):
            result[name] = (f"getPriceBySpec answered {asked[0]:g} for purchaseLength 1 and {asked[1]:g} for 2 (months):"
                            " a total for the length asked, not an hourly rate; not recorded")
            continue
        quote = {"onDemandPerHour": asked[0], "currency": CURRENCY[site], "caveat": caveat}
        if spot:
            try:
                body = json.dumps({"spec": name, "zoneName": zone, "purchaseCount": 1})
                bid = bceapi.body(client._send_request(http_methods.POST, b"/instance/bidPrice", body,
                                                       params={b"clientToken": generate_client_token()}))
                per = bid.get("per_money", bid.get("perMoney"))
                quote["spotPerHour"] = None if per in (None, "") else float(per)
            except Exception as error:  # spot is optional: the on-demand price stands alone
                quote["spotPerHour"] = None
                quote["spotNote"] = f"bidPrice failed: {_why('bidPrice', error)}"
        result[name] = quote
    return result
