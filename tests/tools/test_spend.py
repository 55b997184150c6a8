"""The cost so far (tools/runlib/spend.py), the one figure `status`, run.py's watch line and its summary show:
ended nodes count their own marker's figure, running nodes the stack's rate since they started, nodes that
have not reported the rate since the stack's update; the price it rests on comes with it."""
from __future__ import annotations

from datetime import datetime, timezone

from tools.runlib.markers import Marker
from tools.runlib.spend import cost_so_far, money_text

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc).timestamp()
PRICE = "on-demand 10 CNY/h (cn-hangzhou, 2026-12-01, DescribePrice)"
OUTPUTS = {"nodeCount": 3, "costPerHour": {"currency": "CNY", "effectivePerHour": 30.0, "basis": PRICE}}


def marker(node, state, **body):
    return Marker(key=f"markers/{node}.json", etag=node, node=node, state=state, body=body)


def test_ended_nodes_stop_counting_and_running_ones_count_their_share_since_they_started():
    markers = [marker("i-1", "DONE", estimatedCost=4.5, currency="CNY"),
               marker("i-2", "RUNNING", startedAt="2026-12-04T10:00:00Z")]
    # i-3 has not reported: it has billed since the stack's update an hour ago.
    cost = cost_so_far(OUTPUTS, markers, NOW, started=NOW - 3600)
    assert cost["amount"] == 4.5 + 10.0 * 2 + 10.0 * 1
    assert cost["currency"] == "CNY" and cost["price"] == PRICE
    assert "i-1: 4.5 (its marker)" in cost["basis"] and "1 node(s) not reported yet" in cost["basis"]
    assert money_text(cost) == "34.50 CNY"
    # Without the update's time (`status`), a silent node is not guessed at.
    assert cost_so_far(OUTPUTS, markers, NOW)["amount"] == 24.5


def test_a_stack_without_a_price_says_so_and_how_to_get_one():
    outputs = {"nodeCount": 1, "costPerHour": {"currency": "CNY", "effectivePerHour": None,
                                               "basis": "unknown: no dated on-demand price (gpu-training prices"
                                                        " --refresh alicloud fills it)"}}
    cost = cost_so_far(outputs, [marker("i-1", "RUNNING", startedAt="2026-12-04T10:00:00Z")], NOW, NOW - 60)
    assert cost["amount"] is None and "fills it" in cost["basis"] and money_text(cost) == "unknown"
    assert cost_so_far(outputs, [], NOW)["basis"] == "no node has reported yet"
