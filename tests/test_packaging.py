"""What the wheel holds is decided by pyproject.toml's list ([tool.setuptools] packages and package-dir), and
a wheel install works with no clone: the fast tests hold the list against the tree and against every import
the shipped code makes; the slow one builds the wheel, installs it into a fresh virtualenv and runs
`gpu-training --help`, `init`, `preview` and a short `rehearse` from an empty folder."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from components import shipped

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PACKAGES = PYPROJECT["tool"]["setuptools"]["packages"]
PACKAGE_DIR = PYPROJECT["tool"]["setuptools"]["package-dir"]
# The homes of the installed code, each a top-level import name and its folder in the clone.
HOMES = {"gpu_training": "gpu_training", "components": "components", "tools": "tools", "localcloud": "localcloud",
         "node_agent": "node/node_agent"}
# Folders under the homes that the wheel leaves out on purpose, each with why.
NOT_SHIPPED: dict[str, str] = {}
OWN = tuple(HOMES)


def folder_of(package: str) -> Path:
    """The clone's folder of a listed package (package-dir's mapping, else the dotted path)."""
    for mapped in sorted(PACKAGE_DIR, key=len, reverse=True):
        if package == mapped or package.startswith(mapped + "."):
            return REPO / PACKAGE_DIR[mapped] / package[len(mapped):].lstrip(".").replace(".", "/")
    return REPO / package.replace(".", "/")


def tree_packages() -> set[str]:
    """Every folder under the homes that holds a file the program or the commands may read."""
    found = set()
    for name, home in HOMES.items():
        for folder in [REPO / home, *(p for p in (REPO / home).rglob("*") if p.is_dir())]:
            if "__pycache__" in folder.parts or not any(f.is_file() for f in folder.iterdir()):
                continue
            found.add(".".join([name, *folder.relative_to(REPO / home).parts]))
    return found


def shipped_modules() -> dict[str, Path]:
    """Module name -> file, for every Python file the wheel holds (the listed packages' own)."""
    modules = {}
    for package in PACKAGES:
        for file in folder_of(package).glob("*.py"):
            name = package if file.stem == "__init__" else f"{package}.{file.stem}"
            modules[name] = file
    return modules


def test_every_package_under_the_homes_is_listed_or_left_out_with_a_reason():
    listed = {p for p in PACKAGES if not p.startswith("gpu_training._shipped")}
    missing = tree_packages() - listed - set(NOT_SHIPPED)
    assert not missing, (f"not in pyproject.toml's [tool.setuptools] packages, so not in the wheel: {sorted(missing)};"
                         " list them there (or in NOT_SHIPPED here, with why)")
    assert not listed - tree_packages(), "listed but no such folder"
    for package in PACKAGES:
        assert folder_of(package).is_dir(), package


def test_the_shipped_folders_are_mapped_where_the_code_looks_for_them():
    for name, (in_clone, in_wheel) in shipped.FOLDERS.items():
        package = "gpu_training._shipped." + in_wheel.replace("/", ".")
        assert PACKAGE_DIR.get(package) == in_clone, name
        assert package in PACKAGES, name
        assert shipped.folder(name) == REPO / in_clone  # a clone reads its own folder


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Our own modules a file imports, at its top or inside functions (resolved relative imports)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    # The provider template's imports name the placeholder `__cloud__`, which scripts/new_provider.py fills in.
    return {n for n in names if n.split(".")[0] in OWN and "__cloud__" not in n}


def test_every_module_the_shipped_code_imports_is_in_the_wheel():
    """A module the commands or the program import (or load by name from a platform.yaml) that the wheel
    lacks fails here, before any wheel is built."""
    modules = shipped_modules()
    packages = set(PACKAGES)
    missing = {}
    for name, file in modules.items():
        for wanted in _imports(ast.parse(file.read_text(encoding="utf-8")), name, file.stem == "__init__"):
            # `from a.b import c` names a module or an attribute: one of the two must be shipped.
            if wanted not in modules and wanted not in packages and wanted.rsplit(".", 1)[0] not in modules:
                missing.setdefault(wanted, []).append(str(file.relative_to(REPO)))
    # What the registries load by name (importlib): each cloud's package and its parts, each target, each platform.
    from components import providers, targets

    by_name = [(module, "components/targets/__init__.py") for module in targets.REGISTRY.values()]
    by_name += [(f"{package}.{part}", "components/providers/__init__.py") for package in providers.REGISTRY.values()
                for part in providers.PARTS]
    for platform in (REPO / "components" / "providers").glob("*/*/platform.yaml"):
        package = yaml.safe_load(platform.read_text())["package"]
        by_name.append((f"{package}.job", str(platform.relative_to(REPO))))
    for module, named_in in by_name:
        if module not in modules:
            missing.setdefault(module, []).append(named_in)
    assert not missing, f"imported by shipped code but not in the wheel: {missing}"


def test_the_runtime_requirements_are_the_distributions_dependencies():
    """pyproject.toml reads requirements.txt as the wheel's dependencies: one requirement a line, no pip options."""
    assert PYPROJECT["project"]["dynamic"] == ["dependencies"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["dependencies"]["file"] == ["requirements.txt"]
    lines = [line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.strip().startswith("#")]
    names = {Requirement(line).name.lower() for line in lines}  # raises on a pip option or a bad line
    assert {"pulumi", "click", "jinja2", "pyyaml", "rich"} <= names


# --- the wheel itself -----------------------------------------------------------------------------------
COPY_IGNORE = shutil.ignore_patterns(".git", ".venv", "out", "build", "dist", "__pycache__", "*.egg-info",
                                     ".pytest_cache", ".hypothesis", ".ruff_cache", ".rehearse", "venv")


def build_wheel(dest: Path) -> Path:
    """The wheel of this tree, built from a copy (setuptools writes build/ and egg-info beside the sources)
    without build isolation: offline, with the setuptools of this environment."""
    source = dest / "source"
    shutil.copytree(REPO, source, ignore=COPY_IGNORE)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(dest / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (dest / "dist").glob("gpu_training-*.whl")
    return wheel


def fresh_venv(folder: Path, wheel: Path) -> Path:
    """A new virtualenv holding only the wheel; the runtime dependencies come from this environment's
    site-packages, read as a plain path (its .pth files, the clone's editable install among them, are not
    run), so nothing of this clone can be imported there."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    # pip runs in the new venv's folder with neither this environment's path nor its venv: from the clone's
    # root it finds the editable install's gpu_training.egg-info there, says "already satisfied" and installs
    # nothing (what CI's clean clone did).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_USER")}
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          cwd=folder, env=env, capture_output=True, text=True, check=True).stdout.strip()
    for package in ("components", "gpu_training", "tools", "node_agent"):
        assert (Path(site) / package / "__init__.py").is_file(), f"the wheel's {package} is not in {site}"
    (Path(site) / "zz_runtime_from_the_test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return folder


@pytest.mark.slow
def test_a_wheel_install_works_from_an_empty_folder(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in ("gpu_training/_shipped/bootstrap/bootstrap.sh.j2", "gpu_training/_shipped/examples/cnn/train_cnn.py",
                 "gpu_training/_shipped/scripts/preview.py", "components/providers/alicloud/catalog.yaml",
                 "components/data/tiers.yaml", "localcloud/bin/nvidia-smi", "node_agent/agent.py",
                 "gpu_training/_shipped/stacks/Pulumi.tc-entry-t4.yaml"):
        assert path in names, path
    assert not any(name.startswith(("tests/", "stacks/", "bench/")) for name in names)

    venv = fresh_venv(tmp_path / "venv", wheel)
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GPU_TRAINING_PROJECT", "GPU_TRAINING_OUT", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def run(*args, timeout=300):
        return subprocess.run(["gpu-training", *args], cwd=work, env=env, capture_output=True, text=True,
                              timeout=timeout)

    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import components, gpu_training, tools.cli.main;"
                            " print(components.__file__)"], cwd=work, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout  # the wheel's, not the clone's

    helped = run("--help")
    assert helped.returncode == 0 and "init" in helped.stdout, helped.stderr
    outside = run("preview", "entry-t4")
    assert outside.returncode == 2 and "gpu-training init" in outside.stderr, outside.stderr

    made = run("init", "--cloud", "alicloud", "--gpu", "T4")
    assert made.returncode == 0, made.stderr
    assert (work / "Pulumi.yaml").is_file() and (work / "stacks" / "Pulumi.entry-t4.yaml").is_file()

    # A stack the README names that init did not write: the error says how to get it, init --from copies it.
    absent = run("preview", "hw-entry-t4")
    assert absent.returncode == 2 and "gpu-training init --from hw-entry-t4" in absent.stderr, absent.stderr
    copied = run("init", "--from", "hw-entry-t4")
    assert copied.returncode == 0 and (work / "stacks" / "Pulumi.hw-entry-t4.yaml").is_file(), copied.stderr

    previewed = run("preview", "entry-t4")
    assert previewed.returncode == 0, previewed.stdout[-2000:] + previewed.stderr[-3000:]
    assert "alicloud:ecs/instance:Instance" in previewed.stdout and "user-data:" in previewed.stdout

    rehearsed = run("rehearse", "entry-t4", "--steps", "40", timeout=600)
    assert rehearsed.returncode == 0, rehearsed.stdout[-3000:] + rehearsed.stderr[-3000:]
    assert "resumed, not from zero" in rehearsed.stdout


@pytest.mark.slow
def test_a_wheel_installs_price_refresh_lands_in_the_users_folder_not_in_site_packages(tmp_path):
    """`prices refresh` from a wheel install: the package's price book in site-packages is left as shipped (an
    upgrade would drop a refresh written there, a read-only install refuses it); the refresh goes to
    ~/.config/gpu-training/catalogs, which `prices show` and the preview then read."""
    from tests.localcloud.public_price_standins import PublicPriceStandIn, regional_price

    venv = fresh_venv(tmp_path / "venv", build_wheel(tmp_path))
    work, home = tmp_path / "project", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPU_TRAINING_PROJECT", "GPU_TRAINING_OUT",
                                                            "VIRTUAL_ENV", "XDG_CONFIG_HOME", "GPU_TRAINING_CATALOGS")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", HOME=str(home))

    def run(*args):
        return subprocess.run(["gpu-training", *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)

    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import components; print(components.__file__)"],
                               env=env, capture_output=True, text=True, check=True).stdout.strip()).parent
    shipped = site / "providers" / "huaweicloud" / "prices.yaml"
    before = shipped.read_bytes()
    assert run("init", "--cloud", "huaweicloud", "--gpu", "T4", "--region", "cn-north-4").returncode == 0
    with PublicPriceStandIn("huaweicloud", ["pi2.2xlarge.4"]) as feed:
        refreshed = run("prices", "refresh", "--provider", "huaweicloud", "--region", "cn-north-4", "--types",
                        "pi2.2xlarge.4", "--endpoint", feed.url)
    assert refreshed.returncode == 0, refreshed.stderr
    written = home / ".config" / "gpu-training" / "catalogs" / "huaweicloud.prices.yaml"
    assert written.is_file() and str(written) in refreshed.stdout
    assert shipped.read_bytes() == before
    (stack,) = (work / "stacks").glob("Pulumi.*.yaml")
    previewed = run("preview", stack.name[len("Pulumi."):-len(".yaml")], "--json")
    assert previewed.returncode == 0, previewed.stderr[-2000:]
    document = json.loads(previewed.stdout)
    assert document["outputs"]["instanceType"] == "pi2.2xlarge.4"
    assert document["cost"]["onDemandPerHour"] == pytest.approx(regional_price("pi2.2xlarge.4", "cn-north-4"))
    shown = run("prices", "show", "--provider", "huaweicloud", "--region", "cn-north-4", "--json")
    row = next(r for r in json.loads(shown.stdout) if r["instanceType"] == "pi2.2xlarge.4")
    assert row["onDemandPerHour"] == pytest.approx(regional_price("pi2.2xlarge.4", "cn-north-4")), row
    # A copy from before an upgrade (here: no snapshots at all) does not hide the shipped prices.
    shipped_book = yaml.safe_load((site / "providers" / "alicloud" / "prices.yaml").read_text())
    (written.parent / "alicloud.prices.yaml").write_text(yaml.safe_dump({**shipped_book, "snapshots": []}))
    shown = run("prices", "show", "--provider", "alicloud", "--region", "cn-hangzhou", "--json")
    row = next(r for r in json.loads(shown.stdout) if r["instanceType"] == "ecs.gn6i-c4g1.xlarge")
    assert row["onDemandPerHour"] == 11.63 and row["date"] == "2024-12-31", row
