"""The one checker of request rules kept as data (components/requestrules.py): each rule of its vocabulary
on a request that keeps it and one that breaks it; and every rule file of the project (the job APIs' api.yaml,
the price APIs' price_api.yaml, Baidu's bce_api.yaml) speaks only that vocabulary."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from components import requestrules

REPO = Path(__file__).resolve().parents[2]
TABLE = {
    "required": {"metadata.name": "src-a", "JobSpecs.0.Image": "src-b", "items[].id": "src-c"},
    "requiredWhen": {"ResourceType=disk": ["DataDisk.1.Size"]},
    "anyOf": [["spec", "specId"]],
    "together": [["InstanceMarketOptions", "InstanceChargeType=SPOTPAID"]],
    "onlyWith": {"spec.volumes": {"field": "spec.pool_id", "source": "src-d"}},
    "integers": {"JobSpecs[].PodCount": "src-e"},
    "values": {"JobSpecs[].Type": {"allowed": ["Worker", "Master"], "source": "src-f"}, "billing": ["Postpaid"],
               "size": {"min": 20, "source": "src-g"}, "uri": {"pattern": "oss://.+", "source": "src-h"}},
    "equals": {"disks[].deleteWithInstance": {"value": True, "why": "released with it"}},
    "source": "the table's",
}
GOOD = {"metadata": {"name": "job"}, "JobSpecs": [{"Image": "img", "Type": "Worker", "PodCount": 2}],
        "items": [{"id": 1}], "ResourceType": "disk", "DataDisk.1.Size": 40, "spec": "s", "billing": "Postpaid",
        "size": 20, "uri": "oss://b/p", "disks": [{"deleteWithInstance": True}]}


def test_a_request_that_keeps_every_rule_has_no_problem():
    assert requestrules.problems(TABLE, GOOD) == []


@pytest.mark.parametrize("change, kind, says", [
    ({"metadata": {}}, "missing", "metadata.name: required (src-a)"),
    ({"items": []}, "missing", "items[].id: required (src-c)"),
    ({"items": [{"id": 1}, {}]}, "missing", "items[].id: required (src-c)"),
    ({"DataDisk.1.Size": None}, "missing", "DataDisk.1.Size: required with ResourceType=disk (the table's)"),
    ({"spec": ""}, "missing", "spec or specId: one of them is required (the table's)"),
    ({"InstanceMarketOptions": {"MarketType": "spot"}}, "invalid", "InstanceMarketOptions and InstanceChargeType=SPOTPAID"),
    ({"spec": "s", "spec.volumes": [{"obs": "x"}]}, "invalid", "spec.volumes: taken only with spec.pool_id (src-d)"),
    ({"JobSpecs": [{"Image": "img", "Type": "Worker", "PodCount": 2.0}]}, "invalid", "JobSpecs[].PodCount: 2.0 is not an integer"),
    ({"JobSpecs": [{"Image": "img", "Type": "Chief", "PodCount": 2}]}, "invalid", "'Chief' is not allowed; allowed: Worker, Master (src-f)"),
    ({"billing": "Prepaid"}, "invalid", "billing: 'Prepaid' is not allowed; allowed: Postpaid (the table's)"),
    ({"size": 10}, "invalid", "size: 10 is below the minimum 20 (src-g)"),
    ({"uri": "s3://b"}, "invalid", "uri: 's3://b' does not match oss://.+ (src-h)"),
    ({"disks": [{"deleteWithInstance": False}]}, "invalid", "must be True, sent [False]: released with it"),
])
def test_each_rule_refuses_what_breaks_it_by_path_with_its_source(change, kind, says):
    found = requestrules.problems(TABLE, {**GOOD, **change})
    assert [(p.kind, says in p.message) for p in found] == [(kind, True)], found


def test_every_rule_file_speaks_the_one_vocabulary():
    vocabulary = {"required", "requiredWhen", "anyOf", "together", "onlyWith", "integers", "values", "equals", "source"}
    tables = []
    for path in (REPO / "components" / "providers").glob("*/*/api.yaml"):
        tables += [(path, name, op) for name, op in yaml.safe_load(path.read_text())["operations"].items()]
    for path in (REPO / "components" / "providers").glob("*/price_api.yaml"):
        tables += [(path, name, {k: v for k, v in row.items() if k not in ("name", "defaults")})
                   for name, row in yaml.safe_load(path.read_text())["calls"].items()]
    assert len(tables) >= 8
    checked = 0
    for path, name, op in tables:
        rules = {k: v for k, v in op.items() if k in vocabulary}
        # The rest of an operation is how to call it (method, path, answer, name, states), not a rule.
        assert not {k for k in op if k[0].islower() and k.endswith(("Unless", "Required", "Values"))}, (path, name)
        requestrules.problems(rules, {})  # every rule of the file is one the checker reads
        checked += bool(rules)
    assert checked >= 6


def test_no_other_module_checks_request_rules_itself():
    """jobapi, price_rules and Baidu's api_reference hand their tables to the one checker."""
    for relative in ("components/platforms/jobapi.py", "tools/price_rules.py",
                     "components/providers/baiducloud/api_reference.py"):
        source = (REPO / relative).read_text()
        tree = ast.parse(source)
        assert "requestrules.problems" in source, relative
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert not names & {"_present", "_values", "_holds", "_walk", "_lookup"}, relative
