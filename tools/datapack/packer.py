"""Pack a data set into shards: planned once, written in parallel, resumable, bad images reported.

The plan (``<out>/.pack/plan.json``) fixes which samples go into which shard: the samples in a
seeded shuffle (so a shard mixes the classes, as sequential readers want), cut into runs of
``per_shard``. Each finished shard leaves a record (``<out>/.pack/<shard>.json``) after its file is
in place; a rerun keeps every shard whose record and file agree and writes only the rest. The
manifest is written last: a folder with ``manifest.json`` is a complete data set. A plan made from
other input (a file added, changed or removed) is refused rather than mixed with it.
"""
from __future__ import annotations

import json
import random
import shutil
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from node_agent import layout

from .shards import manifest, shard_name, write_json, write_shard
from .source import Source, SourceError

STATE = ".pack"
PLAN_VERSION = 1
DEFAULT_SHARD_MB = 256


class PackFailed(Exception):
    """Bad images under --on-bad fail: the listed samples, the shards done so far are kept."""

    def __init__(self, bad: list[dict]):
        super().__init__(f"{len(bad)} image(s) cannot be read")
        self.bad = bad


@dataclass
class PackResult:
    manifest: dict
    written: int  # shards written by this run
    kept: int  # shards a previous run had finished
    bad: list[dict] = field(default_factory=list)


def per_shard_for(source: Source, shard_mb: float) -> int:
    mean = source.bytes / len(source.samples)
    return max(1, round(shard_mb * (1 << 20) / max(mean, 1)))


def plan(source: Source, per_shard: int, seed: int = 0) -> dict:
    order = list(range(len(source.samples)))
    random.Random(seed).shuffle(order)
    return {"version": PLAN_VERSION, "fingerprint": source.fingerprint(), "perShard": per_shard, "seed": seed,
            "samples": len(order), "order": order}


def _load(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _done(out: Path, record: Optional[dict]) -> bool:
    """A previous run's shard stands when its record exists and the file has the recorded size."""
    if not record:
        return False
    path = out / record["name"]
    return path.is_file() and path.stat().st_size == record["size"]


def _job(samples: list, path: str, check: bool) -> dict:
    return write_shard(samples, Path(path), check)


def pack(source: Source, out: Path, *, per_shard: int, workers: int = 1, check: bool = True,
         on_bad: str = "fail", restart: bool = False, seed: int = 0,
         progress: Callable[[int, int], None] = lambda done, total: None) -> PackResult:
    """Pack `source` into `out`; progress(samples done, samples in all) after each shard."""
    state = out / STATE
    if restart and out.exists():
        shutil.rmtree(state, ignore_errors=True)
        for old in list(out.glob("shard-*.tar")) + [out / layout.DATA_MANIFEST]:
            old.unlink(missing_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    wanted, existing = plan(source, per_shard, seed), _load(state / "plan.json")
    if existing and {k: existing.get(k) for k in ("version", "fingerprint", "perShard", "seed")} != \
            {k: wanted[k] for k in ("version", "fingerprint", "perShard", "seed")}:
        raise SourceError(f"{out} holds a pack of other input or other settings (a file was added, changed or "
                          f"removed, or --samples-per-shard differs); pack into another --out, or pass --restart")
    if not existing:
        (out / layout.DATA_MANIFEST).unlink(missing_ok=True)
        write_json(state / "plan.json", wanted)
    order, total = wanted["order"], len(wanted["order"])
    runs = [order[i:i + per_shard] for i in range(0, total, per_shard)]
    records: dict[int, dict] = {}
    for number in range(len(runs)):
        record = _load(state / f"{shard_name(number)}.json")
        if _done(out, record):
            records[number] = record
    kept, done = len(records), sum(r["samples"] + len(r["bad"]) for r in records.values())
    progress(done, total)
    todo = [n for n in range(len(runs)) if n not in records]
    bad_before = [b for r in records.values() for b in r["bad"]]
    if on_bad == "fail" and bad_before:
        raise PackFailed(bad_before)
    new_bad: list[dict] = []
    pool = ProcessPoolExecutor(max(1, workers))
    try:
        futures = {pool.submit(_job, [(i, source.samples[i]) for i in runs[n]], str(out / shard_name(n)), check): n
                   for n in todo}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                record = future.result()  # a disk error ends the pack; finished shards stay for a rerun
                records[futures[future]] = record
                write_json(state / f"{record['name']}.json", record)
                done += record["samples"] + len(record["bad"])
                new_bad += record["bad"]
                progress(done, total)
            if new_bad and on_bad == "fail":
                raise PackFailed(new_bad)
    finally:
        # Ctrl-C, an error or --on-bad fail: shards not started are dropped, running ones finish.
        pool.shutdown(wait=True, cancel_futures=True)
    ordered = [records[n] for n in range(len(runs))]
    skipped = [b for r in ordered for b in r["bad"]]
    result = manifest(source.classes, ordered, source.root.name, skipped)
    write_json(out / layout.DATA_MANIFEST, result)
    return PackResult(result, len(todo), kept, skipped)
