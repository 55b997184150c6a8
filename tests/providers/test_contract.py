"""The provider seam: every registered package meets components/providers/contract.py, and a new cloud
made from the template touches no neutral file but the registry.

Parametrized over the registry, so a new cloud is checked from its first run. The template test
copies the repository (its tracked files) to a temporary folder, runs scripts/new_provider.py
there and looks at what changed with git.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from components import providers
from components.providers import contract
from components.providers.base import ProviderProfile
from localcloud import ApiStub, MetadataStub

REPO = Path(__file__).resolve().parents[2]
NAMES = providers.names()


def load_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_the_package_has_every_required_file(name):
    folder = providers.package_dir(name)
    missing = [f for f, required in contract.PACKAGE_FILES.items() if required and not (folder / f).exists()]
    assert not missing, f"{name} lacks {missing}"


@pytest.mark.parametrize("name", NAMES)
def test_the_parts_take_what_the_cluster_passes(name):
    package = providers.parts(name)  # raises TypeError naming a part whose create() does not conform
    for part in providers.PARTS:
        assert contract.mismatches(part, getattr(package, part)) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_node_runtime_has_what_the_agent_calls(name):
    module = load_file(providers.node_runtime_path(name), f"runtime_{name}")
    assert contract.runtime_mismatches(module) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_profile_declares_its_name_limits_and_credentials(name):
    profile = providers.profile(name)
    assert isinstance(profile, ProviderProfile) and profile.name == name
    assert profile.user_data.max_bytes > 0 and profile.user_data.source and "TODO" not in profile.user_data.source
    assert profile.credential_env, f"{name} declares no credential variables: the preview could not hide them"
    assert set(providers.credential_env_prefixes()) >= set(profile.credential_env)


@pytest.mark.parametrize("name", NAMES)
def test_the_stand_ins_say_how_a_node_is_released(name):
    module = providers.stand_ins(name)
    assert issubclass(module.Metadata, MetadataStub) and issubclass(module.CloudApi, ApiStub)
    assert module.CloudApi.release_actions, f"{name}'s CloudApi declares no release_actions"


def test_docs_describe_every_package_file():
    text = (REPO / "docs" / "providers.md").read_text()
    assert [f for f in contract.PACKAGE_FILES if f"`{f}`" not in text] == []


# ---------------------------------------------------------------- a part that does not conform

WRONG = """
def create(spec, context):
    return None
"""


def test_a_create_with_other_parameters_is_named(tmp_path):
    module = load_file(_write(tmp_path / "network.py", WRONG), "wrong_network")
    (problem,) = contract.mismatches("network", module)
    assert "create(spec, context) must take (spec, ctx)" in problem


def test_a_runtime_without_a_method_is_named(tmp_path):
    module = load_file(_write(tmp_path / "rt.py", "class Runtime:\n    def __init__(self, cfg, metadata): pass\n"),
                       "rt_incomplete")
    problems = contract.runtime_mismatches(module)
    assert len(problems) == len(contract.RUNTIME_METHODS) and "no method release()" in " ".join(problems)


def test_the_registry_refuses_parts_that_do_not_conform(tmp_path, monkeypatch):
    package = tmp_path / "wrongcloud"
    package.mkdir()
    _write(package / "__init__.py", "")
    for part in providers.PARTS:
        _write(package / f"{part}.py", WRONG if part == "storage" else _conforming(part))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(providers.REGISTRY, "wrongcloud", "wrongcloud")
    with pytest.raises(TypeError, match=r"wrongcloud\.storage\.create\(spec, context\) must take"):
        providers.parts("wrongcloud")


def _conforming(part: str) -> str:
    parameters = ", ".join(contract._parameters(contract.PROTOCOLS[part].create))
    return f"def create({parameters}):\n    return None\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


# ---------------------------------------------------------------- a new cloud from the template

def repository_copy(tmp_path: Path) -> Path:
    """The tracked files (and this change's new ones) in a fresh git repository."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    root = tmp_path / "repo"
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / rel)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "before"], cwd=root, check=True)
    return root


def in_copy(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the copy's packages, not the editable install's
    return subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_a_cloud_from_the_template_touches_only_the_registry_line_and_meets_the_contract(tmp_path):
    root = repository_copy(tmp_path)
    made = in_copy(root, "scripts/new_provider.py", "stubcloud", "--display", "Stub Cloud")
    assert made.returncode == 0, made.stderr
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    neutral = sorted(line[3:] for line in changed if not line[3:].startswith("components/providers/stubcloud/"))
    assert neutral == ["components/providers/__init__.py"], changed
    diff = subprocess.run(["git", "diff", "-U0", "components/providers/__init__.py"], cwd=root,
                          capture_output=True, text=True, check=True).stdout
    added = [line for line in diff.splitlines() if re.match(r"\+[^+]", line)]
    assert added == ['+    "stubcloud": "components.providers.stubcloud",'], diff
    # The structural contract holds for the stub as made; the data checks say what to fill in.
    run = in_copy(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/providers/test_contract.py",
                  "-k", "stubcloud")
    assert "passed" in run.stdout and "failed" in run.stdout, run.stdout[-2000:]
    failed = sorted(re.findall(r"FAILED \S+::(test_\w+)\[stubcloud\]", run.stdout))
    assert failed == ["test_the_profile_declares_its_name_limits_and_credentials",
                      "test_the_stand_ins_say_how_a_node_is_released"], run.stdout[-3000:]
    # The conformance suite checks the stub at once and names what it lacks.
    conformance = in_copy(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_conformance.py",
                          "-k", "stubcloud or every_provider_has_stacks")
    assert conformance.returncode != 0 and "stubcloud" in conformance.stdout, conformance.stdout[-2000:]


@pytest.mark.parametrize("name,words", [
    ("Huawei", "lower-case letters and digits"),
    ("alicloud", "already registered"),
    ("_template", "lower-case letters and digits"),
])
def test_the_generator_refuses_a_bad_name_and_writes_nothing(name, words):
    before = (REPO / "components" / "providers" / "__init__.py").read_text()
    run = subprocess.run([sys.executable, "scripts/new_provider.py", name], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert (REPO / "components" / "providers" / "__init__.py").read_text() == before
