"""The provider registry: a cloud's name -> its package. Adding a cloud adds one line here.

Every per-cloud lookup goes through this module (one routing point, as SkyPilot's provision layer
routes by cloud name): the profile, the preview's answers, the Pulumi parts, the optional modules of
the tools (`pricing`, `regions_api`), the catalog and the node runtime. The clouds' local stand-ins are
no part of the program: localcloud/standins/ registers them by the same names.
Nothing else finds clouds by globbing folders or by building paths from a name.

A package holds `profile.py` (pure data: capabilities, mirrors, disk classes; imports no SDK),
`preview.py` (what the offline preview's mock engine answers for its data sources), and the parts
`network`, `identity`, `storage`, `compute`, and `cluster` where it offers the Kubernetes path (import
the cloud's Pulumi SDK; their signatures are the Protocols in components/providers/contract.py).
Profiles are loaded for validation; parts only when a program actually deploys, so a missing SDK for
one cloud never breaks another.
docs/providers.md lists every module and file a package has.
"""
from __future__ import annotations

import importlib
import os
import importlib.util
from pathlib import Path
from types import ModuleType

from components.providers.profile_records import ProviderProfile

REGISTRY: dict[str, str] = {
    "alicloud": "components.providers.alicloud",
    "tencentcloud": "components.providers.tencentcloud",
    "huaweicloud": "components.providers.huaweicloud",
    "baiducloud": "components.providers.baiducloud",
}

PARTS = ("network", "identity", "storage", "compute")
# Parts a package may lack: the Kubernetes path's `cluster` (components/kubernetes/training.py asks for it).
OPTIONAL_PARTS = ("cluster",)
# Modules a package may lack; the tool that needs one says so (prices.py: no price API).
OPTIONAL_MODULES = ("pricing", "regions_api", "capacity_api")
# Environment variables boto3 reads: the S3 protocol every store speaks, not one cloud's.
S3_CREDENTIAL_PREFIXES = ("AWS_",)


class UnknownProvider(ValueError):
    def __init__(self, name: str):
        super().__init__(f"unknown provider {name!r}; known providers: {', '.join(sorted(REGISTRY))}")


class MissingModule(LookupError):
    """A registered provider has no module `part` (an optional one such as pricing)."""

    def __init__(self, name: str, part: str):
        self.provider, self.part = name, part
        super().__init__(f"provider {name!r} has no {part} module ({package_dir(name) / (part + '.py')})")


def names() -> list[str]:
    return sorted(REGISTRY)


def _package(name: str) -> str:
    if name not in REGISTRY:
        raise UnknownProvider(name)
    return REGISTRY[name]


def package_dir(name: str) -> Path:
    """The folder of the provider's package (its data files live there)."""
    spec = importlib.util.find_spec(_package(name))
    if spec is None or not spec.submodule_search_locations:
        raise UnknownProvider(name)
    return Path(list(spec.submodule_search_locations)[0])


def profile(name: str) -> ProviderProfile:
    return importlib.import_module(f"{_package(name)}.profile").PROFILE


def owner_of(type_token: str) -> str | None:
    """The registered provider whose parts create resources of this type (its profile's naming.type_prefixes)."""
    return next((name for name in names() if profile(name).owns(type_token)), None)


def preview_module(name: str) -> ModuleType:
    """The provider's answers to the preview's mock engine (pure data; tools.mockrun)."""
    return importlib.import_module(f"{_package(name)}.preview")


def parts(name: str, *optional: str) -> ModuleType:
    """The package whose `network`, `identity`, `storage` and `compute` modules build the resources, with
    each part of `optional` (OPTIONAL_PARTS) the caller needs imported too: MissingModule when the package
    has none. Every part handed over is checked against components/providers/contract.py here, once, so
    the components that call them do not check again."""
    from components.providers.contract import mismatches

    unknown = [part for part in optional if part not in OPTIONAL_PARTS]
    if unknown:
        raise ValueError(f"not an optional part: {', '.join(unknown)} (known: {', '.join(OPTIONAL_PARTS)})")
    missing = [part for part in optional if not has_module(name, part)]
    if missing:
        raise MissingModule(name, missing[0])
    package = _package(name)
    problems = [problem for part in (*PARTS, *optional)
                for problem in mismatches(part, importlib.import_module(f"{package}.{part}"))]
    if problems:  # a wrong signature would otherwise fail deep inside `pulumi up`
        raise TypeError(f"provider {name!r} does not meet components/providers/contract.py: " + "; ".join(problems))
    return importlib.import_module(package)


