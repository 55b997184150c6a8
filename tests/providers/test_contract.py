"""The provider seam: every registered package meets components/providers/contract.py, and a new cloud
made from the template touches no neutral file but the registries (the providers' and the stand-ins').

Parametrized over the registry, so a new cloud is checked from its first run. The template tests
copy the repository (its tracked files) to a temporary folder, run scripts/new_provider.py there and
look at what changed with git; the second also turns on the new cloud's spot pool, shared file system
and Kubernetes part and plans a stack of each path with the real program on the mock engine.
"""
from __future__ import annotations

import importlib.util
import json
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
from components.providers.profile_records import ProviderProfile
from components.stack_outputs import NODE_KEYS
from localcloud import ApiStub, MetadataStub, standins

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
    offered = [part for part in providers.OPTIONAL_PARTS if providers.has_module(name, part)]
    package = providers.parts(name, *offered)  # raises TypeError naming a part whose create() does not conform
    for part in (*providers.PARTS, *offered):
        assert contract.mismatches(part, getattr(package, part)) == []


@pytest.mark.parametrize("name", NAMES)
def test_a_cloud_that_offers_kubernetes_has_the_cluster_part(name):
    offers = providers.profile(name).kubernetes is not None
    assert offers == providers.has_module(name, "cluster") == providers.has_module(name, "pod_runtime"), \
        f"{name}: profile.kubernetes, cluster.py and pod_runtime.py come together (docs/kubernetes.md)"


@pytest.mark.parametrize("name", NAMES)
def test_the_node_runtime_has_what_the_agent_calls(name):
    module = load_file(providers.node_runtime_path(name), f"runtime_{name}")
    assert contract.runtime_mismatches(module) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_profile_declares_its_name_limits_and_credentials(name):
    profile = providers.profile(name)
    assert isinstance(profile, ProviderProfile) and profile.name == name
    assert profile.node.user_data.max_bytes > 0 and profile.node.user_data.source
    assert "TODO" not in profile.node.user_data.source
    assert profile.credential_env, f"{name} declares no credential variables: the preview could not hide them"
    assert set(providers.credential_env_prefixes()) >= set(profile.credential_env)


def test_every_cloud_has_its_stand_ins_and_only_registered_clouds_do():
    assert sorted(standins.CLOUDS) == sorted(NAMES)
    assert all(providers.profile(cloud).name == cloud for cloud, _ in standins.PLATFORMS.values())


@pytest.mark.parametrize("name", NAMES)
def test_the_stand_ins_say_how_a_node_is_released(name):
    module = standins.of(name)
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
    package = _package_of(tmp_path, "wrongcloud", {part: WRONG if part == "storage" else _conforming(part)
                                                    for part in providers.PARTS})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(providers.REGISTRY, "wrongcloud", package)
    with pytest.raises(TypeError, match=r"wrongcloud\.storage\.create\(spec, context\) must take"):
        providers.parts("wrongcloud")


