"""Every stack's preview cost once prices are refreshed from each cloud's price-API stand-in.

Refreshes a copy of each provider's catalog through scripts/prices.py against the local stand-in of
its price API (tests/localcloud/price_standins.py: the cloud's wire format, seeded prices, not real ones), then
runs scripts/preview.py --json for every stack with GPU_TRAINING_CATALOGS pointing at the copies, and
prints each stack's hourly and maxHours cost with the price's source and date. Shows that every
preview prices itself from a refreshed catalog; the figures themselves are the stand-ins'.

Run: .venv/bin/python bench/preview_costs.py
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from components import providers  # noqa: E402
from tests.localcloud.price_standins import PriceStandIn  # noqa: E402
from tools.stackfiles import stack_names  # noqa: E402

OPTIONS = {"alicloud": ["--region", "cn-hangzhou"],
           "tencentcloud": ["--region", "ap-shanghai", "--zone", "ap-shanghai-2", "--image", "img-487zeit5"],
           "huaweicloud": ["--region", "cn-north-4", "--project-id", "0a1b2c3d4e5f"],
           "baiducloud": ["--region", "bj", "--zone", "cn-bj-d"]}
CREDENTIALS = {"alicloud": ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
               "tencentcloud": ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"),
               "huaweicloud": ("HW_ACCESS_KEY", "HW_SECRET_KEY"),
               "baiducloud": ("BAIDUCLOUD_ACCESS_KEY", "BAIDUCLOUD_SECRET_KEY")}


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(providers.credential_env_prefixes())}
    env.update(PYTHONPATH=f"{REPO}:{REPO / 'node'}", **extra)
    return env


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="prices-"))
    for cloud, options in OPTIONS.items():
        shutil.copy(providers.catalog_path(cloud), folder / f"{cloud}.yaml")
        key, secret = CREDENTIALS[cloud]
        with PriceStandIn(cloud) as stand_in:
            run = subprocess.run([sys.executable, str(REPO / "scripts" / "prices.py"), "refresh", "--provider", cloud,
                                  *options, "--spot", "--endpoint", stand_in.url, "--catalog", str(folder / f"{cloud}.yaml")],
                                 capture_output=True, text=True, env=clean_env(**{key: "bench-key", secret: "bench-secret"}))
        print(f"refresh {cloud}: exit {run.returncode}, {run.stdout.strip().splitlines()[-1]}")
    print(f"\n{'stack':<20} {'type':<32} {'n':>2} {'billing':<9} {'od/h':>8} {'spot/h':>8} {'pays/h':>8}"
          f" {'maxHours':>8} {'run':>10}  source, date")
    for stack in stack_names():
        run = subprocess.run([sys.executable, str(REPO / "scripts" / "preview.py"), stack, "--json"],
                             capture_output=True, text=True, env=clean_env(GPU_TRAINING_CATALOGS=str(folder)))
        if run.returncode != 0:
            print(f"{stack:<20} preview exit {run.returncode}: {run.stderr.strip().splitlines()[-1][:120]}")
            continue
        doc = json.loads(run.stdout)
        c, out = doc.get("cost"), doc.get("outputs") or {}
        if not c or "instanceType" not in out:  # a platform job (docs/platforms.md): no node to price here
            print(f"{stack:<20} a managed platform job: no instance type, not priced by this bench")
            continue

        def money(value):
            return "unknown" if value is None else f"{value:,.2f}"
        print(f"{stack:<20} {out['instanceType']:<32} {out['nodeCount']:>2} {out['billing']:<9}"
              f" {money(c['onDemandPerHour']):>8} {money(c['spotPerHour']):>8} {money(c['effectivePerHour']):>8}"
              f" {c['maxHours']:>8g} {money(c['effectivePerMaxHours']):>10}  {c['priceSource']}, {c['priceDate']}"
              f" (spot: {c['spotSource']})")
    shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
