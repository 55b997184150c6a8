"""Pulumi dynamic resources driven by a schema table: the cloud-neutral half of a hand-written provider.

For a cloud with no bridged Pulumi provider (Baidu: components/providers/baiducloud/dynamic.py) the
program declares each resource kind's inputs once, as `Field`s in a table {kind: {input: Field}}, and
everything that does not call the cloud is here, driven by that table:

- `SchemaProvider`, the `pulumi.dynamic.ResourceProvider` base: `check` judges the inputs with the
  same checker the provider-facts tests use (components/providers/facts.py), `create` passes a client
  token made from the kind and the inputs (a retried create gets the first one's resource), `diff`
  replaces on a `Field(replace=True)` and updates in place otherwise, `read` and `delete` take the
  cloud's "not found" as gone / done. A cloud's subclass fills in `_create`, `_read`, `_update`,
  `_delete` with its API calls, and `not_found` with what its errors look like.
- `resource_classes`, the `pulumi.dynamic.Resource` subclasses generated from the table: one per
  kind, type token `pulumi-python:dynamic/<module>:<Kind>`, the schema's outputs declared so they show
  as outputs, and the pickler put back after each is made (components/dynamic_pickle.py).
- `facts_resources`, provider_facts.json's `resources` from the same table.

Pulumi pickles a provider into the state by reference to its class (its module and name) plus its
instance fields: a cloud's provider classes must keep their module and names, and this base adds no
instance field, or every existing resource would show a changed `__provider`.
"""
from __future__ import annotations

import hashlib
import json
import types
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Optional

import pulumi
import pulumi.dynamic as dyn

from components.dynamic_pickle import pickler_kept

UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi.runtime.rpc.UNKNOWN: a preview's unknown


@dataclass(frozen=True)
class Field:
    """One input: its type, whether a change replaces the resource, what the API accepts."""
    type: str  # string | int | bool | list | map | number
    required: bool = False
    replace: bool = False
    validate: Optional[dict] = None
    block: Optional[dict] = None  # nested fields (an object: type list with one item)
    api: str = ""  # the field's name in the API request body
    source: str = ""
    output: bool = False  # filled in by the provider (never compared by diff)
    one: bool = False  # a single nested object (the engine sends the object, not a list)

    def fact(self, name: str) -> dict:
        """The field as provider_facts.json writes an input (what facts.check_block judges)."""
        out: dict[str, Any] = {"type": self.type, "tf": self.api or name}
        out["required" if self.required else "optional"] = True
        if self.replace:
            out["force_new"] = True
        if self.validate:
            out["validate"] = self.validate
        if self.block is not None:
            out["block"] = {k: f.fact(k) for k, f in self.block.items()}
            if self.one:
                out.update(max_items=1, max_items_one=True)
        if self.source:
            out["source"] = self.source
        if self.output:
            out["computed"] = True
        return out


Schemas = Mapping[str, Mapping[str, Field]]  # kind -> input name -> Field


def one_of(*values: str) -> dict:
    return {"kind": "one_of", "values": list(values)}


def clean(props: dict) -> dict:
    """The inputs without the engine's own (`__provider`)."""
    return {k: v for k, v in props.items() if not k.startswith("__")}


def client_token(kind: str, props: dict) -> str:
    """The same inputs give the same token: a retried create is answered with the first one's resource."""
    stable = json.dumps({"kind": kind, **clean(props)}, sort_keys=True, default=str)
    return "gpu-training-" + hashlib.sha256(stable.encode()).hexdigest()[:40]


def facts_resources(schemas: Schemas, type_prefix: str, source_file: str) -> dict:
    """provider_facts.json's `resources`: every dynamic type's inputs, as the facts checker reads them."""
    out = {}
    for kind, fields in schemas.items():
        inputs = {name: f.fact(name) for name, f in fields.items()}
        # The engine also receives the pickled provider (pulumi.dynamic.Resource, PROVIDER_KEY).
        inputs["__provider"] = {"type": "string", "required": True, "tf": "__provider", "force_new": False,
                                "note": "the serialized ResourceProvider (pulumi/dynamic/dynamic.py)"}
        out[type_prefix + kind] = {"tf_resource": kind, "source": f"{source_file}:{kind}", "inputs": inputs}
    return out


