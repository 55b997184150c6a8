"""Measure the advisor's search against a brute force over the same catalog, on random requests.

The search starts each (instance type, billing) at the fewest nodes that could meet the deadline and
stops at the first node count that does; the brute force evaluates every node count up to
--max-nodes. Prints the median time per request of each, the ratio, and whether every pick agreed (tests/tools/test_advisor.py asserts the agreement; this only measures).

Two passes over the same requests: the catalogs as shipped (no prices: ranked by GPU-hours) and the
same rows with seeded random hourly prices (ranked by cost to the deadline), as after a refresh.

Run: .venv/bin/python bench/advisor_search.py [--requests 60] [--max-nodes 64]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import replace

from tools.advisor import optimiser
from tools.advisor import perf as perfmod
from tools.advisor.optimiser import meets_deadline, rank_key, rank_mode
from components.catalog import Price
from tools.advisor.request import build_request


def brute_force(request, offer_list):
    fitting = [ev for ev in optimiser.every_configuration(request, offer_list)
               if meets_deadline(ev, request) and optimiser.within_budget(ev, request)]
    if not fitting:
        return None
    mode = rank_mode(fitting)
    return min(fitting, key=lambda ev: rank_key(ev, mode))


def priced(offer_list, rng: random.Random):
    """The same offers with hourly prices, as a refreshed catalog would have them (seeded, not real)."""
    return [replace(o, instance=replace(o.instance, price=Price(
        round(rng.uniform(4, 60) * o.instance.gpu_count, 2), "CNY", "cn-test", "2026-12-01", "bench price")))
        for o in offer_list]


def measure(requests, offer_list) -> tuple[list[float], list[float], int, str]:
    fast, slow, agree, modes = [], [], 0, set()
    for request in requests:
        start = time.perf_counter()
        result = optimiser.search(request, offer_list)
        fast.append(time.perf_counter() - start)
        start = time.perf_counter()
        best = brute_force(request, offer_list)
        slow.append(time.perf_counter() - start)
        pick = result.ranked[0] if result.ranked else None
        if pick is not None:
            modes.add(result.mode)
        agree += (pick is None and best is None) or (pick is not None and best is not None and
                                                     (pick.offer.instance.name, pick.nodes, pick.billing) ==
                                                     (best.offer.instance.name, best.nodes, best.billing))
    return fast, slow, agree, "/".join(sorted(modes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--max-nodes", type=int, default=64)
    args = parser.parse_args()
    rng = random.Random(11)
    models = list(perfmod.load().models)
    base, _ = optimiser.offers(build_request(model="resnet50", images=1000, epochs=1, deadline_hours=1))
    requests = [build_request(model=rng.choice(models), images=int(10 ** rng.uniform(4, 6.8)),
                              epochs=rng.choice([10, 90, 300]), deadline_hours=round(10 ** rng.uniform(0, 2), 1),
                              dataset_gb=round(10 ** rng.uniform(0, 2.5), 1), spot=True, max_nodes=args.max_nodes)
                for _ in range(args.requests)]
    print(f"{args.requests} random requests, {len(base)} catalog offers, spot allowed, up to {args.max_nodes} nodes")
    for label, offer_list in (("catalog prices (unknown)", base), ("seeded prices", priced(base, rng))):
        fast, slow, agree, modes = measure(requests, offer_list)
        print(f"{label}: ranked by {modes}")
        print(f"  search:      median {statistics.median(fast) * 1000:7.1f} ms per request")
        print(f"  brute force: median {statistics.median(slow) * 1000:7.1f} ms per request")
        print(f"  ratio (brute force / search): {statistics.median(slow) / statistics.median(fast):.1f}x time;"
              f" picks agreed on {agree}/{args.requests}")


if __name__ == "__main__":
    main()
