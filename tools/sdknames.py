"""The names a bridged Pulumi SDK gives Terraform arguments, read from the installed SDK itself.

The bridge turns a Terraform argument `data_disk` into the Pulumi input `dataDisks`: camelCase, and
plural for a list of several items (a list of at most one item becomes a single value). The
inflector's plural is not always `+s`, so the installed SDK's Args classes are the truth: this
module reads their Pulumi names, nested Args classes and whether each takes a list.
"""
from __future__ import annotations

import importlib
import inspect
import keyword
import re
import sys
from typing import Optional


def camel(tf_name: str) -> str:
    first, *rest = tf_name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def plurals(name: str) -> list[str]:
    """The forms the bridge's inflector may give a list: dataDisk -> dataDisks, ingress -> ingresses."""
    forms = [name + "s", name + "es"]
    if name.endswith("y"):
        forms.append(name[:-1] + "ies")
    return forms


def args_class(sdk_module: str, token: str):
    module, name = token.split(":")[1].split("/")[0].lower(), token.split(":")[2]
    module = module + "_" if keyword.iskeyword(module) else module
    package = importlib.import_module(f"{sdk_module}.{module}")
    return getattr(package, f"{name}Args")


def sdk_fields(cls) -> dict[str, tuple[str, Optional[type], bool]]:
    """pulumi name -> (python name, nested Args class or None, whether the SDK takes a list)."""
    from pulumi._types import input_type_py_to_pulumi_names

    names = input_type_py_to_pulumi_names(cls)
    params = inspect.signature(cls.__init__).parameters
    module = sys.modules[cls.__module__]
    found = {}
    for py_name, pulumi_name in names.items():
        annotation = repr(params[py_name].annotation) if py_name in params else ""
        nested = re.search(r"ForwardRef\('(\w+Args)'\)", annotation)
        nested_cls = getattr(module, nested.group(1), None) if nested else None
        if nested and nested_cls is None:  # nested input types live in the module's _inputs
            nested_cls = getattr(importlib.import_module(cls.__module__.rsplit(".", 1)[0]), nested.group(1), None)
        takes_list = bool(re.match(r"typing\.Union\[typing\.(Sequence|List)", annotation))
        found[pulumi_name] = (py_name, nested_cls, takes_list)
    return found
