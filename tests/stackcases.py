"""Stacks and the --set what-ifs users make, for tests that check every stack the same way.

`variations(stack)` is the stack as is plus the what-ifs of the README and docs (spot with and
without a cap, on-demand, three nodes, SSH from one address, a created bucket, each shared storage
the provider offers), deduplicated by their effect on the config. Nothing here names a cloud: the
shared-storage kinds come from the provider's profile.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

from components import providers
from tools import stackfiles
from tools.stackfiles import apply_overrides, load_stack_config

REPO = Path(__file__).resolve().parents[1]

SSH = ('sshAllowCidrs=["203.0.113.7/32"]', "sshPublicKey=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 test")
SPOT_CAPPED = ("billing=spot", "spotMaxPricePerHour=50")


def strings_in(value):
    """Every string inside a resource input (nested objects and lists), for tests that search inputs."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_in(item)


@functools.lru_cache(maxsize=None)
def shipped_stack_names() -> list[str]:
    """The stack files this checkout ships (`git ls-files stacks/`), never a user's own beside them in stacks/:
    a half-edited one of theirs would otherwise break the collection of every test that loops over stacks.
    Without git (an unpacked source archive), every stack file in the folder. Only those present in the
    project's stack folder (a test may point GPU_TRAINING_PROJECT at a copy)."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", "stacks/"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        done = None
    if done is None or done.returncode != 0:
        return stackfiles.stack_names()
    names = [m.group(1) for m in map(re.compile(r"stacks/Pulumi\.([^/]+)\.yaml").fullmatch, done.stdout.split()) if m]
    return sorted(name for name in names if stackfiles.stack_path(name).is_file())


def provider_of(stack: str) -> str:
    return load_stack_config(stack).get("gpu-training:provider", "alicloud")


def is_kubernetes(stack: str) -> bool:
    """A Kubernetes-path stack (docs/kubernetes.md): tests/kubernetes checks it; the VM-shaped suites do not
    (their rules are about instances, launch templates and node roles that it does not have)."""
    return "gpu-training:kubernetes" in load_stack_config(stack)


def node_stack_names() -> list[str]:
    """Stacks that run on nodes (VMs or Kubernetes): a `platform:` stack submits a managed platform job
    instead and has its own tests (tests/platforms/)."""
    return [stack for stack in shipped_stack_names() if "gpu-training:platform" not in load_stack_config(stack)]


def vm_stack_names() -> list[str]:
    return [stack for stack in node_stack_names() if not is_kubernetes(stack)]


def stacks_of(provider: str) -> list[str]:
    return [stack for stack in vm_stack_names() if provider_of(stack) == provider]


def dedupe(stack: str, wanted: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    base = load_stack_config(stack)
    seen, kept = set(), []
    for overrides in wanted:
        key = json.dumps(apply_overrides(base, overrides), sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            kept.append(overrides)
    return kept


def variations(stack: str) -> list[tuple[str, ...]]:
    profile = providers.profile(provider_of(stack))
    wanted = [(), ("billing=spot",), SPOT_CAPPED, ("billing=on-demand",), ("nodes=3",), SSH,
              ("checkpoint.create=true",)]
    wanted += [(f"sharedStorage={kind}",) for kind in ("none", *profile.shared_fs.kinds)]
    return dedupe(stack, wanted)


def case_id(stack: str, overrides: tuple[str, ...]) -> str:
    return f"{stack}{'+' if overrides else ''}{'+'.join(overrides)[:40]}"


def plan_or_refusal(plan_for, stack: str, overrides: tuple[str, ...]):
    """The plan, or a pytest skip when validation refuses the what-if before any resource (exit 2)."""
    import pytest

    from tools.mockrun import ProgramExit

    try:
        return plan_for(stack, *overrides)
    except ProgramExit as stop:
        assert stop.code == 2 and "Traceback" not in stop.stderr, stop.stderr
        first = next((line.strip() for line in stop.stderr.splitlines() if line.strip().startswith("error:")), "")
        pytest.skip(f"refused at validation before any resource: {first}")
