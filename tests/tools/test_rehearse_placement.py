"""The rehearsed node stands where the stack does: its metadata answers the stack's region and zone (newcomer trial:
a cn-heyuan stack's node log and markers said zone cn-hangzhou-i, the stand-in's default)."""
from __future__ import annotations

import json

import pytest

from tests.tools.setup_project import make_project, rehearse_in


@pytest.mark.slow
@pytest.mark.parametrize("region, zone, expected", [("cn-shanghai", "cn-shanghai-l", "cn-shanghai-l"),
                                                    ("cn-heyuan", None, "cn-heyuan-rehearsal")])
def test_the_rehearsed_nodes_region_and_zone_are_the_stacks(tmp_path, region, zone, expected):
    project, _ = make_project(tmp_path, "placed", {}, "")
    stack = project / "stacks" / "Pulumi.placed.yaml"
    text = stack.read_text().replace("alicloud:region: cn-hangzhou", f"alicloud:region: {region}")
    if zone:
        text = text.replace("config:\n", f"config:\n  gpu-training:zone: {zone}\n", 1)
    stack.write_text(text)
    code, document, stderr = rehearse_in(project, "placed", "--steps", "40", "--keep")
    assert code == 0, stderr[-3000:]
    markers = list((project / "out").rglob("markers/*.json"))
    assert markers, "no marker kept"
    for path in markers:
        body = json.loads(path.read_text())
        assert (body["region"], body["zone"]) == (region, expected), path
