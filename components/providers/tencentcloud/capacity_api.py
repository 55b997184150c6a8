"""Tencent Cloud's read-only capacity calls for `gpu-training check` (tools/runlib/check.py): whether a
type is on sale in a zone now (CVM DescribeZoneInstanceConfigInfos: InstanceTypeQuotaSet[].Status SELL or
SOLD_OUT) and the account's instance quota per zone (DescribeAccountQuota: PostPaidQuotaSet /
SpotPaidQuotaSet). Through tencentcloud-sdk-python-cvm 3.1.178's request models.
"""
from __future__ import annotations

from typing import Mapping, Optional

from components.capacity import of
from components.providers import apikeys


def _client(region: str, endpoint: Optional[str], creds):
    from components.providers.tencentcloud.pricing import CREDENTIALS, TOKEN, cvm_client as client

    return client(region, endpoint, apikeys.as_env(creds, CREDENTIALS, TOKEN))


def offers(region: str, zones: list[str], types: list[str], spot: bool, endpoint: Optional[str], creds) -> dict:
    from tencentcloud.cvm.v20170312 import models

    statuses = of("tencentcloud")
    request = models.DescribeZoneInstanceConfigInfosRequest()
    request.Filters = [_filter("zone", zones), _filter("instance-type", types),
                       _filter("instance-charge-type", ["SPOTPAID" if spot else "POSTPAID_BY_HOUR"])]
    answer = _client(region, endpoint, creds).DescribeZoneInstanceConfigInfos(request)
    found = {}
    for item in answer.InstanceTypeQuotaSet or []:
        state = item.Status or ""
        found[(item.Zone, item.InstanceType)] = ("on sale" if state in statuses.available
                                                 else "sold out" if state in statuses.sold_out else state)
    return {(z, t): found.get((z, t), "not offered") for z in zones for t in types}


def _filter(name: str, values: list[str]):
    from tencentcloud.cvm.v20170312 import models

    item = models.Filter()
    item.Name, item.Values = name, list(values)
    return item


def quotas(region: str, spot: bool, endpoint: Optional[str], creds, zones: Optional[list[str]] = None) -> dict:
    """{"instances": {"limit", "used"}}: the pay-as-you-go (or spot) instance quota, summed over `zones`."""
    from tencentcloud.cvm.v20170312 import models

    answer = _client(region, endpoint, creds).DescribeAccountQuota(models.DescribeAccountQuotaRequest())
    account = answer.AccountQuotaOverview.AccountQuota
    rows = (account.SpotPaidQuotaSet if spot else account.PostPaidQuotaSet) or []
    rows = [r for r in rows if zones is None or r.Zone in zones]
    if not rows:
        return {"instances": {"limit": None, "used": None}}
    return {"instances": {"limit": float(sum(r.TotalQuota or 0 for r in rows)),
                          "used": float(sum(r.UsedQuota or 0 for r in rows))}}


SOURCE: Mapping[str, str] = {
    "offers": "CVM DescribeZoneInstanceConfigInfos (tencentcloud-sdk-python-cvm 3.1.178)",
    "quotas": "CVM DescribeAccountQuota (PostPaidQuotaSet / SpotPaidQuotaSet)",
}