class SchemaProvider(dyn.ResourceProvider):
    """The lifecycle every kind shares; a cloud's subclass sets `schemas` and the hooks below, and one class
    per kind names its kind in the class statement."""

    schemas: ClassVar[Schemas] = {}
    # Kinds the cloud finds by their name or description: a replacement cannot be made before the old
    # one is deleted (the new one would be the old one, and deleting the old one would delete it).
    found_by_name: ClassVar[tuple[str, ...]] = ()
    kind: str = ""  # the SCHEMAS key: `class VpcProvider(CloudProvider, kind="Vpc")`

    def __init_subclass__(cls, kind: str = "", **kwargs):
        super().__init_subclass__(**kwargs)
        if kind:
            cls.kind = kind

    def fields(self) -> Mapping[str, Field]:
        return self.schemas[self.kind]

    def not_found(self, error: Exception) -> bool:
        """Whether `error` says the resource is not there (read: gone; delete: already done)."""
        return False

    # -- Pulumi's methods
    def check(self, olds: dict, news: dict) -> dyn.CheckResult:
        """The inputs against the schema, with the same checker the facts tests use (facts.check_block);
        values unknown during a preview are not judged."""
        from components.providers.facts import check_block

        known = {k: v for k, v in clean(news).items() if v != UNKNOWN_VALUE}
        fields = {name: f.fact(name) for name, f in self.fields().items()}
        problems: list = []
        check_block(fields, known, "", problems)
        failures = [dyn.CheckFailure(p.path, f"{self.kind}: {p.path}: {p.message}") for p in problems
                    if p.kind != "missing" or p.path.split(".")[0] not in news]
        failures += [dyn.CheckFailure(p, m) for p, m in self._check(known)]
        return dyn.CheckResult(news, failures)

    def create(self, props: dict) -> dyn.CreateResult:
        inputs = clean(props)
        token = client_token(self.kind, inputs)
        resource_id, outs = self._create(inputs, token)
        return dyn.CreateResult(resource_id, {**inputs, **outs, "clientToken": token})

    def read(self, id_: str, props: dict) -> dyn.ReadResult:
        try:
            current = self._read(id_, clean(props))
        except Exception as error:
            if not self.not_found(error):
                raise
            current = None
        if current is None:
            return dyn.ReadResult(None, {})
        return dyn.ReadResult(id_, {**clean(props), **current})

    def diff(self, id_: str, olds: dict, news: dict) -> dyn.DiffResult:
        fields = self.fields()
        changed = [name for name, spec in fields.items()
                   if not spec.output and clean(olds).get(name) != clean(news).get(name)]
        replaces = [name for name in changed if fields[name].replace]
        return dyn.DiffResult(changes=bool(changed), replaces=replaces, stables=[],
                              delete_before_replace=bool(replaces) and self.kind in self.found_by_name)

    def update(self, id_: str, olds: dict, news: dict) -> dyn.UpdateResult:
        outs = self._update(id_, clean(olds), clean(news)) or {}
        return dyn.UpdateResult({**clean(olds), **clean(news), **outs})

    def delete(self, id_: str, props: dict) -> None:
        try:
            self._delete(id_, clean(props))
        except Exception as error:
            if not self.not_found(error):
                raise

    # -- what a kind fills in
    def _check(self, news: dict) -> list[tuple[str, str]]:
        """Rules the schema cannot say: (input path, message) for each problem."""
        return []

    def _create(self, inputs: dict, token: str) -> tuple[str, dict]:
        raise NotImplementedError

    def _read(self, id_: str, inputs: dict) -> Optional[dict]:
        raise NotImplementedError

    def _update(self, id_: str, olds: dict, news: dict) -> Optional[dict]:
        return None

    def _delete(self, id_: str, inputs: dict) -> None:
        raise NotImplementedError


class SchemaResource(dyn.Resource):
    """A resource of one kind: `name`, its inputs and the region; its provider is `make_provider(region)`,
    the schema's outputs are declared empty so they show as outputs, and the pickler is left as it was
    found. Its subclasses are made by resource_classes()."""

    make_provider: ClassVar[Callable[[str], dyn.ResourceProvider]]
    inputs_schema: ClassVar[Mapping[str, Field]]

    def __init__(self, name: str, props: dict, region: str, opts: Optional[pulumi.ResourceOptions] = None):
        outputs = {k: None for k, f in self.inputs_schema.items() if f.output}
        with pickler_kept():
            super().__init__(type(self).make_provider(region), name, {**props, "region": region, **outputs}, opts)


def resource_classes(module: str, providers: Mapping[str, Callable[[str], dyn.ResourceProvider]],
                     schemas: Schemas, owner: str) -> dict[str, type]:
    """{kind: its SchemaResource subclass}: type token `pulumi-python:dynamic/<module>:<Kind>` (from the
    class keywords, as Pulumi reads them), named `<Kind>` in `owner`, the module that declares the kinds."""
    made = {}
    for kind, provider in providers.items():
        namespace = {"__module__": owner, "make_provider": staticmethod(provider), "inputs_schema": schemas[kind]}
        made[kind] = types.new_class(kind, (SchemaResource,), {"module": module, "name": kind},
                                     lambda body, given=namespace: body.update(given))
    return made
