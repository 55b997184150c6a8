"""What the user asks the advisor: the workload, the deadline and the money, and where it may run.

`build_request(...)` checks every field at once and raises RequestError listing each problem with
the option it came from, the bad value and what is allowed (scripts/recommend.py exits 2 on it).
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from components import providers
from components.spec import MAX_NODES
from tools.advisor import perf as perfmod


class RequestError(Exception):
    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("\n".join(f"{key}: {message}" for key, message in problems))


@dataclass(frozen=True)
class Request:
    model: perfmod.ModelPerf
    images: int
    resolution: int
    dataset_gb: float
    dataset_estimated: bool
    epochs: float
    deadline_hours: float
    budget: Optional[float]
    providers: tuple[str, ...]
    regions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    spot: bool = False
    batch: Optional[int] = None  # per GPU; None = the largest of the recipe's that fits
    max_nodes: int = 64

    @property
    def samples(self) -> float:
        return self.images * self.epochs

    @property
    def dataset_gb_int(self) -> int:
        """The data set size as the stack's integer `datasetGb` (rounded up), which the RAM rule uses."""
        return max(1, math.ceil(self.dataset_gb))

    @property
    def billings(self) -> tuple[str, ...]:
        return ("on-demand", "spot") if self.spot else ("on-demand",)


def usable_providers() -> list[str]:
    """Registered providers with a catalog (catalog.yaml in the package): the only ones a stack can be
    written for."""
    return [name for name in providers.names() if providers.catalog_path(name).is_file()]


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _positive(problems, key: str, value, kind=float, allow_none: bool = False):
    if value is None:
        if not allow_none:
            problems.append((key, "is required"))
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        problems.append((key, f"{value!r} must be a number greater than 0"))
        return None
    if kind is int and int(value) != value:
        problems.append((key, f"{value!r} must be a whole number"))
        return None
    return kind(value)


def build_request(*, model: Optional[str], gflops: Optional[float] = None, params_m: Optional[float] = None,
                  images, resolution=None, dataset_gb=None, epochs, deadline_hours, budget=None,
                  provider_names: Iterable[str] = (), regions: Iterable[str] = (), spot: bool = False,
                  batch=None, max_nodes=64) -> Request:
    perf = perfmod.load()
    problems: list[tuple[str, str]] = []

    chosen = None
    if model is not None and (gflops is not None or params_m is not None):
        problems.append(("--model", "give either a model name or --gflops with --params, not both"))
    elif model is not None:
        chosen = perf.models.get(model.lower())
        if chosen is None:
            problems.append(("--model", f"{model!r} is not a known model; allowed: {', '.join(perf.models)},"
                             " or --gflops G --params M for another model" + _suggest(model, perf.models)))
    elif gflops is None and params_m is None:
        problems.append(("--model", "is required: a model name, or --gflops and --params for a custom model"))
    else:
        g = _positive(problems, "--gflops", gflops)
        p = _positive(problems, "--params", params_m)
        if g is not None and p is not None:
            res = _positive(problems, "--resolution", resolution, int, allow_none=True) or perf.reference_resolution
            chosen = perfmod.custom_model(perf, g, p, res)

    images = _positive(problems, "--images", images, int)
    epochs = _positive(problems, "--epochs", epochs)
    deadline = _positive(problems, "--deadline", deadline_hours)
    budget = _positive(problems, "--budget", budget, allow_none=True)
    resolution = _positive(problems, "--resolution", resolution, int, allow_none=True)
    if resolution is not None and not 8 <= resolution <= 4096:
        problems.append(("--resolution", f"{resolution} is out of range; allowed: 8-4096 pixels (the side of a square input)"))
        resolution = None
    dataset = _positive(problems, "--dataset-gb", dataset_gb, allow_none=True)
    batch = _positive(problems, "--batch-size", batch, int, allow_none=True)
    max_nodes = _positive(problems, "--max-nodes", max_nodes, int)
    if max_nodes is not None and max_nodes > MAX_NODES:
        problems.append(("--max-nodes", f"{max_nodes} is out of range; allowed: 1-{MAX_NODES} (the spec's limit)"))

    known = providers.names()
    usable = usable_providers()
    names = [n.strip() for name in provider_names for n in str(name).split(",") if n.strip()]
    for name in names:
        if name not in known:
            problems.append(("--provider", f"{name!r} is not a known provider; allowed: {', '.join(usable)}"
                             + _suggest(name, known)))
        elif name not in usable:
            problems.append(("--provider", f"{name!r} has no catalog ({providers.catalog_path(name)}),"
                             " so nothing can be priced or written for it;"
                             f" allowed: {', '.join(usable)}"))
    chosen_providers = tuple(dict.fromkeys(names)) if names else tuple(usable)

    region_map: dict[str, list[str]] = {}
    for item in regions:
        provider, sep, region = str(item).partition(":")
        if not sep or not provider or not region:
            problems.append(("--region", f"{item!r} is not PROVIDER:REGION, e.g. alicloud:cn-hangzhou"))
            continue
        if provider not in usable:
            problems.append(("--region", f"{item!r}: {provider!r} is not a usable provider; allowed: {', '.join(usable)}"))
            continue
        if names and provider not in chosen_providers:
            problems.append(("--region", f"{item!r}: {provider!r} is not among --provider {', '.join(chosen_providers)}"))
            continue
        region_map.setdefault(provider, []).append(region)

    if problems:
        raise RequestError(problems)
    assert chosen is not None and images is not None and epochs is not None and deadline is not None
    res = resolution or chosen.resolution
    estimated = dataset is None
    return Request(
        model=chosen, images=images, resolution=res,
        dataset_gb=dataset if dataset is not None else perfmod.dataset_gb_estimate(perf, images, res),
        dataset_estimated=estimated, epochs=epochs, deadline_hours=deadline, budget=budget,
        providers=chosen_providers, regions={k: tuple(v) for k, v in region_map.items()}, spot=bool(spot),
        batch=batch, max_nodes=max_nodes or 64,
    )

