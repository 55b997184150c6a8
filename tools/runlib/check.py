"""`gpu-training check [STACK]`: can the credentials in the environment use each cloud, and, for a stack,
are its instance types on sale in its zones right now and do the account's quotas hold what it needs.

Read-only calls only, each cloud's own (components/providers/<cloud>/capacity_api.py: Alibaba
DescribeAvailableResource and DescribeAccountAttributes, Tencent DescribeZoneInstanceConfigInfos and
DescribeAccountQuota, Huawei ListFlavors and ShowServerLimits, Baidu flavorZones). Without a stack, each
cloud with credentials set is asked one quota (or sale) question in its first declared region: an answer
proves the keys work; a refusal is the reason. Kubernetes (ACK) and PAI-DLC use Alibaba's keys, ModelArts
Huawei's plus HW_PROJECT_ID. Rows are (what, ok, detail): ok None is "not checked" (said why).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping, Optional

from components import providers

OK, PROBLEM, NOT_CHECKED = True, False, None


@dataclass
class Row:
    what: str
    ok: Optional[bool]
    detail: str


# What the four SDKs' connection errors say (urllib3's, requests' and the OS's words), and the plain reason.
NETWORK_REASONS = (
    (("NameResolutionError", "Name or service not known", "Temporary failure in name resolution",
      "nodename nor servname", "getaddrinfo failed"),
     "its name does not resolve (DNS): no network here, or a proxy is needed (HTTPS_PROXY)"),
    (("Connection refused",), "connection refused"),
    (("ConnectTimeout", "timed out", "Read timed out"), "no answer in time (a firewall, or no route to it)"),
    (("Network is unreachable", "No route to host"), "no route to it (no network here)"),
)


def network_reason(text: str) -> Optional[str]:
    """'cannot reach HOST[:PORT]: why' when an SDK's error is a connection failure, else None. The SDKs wrap
    urllib3's error in their own (Alibaba's RetryError, Tencent's ClientNetworkError, Huawei's
    ConnectionException, Baidu's ConnectionError) and their text runs to hundreds of characters."""
    for words, why in NETWORK_REASONS:
        if any(word in text for word in words):
            found = re.search(r"host=\\?'([^'\\]+)\\?'(?:, port=(\d+))?", text)
            where = (found.group(1) + (f":{found.group(2)}" if found.group(2) else "")) if found else "the API"
            return f"cannot reach {where}: {why}"
    return None


def _why(error: Exception) -> str:
    if isinstance(error, ModuleNotFoundError):
        return (f"the cloud's SDK is not installed ({error.name}): pip install 'gpu-training[check]'"
                " (in a clone: pip install -e '.[check]')")
    code = getattr(error, "code", None) or getattr(error, "error_code", None)
    message = getattr(error, "message", None) or getattr(error, "error_msg", None) or str(error)
    text = f"{code}: {message}" if code and str(code) not in str(message) else str(message)
    return network_reason(f"{text} {error!r}") or " ".join(text.split())[:300]


def capacity_clouds() -> list[str]:
    return providers.with_module("capacity_api")


def credentials(cloud: str, env: Mapping[str, str]):
    from tools.runlib.credentials import MissingCredentials, from_env

    try:
        return from_env(cloud, env)
    except MissingCredentials:
        return None


def missing_variables(env: Mapping[str, str]) -> list[str]:
    """One line per cloud (and platform) whose variables are not set: what to export, in one pass."""
    from tools.runlib.credentials import variables

    lines = []
    for cloud in providers.names():
        key, secret, token = variables(cloud)
        if not env.get(key) or not env.get(secret):
            lines.append(f"{providers.profile(cloud).display_name}: export {key}=... {secret}=..."
                         f" ({token} too for temporary keys)")
    if credentials("huaweicloud", env) is not None and not env.get("HW_PROJECT_ID"):
        lines.append("Huawei Cloud (ECS checks, ModelArts): export HW_PROJECT_ID=... (the region's project id)")
    return lines


def first_region(cloud: str) -> Optional[str]:
    """The region to try a cloud's keys in: the first shipped stack's on that cloud, else its first declared."""
    from components.providers import regions
    from tools.stackfiles import load_stack_config, stack_names

    key = providers.profile(cloud).region_key
    for stack in stack_names():
        try:
            config = load_stack_config(stack)
        except Exception:  # a broken stack file is `preview`'s to report, not this probe's
            continue
        if config.get("gpu-training:provider", "alicloud") == cloud and config.get(key):
            return str(config[key])
    table = regions.load(cloud)
    return sorted(table.regions)[0] if table and table.regions else None


