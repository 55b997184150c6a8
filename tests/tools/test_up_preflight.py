"""`gpu-training up` checks the stack as the preview does before it creates anything (issue 33; newcomer trial 3).

It takes `--set` like the preview (written to the stack's config before `pulumi up`, as `pulumi up --config`
does), and an error the preview finds, the stack files' example bucket (a preview warning: `pulumi up` would
create the network and the nodes, then fail at the first upload) and missing credentials are named all at
once, exit 2, with nothing created.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools.run_harness import TEST_BUCKET, FakeStack, run_cli, run_main
from tools.runlib.automation import _config_text
from tools.stackfiles import path_value, stack_spec
from tools.runlib import exitcodes

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN")


def cli_up(*args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "tools.cli", "up", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def nothing_may_start(*args, **kwargs):
    pytest.fail("up went on to Pulumi despite the problems")


def test_the_example_bucket_and_a_missing_credential_are_named_in_one_pass():
    done = cli_up("entry-t4")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "2 problems found before `pulumi up`; nothing was created" in done.stderr
    assert "checkpoint.bucket: 'my-gpu-training-checkpoints' is the example name" in done.stderr
    assert "--set checkpoint.bucket=" in done.stderr  # the fix
    assert "credentials: no Alibaba Cloud credentials: set ALICLOUD_ACCESS_KEY and ALICLOUD_SECRET_KEY" in done.stderr


def test_set_reaches_the_check_and_each_error_is_named_with_the_rest():
    done = cli_up("entry-t4", "--set", "image=ubuntu", "--set", "billing=sometimes")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "4 problems found" in done.stderr, done.stderr
    for said in ("image: 'ubuntu' is no Alibaba Cloud image id", "billing:", "checkpoint.bucket:", "credentials:"):
        assert said in done.stderr, said


def test_with_a_bucket_of_ones_own_only_the_credential_is_left_on_one_line():
    done = cli_up("tc-entry-t4", "--set", "checkpoint.bucket=my-own-bucket-1250000000")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TENCENTCLOUD_SECRET_ID" in lines[0] and "checkpoint.bucket" not in lines[0], lines


def test_the_example_bucket_stops_up_before_pulumi_is_driven(capsys):
    code = run_cli.main(["entry-t4", "--yes"], stack_factory=nothing_may_start)
    assert code == exitcodes.USAGE
    assert "checkpoint.bucket: 'my-gpu-training-checkpoints'" in capsys.readouterr().err


def test_set_is_written_to_the_stack_config_before_pulumi_up(tmp_path):
    seen = {}
    stack = FakeStack({"stack": "entry-t4"}, on_up=lambda: seen.update(stack.config))
    code, out = run_main(tmp_path, stack, "--yes", "--set", "billing=spot", "--set", "spotMaxPricePerHour=50")
    # The fake's outputs hold no bucket, so the run stops after `up`: what matters is what `up` was given.
    assert stack.calls[:1] == ["up"], out
    assert seen == {"gpu-training:checkpoint.bucket": "gpu-training-run-under-test", "gpu-training:billing": "spot",
                    "gpu-training:spotMaxPricePerHour": "50"}, out
    assert "--set saved in the stack's config" in out
    assert code == exitcodes.ERROR


def test_set_that_the_check_refuses_writes_nothing(capsys):
    stack = FakeStack({"stack": "entry-t4"})
    code = run_cli.main(["entry-t4", "--set", "checkpoint.bucket=mine-1", "--set", "nodes=0"],
                        stack_factory=stack.factory)
    assert code == exitcodes.USAGE and stack.config == {} and stack.created == []
    assert "nodes:" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["--watch-only", "--destroy-only"])
def test_set_with_watch_or_destroy_is_a_usage_error(mode, capsys):
    code = run_cli.main(["entry-t4", mode, "--set", "billing=spot"], stack_factory=nothing_may_start)
    assert code == exitcodes.USAGE and "--set changes what `up` creates" in capsys.readouterr().err


def test_a_malformed_set_is_named():
    done = cli_up("entry-t4", "--set", "billing")
    assert done.returncode == 2 and "expected KEY=VALUE" in done.stderr and "Traceback" not in done.stderr


def test_the_commands_help_offers_set():
    done = subprocess.run([sys.executable, "-m", "tools.cli", "up", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "--set KEY=VALUE" in done.stdout


def test_a_platform_stacks_example_workspace_is_named_too(capsys):
    code = run_cli.main(["large-a100-dlc", "--set", "checkpoint.bucket=my-own-bucket"], stack_factory=nothing_may_start)
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "platform.workspaceId: '123456' is the example id" in err, err
    assert "checkpoint.bucket" not in err


# `pulumi config set --path` (what `up` saves --set with): true/false are booleans, a whole number without a
# leading zero that fits Go's int is an int, anything else is the text as given (adjustObjectValue,
# pulumi/pulumi@05e382fdeeeced7d0b302810766b9372eb52b07d sdk/go/common/resource/config/map.go).
@pytest.mark.parametrize("text,stored", [
    ("true", True), ("false", False), ("5", 5), ("-3", -3), ("+7", 7), ("0", 0), ("9223372036854775807", 2**63 - 1),
    ("1.5", "1.5"), ("0123", "0123"), ("-0", 0), ("1e3", "1e3"), ("null", "null"), ("True", "True"), ("[1]", "[1]"),
    ('{"a": 1}', '{"a": 1}'), ('"x"', '"x"'), (" 5", " 5"), ("1_000", "1_000"), ("\uff15", "\uff15"),
    ("9223372036854775808", "9223372036854775808"), ("", ""),
])
def test_a_dotted_value_is_typed_as_pulumi_config_set_path_types_it(text, stored):
    assert path_value(text) == stored and type(path_value(text)) is type(stored)
    # The text the Automation layer hands `pulumi config set` comes back as the same value.
    assert path_value(_config_text(stored)) == stored


def test_a_dotted_set_is_checked_as_the_value_up_saves(tmp_path):
    """--set data.sizeGb=1.5 is the string "1.5" in the stack's config after `pulumi config set --path`, so the
    check judges that string (the schema reads a size from text: accepted), not the JSON number 1.5."""
    sets = ("data.sizeGb=1.5", "data.waitMinutes=30", "checkpoint.prefix=12.50", "checkpoint.create=false",
            "spotMaxPricePerHour=50")
    seen = {}
    stack = FakeStack({"stack": "entry-t4"}, on_up=lambda: seen.update(stack.config))
    code, out = run_main(tmp_path, stack, "--yes", *(arg for value in sets for arg in ("--set", value)))
    assert stack.calls[:1] == ["up"], out
    checked, spec = stack_spec("entry-t4", (TEST_BUCKET, *sets))
    assert checked["gpu-training:data"] == {"sizeGb": "1.5", "waitMinutes": 30}
    assert checked["gpu-training:checkpoint"]["prefix"] == "12.50" and spec.data.size_gb == 1.5
    for key, value in seen.items():  # each value saved is the one checked, of the same type
        head, _, field = key.partition(".")
        at = checked[head][field] if field else checked[head]
        assert at == value and type(at) is type(value), (key, value, at)
    assert seen["gpu-training:checkpoint.create"] is False and seen["gpu-training:spotMaxPricePerHour"] == "50"


def test_a_dotted_set_that_is_no_number_is_refused_naming_the_key(capsys):
    code = run_cli.main(["entry-t4", "--set", "checkpoint.bucket=mine-1", "--set", "data.sizeGb=1.5GB"],
                        stack_factory=nothing_may_start)
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "data.sizeGb: '1.5GB'" in err, err


@pytest.mark.parametrize("shadow", ["components/__init__.py", "node_agent/__init__.py", "components.py"])
def test_a_project_folder_that_hides_our_packages_stops_up_before_pulumi(tmp_path, shadow):
    """`pulumi up` runs the program with the project first on sys.path: a `components/` package of the user's own
    would be imported instead of ours (the program refuses then, late). `up` names it first, with the rest."""
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text((REPO / "Pulumi.yaml").read_text())
    (project / "stacks" / "Pulumi.mine.yaml").write_text(
        "config:\n  alicloud:region: cn-hangzhou\n  gpu-training:tier: entry\n"
        "  gpu-training:checkpoint: {bucket: team-ckpt-1}\n")
    (project / shadow).parent.mkdir(parents=True, exist_ok=True)
    (project / shadow).write_text("")
    (project / "tools").mkdir()  # a namespace folder (no __init__.py) hides nothing, nor does a package we do not import
    (project / "tools" / "helper.py").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    env.update(GPU_TRAINING_PROJECT=str(project), PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "node")]))
    # -P: the project is not put on sys.path, as for the installed `gpu-training` script
    done = subprocess.run([sys.executable, "-P", "-m", "tools.cli", "up", "mine"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    name = shadow.split("/")[0].removesuffix(".py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"hides gpu-training's own package {name!r}" in done.stderr and "rename that folder" in done.stderr
    assert "credentials:" in done.stderr and "Traceback" not in done.stderr
    assert "'tools'" not in done.stderr


def test_in_a_clone_the_projects_own_packages_are_ours():
    from gpu_training.shadowing import hidden_in

    assert hidden_in(REPO) == [] and hidden_in(REPO / "node") == []
