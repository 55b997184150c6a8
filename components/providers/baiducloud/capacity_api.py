"""Baidu AI Cloud's read-only capacity call for `gpu-training check` (tools/runlib/check.py): the zones
where a BCC spec can be bought (GET /v1/instance/flavorZones, bce-python-sdk 0.9.79 bcc_client.py:5729
list_type_zones). bce-python-sdk's BCC client has no quota call: quotas are not checked (capacity.yaml).
"""
from __future__ import annotations

from typing import Mapping, Optional


def offers(region: str, zones: list[str], types: list[str], spot: bool, endpoint: Optional[str], creds) -> dict:
    from components.providers.baiducloud import bceapi

    # The endpoint: bcc.<region>.baidubce.com, or BAIDUCLOUD_ENDPOINT (bceapi.endpoint), as for `pulumi up`.
    client = bceapi.client("bcc", bceapi.Settings(region, attempts=2, first_wait_s=0.2))
    found = {}
    for name in types:
        got = bceapi.body(bceapi.call(bceapi.Settings(region, attempts=2, first_wait_s=0.2), name, "ListTypeZones",
                                      lambda n=name: client.list_type_zones(spec=n, product_type="postpay")))
        for zone in got.get("zone_names") or []:
            found[(zone, name)] = "on sale"
    # flavorZones lists the zones where the spec can be bought: a zone it leaves out is not on sale there
    # (sold out or never offered: the answer does not say which).
    return {(z, t): found.get((z, t), "not on sale") for z in zones for t in types}


quotas = None  # no quota call in bce-python-sdk 0.9.79's BCC client

SOURCE: Mapping[str, str] = {
    "offers": "BCC flavorZones (bce-python-sdk 0.9.79 bcc_client.py:5729 list_type_zones)",
}
