#!/usr/bin/env python3
"""GPU prices: show the catalog with its dated prices, or refresh them, with or without a cloud account.

  gpu-training prices show   # every cloud: each type at its cheapest listed region
  gpu-training prices show --gpu A100-80G --all-regions   # one row per type and region
  gpu-training prices show --provider alicloud --region cn-hangzhou --json
  gpu-training prices refresh --provider alicloud   # public price JSON, every region (no account)
  gpu-training prices refresh --provider tencentcloud --region ap-guangzhou   # purchase page endpoint, on-demand and spot
  gpu-training prices refresh --provider huaweicloud --region cn-north-4   # price calculator (no account)
  gpu-training prices refresh --provider alicloud --region cn-hangzhou --spot --signed   # DescribePrice with credentials
  gpu-training prices refresh --provider baiducloud --region bj --zone cn-bj-d --spot   # signed BCC API (no public feed)

show prints, per instance type, the GPU model and count, GPU memory, vCPU, RAM, the region, the on-demand
and spot price per hour (spot: the cloud's figure where a refresh read one, else the cloud's documented
range), the currency, the date and the source; a price older than --max-age-days is marked old, never
hidden. A type has a price only in the regions a source lists it in: never another region's.

refresh without credentials (or with --public) reads the cloud's public price feed (Alibaba: the price JSON
the ECS pricing page loads; Tencent: the purchase page's price endpoint; Huawei: the price calculator) and
writes one dated snapshot into the provider's prices.yaml (or --prices-file), replacing older figures of the
regions it read. With the cloud's credentials in the environment (or --signed) it asks the signed price API
for the account's own price instead and writes it into the catalog row (Alibaba: DescribePrice +
DescribeSpotPriceHistory; Tencent: InquiryPriceRunInstances; Huawei: BSS ListOnDemandResourceRatings; Baidu:
BCC getPriceBySpec + bidPrice). Neither path converts a currency: each figure keeps the site it was read from.
--endpoint points either path at another host (a local stand-in in tests).

Exit status: 0 prices written (or shown), 1 the API or feed priced nothing or answered in a changed shape
(nothing written), 2 bad arguments, missing credentials for --signed, or a missing catalog.
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


def public_providers() -> list[str]:
    """The registered providers with a public price feed (public_prices.py): refreshed without an account."""
    return providers.with_module("public_prices")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser, show, refresh = cliargs.show_and_refresh(
        "scripts/prices.py", __doc__, show_help="the GPU catalog with dated prices, filterable by GPU, cloud, region",
        refresh_help="fetch prices from the cloud's public feed (no account) or its signed price API")
    show.add_argument("--provider", help=f"one of: {', '.join(providers.names())} (default: all)")
    show.add_argument("--gpu", help="only this GPU model, e.g. A100-80G, T4")
    show.add_argument("--region", help="the price in this region (a type not listed there shows as unknown, and why)")
    show.add_argument("--all-regions", action="store_true", help="one row per type and region it is listed in"
                      " (default: each type at its cheapest listed region, with how many regions list it)")
    show.add_argument("--json", action="store_true", help="one JSON list of the rows")
    show.add_argument("--catalog", type=Path, help="a catalog file (default: the provider's)")
    show.add_argument("--max-age-days", type=int, default=catalog.STALE_AFTER_DAYS,
                      help=f"a price dated longer ago is marked old (default {catalog.STALE_AFTER_DAYS})")
    refresh.add_argument("--provider", required=True, help=f"one of: {', '.join(pricing_providers())}")
    refresh.add_argument("--region", help="the region to price, e.g. cn-hangzhou (the signed APIs and the Tencent and"
                         " Huawei feeds need it; Alibaba's public JSON has every region and reads them all without it)")
    how = refresh.add_mutually_exclusive_group()
    how.add_argument("--public", action="store_true", help="read the public feed even with credentials set"
                     f" ({', '.join(public_providers())})")
    how.add_argument("--signed", action="store_true", help="ask the signed price API (credentials required)")
    refresh.add_argument("--site", choices=("china", "intl"), default="china",
                         help="the site whose price book is read (public feed) or the account belongs to (signed Tencent"
                              " and Baidu answers carry no currency): china = CNY, intl = USD (default china)")
    refresh.add_argument("--feed-version", help="Alibaba: the public price JSON's version (default: found on the pricing"
                         " page; required with --site intl)")
    refresh.add_argument("--prices-file", type=Path, help="the price book a public refresh writes (default: the"
                         " provider's prices.yaml in a clone; installed from a wheel, a copy in ~/.config/gpu-training/"
                         "catalogs or $GPU_TRAINING_CATALOGS, which every command reads first)")
    refresh.add_argument("--zone", help="availability zone (needed where the price API prices a launch in a zone: "
                         + _needed_by("zone") + "; Tencent's public feed: only this zone)")
    refresh.add_argument("--image", help="image id to price a launch with (needed by: " + _needed_by("image") + ")")
    refresh.add_argument("--project-id", dest="project_id", help="a project id of the account (needed by: "
                         + _needed_by("project_id") + ")")
    refresh.add_argument("--types", help="comma-separated instance types (default: every catalog row)")
    refresh.add_argument("--spot", action="store_true", help="signed API: also record the latest spot price"
                         " (the Tencent public feed always reads spot)")
    refresh.add_argument("--disks", action="store_true", help="also price the data disk kinds the tiers use, per GiB-hour"
                         " (signed API, where the provider's pricing.py has fetch_disks: " + (", ".join(
                             p for p in pricing_providers() if hasattr(providers.module(p, "pricing"), "fetch_disks"))
                             or "none") + ")")
    refresh.add_argument("--endpoint", help="API or feed host URL, e.g. https://ecs.cn-hangzhou.aliyuncs.com")
    refresh.add_argument("--catalog", type=Path, help="the catalog file a signed refresh updates (default: the provider's;"
                         " installed from a wheel, a copy in ~/.config/gpu-training/catalogs)")
    refresh.add_argument("--dry-run", action="store_true", help="fetch and print, write nothing")
    return parser.parse_args(argv)


def _needs(provider: str) -> tuple[str, ...]:
    return providers.module(provider, "pricing").NEEDS


def _needed_by(option: str) -> str:
    return ", ".join(p for p in pricing_providers() if option in _needs(p)) or "none"


OPTION_EXAMPLES = {"zone": "--zone ap-shanghai-2", "image": "--image img-xxxxxxxx", "project_id": "--project-id 0123abcd"}


def catalog_path(provider: str, override: Path | None) -> tuple[Path, Path]:
    """(the catalog a signed refresh writes, the one it edits): --catalog, else the provider's (a wheel install's own
    copy: providers.catalogs_folder)."""
    if override is not None:
        return override, override
    return providers.refresh_target(f"{provider}.yaml", providers.package_dir(provider) / "catalog.yaml")


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
    from tools import price_catalog

    if args.provider and args.provider not in providers.names():
        return fail(f"--provider {args.provider!r} is not a registered provider; allowed: {', '.join(providers.names())}")
    names = [args.provider] if args.provider else price_catalog.pricing_providers()
    if args.catalog is not None and not args.catalog.is_file():
        return fail(f"--catalog {args.catalog}: no such file")
    if args.catalog is not None and not args.provider:
        return fail("--catalog needs --provider (the cloud whose catalog it is)")
    for name in names:
        if not providers.catalog_path(name).is_file():
            return fail(f"no catalog for {name!r}: {providers.catalog_path(name)} does not exist")
    if args.gpu:
        from components.tiers import gpus

        known = sorted(gpus())
        match = next((g for g in known if g.lower() == args.gpu.lower()), None)
        if match is None:
            return fail(f"--gpu {args.gpu!r} is not a GPU model of the catalogs; allowed: {', '.join(known)}")
    if args.region:
        from components.providers import regions as region_tables

        tables = [t for t in (region_tables.load(n) for n in names) if t is not None]
        if tables and not any(args.region in t.regions for t in tables):
            listed = sorted({r for t in tables for r in t.regions})
            return fail(f"--region {args.region!r} is not a region of {', '.join(names)}; known: {', '.join(listed)}")
    rows = price_catalog.every_offer(names, gpu=args.gpu, region=args.region, every_region=args.all_regions,
                                     catalog_file=args.catalog)
    today = clock.now().date()
    if args.json:
        import json

        print(json.dumps([offer.as_dict(today, args.max_age_days) for offer in rows], indent=2, ensure_ascii=False))
        return OK
    render_catalog(rows, today, args)
    return OK


def render_catalog(rows, today, args) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # piped: keep the rows whole
        console = Console(width=200)
    sources: dict[str, int] = {}
    table = Table(title="GPU instance types and their list prices per hour"
                        + (f" in {args.region}" if args.region else "")
                        + ("" if args.region or args.all_regions else " (each at its cheapest listed region)"))
    for column in ("cloud", "GPU", "GPUs", "GPU mem", "vCPU", "RAM GiB", "instance type", "region", "on-demand/h",
                   "spot/h", "cur", "date", "src"):
        table.add_column(column, justify="right" if column in ("GPUs", "GPU mem", "vCPU", "RAM GiB", "on-demand/h")
                         else "left", no_wrap=column in ("instance type", "date"))
    unknown = {}
    for offer in rows:
        row, price = offer.row, offer.price
        region = offer.region or "-"
        if not args.region and not args.all_regions and offer.regions_listed > 1:
            region += f" (+{offer.regions_listed - 1})"
        if price.known:
            key = f"{price.source} | {price.site or ''} | {price.basis or ''} | {price.url or ''}"
            index = sources.setdefault(key, len(sources) + 1)
            age = price.age_days(today)
            date = f"{price.date}" + (" old" if age is not None and age > args.max_age_days else "")
            cells = (f"{price.on_demand_per_hour:,.2f}", offer.spot_text(), price.currency, date, f"[{index}]")
        else:
            unknown.setdefault(offer.provider, []).append(offer)
            cells = ("unknown", "-", "", "", "")
        table.add_row(offer.provider, row.gpu, str(row.gpu_count), f"{row.gpu_memory_gb} GB", str(row.vcpus),
                      f"{row.memory_gib:g}", row.name, region, *cells)
    console.print(table)
    for key, index in sources.items():
        source, site, basis, url = key.split(" | ")
        console.print(f"[{index}] {source}; {site}; {basis}" + (f"; {url}" if url else ""), highlight=False,
                      soft_wrap=True)
    console.print("spot: the cloud's figure where a refresh read one; '(range)': the cloud's documented spot range"
                  " of the on-demand price. old: dated more than"
                  f" {args.max_age_days} days ago, shown as it is: the date says how old.", highlight=False)
    for provider, offers in unknown.items():
        whys = sorted({o.price.why_unknown or "no price" for o in offers})
        check = next((o.price.check for o in offers if o.price.check), None)
        console.print(f"{provider}: {len(offers)} unknown: " + "; ".join(whys[:3]) + ("; ..." if len(whys) > 3 else ""),
                      highlight=False, soft_wrap=True)
        console.print(f"  {catalog.refresh_command(provider, args.region)} fills them"
                      + (f"; today's prices: {check}" if check else ""), highlight=False, soft_wrap=True)


def refresh(args: argparse.Namespace) -> int:
    available = sorted(set(pricing_providers()) | set(public_providers()))
    if args.provider not in available:
        return fail(f"--provider {args.provider!r} has no price API support; allowed: {', '.join(available)}")
    if args.public and args.provider not in public_providers():
        return fail(f"--public: {args.provider} publishes no price feed read here; allowed: {', '.join(public_providers())}"
                    f" (without --public, {args.provider} is refreshed through its signed price API)")
    if not args.signed and args.provider in public_providers():
        from tools.runlib.credentials import use_sdk_names

        use_sdk_names(args.provider)
        signed = providers.module(args.provider, "pricing") if args.provider in pricing_providers() else None
        if args.public or signed is None or signed.missing_credentials(os.environ):
            return refresh_public(args)
    if args.region is None:
        return fail(f"--region is required for {args.provider}'s signed price API (e.g. --region cn-hangzhou)")
    module = providers.module(args.provider, "pricing")
    path, source = catalog_path(args.provider, args.catalog)
    if not source.is_file():
        return fail(f"no catalog for {args.provider}: {source} does not exist; add the catalog first"
                    " (rows with type, gpu, gpuCount, ... and price: null), or pass --catalog PATH")
    try:
        text, document = load_rows(source)
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
        public = (f"; without credentials, `{catalog.refresh_command(args.provider, args.region)}` reads the public"
                  " feed" if args.provider in public_providers() else "")
        return fail(f"no {module.DISPLAY} credentials in the environment: {convention}{missing}{public}")

    try:
        answers = module.fetch(types, region=args.region, zone=args.zone, image=args.image, endpoint=args.endpoint,
                               spot=args.spot, env=os.environ, project_id=args.project_id, site=args.site)
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


def refresh_public(args: argparse.Namespace) -> int:
    """The public feed (no account) into the provider's price book: one dated snapshot of the regions read."""
    from components import price_book, public_feed

    module = providers.module(args.provider, "public_prices")
    path, source = (args.prices_file, args.prices_file) if args.prices_file else price_book.refresh_target(args.provider)
    if not source.is_file():
        return fail(f"no price book for {args.provider}: {source} does not exist (a prices.yaml with provider, checkPage,"
                    " spotRange, unpublished and `snapshots: []`), or pass --prices-file PATH")
    if args.endpoint:
        parts = urlsplit(args.endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return fail(f"--endpoint {args.endpoint!r} is not an http(s) URL, e.g. http://127.0.0.1:8080")
    if args.disks:
        print("note: --disks needs the signed API (disk prices are not in the public feeds); skipped", file=sys.stderr)
    types = [row.name for row in catalog.load_catalog(args.provider).instances]
    if args.types:
        chosen = [t.strip() for t in args.types.split(",") if t.strip()]
        unknown = [t for t in chosen if t not in types]
        if unknown:
            return fail(f"--types: {', '.join(unknown)} not in {args.provider}'s catalog; catalog types: {', '.join(types)}")
        types = chosen
    date = today()
    print(f"reading {module.DISPLAY}'s public prices (no account){' for ' + args.region if args.region else ''} ...",
          file=sys.stderr)
    try:
        snapshot = module.fetch(types, regions=[args.region] if args.region else None, endpoint=args.endpoint,
                                today=date, site=args.site, feed_version=args.feed_version,
                                zones=[args.zone] if args.zone else None)
    except public_feed.FeedError as error:
        return fail(f"{module.DISPLAY} public prices: {error}; {path} is unchanged", FAILED)
    priced = sorted(snapshot.on_demand)
    regions = sorted(snapshot.regions())
    for name in priced:
        spots = snapshot.spot.get(name, {})
        cells = ", ".join(f"{r} {v:g}" + (f" (spot {spots[r]:g})" if r in spots else "")
                          for r, v in sorted(snapshot.on_demand[name].items()))
        print(f"{name:<30} {snapshot.currency}/h: {cells}")
    missing = [t for t in types if t not in snapshot.on_demand]
    if missing:
        print(f"no price for {len(missing)} type(s) in the regions read: {', '.join(missing)}", file=sys.stderr)
    text = price_book.replace_regions(source.read_text(encoding="utf-8"), snapshot)
    if args.dry_run:
        print(f"dry run: {path} not written")
        return OK
    catalog_prices.write(path, text)
    print(f"wrote {len(priced)} type(s) x {len(regions)} region(s) to {path} ({snapshot.source}, {date},"
          f" {snapshot.currency}, {snapshot.site})")
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
    path = (args.catalog.parent / f"{args.provider}.disks.yaml") if args.catalog else providers.refresh_target(
        f"{args.provider}.disks.yaml", providers.package_dir(args.provider) / "disk_prices.yaml")[0]
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
