#!/usr/bin/env python3
"""Catalog prices: show them, or refresh them from the providers' price APIs.

  prices.py show [--provider P] [--max-age-days 30]
  prices.py refresh --provider alicloud --region cn-hangzhou [--spot]
  prices.py refresh --provider tencentcloud --region ap-shanghai --zone ap-shanghai-2 --image img-xxxx --spot
  prices.py refresh --provider huaweicloud --region cn-north-4 --project-id 0123abcd...
  prices.py refresh --provider baiducloud --region bj --zone cn-bj-d --spot
  prices.py refresh --provider alicloud --region cn-hangzhou --catalog /tmp/my-catalog.yaml --dry-run

refresh asks the provider's API for every instance type of the catalog (or --types) and writes the
hourly pay-as-you-go price into the catalog row with its date, region, currency and source (the
API); with --spot also the cloud's spot price where its API gives one. Rows the API cannot price
stay as they were and are listed. Each registered provider with a `pricing.py` in its package has a
price API client (Alibaba: DescribePrice + DescribeSpotPriceHistory; Tencent:
InquiryPriceRunInstances, POSTPAID_BY_HOUR and SPOTPAID; Huawei: BSS ListOnDemandResourceRatings, no
spot price API; Baidu: BCC getPriceBySpec + bidPrice); the catalog is the package's catalog.yaml.
Credentials are read from the environment only. --endpoint points the SDK at another API endpoint
(a regional one, or a local stand-in in tests). show marks a price older than --max-age-days as stale.

Exit status: 0 prices written (or shown), 1 the API priced nothing (catalog unchanged), 2 bad
arguments, missing credentials or a missing catalog.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

import yaml

from components import catalog, clock, providers
from components.tiers import tiers
from tools import catalog_prices, cliargs
from tools.cliargs import FAILED, OK, USAGE


def pricing_providers() -> list[str]:
    """The registered providers whose package has a price API client (pricing.py)."""
    return providers.with_module("pricing")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser, show, refresh = cliargs.show_and_refresh(
        "scripts/prices.py", __doc__, show_help="print the catalog prices with their date and source",
        refresh_help="fetch prices from the provider's API into the catalog")
    show.add_argument("--provider", help=f"one of: {', '.join(providers.names())} (default: all)")
    show.add_argument("--catalog", type=Path, help="a catalog file (default: the provider's)")
    show.add_argument("--max-age-days", type=int, default=catalog.STALE_AFTER_DAYS,
                      help=f"a price read longer ago is shown as stale (default {catalog.STALE_AFTER_DAYS})")
    refresh.add_argument("--provider", required=True, help=f"one of: {', '.join(pricing_providers())}")
    refresh.add_argument("--region", required=True, help="the region to price, e.g. cn-hangzhou")
    refresh.add_argument("--zone", help="availability zone (needed where the price API prices a launch in a zone: "
                         + _needed_by("zone") + ")")
    refresh.add_argument("--image", help="image id to price a launch with (needed by: " + _needed_by("image") + ")")
    refresh.add_argument("--project-id", dest="project_id", help="a project id of the account (needed by: "
                         + _needed_by("project_id") + ")")
    refresh.add_argument("--types", help="comma-separated instance types (default: every catalog row)")
    refresh.add_argument("--spot", action="store_true", help="also record the latest spot price (spotPerHour)")
    refresh.add_argument("--disks", action="store_true", help="also price the data disk kinds the tiers use, per GiB-hour"
                         " (where the provider's pricing.py has fetch_disks: " + (", ".join(
                             p for p in pricing_providers() if hasattr(providers.module(p, "pricing"), "fetch_disks"))
                             or "none") + ")")
    refresh.add_argument("--endpoint", help="API endpoint URL, e.g. https://ecs.cn-hangzhou.aliyuncs.com")
    refresh.add_argument("--catalog", type=Path, help="the catalog file to update (default: the provider's)")
    refresh.add_argument("--dry-run", action="store_true", help="fetch and print, write nothing")
    return parser.parse_args(argv)


def _needs(provider: str) -> tuple[str, ...]:
    return providers.module(provider, "pricing").NEEDS


def _needed_by(option: str) -> str:
    return ", ".join(p for p in pricing_providers() if option in _needs(p)) or "none"


OPTION_EXAMPLES = {"zone": "--zone ap-shanghai-2", "image": "--image img-xxxxxxxx", "project_id": "--project-id 0123abcd"}


def catalog_path(provider: str, override: Path | None) -> Path:
    return override if override is not None else providers.catalog_path(provider)


def today() -> str:
    return clock.now().strftime("%Y-%m-%d")


def fail(message: str, code: int = USAGE) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def load_rows(path: Path) -> tuple[str, dict]:
    text = path.read_text(encoding="utf-8")
    document = yaml.safe_load(text) or {}
    if not isinstance(document, dict) or not isinstance(document.get("instances"), list):
        raise ValueError(f"{path} has no `instances:` list")
    return text, document


def show(args: argparse.Namespace) -> int:
    if args.provider and args.provider not in providers.names():
        return fail(f"--provider {args.provider!r} is not a registered provider; allowed: {', '.join(providers.names())}")
    names = [args.provider] if args.provider else providers.names()
    for name in names:
        path = catalog_path(name, args.catalog)
        if not path.is_file():
            return fail(f"no catalog for {name!r}: {path} does not exist")
        _, document = load_rows(path)
        print(f"{name} ({path}):")
        now = clock.now().date()
        unknown = 0
        for row in document["instances"]:
            price = row.get("price") or {}
            value = price.get("onDemandPerHour")
            currency = price.get("currency", document.get("currency"))
            if value is None:
                unknown += 1
                print(f"  {row['type']:<32} unknown")
                continue
            spot = price.get("spotPerHour")
            spot_text = "spot unknown" if spot is None else f"spot {spot:g}"
            age = catalog.Price(value, currency, price.get("region"), price.get("date"), price.get("source")).age_days(now)
            stale = f"  STALE ({age} days old)" if age is not None and age > args.max_age_days else ""
            caveat = f"; {price['caveat']}" if price.get("caveat") else ""
            print(f"  {row['type']:<32} {value:g} {currency}/h, {spot_text}  ({price.get('region')},"
                  f" {price.get('date')}, {price.get('source')}{caveat}){stale}")
        if unknown:
            print(f"  {unknown} unknown: {catalog.refresh_command(name)} fills them")
    return OK


def refresh(args: argparse.Namespace) -> int:
    available = pricing_providers()
    if args.provider not in available:
        return fail(f"--provider {args.provider!r} has no price API support; allowed: {', '.join(available)}")
    module = providers.module(args.provider, "pricing")
    path = catalog_path(args.provider, args.catalog)
    if not path.is_file():
        return fail(f"no catalog for {args.provider}: {path} does not exist; add the catalog first"
                    " (rows with type, gpu, gpuCount, ... and price: null), or pass --catalog PATH")
    try:
        text, document = load_rows(path)
    except (ValueError, yaml.YAMLError) as error:
        return fail(str(error))
    catalog_types = [row["type"] for row in document["instances"]]
    types = catalog_types
    if args.types:
        types = [t.strip() for t in args.types.split(",") if t.strip()]
        unknown = [t for t in types if t not in catalog_types]
        if unknown:
            return fail(f"--types: {', '.join(unknown)} not in {path.name}; catalog types: {', '.join(catalog_types)}")
    for option in module.NEEDS:
        if not getattr(args, option):
            flag = "--" + option.replace("_", "-")
            return fail(f"{flag} is required for {module.DISPLAY}: its price API needs it"
                        f" (e.g. {OPTION_EXAMPLES[option]})")
    if args.endpoint:
        parts = urlsplit(args.endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return fail(f"--endpoint {args.endpoint!r} is not an http(s) URL, e.g. https://ecs.cn-hangzhou.aliyuncs.com")
    # The cloud's SDK may read other names than the convention every command uses (docs/cli.md,
    # "Credentials": ALICLOUD_ACCESS_KEY for Alibaba's Tea SDK's ALIBABA_CLOUD_ACCESS_KEY_ID): fill them.
    from tools.runlib.credentials import use_sdk_names

    convention = use_sdk_names(args.provider)
    missing = module.missing_credentials(os.environ)
    if missing:
        return fail(f"no {module.DISPLAY} credentials in the environment: {convention}{missing}")

    try:
        answers = module.fetch(types, region=args.region, zone=args.zone, image=args.image, endpoint=args.endpoint,
                               spot=args.spot, env=os.environ, project_id=args.project_id)
    except ModuleNotFoundError as error:  # the cloud SDKs that sign price requests are an extra, not the runtime
        return fail(f"{module.DISPLAY}'s price API is called through {error.name}, which is not installed:"
                    " pip install -e '.[prices]' (pyproject.toml)")
    source = module.source(args.endpoint, args.region)
    quotes = {name: catalog_prices.Quote(name, answer["onDemandPerHour"], answer["currency"], args.region, source,
                                         answer.get("spotPerHour"), answer.get("caveat"))
              for name, answer in answers.items() if isinstance(answer, dict)}
    for name, answer in answers.items():
        if isinstance(answer, dict) and answer.get("spotNote"):
            print(f"no spot price for {name}: {answer['spotNote']}", file=sys.stderr)
    failures = {name: answer for name, answer in answers.items() if not isinstance(answer, dict)}
    for name, why in failures.items():
        print(f"no price for {name}: {why}", file=sys.stderr)
    if not quotes:
        return fail(f"the {module.DISPLAY} API priced none of {len(types)} types; {path} is unchanged", FAILED)
    currency = document.get("currency")
    for quote in quotes.values():
        if currency and quote.currency != currency:
            print(f"warning: {quote.instance_type} is priced in {quote.currency}, the catalog's currency is {currency}",
                  file=sys.stderr)
    date = today()
    try:
        edited = catalog_prices.edit(text, quotes, date)
    except catalog_prices.CatalogEditError as error:
        return fail(str(error), FAILED)
    for name, quote in quotes.items():
        spot = "" if quote.spot_per_hour is None else f", spot {quote.spot_per_hour:g}"
        print(f"{name:<28} {quote.on_demand_per_hour:g} {quote.currency}/h{spot}  ({args.region}, {date})")
    if args.dry_run:
        print(f"dry run: {path} not written")
        return OK
    catalog_prices.write(path, edited)
    print(f"wrote {len(quotes)} price(s) to {path}; {len(failures)} type(s) without a price")
    if args.disks:
        return refresh_disks(args, module, date)
    return OK


def disk_kinds(provider: str) -> list[tuple[str, Optional[str]]]:
    """The data disk kinds (category, performance level) the provider gives the guide's tiers."""
    profile = providers.profile(provider)
    kinds = [profile.disks.data_disk(t.disk_class, t.data_disk_default_gb, None) for t in tiers().values()]
    return list(dict.fromkeys((disk.category, disk.performance_level) for disk in kinds))


