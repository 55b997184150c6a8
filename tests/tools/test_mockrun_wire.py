"""tools/mockrun.py's monitor reads and writes a registration as the Pulumi SDK does (issue 25's faster plan).

The preview's monitor reads plain inputs and writes plain answers itself instead of through the SDK's
per-value reader and its async serialiser; the SDK itself is the oracle here: for every kind of value a
program can send (plain data with nulls at any depth, numbers, booleans, unknowns, secrets, assets,
resource references), the monitor's reading equals rpc.deserialize_properties and its answer equals
rpc.serialize_properties, byte for byte.
"""
from __future__ import annotations

import pulumi
import pytest
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.rpc_manager import RPCManager
from pulumi.runtime.sync_await import _sync_await

from tools.mockrun import engine_answer, engine_inputs, is_plain


class _Echo(pulumi_mocks.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}


@pytest.fixture
def engine():
    """A preview's mock engine, as the program sees it (unknowns are kept, secrets supported)."""
    pulumi_settings.ROOT.set(None)
    pulumi_settings.SETTINGS.rpc_manager = RPCManager()
    pulumi_settings.SETTINGS.outputs = set()
    pulumi_mocks.set_mocks(_Echo(), project="wire", stack="wire", preview=True)
    yield


def wire(bag: dict):
    """What the SDK sends for `bag`: the engine's view of a registration's inputs."""
    return _sync_await(rpc.serialize_properties(bag, {}))


def unknown() -> pulumi.Output:
    """An Output the engine does not know yet in a preview (a computed output of a resource being created)."""
    known = pulumi.Output.from_input("never read")
    return pulumi.Output(set(), known.future(), pulumi.Output.from_input(False).future())


def comparable(value):
    """Python values with each object that compares by identity (an unknown, an asset, a resource) as its type."""
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if is_plain(value):
        return (type(value).__name__, value)
    return f"<{type(value).__name__}>"


def bags(resource) -> dict[str, dict]:
    return {
        "plain": {"name": "n-0", "size": 100, "ratio": 0.5, "on": True, "off": False, "empty": "",
                  "tags": {"team": "ml", "none": None, "nested": {"deeper": [1, None, "x", {"k": None}]}},
                  "list": ["a", None, 2], "tuple": ("t", 1), "blank": {}, "nothing": [], "skipped": None},
        "unknown": {"name": "n", "address": unknown(), "nested": {"ip": unknown()}, "list": ["a", unknown()]},
        "secret": {"password": pulumi.Output.secret("hunter2"), "list": ["a", pulumi.Output.secret("b")],
                   "map": {"k": pulumi.Output.secret("v"), "plain": "p"}},
        "asset": {"code": pulumi.StringAsset("print(1)"), "archive": pulumi.AssetArchive(
            {"a.txt": pulumi.StringAsset("a")}), "file": pulumi.FileAsset("README.md")},
        "resource": {"parent": resource, "ids": [resource.id]},
        "output": {"user_data": pulumi.Output.from_input("#cloud-config\n"), "n": pulumi.Output.from_input(3)},
    }


def test_the_monitor_reads_every_kind_of_input_as_the_sdk_reads_it(engine):
    def program():
        resource = pulumi.CustomResource("wire:index:Thing", "thing", {"a": 1})
        for kind, bag in bags(resource).items():
            sent = wire(bag)
            read = engine_inputs(sent)
            assert comparable(read) == comparable(rpc.deserialize_properties(sent)), kind
            assert wire(read) == wire(rpc.deserialize_properties(sent)), kind

    _sync_await(pulumi_mocks.run_pulumi_func(program))


def test_the_monitor_answers_every_kind_of_state_as_the_sdk_serialises_it(engine):
    def program():
        resource = pulumi.CustomResource("wire:index:Thing", "thing", {"a": 1})
        for kind, bag in bags(resource).items():
            state = {**rpc.deserialize_properties(wire(bag)), "computed": "10.0.0.2", "gone": None}
            answer = engine_answer(state)
            assert answer == wire(state), kind
            assert answer.SerializeToString(deterministic=True) == \
                wire(state).SerializeToString(deterministic=True), kind
            assert "gone" not in answer.fields and answer["computed"] == "10.0.0.2"

    _sync_await(pulumi_mocks.run_pulumi_func(program))


def test_only_json_shaped_values_are_plain():
    assert is_plain({"a": [1, 2.5, True, None, "x", ("t",)], "b": {}})
    assert not is_plain({"a": pulumi.output.Unknown()})
    assert not is_plain({1: "key not text"})
    assert not is_plain(["ok", pulumi.StringAsset("x")])
    assert not is_plain(pulumi.Output.from_input("x"))
