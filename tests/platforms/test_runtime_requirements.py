"""What a real `pulumi up` imports is in the runtime set: the distributions requirements.txt names (what
Pulumi.yaml's virtualenv and `make preview` install) and everything they pull in.

A fresh process loads the program, every provider's parts, and each platform's job client as the dynamic
provider builds it at create/delete time (fake credentials, a request signed, nothing sent); then every
module it loaded, and every import written inside the program's functions (loaded later, at deploy), is
traced to the distribution that ships it. The test set (requirements-dev.txt) holds more than the
runtime, so a module that only it installs passes every other test and fails on the user's machine: the
ModelArts signer's `huaweicloudsdkcore` did.
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
OURS = {"components", "tools", "localcloud", "node_agent", "scripts", "policy"}

# Loads what `pulumi up` loads: the program, every provider's parts and dynamic providers, and each platform's
# job client, signing one request as create/delete would (the signers import their SDK lazily).
PROBE = r"""
import json, os, sys
os.environ.update(HW_ACCESS_KEY="AK", HW_SECRET_KEY="SK", HW_PROJECT_ID="p", ALICLOUD_ACCESS_KEY="AK",
                  ALICLOUD_SECRET_KEY="SK")
import components.program
from components import providers
for name in providers.names():
    providers.parts(name)
    for part in ("cluster",):
        if providers.has_module(name, part):
            providers.module(name, part)
    profile = providers.profile(name)
    for offer in profile.platforms().values():
        import importlib
        job = importlib.import_module(offer.package + ".job")
        client = job.client("cn-north-4")
        client.signer("state", "GET", client.base_url + "/x", {}, b"")
def where(module):  # a module's file, or a namespace package's first folder
    return getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or []), None)
print(json.dumps({m: where(sys.modules[m]) for m in sorted({m.split(".")[0] for m in sys.modules}) if m in sys.modules}))
print(json.dumps(sorted({m.__file__ for m in list(sys.modules.values())
                         if getattr(m, "__name__", "").split(".")[0] == "components" and getattr(m, "__file__", None)})))
"""


def runtime_distributions() -> set[str]:
    """requirements.txt's distributions and, recursively, what each requires (markers evaluated, no extras)."""
    wanted = []
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            wanted.append(Requirement(line))
    env = default_environment()
    found: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = _norm(requirement.name)
        if name in found or (requirement.marker and not requirement.marker.evaluate({**env, "extra": ""})):
            continue
        found.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        wanted.extend(Requirement(r) for r in requires)
    return found


def _owner(file) -> str | None:
    """The distribution whose files hold `file` (a module's file, or a namespace package's folder): a package a
    distribution vendors under its own folder, as setuptools does jaraco and more_itertools, is that
    distribution's, whatever else ships the same name."""
    if not file:
        return None
    path = Path(file).resolve()
    for distribution in metadata.distributions():
        for entry in distribution.files or ():
            located = Path(distribution.locate_file(entry)).resolve()
            if located == path or (path.is_dir() and path in located.parents):
                return _norm(distribution.metadata["Name"])
    return None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def deploy_time_imports(files: list[str]) -> set[str]:
    """Top-level names imported inside functions of the program's loaded modules (run at deploy, not load);
    a function named stand_in is the tests' and the rehearsal's, never `pulumi up`'s."""
    names = set()
    for file in files:
        tree = ast.parse(Path(file).read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name == "stand_in":
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return names


def test_everything_a_deploy_imports_is_in_the_runtime_requirements():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded, files = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    modules = (set(loaded) | deploy_time_imports(files)) - OURS - set(sys.stdlib_module_names) - {"__main__"}
    shipped_by = metadata.packages_distributions()
    runtime = runtime_distributions()
    missing = {}
    for module in sorted(modules):
        distributions = {_norm(d) for d in shipped_by.get(module, [])}
        if distributions and not distributions & runtime and _owner(loaded.get(module)) not in runtime:
            missing[module] = sorted(distributions)
    assert not missing, f"imported by `pulumi up` but not installed by requirements.txt: {missing}"


def test_the_runtime_set_is_read_from_the_file():
    """The closure starts at requirements.txt's own lines: pulumi is there, the test set's pytest is not."""
    runtime = runtime_distributions()
    assert "pulumi" in runtime and "pytest" not in runtime
