"""The one reader of dotted paths into data (components/datapaths.py), on the shapes the rules-as-data files
meet: request bodies (api.yaml, bce_api.yaml, price_api.yaml), resource inputs (conformance.yaml, egress
evidence, provider facts) and API answers."""
from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from components import datapaths
from components.datapaths import MISSING, first, located, values

REPO = Path(__file__).resolve().parents[2]
BODY = {"JobSpecs": [{"Type": "Worker", "PodCount": 2}], "DataSources": [{"MountAccess": "RO"}, {"MountAccess": "RW"}],
        "metadata": {"id": "job-1"}, "tags": None, "empty": [], "blank": ""}


def test_descend_fan_out_and_index():
    assert values(BODY, "metadata.id") == ["job-1"]
    assert values(BODY, "DataSources[].MountAccess") == ["RO", "RW"]
    assert located(BODY, "DataSources[].MountAccess") == [("DataSources[0].MountAccess", "RO"),
                                                          ("DataSources[1].MountAccess", "RW")]
    assert values(BODY, "JobSpecs.0.Type") == ["Worker"] and values(BODY, "DataSources.1.MountAccess") == ["RW"]
    assert values(BODY, "DataSources.5.MountAccess") == []


def test_absent_places_are_missing_and_fan_outs_over_nothing_name_none():
    assert located(BODY, "metadata.name") == [("metadata.name", MISSING)]  # "required" can name it
    assert located(BODY, "nope.deeper") == [("nope.deeper", MISSING)]
    assert located(BODY, "tags[].key") == [] and located(BODY, "empty[].x") == [] and located(BODY, "nope[]") == []
    assert values(BODY, "metadata.name") == [] and first(BODY, "metadata.name", "default") == "default"
    assert first(BODY, "blank") == ""  # an empty string is a value; a rule decides what it means


def test_a_lone_object_is_one_item_and_a_one_item_block_reads_inside():
    """Terraform blocks of one come from the bridged SDKs as an object or as a list of one."""
    assert located({"ingress": {"cidr": "10.0.0.0/8"}}, "ingress[].cidr") == [("ingress.cidr", "10.0.0.0/8")]
    assert first({"instanceConfig": [{"publicIp": {"eip": 1}}]}, "instanceConfig.publicIp.eip") == 1
    assert first({"instanceConfig": {"publicIp": {"eip": 1}}}, "instanceConfig.publicIp.eip") == 1
    assert first({"a": [{"b": 1}, {"b": 2}]}, "a.b") is None  # a real list needs [] or an index


def _walks(loop: ast.For) -> bool:
    """Whether a loop body reads into data by the parts: `node[part]` or `node.get(part)`."""
    return any(isinstance(n, ast.Subscript) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                                and n.func.attr == "get") for n in ast.walk(loop))


def test_no_other_module_walks_dotted_paths_itself():
    """The readers this one replaced (safety.values_at, egress._at, jobapi._lookup, Baidu's values,
    price_rules._walk, facts' loop, public_feed.field's loop, the bootstrap config reader's loop) stay gone:
    no module splits a path on dots and walks it but this one. node/ is not scanned: the node agent imports
    nothing from components/ (it has no dotted reader today)."""
    walkers = []
    for room in ("components", "tools", "scripts", "localcloud"):
        for file in (REPO / room).rglob("*.py"):
            if file == Path(datapaths.__file__):
                continue
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and \
                        isinstance(node.iter.func, ast.Attribute) and node.iter.func.attr == "split" and \
                        node.iter.args and isinstance(node.iter.args[0], ast.Constant) and \
                        node.iter.args[0].value == "." and _walks(node):
                    walkers.append(f"{file.relative_to(REPO)}:{node.lineno}")
    assert not walkers, f"dotted-path readers outside components/datapaths.py: {walkers}"


_NAMES = st.sampled_from(["a", "b", "c"])  # few names, so paths often hit; no digits, no []: plain names
_DATA = st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=2)),
                     lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(_NAMES, inner, max_size=3)),
                     max_leaves=12)


def _strict(data, path):
    """The reading public_feed.field and the bootstrap config had before they used this module."""
    for name in path.split("."):
        if not isinstance(data, dict) or name not in data:
            return MISSING
        data = data[name]
    return data


@given(_DATA, st.lists(_NAMES, min_size=1, max_size=4).map(".".join))
def test_without_blocks_a_plain_path_reads_mappings_only(data, path):
    """blocks=False: a name reads a mapping's key and nothing else (a list of one is no mapping); a key that
    is there holding None gives None, not the default."""
    assert first(data, path, MISSING, blocks=False) == _strict(data, path)


def test_blocks_false_finds_nothing_inside_a_list_of_one():
    assert first({"data": [{"Response": {}}]}, "data.Response", MISSING, blocks=False) is MISSING
    assert first({"data": [{"Response": {}}]}, "data.Response", MISSING) == {}
    assert first({"a": {"b": None}}, "a.b", "default", blocks=False) is None


def test_rewrite_changes_every_place_in_place_and_leaves_absent_ones_absent():
    body = {"JobSpecs": [{"PodCount": 2.0}, {"PodCount": 1.0}], "metadata": {"name": "x"}}
    datapaths.rewrite(body, "JobSpecs[].PodCount", int)
    datapaths.rewrite(body, "metadata.name", lambda v: v + "-1")
    datapaths.rewrite(body, "metadata.absent", lambda v: "never")
    datapaths.rewrite(body, "nope[].x", lambda v: "never")
    assert body == {"JobSpecs": [{"PodCount": 2}, {"PodCount": 1}], "metadata": {"name": "x-1"}}
    assert all(type(spec["PodCount"]) is int for spec in body["JobSpecs"])
