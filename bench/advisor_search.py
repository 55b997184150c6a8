"""Measure the advisor's search against a brute force over the same catalog, on random requests.

The search starts each (instance type, billing) at the fewest nodes that could meet the deadline and
stops at the first node count that does; the brute force evaluates every node count up to
--max-nodes. Prints the median time per request of each, the ratio, and whether every pick agreed (tests/test_advisor.py asserts the agreement; this only measures).

Run: .venv/bin/python bench/advisor_search.py [--requests 60] [--max-nodes 64]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from tools.advisor import optimiser
from tools.advisor import perf as perfmod
from tools.advisor.optimiser import meets_deadline, rank_key, rank_mode
from tools.advisor.request import build_request


def brute_force(request, offer_list):
    fitting = [ev for ev in optimiser.every_configuration(request, offer_list)
               if meets_deadline(ev, request) and optimiser.within_budget(ev, request)]
    if not fitting:
        return None
    mode = rank_mode(fitting)
    return min(fitting, key=lambda ev: rank_key(ev, mode))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--max-nodes", type=int, default=64)
    args = parser.parse_args()
    rng = random.Random(11)
    models = list(perfmod.load().models)
    base, _ = optimiser.offers(build_request(model="resnet50", images=1000, epochs=1, deadline_hours=1))
    fast, slow, agree = [], [], 0
    for _ in range(args.requests):
        request = build_request(model=rng.choice(models), images=int(10 ** rng.uniform(4, 6.8)),
                                epochs=rng.choice([10, 90, 300]), deadline_hours=round(10 ** rng.uniform(0, 2), 1),
                                dataset_gb=round(10 ** rng.uniform(0, 2.5), 1), spot=True, max_nodes=args.max_nodes)
        start = time.perf_counter()
        result = optimiser.search(request, base)
        fast.append(time.perf_counter() - start)
        start = time.perf_counter()
        best = brute_force(request, base)
        slow.append(time.perf_counter() - start)
        pick = result.ranked[0] if result.ranked else None
        agree += (pick is None and best is None) or (pick is not None and best is not None and
                                                     (pick.offer.instance.name, pick.nodes, pick.billing) ==
                                                     (best.offer.instance.name, best.nodes, best.billing))
    print(f"{args.requests} random requests, {len(base)} catalog offers, spot allowed, up to {args.max_nodes} nodes")
    print(f"search:      median {statistics.median(fast) * 1000:7.1f} ms per request")
    print(f"brute force: median {statistics.median(slow) * 1000:7.1f} ms per request")
    print(f"ratio (brute force / search): {statistics.median(slow) / statistics.median(fast):.1f}x time;"
          f" picks agreed on {agree}/{args.requests}")


if __name__ == "__main__":
    main()
