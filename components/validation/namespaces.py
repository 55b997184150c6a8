"""Config keys outside the gpu-training namespace: the mistakes there that would otherwise pass without a word.

Pulumi reads a stack file's `config:` keys as `<namespace>:<name>`, and gives a key written without a
namespace the project's name (pulumi/pulumi, sdk/go/common/workspace/loaders.go, LoadProjectStackBytes:
"rewrite config values to make them namespaced ... {projectName}:instanceSize"). So `pulumi up` and the
preview would read these differently unless they are refused by name:
- a key without a namespace (`billing: spot`): `pulumi up` hands it to the program as `<project>:billing`,
  which a project of another name than gpu-training never reads; in the program itself (where Pulumi has
  already added the namespace) a key of ours under the project's namespace is refused the same way;
- a key of another cloud's provider (`alicloud:region` on a Tencent stack): no provider of the stack reads it;
- a key of the stack's own provider that the provider does not know (`alicloud:regoin`): the provider
  ignores it, and the region, say, stays unset.
A namespace one letter off a known one (`alicoud:region`, `gpu-trainig:tier`) gets a "did you mean" too.
The provider's keys are the ones its Pulumi SDK reads (the installed package's config/vars.py, which
pulumi-language-python generates from the provider's schema), so they follow the installed version.
"""
from __future__ import annotations

import difflib
import functools
import importlib.util
import re
from pathlib import Path
from typing import Any, Mapping, Optional

from components import providers, schema
from components.validation.read import Problems

# Namespaces a stack may carry besides ours and the clouds': the Kubernetes provider's and Pulumi's own.
OTHER_KNOWN = ("kubernetes", "pulumi")
# A getter in the SDK's config/vars.py: `__config__.get('accessKey')`, get_int, get_bool, get_object...
_SDK_GETTER = re.compile(r"__config__\.get\w*\(\s*'([A-Za-z0-9_]+)'")


def _namespace(profile) -> str:
    return profile.region_key.partition(":")[0]


@functools.lru_cache(maxsize=None)
def provider_keys(provider: str) -> Optional[frozenset[str]]:
    """The names under the provider's namespace that anything reads: its Pulumi SDK's config keys and the
    region key; None when the SDK is not installed (nothing to judge a name against)."""
    profile = providers.profile(provider)
    region = profile.region_key.partition(":")[2]
    if profile.config_sdk is None:  # no Pulumi provider (Baidu): only what our own resources read
        return frozenset({region})
    found = importlib.util.find_spec(profile.config_sdk)  # a top-level name: found without importing it
    if found is None or not found.submodule_search_locations:
        return None
    try:
        text = (Path(list(found.submodule_search_locations)[0]) / "config" / "vars.py").read_text(encoding="utf-8")
    except OSError:
        return None
    return frozenset(_SDK_GETTER.findall(text)) | {region}


def _close(word: str, choices, cutoff: float = 0.75) -> list[str]:
    return difflib.get_close_matches(word, sorted(choices), n=2, cutoff=cutoff)


def _did_you_mean(candidates: list[str]) -> str:
    return f"; did you mean {' or '.join(repr(c) for c in candidates)}?" if candidates else ""


