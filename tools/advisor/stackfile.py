"""Turn the advisor's pick into stacks/Pulumi.<name>.yaml: validated by build_spec before it is written.

Nothing is written when the config does not validate or the file exists (unless `force`), and the
file is replaced atomically, so an error never leaves half a stack behind.
"""
from __future__ import annotations

import math
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Optional

import yaml

from components import schema
from components.datafiles import atomic_write
from components.spec import MAX_HOURS, Spec
from components.validation import SpecError, build_spec
from tools.advisor.explain import reasons
from tools.advisor.optimiser import Evaluation
from tools.stackfiles import apply_overrides, engine_form

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
DEFAULT_BUCKET = "my-gpu-training-checkpoints"
NS = schema.NAMESPACE


class StackWriteError(Exception):
    """The stack cannot be written: a bad name, a missing region, an existing file, or spec errors."""


def region_for(ev: Evaluation, regions: dict) -> Optional[str]:
    """The region the pick was priced in (the cheapest the user allowed), else the first allowed one."""
    if ev.offer.region:
        return ev.offer.region
    allowed = regions.get(ev.offer.provider)
    return allowed[0] if allowed else None


def max_hours(ev: Evaluation) -> int:
    # The cloud-side TTL: half again the estimate, so a slower-than-estimated run still finishes.
    return int(min(MAX_HOURS, max(1, math.ceil((ev.hours or 1) * 1.5))))


def runs_the_example(config: dict) -> Optional[str]:
    """Why the stack would train the example, not the user's model (no train.command of its own), or None."""
    train = config.get(f"{NS}:train") or {}
    if train.get("command") and train["command"] != schema.DEFAULT_TRAIN_COMMAND:
        return None
    return (f"train.command is the example trainer ({schema.DEFAULT_TRAIN_COMMAND!r}): `pulumi up` would pay for"
            f" these GPUs to run the demo. Set {NS}:train.command to your job first (--train-command, or edit the file)")


def stack_config(ev: Evaluation, request, *, region: str, bucket: str, overrides: Iterable[str] = (),
                 train_command: Optional[str] = None) -> dict:
    row, profile = ev.offer.instance, ev.offer.profile
    assert ev.offer.tier is not None
    config = {
        profile.region_key: region,
        f"{NS}:provider": ev.offer.provider,
        f"{NS}:tier": ev.offer.tier.name,
        f"{NS}:gpu": row.gpu,
        f"{NS}:gpusPerNode": row.gpu_count,
        f"{NS}:instanceType": row.name,
        f"{NS}:nodes": ev.nodes,
        f"{NS}:billing": ev.billing,
        f"{NS}:dataDiskGb": ev.fit.data_disk_gb,
        f"{NS}:datasetGb": request.dataset_gb_int,
        f"{NS}:maxHours": max_hours(ev),
        f"{NS}:checkpoint": {"bucket": bucket, "prefix": "gpu-training"},
    }
    if train_command:
        config[f"{NS}:train"] = {"command": train_command}
    return apply_overrides(config, overrides)


def validate(config: dict, name: str) -> Spec:
    """build_spec on the config as the engine would pass it; raises components.spec.SpecError."""
    return build_spec(engine_form(config), stack=name)


def write_problems(ev: Evaluation, request, *, bucket: str, overrides: Iterable[str] = ()) -> list[str]:
    """What would stop --write-stack for this pick as things stand: a missing region, spec errors."""
    region = region_for(ev, request.regions)
    problems = [] if region else [f"a region: --region {ev.offer.provider}:<region>"]
    config = stack_config(ev, request, region=region or "region-to-be-chosen", bucket=bucket, overrides=overrides)
    try:
        validate(config, "advisor-check")
    except SpecError as error:
        # Without a region the placeholder's own refusal (the whole region list) says nothing more.
        problems += [f"{f.key}: {f.message}" for f in error.errors if region or not f.key.endswith("region")]
    return problems


def _now() -> str:
    pinned = os.environ.get("GPU_TRAINING_NOW")
    moment = datetime.fromisoformat(pinned.replace("Z", "+00:00")) if pinned else datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%d")


def render(name: str, ev: Evaluation, request, config: dict, ranking: str) -> str:
    row = ev.offer.instance
    money = "unknown price" if ev.cost is None else f"~{ev.cost:,.0f} {ev.run.currency}"
    header = [
        f"{name} — written by scripts/recommend.py on {_now()} for {request.model.name} on {request.images:,}"
        f" images at {request.resolution}px, {request.epochs:g} epochs, deadline {request.deadline_hours:g} h.",
        f"Pick: {ev.nodes} x {row.name} ({row.gpu_count}x {row.gpu}), {ev.billing}, {ev.offer.tier.name} tier:"
        f" ~{ev.images_per_second:,.0f} images/s, ~{ev.hours:.1f} h, {ev.gpu_hours:.0f} GPU-hours, {money}.",
        f"Ranking: {ranking}.",
        "Why it fits:",
        *[f"  - {line}" for line in reasons(ev, request)],
        "Estimates come from components/data/perf.yaml (sources listed there); docs/advisor.md explains them.",
        "Before `pulumi up`: set checkpoint.bucket to a bucket you own"
        + ("." if not runs_the_example(config) else ", and train.command to your job"
           f" (per-GPU batch {ev.fit.batch})."),
    ]
    demo = runs_the_example(config)
    if demo:
        header.insert(0, f"!!! WARNING: {demo} !!!")
    lines = []
    for text in header:
        lines.extend(_wrap(text))
    body = yaml.safe_dump({"config": config}, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return "\n".join(lines) + "\n" + body


def _wrap(text: str, width: int = 100) -> list[str]:
    """Comment lines of at most `width` characters; a bullet's continuation lines are indented."""
    bullet = text.startswith("  - ")
    first, rest = ("  - ", "      ") if bullet else ("", "")
    lines, current = [], first
    for word in text[len(first):].split(" "):
        if current.strip() and len(current) + 1 + len(word) > width - 2:
            lines.append("# " + current)
            current = rest + word
        else:
            current = current + word if current in (first, rest) else f"{current} {word}"
    lines.append("# " + current)
    return lines


def target_path(directory: Path, name: str) -> Path:
    if not NAME_RE.match(name):
        raise StackWriteError(f"--write-stack {name!r}: a stack name is lowercase letters, digits and '-'"
                              " (at most 63 characters), e.g. medium-a100-imagenet")
    return directory / f"Pulumi.{name}.yaml"


def write(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise StackWriteError(f"{path} exists; pick another --write-stack name, or pass --force to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
