"""The project's promises: Pulumi.yaml and the README match the config schema, the preview CLI's
exit codes and JSON shape, and every Python file says what it is for."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components import schema

REPO = Path(__file__).resolve().parent.parent
PULUMI_TYPES = {"string", "integer", "boolean", "array"}


def test_pulumi_yaml_declares_the_schema():
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    assert project["name"] == "gpu-training"
    assert project["runtime"]["name"] == "python" and project["runtime"]["options"]["virtualenv"]
    assert project["stackConfigDir"] == "stacks"
    declared = project["config"]
    text = (REPO / "Pulumi.yaml").read_text()
    for key in schema.KEYS:
        if key.type in PULUMI_TYPES:
            assert declared[key.name]["type"] == key.type, key.name
            assert declared[key.name]["description"]
            if key.default is not None:
                assert declared[key.name]["default"] == key.default, key.name
            else:
                assert "default" not in declared[key.name], key.name
        else:  # Pulumi has no number/object config type: documented in the file's comment block
            assert f"#   {key.name} " in text, key.name
    assert set(declared) <= {k.name for k in schema.KEYS}


def test_readme_documents_every_key():
    readme = (REPO / "README.md").read_text()
    for key in schema.KEYS:
        assert f"| `{key.name}` | {key.type} |" in readme, key.name


def test_the_readme_stacks_table_names_every_shipped_stack_with_its_billing():
    """A row's billing column starts with the stack file's gpu-training:billing (a row once said spot for a stack
    shipped on-demand)."""
    readme = (REPO / "README.md").read_text()
    table = readme.split("## Stacks\n", 1)[1].split("\n\n", 1)[0]
    rows = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([\w.-]+)` \|.*\| ([^|]+) \|$", table, re.M)}
    shipped = {p.name[len("Pulumi."):-len(".yaml")]: yaml.safe_load(p.read_text())["config"]
               for p in (REPO / "stacks").glob("Pulumi.*.yaml")}
    assert set(rows) == set(shipped)
    for name, config in shipped.items():
        assert rows[name].split()[0] == config.get("gpu-training:billing", "on-demand"), name


def test_every_python_file_has_a_module_docstring():
    missing = []
    for path in REPO.rglob("*.py"):
        if ".venv" in path.parts or "node_modules" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not ast.get_docstring(tree) and path.stat().st_size > 0:
            missing.append(str(path.relative_to(REPO)))
    assert not missing, missing


def run_preview(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"}
    return subprocess.run([sys.executable, str(REPO / "scripts" / "preview.py"), *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_preview_cli_bad_config_exits_2_with_every_problem_and_no_traceback():
    result = run_preview("entry-t4", "--set", "gpuPerNode=2", "--set", "nodes=3", "--set", "billing=cheap")
    assert result.returncode == 2
    assert "gpu-training:gpuPerNode: unknown key; did you mean 'gpusPerNode'?" in result.stderr
    assert "nodes:" in result.stderr and "billing:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("args,fragment", [
    (("no-such-stack",), "no stack 'no-such-stack'"),
    (("entry-t4", "--set", "novalue"), "expected KEY=VALUE"),
])
def test_preview_cli_bad_arguments_exit_2(args, fragment):
    result = run_preview(*args)
    assert result.returncode == 2 and fragment in result.stderr
    assert "Traceback" not in result.stderr


def readme_preview_schema() -> dict:
    """The README's "Preview JSON" block, its // comments dropped (strings, URLs included, kept)."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Preview JSON", 1)[1].split("```jsonc", 1)[1].split("```", 1)[0]
    tokens = re.finditer(r'"(?:\\.|[^"\\])*"|//[^\n]*', block)
    text, last = [], 0
    for token in tokens:
        if token.group().startswith("//"):
            text.append(block[last:token.start()])
            last = token.end()
    return json.loads("".join(text) + block[last:])


def test_preview_cli_json_document():
    result = run_preview("medium-a100", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) >= {"stack", "provider", "resources", "outputs", "cost", "findings"}
    assert set(document["cost"]) >= {"currency", "onDemandPerHour", "spotPerHour", "effectivePerHour"}
    schema = readme_preview_schema()
    assert set(document) == set(schema), "README's preview JSON schema and the document differ"
    (example,) = schema["resources"]
    for resource in document["resources"]:
        assert set(resource) == set(example)
        assert set(resource["options"]) == set(example["options"])
    names = {r["name"] for r in document["resources"]}
    assert all(r["parent"] in names for r in document["resources"] if r["parent"] is not None)
    assert 0 < document["userData"]["encodedSize"] < 16384


def readme_layout(readme: str) -> tuple[list[str], str]:
    """The README's "Layout" block: the folders and files its rows start with, and the "Where new work goes"
    paragraph after it."""
    block = readme.split("## Layout\n", 1)[1].split("```\n", 2)
    rows = [line.split("  ")[0] for line in block[1].splitlines() if line and not line.startswith(" ")]
    heads = [name.strip(",") for row in rows for name in row.split()]
    return heads, block[2].split("\n\n", 1)[0]


def test_the_readme_layout_names_every_folder_of_the_tree_and_only_those():
    heads, where = readme_layout((REPO / "README.md").read_text())
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    folders = {path.split("/")[0] + "/" for path in tracked.splitlines() if "/" in path}
    assert sorted(f for f in folders if not any(head.startswith(f) for head in heads)) == [], \
        "folders the README's Layout does not name"
    assert [head for head in heads if not (REPO / head).exists()] == [], "the Layout names what is not in the tree"
    named = re.findall(r"`([\w./-]+/(?:[\w.-]+)?)`", where)  # the paths "Where new work goes" names, <cloud> aside
    assert named and [path for path in named if not (REPO / path).exists()] == []


def test_a_layout_row_for_a_missing_folder_is_found():
    readme = "## Layout\n```\nstacks/    x\ngone/      y\n           z\n```\nWhere: `tools/commands/`.\n\n"
    heads, where = readme_layout(readme)
    assert heads == ["stacks/", "gone/"] and "tools/commands/" in where
    assert [head for head in heads if not (REPO / head).exists()] == ["gone/"]
