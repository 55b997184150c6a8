#!/usr/bin/env python3
"""The regions and zones each provider declares (what the spec checks `<cloud>:region`, zone and spotZones
against): show them, or refresh them from the cloud's own API.

  gpu-training regions show [--provider P]
  gpu-training regions refresh --provider alicloud        # ECS DescribeRegions + DescribeZones
  gpu-training regions refresh --provider tencentcloud    # CVM DescribeRegions + DescribeZones

refresh rewrites components/providers/<cloud>/regions.yaml with every region your account sees and the
zones of each, dated today, the API as its source. Credentials are read from the environment only.
--endpoint points the SDK at another API endpoint (a local stand-in in the tests).

Exit status: 0 shown or written, 1 the API failed (file unchanged), 2 bad arguments or missing credentials.
"""
from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from components import providers
from components.providers import regions as region_tables
from components.datafiles import atomic_write
from tools import cliargs
from tools.cliargs import FAILED, OK, USAGE


def api_providers() -> list[str]:
    """The registered providers that can list their regions (a regions_api module)."""
    return providers.with_module("regions_api")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser, show, refresh = cliargs.show_and_refresh(
        "scripts/regions.py", __doc__, show_help="print the declared regions and zones with their date and sources",
        refresh_help="ask the cloud's API and rewrite the provider's regions.yaml")
    show.add_argument("--provider", choices=api_providers())
    refresh.add_argument("--provider", required=True, choices=api_providers())
    refresh.add_argument("--endpoint", help="API endpoint URL (default: the SDK's own)")
    refresh.add_argument("--file", type=Path, help=argparse.SUPPRESS)  # tests write a copy
    return parser.parse_args(argv)


def today() -> str:
    pinned = os.environ.get("GPU_TRAINING_NOW")
    now = datetime.fromisoformat(pinned.replace("Z", "+00:00")) if pinned else datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%d")


def show(args: argparse.Namespace) -> int:
    for provider in [args.provider] if args.provider else api_providers():
        table = region_tables.load(provider)
        if table is None:
            print(f"{provider}: no regions.yaml")
            continue
        print(f"{provider}: {len(table.regions)} regions as of {table.date}")
        for source in table.sources:
            print(f"  source: {source}")
        for region, zones in sorted(table.regions.items()):
            print(f"  {region}: {', '.join(zones) if zones is not None else '(zones not declared)'}")
    return OK


def render(provider: str, regions: dict[str, list[str]], source: str, date: str) -> str:
    header = (f"# {provider} regions and the zones of each, as the spec checks the region key, zone and spotZones.\n"
              f"# Written by scripts/regions.py refresh --provider {provider}; run it again to refresh.\n")
    body = {"provider": provider, "date": date, "sources": [{"title": source, "url": None}],
            "regions": {region: zones for region, zones in sorted(regions.items())}}
    return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=None, width=200)


def refresh(args: argparse.Namespace) -> int:
    module = providers.module(args.provider, "regions_api")
    from tools.runlib.credentials import use_sdk_names  # the SDK's own names, filled from the convention's

    convention = use_sdk_names(args.provider)
    problem = module.missing_credentials(os.environ)
    if problem:
        print(f"error: {convention}{problem}", file=sys.stderr)
        return USAGE
    if args.endpoint and urlsplit(args.endpoint).scheme not in ("http", "https"):
        print(f"error: --endpoint {args.endpoint!r} is not an http(s) URL", file=sys.stderr)
        return USAGE
    try:
        regions = module.fetch(endpoint=args.endpoint, env=os.environ)
    except RuntimeError as error:
        print(f"error: {error}; {args.provider}'s regions.yaml is unchanged", file=sys.stderr)
        return FAILED
    if not regions:
        print("error: the API listed no region; regions.yaml is unchanged", file=sys.stderr)
        return FAILED
    path = args.file or region_tables.table_path(args.provider)
    atomic_write(path, render(args.provider, regions, module.source(args.endpoint), today()))
    region_tables.load.cache_clear()
    zones = sum(len(z) for z in regions.values())
    print(f"wrote {path}: {len(regions)} regions, {zones} zones ({module.source(args.endpoint)})")
    return OK


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return show(args) if args.command == "show" else refresh(args)


if __name__ == "__main__":
    sys.exit(main())