def refresh_disks(args: argparse.Namespace, module, date: str) -> int:
    if not hasattr(module, "fetch_disks"):
        print(f"no disk prices: {module.DISPLAY}'s pricing.py has no fetch_disks; disks stay unpriced", file=sys.stderr)
        return OK
    answers = module.fetch_disks(disk_kinds(args.provider), region=args.region, zone=args.zone,
                                 endpoint=args.endpoint, env=os.environ)
    rows = []
    for (category, level), answer in answers.items():
        if not isinstance(answer, dict):
            print(f"no disk price for {category} {level or ''}: {answer}".replace("  ", " "), file=sys.stderr)
            continue
        rows.append({"category": category, "performanceLevel": level, "perGiBHour": round(answer["perGiBHour"], 8),
                     "currency": answer["currency"], "region": args.region, "date": date,
                     "source": module.source(args.endpoint, args.region) + " ResourceType=disk"})
    if not rows:
        return fail(f"the {module.DISPLAY} API priced no disk kind", FAILED)
    path = (args.catalog.parent / f"{args.provider}.disks.yaml") if args.catalog else catalog.disk_prices_path(args.provider)
    text = (f"# Data disk prices per GiB-hour, written by scripts/prices.py refresh --disks on {date}; a refresh\n"
            "# rewrites this file. Each row names the API it was read from.\n"
            + yaml.safe_dump({"provider": args.provider, "disks": rows}, sort_keys=False))
    if args.dry_run:
        print(text)
        return OK
    catalog_prices.write(path, text)
    for row in rows:
        print(f"disk {row['category']} {row['performanceLevel'] or ''}: {row['perGiBHour']:g} {row['currency']}/GiB-h")
    print(f"wrote {len(rows)} disk price(s) to {path}")
    return OK


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return show(args) if args.command == "show" else refresh(args)
    except OSError as error:
        return fail(f"{error}", FAILED)


if __name__ == "__main__":
    sys.exit(main())