def test_the_registry_refuses_a_cluster_part_that_does_not_conform(tmp_path, monkeypatch):
    package = _package_of(tmp_path, "wrongk8s", {part: _conforming(part) for part in providers.PARTS} | {
        "cluster": "def create(spec, ctx):\n    return None\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(providers.REGISTRY, "wrongk8s", package)
    providers.parts("wrongk8s")  # the VM path does not ask for the cluster part
    with pytest.raises(TypeError, match=r"wrongk8s\.cluster\.create\(spec, ctx\) must take \(spec, ctx, network\)"):
        providers.parts("wrongk8s", "cluster")


def test_the_registry_names_a_missing_cluster_part(tmp_path, monkeypatch):
    package = _package_of(tmp_path, "vmonly", {part: _conforming(part) for part in providers.PARTS})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(providers.REGISTRY, "vmonly", package)
    with pytest.raises(providers.MissingModule, match="has no cluster module"):
        providers.parts("vmonly", "cluster")
    with pytest.raises(ValueError, match="not an optional part: pricing"):
        providers.parts("vmonly", "pricing")


def _package_of(tmp_path: Path, name: str, modules: dict[str, str]) -> str:
    (tmp_path / name).mkdir()
    _write(tmp_path / name / "__init__.py", "")
    for part, text in modules.items():
        _write(tmp_path / name / f"{part}.py", text)
    return name


def _conforming(part: str) -> str:
    parameters = ", ".join(contract._parameters(contract.PROTOCOLS[part].create))
    return f"def create({parameters}):\n    return None\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


# ---------------------------------------------------------------- a new cloud from the template

# What a new cloud changes outside its package: the two registries' lines and its stand-ins.
REGISTRIES = ["components/providers/__init__.py", "localcloud/standins/__init__.py"]
NEUTRAL_CHANGES = sorted([*REGISTRIES, "localcloud/standins/stubcloud.py"])


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
def test_a_cloud_from_the_template_touches_only_the_registry_lines_and_meets_the_contract(tmp_path):
    root = repository_copy(tmp_path)
    made = in_copy(root, "scripts/new_provider.py", "stubcloud", "--display", "Stub Cloud")
    assert made.returncode == 0, made.stderr
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    neutral = sorted(line[3:] for line in changed if not line[3:].startswith("components/providers/stubcloud/"))
    assert neutral == NEUTRAL_CHANGES, changed
    diff = subprocess.run(["git", "diff", "-U0", *REGISTRIES], cwd=root,
                          capture_output=True, text=True, check=True).stdout
    added = [line for line in diff.splitlines() if re.match(r"\+[^+]", line)]
    assert added == ['+    "stubcloud": "components.providers.stubcloud",',
                     '+    "stubcloud": "localcloud.standins.stubcloud",'], diff
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


# ------------------------------------------------ a cloud from the template, its parts turned on, planned

# What the new cloud's engineer fills in before the three parts may run: the profile's two functions, a
# currency and credential prefix, the catalog's rows, and dropping the refusals of spot, shared FS and
# Kubernetes. Every edit is inside the new package (the test checks the rest of the tree is untouched but
# for the registries and the new cloud's stand-ins).
PROFILE_FILLED = {
    'raise NotImplementedError("stubcloud: data_disk in profile.py is not written yet (docs/providers.md)")':
        'return DataDisk("ssd", None, size_gb)',
    'raise NotImplementedError("stubcloud: object_store in profile.py is not written yet (docs/providers.md)")':
        'return ObjectStore(f"https://s3.{region}.stub.example", "virtual", "s3v4")',
    'currency="TODO"': 'currency="USD"',
    "credential_env=(),": 'credential_env=("STUBCLOUD_",),',
}
CATALOG_ROWS = """instances:
  - {type: stub.a100x4, gpu: A100-40G, gpuCount: 4, gpuMemoryGb: 40, vcpus: 64, memoryGiB: 474, nvlink: true,
     nvswitch: false, rdma: none, networkGbps: 25, localNvme: false, source: S1, price: *unknown}
"""
COMMON = {"gpu-training:provider": "stubcloud", "stubcloud:region": "stub-region-1", "gpu-training:tier": "medium",
          "gpu-training:gpu": "A100-40G", "gpu-training:gpusPerNode": 4, "gpu-training:billing": "spot",
          "gpu-training:spotMaxPricePerHour": 60, "gpu-training:dataDiskGb": 1000, "gpu-training:maxHours": 48,
          "gpu-training:checkpoint": {"bucket": "stub-checkpoints", "prefix": "gpu-training"},
          "gpu-training:train": {"command": "python train_cnn.py"}}
VM_STACK = {**COMMON, "gpu-training:sharedStorage": "sharedfs"}
KUBERNETES_STACK = {**COMMON, "gpu-training:kubernetes": {"apiAllowCidrs": ["198.51.100.7/32"],
                                                          "systemInstanceType": "stub.cpu4"}}
# The tracked code the program, the tools and the node run (tests and docs name the test cloud themselves).
PROGRAM_CODE = ("__main__.py", "components", "tools", "node", "localcloud", "scripts", "policy")
# Runs in the copy: the real program (__main__.py) on the mock engine for the stack given as JSON.
PLAN = """
import json, sys
from tools.mockrun import run_program
plan = run_program(json.loads(sys.argv[1]), sys.argv[2])
print(json.dumps({"outputs": {key: value for key, value in plan.outputs.items() if key != "kubeconfig"},
                  "types": [resource.type for resource in plan.resources]}))
"""


def turn_on_every_part(package: Path) -> None:
    profile = (package / "profile.py").read_text()
    for old, new in PROFILE_FILLED.items():
        assert old in profile, f"the template's profile no longer has {old!r}"
        profile = profile.replace(old, new)
    refusals = re.compile(r"        unsupported=\{\n(?:            .*\n)+        \},\n")  # in rules=Rules(...)
    assert len(refusals.findall(profile)) == 1, "the template's profile no longer refuses by `unsupported`"
    (package / "profile.py").write_text(refusals.sub("        unsupported={},\n", profile))
    catalog = (package / "catalog.yaml").read_text()
    (package / "catalog.yaml").write_text(catalog.replace("currency: TODO", "currency: USD").replace(
        "sources: {}", "sources: {S1: {title: the cloud's GPU instance page, url: 'https://stub.example/gpu'}}").replace(
        "instances: []\n", CATALOG_ROWS))


def planned(root: Path, config: dict, stack: str) -> dict:
    run = in_copy(root, "-c", PLAN, json.dumps(config), stack)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_cloud_from_the_template_offers_spot_shared_fs_and_kubernetes_with_only_the_registry_lines(tmp_path):
    root = repository_copy(tmp_path)
    made = in_copy(root, "scripts/new_provider.py", "stubcloud", "--display", "Stub Cloud")
    assert made.returncode == 0, made.stderr
    turn_on_every_part(root / "components" / "providers" / "stubcloud")

    vm = planned(root, VM_STACK, "stub-vm")
    assert {"stubcloud:compute:SpotPool", "stubcloud:storage:SharedFileSystem"} <= set(vm["types"]), vm["types"]
    assert vm["outputs"]["poolId"] and vm["outputs"]["sharedFsAddress"], vm["outputs"]
    kubernetes = planned(root, KUBERNETES_STACK, "stub-k8s")
    assert kubernetes["types"].count("stubcloud:kubernetes:NodePool") == 2, kubernetes["types"]  # system, GPU
    assert {"stubcloud:kubernetes:Cluster", "kubernetes:batch/v1:Job"} <= set(kubernetes["types"])
    assert kubernetes["outputs"]["target"] == "kubernetes" and kubernetes["outputs"]["clusterId"]
    for plan in (vm, kubernetes):  # the outputs run.py reads, from the one builder
        assert [key for key in NODE_KEYS if key not in plan["outputs"]] == []

    # Nothing neutral changed but the registries and the stand-ins, and nothing else neutral names the new cloud.
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    neutral = sorted(line[3:] for line in changed if not line[3:].startswith("components/providers/stubcloud/"))
    assert neutral == NEUTRAL_CHANGES, changed
    naming = subprocess.run(["git", "grep", "stubcloud", "--", *PROGRAM_CODE, ":!localcloud/standins/stubcloud.py"],
                            cwd=root, capture_output=True, text=True).stdout.splitlines()
    assert naming == ['components/providers/__init__.py:    "stubcloud": "components.providers.stubcloud",',
                      'localcloud/standins/__init__.py:    "stubcloud": "localcloud.standins.stubcloud",'], naming


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
