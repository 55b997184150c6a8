"""`gpu-training init [DIR]` (tools/commands/init.py): a gpu-training project in a folder of the user's own,
whose program is the installed package. Each test runs the CLI as a user does, in a temporary folder outside
this repository, and the written project is then previewed, and its program planned on the mock engine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components import project
from tools.mockrun import run_program
from tools.stackfiles import parse_stack_text

REPO = Path(__file__).resolve().parents[2]


def cli(*args, cwd: Path, timeout=180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (project.ENV, project.OUT_ENV)}
    return subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder in no project (no Pulumi.yaml above it), as a user's own repository would be."""
    if project.find_upward(tmp_path) is not None:
        pytest.skip("the temporary folder lies inside a Pulumi project")
    folder = tmp_path / "my-repo"
    folder.mkdir()
    return folder


def test_init_writes_a_project_whose_program_is_the_package_and_preview_plans_it(outside):
    done = cli("init", "--cloud", "alicloud", "--tier", "entry", "--gpu", "T4", cwd=outside)
    assert done.returncode == 0, done.stderr
    assert "wrote stacks/Pulumi.entry-t4.yaml" in done.stdout and "gpu-training preview entry-t4" in done.stdout
    pulumi_yaml = yaml.safe_load((outside / "Pulumi.yaml").read_text())
    assert pulumi_yaml["name"] == "my-repo" and pulumi_yaml["runtime"]["name"] == "python"
    assert pulumi_yaml["stackConfigDir"] == "stacks"
    # `pulumi up` runs the interpreter gpu-training runs in (this test's virtualenv), where the package is.
    assert pulumi_yaml["runtime"]["options"].get("virtualenv") in (None, sys.prefix)
    program = (outside / "__main__.py").read_text()
    assert "import gpu_training" in program and "gpu_training.main()" in program
    assert len(program.splitlines()) <= 6  # an entry that imports the package, not a copy of its code
    assert {"/out/", ".venv/"} <= set((outside / ".gitignore").read_text().splitlines())
    assert "gpu-training rehearse entry-t4" in (outside / "README.md").read_text()

    written = outside / "stacks" / "Pulumi.entry-t4.yaml"
    config = parse_stack_text(written.read_bytes(), str(written))
    assert config["gpu-training:provider"] == "alicloud" and config["gpu-training:gpu"] == "T4"
    assert config["alicloud:region"] and config["gpu-training:instanceType"].startswith("ecs.")

    preview = cli("preview", "entry-t4", "--json", cwd=outside)
    assert preview.returncode == 0, preview.stderr[-3000:]
    doc = json.loads(preview.stdout)
    assert doc["stack"] == "entry-t4" and any(r["type"] == "alicloud:ecs/instance:Instance" for r in doc["resources"])
    assert "note:" not in preview.stderr  # the project found is the new one, not this repository

    # The written program itself, run in its folder on the mock engine, plans the same stack.
    plan = run_program(config, "entry-t4", program_file=outside / "__main__.py")
    instances = [r for r in plan.resources if r.type == "alicloud:ecs/instance:Instance"]
    assert instances and instances[0].inputs["instanceType"] == config["gpu-training:instanceType"]
    # The example trainer is the installed one (the new project has none), uploaded as the code.
    code = [r for r in plan.resources if r.type == "alicloud:oss/bucketObject:BucketObject"
            and "/code/train_cnn.py" in r.inputs.get("key", "")]
    assert code, "the example trainer was not uploaded"


def test_init_defaults_to_the_advisors_pick_and_never_overwrites(outside):
    done = cli("init", cwd=outside)
    assert done.returncode == 0, done.stderr
    assert "the advisor's pick" in done.stdout
    stacks = sorted(p.name for p in (outside / "stacks").glob("Pulumi.*.yaml"))
    assert len(stacks) == 1 and stacks[0].startswith("Pulumi.entry-")
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}

    again = cli("init", cwd=outside)
    assert again.returncode == 2
    assert "exists already" in again.stderr and "--force" in again.stderr and "Traceback" not in again.stderr
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before  # nothing written

    forced = cli("init", "--force", "--tier", "medium", cwd=outside)
    assert forced.returncode == 0, forced.stderr
    assert any(p.name.startswith("Pulumi.medium-") for p in (outside / "stacks").iterdir())