def has_module(name: str, part: str) -> bool:
    return importlib.util.find_spec(f"{_package(name)}.{part}") is not None


def module(name: str, part: str) -> ModuleType:
    """One of the provider's modules by name (e.g. `pricing`); MissingModule when it has none."""
    if not has_module(name, part):
        raise MissingModule(name, part)
    return importlib.import_module(f"{_package(name)}.{part}")


def with_module(part: str) -> list[str]:
    """The registered providers that have the module `part`."""
    return [name for name in names() if has_module(name, part)]


CATALOGS_ENV = "GPU_TRAINING_CATALOGS"  # a folder of <provider>.yaml catalogs that replace the packages' ones


def installed_from_a_wheel() -> bool:
    """True where these packages sit in an interpreter's site-packages (pip install gpu-training), False in a clone
    (an editable install points at the clone)."""
    return bool({"site-packages", "dist-packages"} & set(Path(__file__).resolve().parts))


def catalogs_folder() -> Path | None:
    """Where refreshed catalogs, price books and disk prices are read from first and written to: the folder
    $GPU_TRAINING_CATALOGS names; else, for a wheel install, the user's own ($XDG_CONFIG_HOME, or ~/.config,
    /gpu-training/catalogs: a refresh written into site-packages would be lost with the next upgrade and fails on
    a read-only install); else None: in a clone the packages' files are the project's data, refreshed in place."""
    folder = os.environ.get(CATALOGS_ENV)
    if folder:
        return Path(folder)
    if installed_from_a_wheel():
        return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "gpu-training" / "catalogs"
    return None


def adds_shipped(path: Path) -> bool:
    """Whether a file read from catalogs_folder() is read together with the shipped one: yes for a wheel install's
    own folder (a copy made before an upgrade must not hide what the newer package adds); no for the folder
    $GPU_TRAINING_CATALOGS names, a what-if that replaces the shipped files (an empty price book means no prices)."""
    return not os.environ.get(CATALOGS_ENV) and path.parent == catalogs_folder()


def overlay(file_name: str) -> Path | None:
    """`file_name` in catalogs_folder() when it exists there."""
    folder = catalogs_folder()
    return folder / file_name if folder is not None and (folder / file_name).is_file() else None


def refresh_target(file_name: str, shipped: Path) -> tuple[Path, Path]:
    """(the file a refresh writes, the file it reads to edit): `file_name` in catalogs_folder(), edited from the copy
    there or, before the first refresh, from the shipped file; the shipped file itself where there is no folder.
    Nothing is written here (a dry run or a failed refresh leaves no copy behind)."""
    folder = catalogs_folder()
    if folder is None:
        return shipped, shipped
    target = folder / file_name
    return target, target if target.is_file() else shipped


def catalog_path(name: str) -> Path:
    """The provider's instance catalog: catalog.yaml in its package, or <provider>.yaml in catalogs_folder()
    ($GPU_TRAINING_CATALOGS: a what-if with refreshed prices that leaves the shipped catalog alone; a wheel
    install's own refreshes)."""
    return overlay(f"{name}.yaml") or package_dir(name) / "catalog.yaml"


def node_runtime_path(name: str) -> Path:
    """The provider's node runtime, shipped to the node as node_agent/cloud_runtime.py."""
    return package_dir(name) / "node_runtime.py"


def credential_env_prefixes() -> tuple[str, ...]:
    """Prefixes of every environment variable that may carry cloud credentials: each registered
    provider's (profile.credential_env) and boto3's. The preview hides them from the program; the
    rehearsal keeps them from its agents, which must use the node role like on a real node."""
    prefixes = list(S3_CREDENTIAL_PREFIXES)
    for name in names():
        prefixes += [p for p in profile(name).credential_env if p not in prefixes]
    return tuple(prefixes)
