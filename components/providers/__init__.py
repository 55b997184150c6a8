"""The provider registry: a cloud's name -> its package. Adding a cloud adds one line here.

A package holds `profile.py` (pure data: capabilities, mirrors, disk classes; imports no SDK),
`preview.py` (what the offline preview's mock engine answers for its data sources), and
the parts `network`, `identity`, `storage`, `compute` (import the cloud's Pulumi SDK). Profiles are
loaded for validation; parts only when a program actually deploys, so a missing SDK for one cloud
never breaks another.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from components.providers.base import ProviderProfile

REGISTRY: dict[str, str] = {
    "alicloud": "components.providers.alicloud",
    "tencentcloud": "components.providers.tencentcloud",
}


class UnknownProvider(ValueError):
    def __init__(self, name: str):
        super().__init__(f"unknown provider {name!r}; known providers: {', '.join(sorted(REGISTRY))}")


def names() -> list[str]:
    return sorted(REGISTRY)


def profile(name: str) -> ProviderProfile:
    if name not in REGISTRY:
        raise UnknownProvider(name)
    return importlib.import_module(f"{REGISTRY[name]}.profile").PROFILE


def preview_module(name: str) -> ModuleType:
    """The provider's answers to the preview's mock engine (pure data; tools.mockrun)."""
    if name not in REGISTRY:
        raise UnknownProvider(name)
    return importlib.import_module(f"{REGISTRY[name]}.preview")


def parts(name: str) -> ModuleType:
    """The package whose `network`, `identity`, `storage` and `compute` modules build the resources."""
    if name not in REGISTRY:
        raise UnknownProvider(name)
    package = REGISTRY[name]
    for part in ("network", "identity", "storage", "compute"):
        importlib.import_module(f"{package}.{part}")
    return importlib.import_module(package)
