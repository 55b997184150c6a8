"""What keeps billing once the nodes release themselves is shown, never silent (issue 10, item 4).

maxHours and the agent end the nodes only; file systems, the CCN, the spot seed disk and snapshot,
uploaded objects and the checkpoints bill on. The preview (human and --json) and the stack output
scripts/run.py reads list them with their rate or "unknown"; every resource type a plan holds is
classified by its provider as lingering or as billing nothing by itself, so a new billing resource
cannot slip in unlisted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stackcases import node_stack_names  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
VARIANTS = [(stack, ()) for stack in node_stack_names()] + [
    ("entry-t4", ("billing=spot", "checkpoint.create=true", "sshPublicKey=ssh-ed25519 AAAA me")),
    ("large-a100", ("sharedStorage=nas", "billing=spot")),
    ("tc-large-a100", ("billing=spot", "spotMaxPricePerHour=50", "checkpoint.create=true",
                       "sshPublicKey=ssh-ed25519 AAAA me")),
]


@pytest.mark.parametrize("stack,overrides", VARIANTS, ids=[f"{s}{'+' if o else ''}{'+'.join(o)}" for s, o in VARIANTS])
def test_every_resource_type_is_classified_and_every_lingering_item_is_in_the_plan(plan_for, stack, overrides):
    from components import billing
    from tools.stackfiles import stack_spec

    _, spec = stack_spec(stack, overrides)
    plan = plan_for(stack, *overrides)
    assert billing.unclassified(spec, plan.resources) == []
    in_plan = {r.type for r in plan.resources}
    for item in billing.keeps_billing(spec):
        assert item.type is None or item.type in in_plan, item
        assert item.rate is None or "(" in item.rate, "a rate needs its source"
    assert plan.outputs["keepsBilling"] == billing.as_output(spec)


def preview_json(stack: str, *overrides: str) -> dict:
    args = [a for o in overrides for a in ("--set", o)]
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "preview.py"), stack, "--json", *args],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# Priced from the shipped list prices (components/providers/<cloud>/storage_prices.yaml); every other item: no rate.
PRICED = {"CFS Turbo file system (High-Performance, TP)": "0.00027778 USD/GiB-h"}


@pytest.mark.parametrize("stack,overrides,expected", [
    ("large-h20", (), {"CPFS file system (advance_100)": "3,600 GiB"}),
    ("tc-large-a100", ("billing=spot", "spotMaxPricePerHour=50"),
     {"CFS Turbo file system (High-Performance, TP)": "10,240 GiB",
      "Cloud Connect Network that reaches CFS Turbo (POSTPAID)": None,
      "encrypted seed disk of the spot pool's data disks": "20 GiB CLOUD_HSSD", "snapshot of the seed disk": None}),
    ("entry-t4", ("sharedStorage=nas",), {"NAS file system (Performance, NFS)": None}),
])
def test_preview_json_and_the_stack_output_list_what_keeps_billing(stack, overrides, expected):
    document = preview_json(stack, *overrides)
    listed = {item["what"]: item for item in document["keepsBilling"]}
    for what, size in expected.items():
        assert what in listed, sorted(listed)
        assert size is None or listed[what]["size"] == size
        if what in PRICED:
            assert PRICED[what] in listed[what]["rate"]
        else:
            assert listed[what]["rate"] is None  # no rate in the cited documents: unknown, not invented
        assert listed[what]["until"] == "pulumi destroy"
    assert "checkpoints, markers and reports the nodes wrote" in listed
    assert document["outputs"]["keepsBilling"] == document["keepsBilling"]
    assert document["unclassifiedResourceTypes"] == []


def test_preview_human_output_shows_the_keeps_billing_table():
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "preview.py"), "large-a100"], capture_output=True,
                            text=True, timeout=120, env={**os.environ, "COLUMNS": "240",
                                                         "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"})
    assert result.returncode == 0, result.stderr
    assert "keeps billing after the nodes release themselves" in result.stdout
    assert "CPFS file system (advance_100)" in result.stdout and "unknown" in result.stdout