def check(config: Mapping[str, Any], provider: Optional[str], project: str, problems: Problems) -> None:
    """Record an error for each key of `config` outside our namespace that nothing would read as meant.
    `provider` is the stack's (None when it is not valid: only the checks that need none run)."""
    ours = schema.NAMESPACE
    profile = providers.profile(provider) if provider is not None else None
    own_ns = _namespace(profile) if profile is not None else None
    own_keys = provider_keys(provider) if provider is not None else None
    clouds = {_namespace(providers.profile(name)): name for name in providers.names()}
    known_ns = {ours, project, *clouds, *OTHER_KNOWN}
    for key in config:
        if not isinstance(key, str):
            continue  # read.py names it
        namespace, sep, name = key.partition(":")
        if not sep or not namespace:
            problems.error(key, _without_namespace(name or namespace, own_ns, own_keys))
        elif namespace == ours:
            continue  # read.py reads and checks our keys
        elif namespace == project and (name in schema.BY_NAME or name == "region"):
            problems.error(key, f"a key of the project's namespace ({project!r}), where Pulumi puts a stack file's"
                           f" key written without one; this program reads {ours!r} keys: write"
                           f" {_fix(name, own_ns)!r}")
        elif namespace in clouds and namespace != own_ns:
            if own_ns is not None:
                problems.error(key, _other_cloud(namespace, name, clouds[namespace], provider, own_ns, own_keys))
        elif namespace == own_ns and own_keys is not None and name not in own_keys:
            problems.error(key, _unknown_provider_key(name, provider, own_ns, own_keys))
        elif namespace not in known_ns:
            close = _close(namespace, {ours, *clouds, *OTHER_KNOWN}, cutoff=0.8)
            if close:
                problems.error(key, f"unknown namespace {namespace!r}{_did_you_mean([f'{c}:{name}' for c in close])}")


def _fix(name: str, own_ns: Optional[str]) -> str:
    if name == "region" and own_ns is not None:
        return f"{own_ns}:region"
    return f"{schema.NAMESPACE}:{name}"


def _without_namespace(name: str, own_ns: Optional[str], own_keys: Optional[frozenset[str]]) -> str:
    said = (f"a key without a namespace, which Pulumi reads as '<project name>:{name}' (it puts the project's name"
            f" on such a key), so its meaning changes with the project's name; config keys are 'namespace:name'")
    if name in schema.BY_NAME or (name == "region" and own_ns is not None):
        return f"{said}: write {_fix(name, own_ns)!r}"
    candidates = [f"{schema.NAMESPACE}:{c}" for c in _close(name, schema.BY_NAME)]
    if own_ns is not None and own_keys:
        candidates += [f"{own_ns}:{c}" for c in _close(name, own_keys)]
    if own_ns is not None and own_keys and name in own_keys:
        candidates = [f"{own_ns}:{name}"]
    if candidates:
        return f"{said}{_did_you_mean(candidates[:3])}"
    return (f"{said}: gpu-training's keys are {schema.NAMESPACE}:<key> (known: {', '.join(sorted(schema.BY_NAME))})"
            + (f", the cloud's are {own_ns}:<key>" if own_ns else ""))


def _other_cloud(namespace: str, name: str, cloud: str, provider: str, own_ns: str,
                 own_keys: Optional[frozenset[str]]) -> str:
    theirs = providers.profile(cloud).display_name
    mine = providers.profile(provider)
    if own_keys is None or name in own_keys:
        hint = f"did you mean '{own_ns}:{name}'?"
    else:
        close = [f"{own_ns}:{c}" for c in _close(name, own_keys)]
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else f"its keys are '{own_ns}:<key>'"
    return (f"a key of {theirs}'s provider, but this stack runs on {mine.display_name} ({schema.NAMESPACE}:provider"
            f" is {provider!r}), whose provider never reads it; {hint} (Or set {schema.NAMESPACE}:provider to"
            f" {cloud!r} to run on {theirs}.)")


def _unknown_provider_key(name: str, provider: str, own_ns: str, own_keys: frozenset[str]) -> str:
    profile = providers.profile(provider)
    where = (f"its Pulumi SDK ({profile.config_sdk}) reads" if profile.config_sdk
             else "this program reads (there is no Pulumi provider)")
    close = _close(name, own_keys)
    if close:
        return f"not a key of {profile.display_name}'s provider{_did_you_mean([f'{own_ns}:{c}' for c in close])}"
    return (f"not a key of {profile.display_name}'s provider; the keys {where}: "
            f"{', '.join(f'{own_ns}:{k}' for k in sorted(own_keys))}")
