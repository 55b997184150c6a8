"""The user's packages on a platform job (ModelArts, PAI-DLC; issue 33): train.requirements and train.setup run in
the job's command before train.command (components/platforms/training_contract.py setup), as each platform's request carries
it. The command runs under sh as the platform runs it, with a Python whose installs land in a venv of the test's
own (localcloud.nodevenv) and a package index on 127.0.0.1 (localcloud.pyindex): nothing reaches the internet or
this environment.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from components.platforms import training_contract as contract
from components.validation import build_spec
from localcloud import nodevenv
from localcloud.pyindex import PackageIndex, make_wheel
from tools.stackfiles import load_stack_config

STACKS = ("hw-large-910b-modelarts", "large-a100-dlc")


def spec_of(stack, code: Path, **train):
    config = {**load_stack_config(stack),
              "gpu-training:train": {"codeDir": str(code), "launcher": "direct", **train}}
    return build_spec(config, stack=stack)


@pytest.fixture
def job(tmp_path):
    """A code folder with a requirements file, an index serving its wheels, and a venv whose python is first."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "requirements.txt").write_text("gtdemo==1.0\n")
    (code / "train.py").write_text("import gtdemo, gtextra\nprint('trained with', gtdemo.VERSION, gtextra.VERSION)\n")
    folder = tmp_path / "index"
    make_wheel(folder, "gtdemo", "1.0")
    make_wheel(folder, "gtextra", "2.0")
    index = PackageIndex(folder)
    venv = nodevenv.layered(tmp_path / "venv")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "PIP_INDEX_URL": index.index_url,
           "PIP_CONFIG_FILE": os.devnull, "PIP_RETRIES": "0"}
    yield code, venv, env
    index.stop()


def run_job(spec, tmp_path, code, env):
    """The job's command as the platform's request carries it, run by sh in a copy of the job's folders."""
    paths = contract.JobPaths(str(tmp_path / "mount" / "code"), str(tmp_path / "mount" / "ckpt"),
                              str(tmp_path / "mount" / "data"))
    shutil.copytree(code, paths.code)
    command = contract.command(spec, paths)
    return subprocess.run(["sh", "-c", command], env={**env, **contract.environment(spec, paths)},
                          capture_output=True, text=True, timeout=300), Path(paths.code)


@pytest.mark.parametrize("stack", STACKS)
def test_the_job_installs_requirements_and_setup_before_the_command(stack, tmp_path, job):
    code, venv, env = job
    spec = spec_of(stack, code, command="python train.py", setup=["pip install gtextra", "touch setup-ran"])
    request = contract.command(spec, contract.JobPaths("/m/code", "/m/ckpt", "/m/data"))
    assert request.index("pip install -r requirements.txt") < request.index("python train.py")
    done, folder = run_job(spec, tmp_path, code, env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "gpu-training: setup: train.requirements (requirements.txt)" in out
    assert "gpu-training: setup: train.setup[0] (pip install gtextra)" in out and "Successfully installed" in out
    assert "gpu-training: setup: done in" in out and out.rstrip().endswith("trained with 1.0 2.0"), out
    assert (folder / "setup-ran").exists(), "the commands run in the code folder"
    assert list(venv.glob("lib/python*/site-packages/gtextra.py")), "installed into the job's Python"


def test_a_failing_step_ends_the_job_naming_it_and_nothing_trains(tmp_path, job):
    code, _, env = job
    spec = spec_of("large-a100-dlc", code, command="touch trained", requirements="",
                   setup=["echo before", "echo 'no such tool' >&2; exit 7", "touch never"])
    done, folder = run_job(spec, tmp_path, code, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gpu-training: setup failed: train.setup[1] (echo 'no such tool' >&2; exit 7) exited 7: not training" \
        in done.stderr, done.stderr
    assert not (folder / "never").exists() and not (folder / "trained").exists()


def test_a_requirement_that_would_replace_the_framework_fails_the_job(tmp_path, job):
    """The image's framework is a pip constraint, as on a VM node: a requirement for another torch fails."""
    code, _, env = job
    make_wheel(tmp_path / "index", "torch", "0.0.1")
    (code / "requirements.txt").write_text("torch==0.0.1\n")
    spec = spec_of("large-a100-dlc", code, command="touch trained")
    done, folder = run_job(spec, tmp_path, code, env)
    assert done.returncode == 1 and "setup failed: train.requirements (requirements.txt) exited" in done.stderr, \
        done.stdout + done.stderr
    assert not (folder / "trained").exists()


def test_a_stack_without_setup_runs_the_command_as_before(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    spec = spec_of("large-a100-dlc", code, command="python train.py")
    assert contract.setup(spec) == ""
    assert "pip" not in contract.command(spec, contract.JobPaths("/m/code", "/m/ckpt", "/m/data"))


@pytest.mark.slow  # a whole platform drill with three pip installs: about 90 s on a busy 2-core machine
def test_rehearse_on_a_platform_stack_runs_the_setup_before_each_start_from_the_local_index(tmp_path):
    """`gpu-training rehearse` of a PAI-DLC stack of the user's own: the job's command installs the requirements and
    the setup from --wheels (127.0.0.1) into the job's own venv before training, on the first start and again on
    the restarted worker; the user's code folder is the one the job runs."""
    import importlib.util

    from tests.tools.setup_project import make_project, rehearse_in

    small = ("python -c 'import gtdemo' && python train_cnn.py --steps 80 --ckpt-every 5 --dataset-size 256"
             " --batch-size 8 --image-size 16 --width 4 --depth 1 --device cpu --min-step-seconds 0.05 --log-every 5")
    project, wheels = make_project(tmp_path, "mine-dlc", {"command": small, "setup": [
        "pip install gtextra", "python -c 'import gtextra'"]}, "gtdemo==1.0\n", base="large-a100-dlc")
    code, report, stderr = rehearse_in(project, "mine-dlc", "--steps", "80", "--wheels", str(wheels))
    checks = {c["name"]: c for c in report.get("checks", [])}
    assert code == 0 and report["passed"], (checks, stderr[-3000:])
    assert checks["setup before training"]["ok"] and checks["setup packages from the local index only"]["ok"]
    assert checks["resumed, not from zero"]["ok"] and checks["trained to the end"]["ok"]
    assert importlib.util.find_spec("gtdemo") is None, "the rehearsal installed into this environment"