def test_init_keeps_the_users_own_readme_and_gitignore(outside):
    (outside / "README.md").write_text("# my model\n")
    (outside / ".gitignore").write_text("data/\n*.pyc")
    done = cli("init", "--cloud", "alicloud", cwd=outside)
    assert done.returncode == 0, done.stderr
    assert (outside / "README.md").read_text() == "# my model\n"
    assert "gpu-training preview" in (outside / "GPU-TRAINING.md").read_text()
    lines = (outside / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["data/", "*.pyc"] and "/out/" in lines and lines.count("*.pyc") == 1


@pytest.mark.parametrize("args, says", [
    (("--cloud", "nocloud"), "--cloud 'nocloud': allowed: alicloud"),
    (("--tier", "huge"), "'huge' is not one of 'entry', 'medium', 'large'"),
    (("--gpu", "H100"), "--gpu 'H100': the entry tier takes T4"),
    (("--region", "cn-hangzhou"), "--region names a region of one cloud: give --cloud too"),
    (("--cloud", "baiducloud", "--tier", "large", "--region", "bj"), "zone: not set"),
    (("--stack", "Bad_Name"), "--stack 'Bad_Name': a stack name is lowercase"),
    (("--set", "nodes=x"), "nodes: 'x' is not an integer"),
])
def test_bad_options_exit_2_with_the_reason_and_write_nothing(outside, args, says):
    done = cli("init", "new", *args, cwd=outside)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says in done.stderr and "Traceback" not in done.stderr
    assert not (outside / "new").exists()



def test_the_stacks_code_folder_is_relative_to_the_users_project(outside, monkeypatch):
    """train.codeDir names a folder of the user's project, wherever gpu-training is installed."""
    assert cli("init", "--cloud", "alicloud", "--gpu", "T4", cwd=outside).returncode == 0
    (outside / "trainer").mkdir()
    (outside / "trainer" / "train.py").write_text("print('my model')\n")
    written = outside / "stacks" / "Pulumi.entry-t4.yaml"
    config = {**parse_stack_text(written.read_bytes(), str(written)),
              "gpu-training:train": {"command": "python train.py", "codeDir": "trainer"}}
    monkeypatch.chdir(outside)
    plan = run_program(config, "entry-t4")
    uploads = {r.inputs["key"].rsplit("/code/", 1)[1]: r.inputs.get("source") for r in plan.resources
               if r.type == "alicloud:oss/bucketObject:BucketObject" and "/code/" in r.inputs.get("key", "")}
    # Relative to the project folder, where `pulumi up` runs the program and its provider plugins.
    assert uploads == {"train.py": "trainer/train.py"}, uploads


def test_a_second_init_adds_a_stack_of_another_cloud_and_never_replaces_one(outside):
    """The project init made gets a stack per cloud without --force; the default names carry the cloud's prefix
    (the shipped stacks' convention), and a stack file that exists is refused, naming it and --stack."""
    assert cli("init", "--cloud", "alicloud", "--gpu", "T4", cwd=outside).returncode == 0
    # The user edits the project file (a description of theirs): it is still gpu-training's.
    pulumi_yaml = outside / "Pulumi.yaml"
    pulumi_yaml.write_text(pulumi_yaml.read_text().replace("description: GPU training environments (gpu-training)",
                                                           "description: my team's runs"))
    project_files = {name: (outside / name).read_bytes() for name in ("Pulumi.yaml", "__main__.py", "README.md",
                                                                     ".gitignore")}

    tencent = cli("init", "--cloud", "tencentcloud", "--gpu", "T4", cwd=outside)
    assert tencent.returncode == 0, tencent.stderr
    assert "wrote stacks/Pulumi.tc-entry-t4.yaml" in tencent.stdout and "kept Pulumi.yaml" in tencent.stdout
    assert ".gitignore" not in tencent.stdout  # nothing was added to it
    huawei = cli("init", "--cloud", "huaweicloud", "--gpu", "T4", cwd=outside)
    assert huawei.returncode == 0, huawei.stderr
    assert "gpu-training preview hw-entry-t4" in huawei.stdout
    assert {name: (outside / name).read_bytes() for name in project_files} == project_files
    assert sorted(p.name for p in (outside / "stacks").iterdir()) == [
        "Pulumi.entry-t4.yaml", "Pulumi.hw-entry-t4.yaml", "Pulumi.tc-entry-t4.yaml"]
    assert not (outside / "GPU-TRAINING.md").exists()
    providers = {p.name: parse_stack_text(p.read_bytes(), str(p))["gpu-training:provider"]
                 for p in (outside / "stacks").iterdir()}
    assert providers == {"Pulumi.entry-t4.yaml": "alicloud", "Pulumi.tc-entry-t4.yaml": "tencentcloud",
                         "Pulumi.hw-entry-t4.yaml": "huaweicloud"}

    before = (outside / "stacks" / "Pulumi.hw-entry-t4.yaml").read_bytes()
    again = cli("init", "--cloud", "huaweicloud", "--gpu", "T4", "--set", "billing=spot", cwd=outside)
    assert again.returncode == 2, again.stdout
    assert "stacks/Pulumi.hw-entry-t4.yaml exists already" in again.stderr and "--stack NAME" in again.stderr
    assert "Traceback" not in again.stderr
    assert (outside / "stacks" / "Pulumi.hw-entry-t4.yaml").read_bytes() == before

    renamed = cli("init", "--cloud", "huaweicloud", "--gpu", "T4", "--stack", "hw-spot-t4", "--set", "billing=spot",
                  cwd=outside)
    assert renamed.returncode == 0, renamed.stderr
    assert (outside / "stacks" / "Pulumi.hw-entry-t4.yaml").read_bytes() == before
    preview = cli("preview", "tc-entry-t4", "--json", cwd=outside)
    assert preview.returncode == 0, preview.stderr[-3000:]
    assert json.loads(preview.stdout)["stack"] == "tc-entry-t4"


def test_init_refuses_a_pulumi_project_of_the_users_own(outside):
    (outside / "Pulumi.yaml").write_text("name: infra\nruntime: nodejs\n")
    done = cli("init", "--cloud", "alicloud", "--gpu", "T4", cwd=outside)
    assert done.returncode == 2, done.stdout
    assert "Pulumi.yaml is not gpu-training init's" in done.stderr and "--force" in done.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["Pulumi.yaml"]


def test_a_shipped_stack_is_copied_into_the_project_and_named_where_it_is_missing(outside):
    """A stack the README's table names is one `init --from NAME` away, and a command asking for it (or a
    misspelt name) says so, instead of listing the project's stacks alone."""
    assert cli("init", "--cloud", "alicloud", "--gpu", "A10", cwd=outside).returncode == 0
    missing = cli("preview", "tc-entry-t4", cwd=outside)
    assert missing.returncode == 2 and "`gpu-training init --from tc-entry-t4`" in missing.stderr, missing.stderr
    down = cli("down", "tc-entry-t4", cwd=outside)
    assert down.returncode == 2 and "init --from tc-entry-t4" in down.stderr, down.stderr
    misspelt = cli("preview", "entyr-a10", cwd=outside)
    assert misspelt.returncode == 2 and "Did you mean entry-a10?" in misspelt.stderr, misspelt.stderr
    shipped_misspelt = cli("status", "hw-entyr-t4", cwd=outside)
    assert shipped_misspelt.returncode == 2 and "init --from hw-entry-t4" in shipped_misspelt.stderr

    copied = cli("init", "--from", "tc-entry-t4", cwd=outside)
    assert copied.returncode == 0, copied.stderr
    assert "wrote stacks/Pulumi.tc-entry-t4.yaml" in copied.stdout
    written = outside / "stacks" / "Pulumi.tc-entry-t4.yaml"
    shipped = REPO / "stacks" / "Pulumi.tc-entry-t4.yaml"
    # The shipped file as it is, its comments and the example bucket a user must change included.
    assert written.read_text().endswith(shipped.read_text())
    assert parse_stack_text(written.read_bytes(), str(written)) == parse_stack_text(shipped.read_bytes(), str(shipped))
    preview = cli("preview", "tc-entry-t4", cwd=outside)
    assert preview.returncode == 0, preview.stderr[-3000:]
    assert "is the example name the stack files ship with" in " ".join(preview.stdout.split())

    again = cli("init", "--from", "tc-entry-t4", cwd=outside)
    assert again.returncode == 2 and "Pulumi.tc-entry-t4.yaml exists already" in again.stderr
    renamed = cli("init", "--from", "tc-entry-t4", "--stack", "tc-mine", cwd=outside)
    assert renamed.returncode == 0 and (outside / "stacks" / "Pulumi.tc-mine.yaml").is_file(), renamed.stderr

    unknown = cli("init", "--from", "tc-entyr-t4", cwd=outside)
    assert unknown.returncode == 2 and "did you mean tc-entry-t4?" in unknown.stderr and "Traceback" not in unknown.stderr
    mixed = cli("init", "--from", "tc-entry-t4", "--cloud", "alicloud", "--stack", "other", cwd=outside)
    assert mixed.returncode == 2 and "--cloud" in mixed.stderr
    assert not (outside / "stacks" / "Pulumi.other.yaml").exists()
