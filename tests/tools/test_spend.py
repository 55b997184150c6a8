"""The cost so far (tools/runlib/spend.py), the one figure `status`, run.py's watch line and its summary show:
ended nodes count their own marker's figure, running nodes the stack's rate since they started, nodes that
have not reported the rate since the stack's update; the price it rests on comes with it."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

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


STORAGE = {"dataDisks": {"currency": "CNY", "perHour": 0.6, "basis": "0.0021 CNY/GiB-h x 100 GiB x 3 node(s) (...)"},
           "sharedStorage": {"currency": "USD", "perHour": 2.0, "basis": "0.0002 USD/GiB-h x 10,000 GiB (...)"}}


def test_the_data_disks_count_for_the_nodes_hours_and_the_shared_file_system_since_the_update():
    outputs = {"nodeCount": 3, "costPerHour": {**OUTPUTS["costPerHour"], "storage": STORAGE}}
    markers = [marker("i-1", "DONE", estimatedCost=4.5, currency="CNY", durationSeconds=1800),
               marker("i-2", "RUNNING", startedAt="2026-12-04T10:00:00Z")]
    cost = cost_so_far(outputs, markers, NOW, started=NOW - 3600)
    # Disks: 0.2 CNY per node-hour for 0.5 h (i-1) + 2 h (i-2) + 1 h (i-3, silent): 0.7 CNY, added (same currency).
    assert cost["amount"] == pytest.approx(34.5 + 0.2 * 3.5)
    disks, shared = cost["storage"]
    assert disks["added"] and disks["amount"] == pytest.approx(0.7)
    # The shared file system bills in USD since the update: listed apart, never converted or added.
    assert not shared["added"] and shared["amount"] == pytest.approx(2.0) and shared["currency"] == "USD"
    assert money_text(cost) == "35.20 CNY + 2.00 USD"


def test_storage_whose_price_is_unknown_is_listed_not_guessed_and_status_without_the_update_counts_from_the_first_node():
    unknown = {"dataDisks": {"currency": None, "perHour": None, "basis": "unknown: ... today's price: https://x"},
               "sharedStorage": {"currency": "CNY", "perHour": 1.0, "basis": "1 CNY/h (...)"}}
    outputs = {"nodeCount": 1, "costPerHour": {"currency": "CNY", "effectivePerHour": 10.0, "storage": unknown}}
    cost = cost_so_far(outputs, [marker("i-1", "RUNNING", startedAt="2026-12-04T10:00:00Z")], NOW)
    disks, shared = cost["storage"]
    assert disks["amount"] is None and not disks["added"] and "today's price" in disks["basis"]
    assert shared["added"] and "since the first node started" in shared["what"]
    assert cost["amount"] == pytest.approx(20.0 + 2.0)
