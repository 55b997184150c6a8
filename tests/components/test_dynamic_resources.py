"""The neutral dynamic-resource base (components/dynamic_resources.py) with a cloud that is not Baidu, and
what Pulumi pickles of Baidu's providers.

The toy cloud below keeps its resources in a dict (its "API"): the base's check, create, diff, read and
delete run for real on it, so what another cloud without a Pulumi provider gets from the base is
checked without Baidu's SDK. The pickling test guards the state of existing Baidu stacks: Pulumi
stores each provider as a reference to its class plus its fields, so a provider class that moved
module, or a field the base added, would change every resource's `__provider`.
"""
from __future__ import annotations

import pickletools
from dataclasses import dataclass, field

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from components.dynamic_pickle import pickler_kept
from components.dynamic_resources import UNKNOWN_VALUE, Field, SchemaProvider, one_of, resource_classes
from components.providers.baiducloud import dynamic

SCHEMAS = {"Disk": {
    "region": Field("string", True, True),
    "size": Field("int", True, validate={"kind": "int_range", "min": 1, "max": 10}),
    "tier": Field("string", replace=True, validate=one_of("fast", "slow")),
    "label": Field("string"),
    "serial": Field("string", output=True),
}}


class Gone(Exception):
    pass


@dataclass
class DiskProvider(SchemaProvider, kind="Disk"):
    """A disk in `store` (id -> inputs); a missing id raises Gone, as a cloud answers 404."""
    store: dict = field(default_factory=dict)
    schemas = SCHEMAS

    def not_found(self, error: Exception) -> bool:
        return isinstance(error, Gone)

    def _create(self, inputs, token):
        disk_id = f"disk-{len(self.store)}"
        self.store[disk_id] = dict(inputs)
        return disk_id, {"serial": token[-8:]}

    def _read(self, id_, inputs):
        if id_ not in self.store:
            raise Gone(id_)
        return {"label": self.store[id_].get("label")}

    def _delete(self, id_, inputs):
        if id_ not in self.store:
            raise Gone(id_)
        del self.store[id_]


def failures(provider: SchemaProvider, news: dict) -> dict:
    return {f.property: f.reason for f in provider.check({}, news).failures}


def test_check_judges_the_table_and_leaves_a_previews_unknowns_alone():
    disks = DiskProvider()
    assert failures(disks, {"region": "r", "size": 4, "tier": "fast"}) == {}
    found = failures(disks, {"region": "r", "size": 11, "tier": "warm"})
    assert set(found) == {"size", "tier"} and "Disk: size" in found["size"], found
    assert "size" in failures(disks, {"region": "r"})  # required
    assert failures(disks, {"region": "r", "size": UNKNOWN_VALUE}) == {}


def test_create_is_idempotent_by_its_client_token_and_diff_follows_the_table():
    disks = DiskProvider()
    first = disks.create({"region": "r", "size": 4, "label": "a", "__provider": "blob"})
    again = DiskProvider().create({"region": "r", "size": 4, "label": "a"})
    other = DiskProvider().create({"region": "r", "size": 5, "label": "a"})
    assert first.outs["clientToken"] == again.outs["clientToken"] != other.outs["clientToken"]
    assert "__provider" not in first.outs and first.outs["serial"]
    olds = first.outs
    in_place = disks.diff(first.id, olds, {**olds, "label": "b", "serial": None})
    assert in_place.changes and in_place.replaces == [] and not in_place.delete_before_replace
    replaced = disks.diff(first.id, olds, {**olds, "tier": "slow"})
    assert replaced.changes and replaced.replaces == ["tier"]
    assert not disks.diff(first.id, olds, {**olds, "serial": "other"}).changes  # outputs are not compared


def test_found_by_name_kinds_are_deleted_before_their_replacement():
    class NamedDisks(DiskProvider):
        found_by_name = ("Disk",)

    disks = NamedDisks()
    created = disks.create({"region": "r", "size": 4})
    assert disks.diff(created.id, created.outs, {**created.outs, "region": "s"}).delete_before_replace


def test_read_drops_a_gone_resource_and_delete_takes_not_found_as_done():
    disks = DiskProvider()
    created = disks.create({"region": "r", "size": 4, "label": "a"})
    assert disks.read(created.id, created.outs).id == created.id
    disks.delete(created.id, created.outs)
    assert disks.read(created.id, created.outs).id is None
    disks.delete(created.id, created.outs)  # a retried delete succeeds

    class Broken(DiskProvider):
        def _delete(self, id_, inputs):
            raise RuntimeError("throttled")

    with pytest.raises(RuntimeError):
        Broken().delete("disk-0", {})


def test_resource_classes_are_made_from_the_table():
    made = resource_classes("toycloud", {"Disk": DiskProvider}, SCHEMAS, __name__)
    disk = made["Disk"]
    assert disk._resource_type_name == "dynamic/toycloud:Disk"
    assert (disk.__module__, disk.__name__) == (__name__, "Disk")
    assert disk.inputs_schema is SCHEMAS["Disk"] and isinstance(disk.make_provider("r"), DiskProvider)
    assert {kind: cls._resource_type_name for kind, cls in dynamic.RESOURCES.items()} == \
        {kind: f"dynamic/baiducloud:{kind}" for kind in dynamic.SCHEMAS}
    assert dynamic.BccInstance is dynamic.RESOURCES["BccInstance"]


def pickled(provider) -> tuple[list[str], set[str]]:
    """The strings of a serialized provider: the class reference first, then its fields and values."""
    import base64

    with pickler_kept():
        blob = base64.b64decode(serialize_provider(provider))
    strings = [arg for op, arg, _ in pickletools.genops(blob) if isinstance(arg, str)]
    return strings, set(strings)


@pytest.mark.parametrize("kind", sorted(dynamic.PROVIDERS))
def test_a_pickled_baidu_provider_is_its_class_by_reference_and_its_fields(kind):
    strings, found = pickled(dynamic.PROVIDERS[kind]("bj"))
    assert strings[:2] == ["components.providers.baiducloud.dynamic", f"{kind}Provider"], strings
    fields = {"region", "attempts", "first_wait_s", "ready_timeout_s", "poll_s", "timeout_ms", "kind"}
    assert found - {"components.providers.baiducloud.dynamic", f"{kind}Provider"} == fields | {"bj", kind}
    assert "components.dynamic_resources" not in found
