"""`prices refresh` without an account: the public price feeds (tests/localcloud/public_price_standins.py, on
127.0.0.1 in each feed's recorded shape) into the price book, which the preview then reads; a feed whose
answer changed shape, or priced a type at zero, is refused and nothing is written. Also: the price book never
lends one region's price to another, and Baidu's Postpaid answer is recorded only if it is a rate (U4)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from components import catalog, price_book
from components.providers import regions as region_tables
from components.providers.tencentcloud.public_prices import zones_of
from tests.localcloud.price_standins import NOT_SOLD
from tests.localcloud.public_price_standins import REGIONS, TENCENT_SPOT, ZONE_STEP, PublicPriceStandIn, regional_price
from tests.tools.script_process import REPO, preview_json, without_cloud_credentials

TODAY = "2026-12-02"


def environment(**extra) -> dict:
    return without_cloud_credentials(**{"GPU_TRAINING_NOW": f"{TODAY}T10:00:00Z", "PYTHONPATH": f"{REPO}:{REPO / 'node'}",
                                        "COLUMNS": "200", **extra})


def prices(*args: str, env: dict) -> subprocess.CompletedProcess:
    """`gpu-training prices ARGS` as a user types it (the CLI decides the public path needs no account)."""
    return subprocess.run([sys.executable, "-m", "tools.cli", "prices", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120)


def book_copy(tmp_path: Path, provider: str) -> Path:
    path = tmp_path / f"{provider}.prices.yaml"
    shutil.copy(price_book.path_of(provider), path)
    return path


def types_of(provider: str) -> list[str]:
    return [row.name for row in catalog.load_catalog(provider).instances]


REGION_ARGS = {"alicloud": [], "tencentcloud": ["--region", "ap-guangzhou"], "huaweicloud": ["--region", "cn-north-4"]}


def expected(provider: str, name: str, region: str) -> float:
    if provider != "tencentcloud":
        return regional_price(name, region)
    steps = [ZONE_STEP * (int(zone.rsplit("-", 1)[-1]) % 7) for zone in zones_of(region, None)]
    return round(regional_price(name, region) + min(steps), 4)  # the lowest zone of the region


@pytest.mark.parametrize("provider", sorted(REGION_ARGS))
def test_a_refresh_without_credentials_reads_the_public_feed_into_the_price_book(tmp_path, provider):
    path = book_copy(tmp_path, provider)
    head = path.read_text().partition("\nsnapshots:")[0]
    with PublicPriceStandIn(provider, types_of(provider)) as feed:
        run = prices("refresh", "--provider", provider, *REGION_ARGS[provider], "--endpoint", feed.url,
                     "--prices-file", str(path), env=environment())
    assert run.returncode == 0, run.stderr
    assert feed.refusals == [] and feed.requests, feed.refusals  # every request in the recorded shape
    assert path.read_text().startswith(head)  # the comments and settings above the snapshots are kept
    book = price_book.book_from(yaml.safe_load(path.read_text()), provider, path)
    snapshot = max(book.snapshots, key=lambda s: s.date)
    assert (snapshot.date, snapshot.currency) == (TODAY, "CNY")
    assert "127.0.0.1" in snapshot.source and "China site" in snapshot.site
    for region in REGIONS[provider]:
        for name in types_of(provider):
            quote = book.quote(name, region)
            if name in NOT_SOLD:
                assert quote is None or quote[0].date != TODAY, name  # never a figure the feed did not give
                continue
            assert quote is not None and quote[0] is snapshot, (name, region)
            assert quote[1] == pytest.approx(expected(provider, name, region)), (name, region)
            if provider == "tencentcloud":  # SPOTPAID's UnitPriceDiscount, lowest zone too
                assert quote[2] == pytest.approx(round(regional_price(name, region) * TENCENT_SPOT, 4), rel=0.2)
            else:
                assert quote[2] is None
    assert "no price for" in run.stderr and sorted(NOT_SOLD & set(types_of(provider)))[0] in run.stderr
    assert "wrote" in run.stdout and TODAY in run.stdout


@pytest.mark.parametrize("provider,shape,words", [
    ("alicloud", "renamed", "no `pricingInfo`"), ("alicloud", "zero", "not a positive amount"),
    ("tencentcloud", "renamed", "no `InstanceTypeQuotaSet`"), ("tencentcloud", "zero", "not a positive amount"),
    ("huaweicloud", "renamed", "no `product.ec2_vm`"), ("huaweicloud", "zero", "not a positive amount"),
    ("huaweicloud", "monthly", "not an hourly price"),
])
def test_a_feed_in_a_changed_shape_fails_loudly_and_writes_nothing(tmp_path, provider, shape, words):
    path = book_copy(tmp_path, provider)
    before = path.read_text()
    with PublicPriceStandIn(provider, types_of(provider), shape=shape) as feed:
        run = prices("refresh", "--provider", provider, *REGION_ARGS[provider], "--endpoint", feed.url,
                     "--prices-file", str(path), env=environment())
    assert run.returncode == 1, run.stdout + run.stderr
    assert words in run.stderr and "unchanged" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert path.read_text() == before


def test_the_preview_shows_the_public_refresh_for_the_stack_s_region_and_no_account_was_needed(tmp_path):
    path = book_copy(tmp_path, "huaweicloud")  # no figure shipped: unknown before, the feed's after
    before = preview_json("hw-entry-t4", environment())["cost"]
    assert before["onDemandPerHour"] is None
    assert "gpu-training prices refresh --provider huaweicloud --region cn-north-4" in before["basis"]
    with PublicPriceStandIn("huaweicloud", types_of("huaweicloud")) as feed:
        run = prices("refresh", "--provider", "huaweicloud", "--region", "cn-north-4", "--endpoint", feed.url,
                     "--prices-file", str(path), env=environment())
    assert run.returncode == 0, run.stderr
    document = preview_json("hw-entry-t4", environment(GPU_TRAINING_CATALOGS=str(tmp_path)))
    section = document["cost"]
    flavor = document["outputs"]["instanceType"]
    assert section["onDemandPerHour"] == pytest.approx(regional_price(flavor, "cn-north-4"))
    assert section["priceDate"] == TODAY and "price calculator 127.0.0.1" in section["priceSource"]
    assert section["spotRangePerHour"] == [0.0, pytest.approx(section["onDemandPerHour"])]  # up to pay-per-use
    # Another region's refresh is not this region's price.
    other = preview_json("hw-entry-t4", environment(GPU_TRAINING_CATALOGS=str(tmp_path)),
                         "--set", "huaweicloud:region=cn-east-3")["cost"]
    assert other["onDemandPerHour"] is None and "cn-east-3" in other["basis"]


def test_a_refresh_replaces_the_regions_it_read_and_keeps_the_others():
    text = ("provider: x\nsnapshots:\n"
            "  - {source: old, date: '2024-01-01', currency: CNY, site: s, basis: b,"
            " onDemand: {A: {r1: 1.0, r2: 2.0}, B: {r1: 3.0}}}\n")
    new = price_book.Snapshot("new", None, "2026-12-02", "CNY", "s", "b", {"A": {"r1": 5.0}})
    book = price_book.book_from(yaml.safe_load(price_book.replace_regions(text, new)), "x", Path("x"))
    assert book.quote("A", "r1")[1] == 5.0 and book.quote("A", "r2")[1] == 2.0
    assert book.quote("B", "r1") is None  # r1 was read again: B's old r1 figure is gone, not kept as current


def test_a_type_is_never_priced_with_another_region_s_price():
    row = catalog.load_catalog("alicloud").get("ecs.gn7-c13g1.13xlarge")
    book = price_book.load("alicloud")
    assert book.quote(row.name, "cn-hangzhou") is None and book.quote(row.name, "cn-beijing") is not None
    price = catalog.regional_price(row, "cn-hangzhou", book)
    assert not price.known and "no list price in cn-hangzhou" in price.why_unknown
    assert price.elsewhere and all(region != "cn-hangzhou" for region, _ in price.elsewhere)


def test_the_shipped_prices_are_dated_sourced_and_never_deploy_caps():
    for provider in ("alicloud", "tencentcloud", "huaweicloud"):
        book = price_book.load(provider)
        rows = {row.name for row in catalog.load_catalog(provider).instances}
        regions = set(region_tables.load(provider).regions)
        for snapshot in book.snapshots:
            # Every row: its source (repo@commit:file and the page), date, currency, site and basis; a type of the
            # cloud's catalog and, for rows copied by hand, a region of its region table; a positive figure.
            assert snapshot.date[:2] == "20" and len(snapshot.date) == 10, snapshot.source
            assert snapshot.currency in ("CNY", "USD") and snapshot.site and snapshot.basis
            assert "@" in snapshot.source and snapshot.url.startswith("https://github.com/")
            commit = snapshot.source.split("@", 1)[1].split(":", 1)[0]
            assert len(commit) == 40 and commit in snapshot.url, snapshot.source
            assert set(snapshot.on_demand) <= rows, set(snapshot.on_demand) - rows
            if provider != "alicloud":  # Alibaba's rows are the scraper's file whole, with regions our table lacks
                assert {r for by_region in snapshot.on_demand.values() for r in by_region} <= regions, snapshot.source
            assert all(value > 0 for by_region in snapshot.on_demand.values() for value in by_region.values())
            # A type with a shipped price is not also said to have none.
            assert not set(snapshot.on_demand) & set(book.unpublished), snapshot.source
        assert all(row.price.account_price is None for row in catalog.load_catalog(provider).instances)
    priced = catalog.load_catalog("alicloud", "cn-hangzhou").get("ecs.gn6i-c8g1.2xlarge").price
    assert priced.known and priced.on_demand_per_hour == 14 and priced.account_price is None  # a list price only


def test_a_refresh_writes_the_catalogs_folder_and_never_the_shipped_book_and_a_dry_run_nothing(tmp_path):
    """Where the catalogs folder applies ($GPU_TRAINING_CATALOGS here; a wheel install's ~/.config/gpu-training/
    catalogs, tests/test_packaging.py), a refresh without --prices-file begins the folder's copy from the shipped
    book and edits that: the installed package is never written (an upgrade would drop it)."""
    shipped = price_book.path_of("huaweicloud")
    before = shipped.read_text()
    folder = tmp_path / "catalogs"
    env = environment(GPU_TRAINING_CATALOGS=str(folder))
    with PublicPriceStandIn("huaweicloud", types_of("huaweicloud")) as feed:
        dry = prices("refresh", "--provider", "huaweicloud", "--region", "cn-north-4", "--endpoint", feed.url,
                     "--dry-run", env=env)
        assert dry.returncode == 0, dry.stderr
        assert not folder.exists()
        run = prices("refresh", "--provider", "huaweicloud", "--region", "cn-north-4", "--endpoint", feed.url, env=env)
    assert run.returncode == 0, run.stderr
    written = folder / "huaweicloud.prices.yaml"
    assert f"to {written}" in run.stdout and shipped.read_text() == before
    copy = yaml.safe_load(written.read_text())
    assert copy["checkPage"] == yaml.safe_load(before)["checkPage"] and len(copy["snapshots"]) == 1
    section = preview_json("hw-entry-t4", env)["cost"]
    assert section["onDemandPerHour"] == pytest.approx(regional_price("pi2.2xlarge.4", "cn-north-4"))


def test_a_wheel_installs_copy_does_not_hide_what_the_shipped_files_add():
    """A copy made before an upgrade lacks the newer package's snapshots and types: they are read with it (the
    wheel test in tests/test_packaging.py reads through that folder; $GPU_TRAINING_CATALOGS stays a what-if that
    replaces, as the advisor's empty-book tests need)."""
    shipped = price_book.load("alicloud")
    copy = price_book.with_shipped(replace(shipped, snapshots=()), shipped)
    assert copy.snapshots == shipped.snapshots and copy.quote("ecs.gn6i-c4g1.xlarge", "cn-hangzhou")[1] == 11.63
    newer = price_book.Snapshot("a refresh", None, "2026-12-02", "CNY", "s", "b", {"ecs.gn6i-c4g1.xlarge": {"cn-hangzhou": 9.0}})
    mine = price_book.with_shipped(replace(shipped, snapshots=(newer,)), shipped)
    assert mine.quote("ecs.gn6i-c4g1.xlarge", "cn-hangzhou")[1] == 9.0  # the newest still wins
    rows = catalog.load_catalog("alicloud")
    trimmed = catalog.with_shipped(replace(rows, instances=rows.instances[1:]), rows)
    assert {r.name for r in trimmed.instances} == {r.name for r in rows.instances}