def cloud_rows(env: Mapping[str, str], endpoints: Mapping[str, str]) -> list[Row]:
    """Which clouds and targets the credentials can use, each with its reason."""
    rows = []
    usable = {}
    for cloud in providers.names():
        name = providers.profile(cloud).display_name
        creds = credentials(cloud, env)
        if creds is None:
            rows.append(Row(f"{name} VMs", PROBLEM, "no credentials in the environment"))
            usable[cloud] = False
            continue
        api = providers.module(cloud, "capacity_api") if cloud in capacity_clouds() else None
        region = first_region(cloud)
        if api is None or region is None:
            rows.append(Row(f"{name} VMs", NOT_CHECKED, "credentials set; no read-only call to try them"))
            usable[cloud] = None
            continue
        try:
            if getattr(api, "quotas", None):
                api.quotas(region, False, endpoints.get(cloud), creds)
            else:  # one sale question about a catalog type: the call is made, its answer is not judged
                from components.catalog import load_catalog
                api.offers(region, [], [load_catalog(cloud).instances[0].name], False, endpoints.get(cloud), creds)
            rows.append(Row(f"{name} VMs", OK, f"credentials work ({region} answered)"))
            usable[cloud] = True
        except Exception as error:  # the SDK's own errors: the reason is the cloud's answer
            rows.append(Row(f"{name} VMs", PROBLEM, f"{region}: {_why(error)}"))
            usable[cloud] = False
    for what, cloud, extra in (("Kubernetes (ACK)", "alicloud", None), ("PAI-DLC", "alicloud", None),
                               ("ModelArts", "huaweicloud", "HW_PROJECT_ID")):
        if not usable.get(cloud) and usable.get(cloud) is not None:
            rows.append(Row(what, PROBLEM, f"needs {providers.profile(cloud).display_name}'s credentials"))
        elif extra and not env.get(extra):
            rows.append(Row(what, PROBLEM, f"set {extra} too"))
        else:
            rows.append(Row(what, usable.get(cloud), f"with {providers.profile(cloud).display_name}'s credentials"))
    return rows


def needs(spec) -> dict[str, int]:
    """What the plan takes from the quotas: instances, vCPUs, public IPs (one per node with public egress),
    and data disk GiB (none of the calls answers a disk quota: the row says it is not checked)."""
    out = {"instances": spec.nodes, "vcpus": spec.nodes * spec.instance.vcpus}
    if spec.public_egress:
        out["publicIps"] = spec.nodes
    out["diskGiB"] = spec.nodes * spec.data_disk.size_gb
    return out


def stack_rows(spec, env: Mapping[str, str], endpoint: Optional[str]) -> list[Row]:
    """For a stack: each (zone, type) it may use, on sale or not, then each quota against the plan's needs."""
    from components.providers import regions

    from components import targets

    cloud = spec.provider
    if targets.of(spec).kind == "platform":  # the target seam (components/targets)
        return [Row(f"{spec.platform.offer.display_name} flavor {spec.instance.name}", NOT_CHECKED,
                    "a platform job's flavors are the platform's to place: no read-only stock call for them is used"
                    " (the credentials are checked by `gpu-training check` without a stack)")]
    creds = credentials(cloud, env)
    api = providers.module(cloud, "capacity_api")
    if spec.zone:
        zones = list(dict.fromkeys([spec.zone, *spec.failover.zones, *(spec.spot_zones if spec.spot else ())]))
    else:
        table = regions.load(cloud)
        zones = list((table.regions.get(spec.region) or ()) if table else ())
    types = list(dict.fromkeys([spec.instance.name, *spec.failover.instance_types,
                                *(r.name for r in spec.pool_types if spec.spot)]))
    rows = []
    try:
        offered = api.offers(spec.region, zones, types, bool(spec.spot), endpoint, creds)
    except Exception as error:
        return [Row(f"on sale in {spec.region}", PROBLEM, f"{api.SOURCE['offers']}: {_why(error)}")]
    for (zone, name), state in offered.items():
        first = name == spec.instance.name and zone == (spec.zone or zone)
        rows.append(Row(f"{name} in {zone}" + (" (the stack's)" if first and spec.zone else ""),
                        OK if state == "on sale" else (PROBLEM if first else NOT_CHECKED), state))
    if not spec.zone:  # no zone pinned: the stack needs one zone selling its type
        selling = [z for (z, n), s in offered.items() if n == spec.instance.name and s == "on sale"]
        rows.append(Row(f"{spec.instance.name} somewhere in {spec.region}", OK if selling else PROBLEM,
                        f"on sale in {', '.join(selling)}" if selling else "on sale in no zone of the region"))
    if not getattr(api, "quotas", None):
        rows.append(Row("quotas", NOT_CHECKED, f"{providers.profile(cloud).display_name} offers no quota call"
                                               " in its SDK (capacity_api.py)"))
        return rows
    try:
        held = api.quotas(spec.region, bool(spec.spot), endpoint, creds)
    except Exception as error:
        return rows + [Row("quotas", PROBLEM, f"{api.SOURCE['quotas']}: {_why(error)}")]
    for name, need in needs(spec).items():
        quota = held.get(name)
        if not quota or quota.get("limit") is None:
            rows.append(Row(f"quota: {name}", NOT_CHECKED, f"needs {need}; the cloud's answer has no such quota"))
            continue
        left = quota["limit"] - (quota.get("used") or 0)
        rows.append(Row(f"quota: {name}", OK if left >= need else PROBLEM,
                        f"needs {need}; {left:g} left of {quota['limit']:g}"
                        + ("" if left >= need else ": raise it in the cloud's quota centre before `up`")))
    return rows


def verdict(rows: list[Row]) -> tuple[int, str]:
    """(exit code, one line): 0 when no row is a problem."""
    problems = [r for r in rows if r.ok is PROBLEM]
    if not problems:
        return 0, "all well"
    return 1, "; ".join(f"{r.what}: {r.detail}" for r in problems)


def render(console, title: str, rows: list[Row]) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in ("check", "result", "detail"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(r.what, {OK: "ok", PROBLEM: "PROBLEM", NOT_CHECKED: "not checked"}[r.ok], r.detail)
    console.print(table)


def environment() -> dict[str, str]:
    return dict(os.environ)
