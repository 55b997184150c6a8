"""Bad stack configs are refused at validation, by key, with exit 2 and no traceback (issue 12).

Each test reproduces one failure found by bench/bad_configs.py against the code before the fix
(commit 12929f0): a traceback, a value accepted that the bootstrap, the user-data budget or the
cloud refuses later, or a hole in a rule. Configs go through the real stack files and `--set`
overrides (what the CLIs do), the real CLIs' main() and, for the Pulumi program, the mock engine.
"""
from __future__ import annotations

import importlib.util
import json
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from tools import stackfiles
from components.validation import SpecError, build_spec
from tools.stackfiles import StackFileError, stack_spec

REPO = Path(__file__).resolve().parents[2]
_RNG = random.Random(12)
NOISE = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(60000))  # incompressible
GOOD = ("config:\n  alicloud:region: cn-hangzhou\n  gpu-training:tier: entry\n"
        "  gpu-training:checkpoint:\n    bucket: my-gpu-training-checkpoints\n")


def errors_of(stack: str, *sets: str) -> dict[str, str]:
    """{key: messages} of the errors a stack with `--set` overrides is refused with."""
    with pytest.raises(SpecError) as caught:
        stack_spec(stack, sets)
    found: dict[str, str] = {}
    for finding in caught.value.errors:
        found[finding.key] = (found.get(finding.key, "") + " | " + finding.message).strip(" |")
    return found


def assert_refused(stack: str, sets: tuple[str, ...], key: str, fragment: str = "") -> str:
    errors = errors_of(stack, *sets)
    assert key in errors, errors
    assert fragment in errors[key], errors[key]
    return errors[key]


# ---------------------------------------------------------------- numbers: no tracebacks

NUMBER_KEYS = ("nodes", "gpusPerNode", "dataDiskGb", "datasetGb", "maxHours", "idleMinutes", "sharedStorageGb")
NON_FINITE = ("inf", "-inf", "nan", "1e400", "Infinity", "1" + "0" * 400)


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("key", NUMBER_KEYS)
def test_non_finite_and_overflowing_numbers_are_refused_by_key(key, value):
    assert_refused("entry-t4", (f"{key}={value}",), key)


@pytest.mark.parametrize("value", ("inf", "nan", "1e400", "Infinity"))
def test_spot_price_must_be_finite(value):
    message = assert_refused("medium-a100", (f"spotMaxPricePerHour={value}",), "spotMaxPricePerHour")
    assert "finite" in message


def test_huge_integers_are_out_of_range_not_an_overflow():
    for key in ("maxHours", "idleMinutes"):
        assert_refused("entry-t4", (f"{key}=" + "9" * 40,), key, "out of range")
    assert_refused("entry-t4", ("idleMinutes=100000000",), "idleMinutes", "out of range")


# ---------------------------------------------------------------- holes in the rules

@pytest.mark.parametrize("cidrs,world", [
    (["0.0.0.0/1", "128.0.0.0/1"], "0.0.0.0/0"),
    (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"], "0.0.0.0/0"),
    (["::/1", "8000::/1"], "::/0"),
])
def test_cidrs_that_together_cover_the_internet_are_world_open(cidrs, world):
    assert_refused("entry-t4", (f"sshAllowCidrs={json.dumps(cidrs)}",), "sshAllowCidrs", world)
    _, spec = stack_spec("entry-t4", (f"sshAllowCidrs={json.dumps(cidrs)}", "allowWorldSsh=true"))
    assert any(f.key == "sshAllowCidrs" and f.level == "warning" for f in spec.findings)


def test_cidrs_that_leave_a_gap_are_not_world_open():
    _, spec = stack_spec("entry-t4", ('sshAllowCidrs=["0.0.0.0/1", "128.0.0.0/2"]',))
    assert spec.ssh_allow_cidrs == ("0.0.0.0/1", "128.0.0.0/2")


def test_negative_dataset_is_refused():
    assert_refused("entry-t4", ("datasetGb=-3",), "datasetGb", "0 or more")


def test_negative_shared_storage_is_refused_even_without_a_shared_fs():
    assert_refused("entry-t4", ("sharedStorageGb=-1",), "sharedStorageGb", "0 or more")


@pytest.mark.parametrize("stack,sets,allowed", [
    ("entry-t4", ("dataDiskGb=5", "dataDiskCategory=cloud_ssd"), "allowed: 20-32768 GiB"),
    ("entry-t4", ("dataDiskGb=10",), "allowed: 20-32768 GiB"),
    ("entry-t4", ("dataDiskGb=40000",), "allowed: 20-32768 GiB"),
    ("tc-entry-t4", ("dataDiskGb=10",), "allowed: 20-32000 GiB"),
])
def test_a_data_disk_outside_the_category_range_is_an_error(stack, sets, allowed):
    message = assert_refused(stack, sets, "dataDiskGb", allowed)
    assert "data disk on" in message


@pytest.mark.parametrize("stack,sets,key,fragment", [
    ("entry-t4", ("alicloud:region=cn-nowhere",), "alicloud:region", "cn-hangzhou, cn-heyuan"),
    ("entry-t4", ("alicloud:region=cn-hangzhuo",), "alicloud:region", "did you mean 'cn-hangzhou'"),
    ("entry-t4", ("alicloud:region=cn-(hang",), "alicloud:region", "not a region id"),
    ("entry-t4", ("zone=cn-hangzhou-z",), "zone", "known: cn-hangzhou-b"),
    ("entry-t4", ("zone=cn-beijing-c",), "zone", "not a zone of cn-hangzhou"),
    ("medium-a100", ('spotZones=["cn-hangzhou-h", "cn-shanghai-a"]',), "spotZones[1]", "not a zone of cn-hangzhou"),
    ("tc-entry-t4", ("tencentcloud:region=ap-nowhere",), "tencentcloud:region", "ap-guangzhou"),
    ("tc-medium-a100", ('spotZones=["ap-guangzhou-99"]',), "spotZones[0]", "known: ap-guangzhou-1"),
])
def test_region_and_zones_are_checked_against_the_declared_ones(stack, sets, key, fragment):
    message = assert_refused(stack, sets, key, fragment)
    if "known" in fragment:
        assert "scripts/regions.py refresh --provider" in message


def test_declared_zones_are_accepted():
    _, spec = stack_spec("medium-a100", ('spotZones=["cn-hangzhou-h", "cn-hangzhou-i"]', "zone=cn-hangzhou-j"))
    assert spec.zone == "cn-hangzhou-j" and spec.spot_zones == ("cn-hangzhou-h", "cn-hangzhou-i")


@pytest.mark.parametrize("sets,key", [
    # A dotted --set keeps its text as given (no JSON escapes: Pulumi's --path rule, tools.stackfiles.path_value),
    # so a control character is in the text itself.
    (("checkpoint.endpoint=http://a\nb",), "checkpoint.endpoint"),
    (("checkpoint.prefix=*",), "checkpoint.prefix"),
    (("checkpoint.prefix=../other",), "checkpoint.prefix"),
    (("train.command=python\x00x",), "train.command"),
    (('train.env={"A": "x\\u0000y"}',), "train.env.A"),
    (("train.codeDir=" + "d" * 5000,), "train.codeDir"),
    (("train.codeDir=a\x00b",), "train.codeDir"),
    (('sshPublicKey=["ssh-ed25519 AAAA"]',), "sshPublicKey"),
    (('image={"id": "m-1"}',), "image"),
    (("gpu-training:=1",), "gpu-training:"),
])
def test_values_no_cloud_or_node_would_take_are_refused(sets, key):
    assert_refused("entry-t4", sets, key)


def test_a_config_key_that_is_not_a_string_is_named():
    with pytest.raises(SpecError) as caught:
        build_spec({1: 2, "alicloud:region": "cn-hangzhou"}, stack="t")
    assert "1" in {f.key for f in caught.value.errors}


# ---------------------------------------------------------------- what the bootstrap would refuse later

@pytest.mark.parametrize("sets,key", [
    (("bootstrap.frameworkVersion=2.4.1; rm -rf /",), "bootstrap.frameworkVersion"),
    (("bootstrap.frameworkVersion=$(id)",), "bootstrap.frameworkVersion"),
    (("bootstrap.cudaToolkit=1-2",), "bootstrap.cudaToolkit"),
    (("bootstrap.driverBranch=550\n",), "bootstrap.driverBranch"),
    (("bootstrap.driverBranch=\uff15\uff15\uff10",), "bootstrap.driverBranch"),  # full-width digits
    (("bootstrap.ascendPackagesUrl=http://x/$(id)",), "bootstrap.ascendPackagesUrl"),
])
def test_bootstrap_values_are_refused_by_the_spec(sets, key):
    message = assert_refused("entry-t4", sets, key)
    assert "expected" in message


def test_what_the_bootstrap_accepts_the_spec_accepts():
    """One rule: a driver branch the bootstrap renders ('550-server') is not refused by the spec."""
    from components.bootstrap import render_user_data
    from components.nodeconfig import build_node_config

    _, spec = stack_spec("entry-t4", ("bootstrap.driverBranch=550-server", "bootstrap.cudaToolkit=12-6"))
    rendered = render_user_data(build_node_config(spec, shared_fs_address=None))
    assert "550-server" in rendered.payload.content  # the bootstrap rides in the boot payload


@pytest.mark.parametrize("stack", ["entry-t4", "tc-entry-t4"])  # one per provider: their limits differ
@pytest.mark.parametrize("sets", [
    ("train.command=python train.py --tag " + NOISE,),
    (f'train.env={{"BLOB": "{NOISE}"}}',),
])
def test_a_long_command_or_env_rides_in_the_boot_payload_not_in_user_data(stack, sets):
    """Refused at 31f9070 (user-data over the limit): the loader alone is user-data now (issue 33)."""
    from components.bootstrap import render_user_data, user_data_limit
    from components.nodeconfig import build_node_config

    _, spec = stack_spec(stack, sets)
    rendered = render_user_data(build_node_config(spec, shared_fs_address=None))
    assert user_data_limit(spec.provider) - rendered.encoded_size >= 8192
    assert NOISE in rendered.payload.content and NOISE not in rendered.cloud_config


@pytest.mark.parametrize("stack", ["entry-t4", "tc-entry-t4"])
def test_user_data_over_the_limit_is_refused_naming_the_heavy_value(stack):
    """What still rides in user-data of the user's own text: the bucket and the prefix (the boot payload's key)."""
    from components import providers

    limit = providers.profile(stack_spec(stack)[1].provider).node.user_data
    message = assert_refused(stack, (f'checkpoint={{"bucket": "b-1250001234", "prefix": "{NOISE}"}}',),
                             "checkpoint.prefix", f"the cloud's limit is {limit.max_encoded:,} ({limit.describe()}")
    assert "characters make the node's user-data" in message


# ---------------------------------------------------------------- stack files and --set

@pytest.fixture
def stacks_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(stackfiles, "STACKS_DIR", tmp_path)
    return tmp_path


@pytest.mark.parametrize("content,fragment", [
    (GOOD.replace("entry", "entr\xe9e").encode("latin-1"), "not UTF-8"),
    (GOOD.encode("utf-16"), "not UTF-8"),
    (bytes(range(256)), "not UTF-8"),
    (b"config:\n  gpu-training:tier: [entry\n", "not valid YAML"),
    ((GOOD + "  gpu-training:tier: large\n").encode(), "given twice"),
    ((GOOD + "  gpu-training:image: 2024-01-01\n").encode(), "gpu-training:image"),
    ((GOOD + "  gpu-training:tags:\n    since: 2024-01-01\n").encode(), "gpu-training:tags.since"),
    ((GOOD + "  gpu-training:sshPublicKey: !!binary aGVsbG8=\n").encode(), "gpu-training:sshPublicKey"),
    ((GOOD + "  1: 2\n").encode(), "config key 1"),
    (b"config:\n  x: " + b"[" * 5000 + b"]" * 5000 + b"\n", "bad"),
    (("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcde", "bcdef"))
      + "config:\n  gpu-training:tags: {x: *f}\n").encode(), "aliases expand"),
])
def test_a_broken_stack_file_is_refused_by_name(stacks_dir, content, fragment):
    (stacks_dir / "Pulumi.broken.yaml").write_bytes(content)
    with pytest.raises(StackFileError) as caught:
        stack_spec("broken")
    text = caught.value.render()
    assert "Pulumi.broken.yaml" in text
    if fragment != "bad":
        assert fragment in text


@pytest.mark.parametrize("sets", [
    ("alicloud:region.x=1",),
    ("checkpoint=not json", "checkpoint.bucket=x"),
    ('sshAllowCidrs=["1.2.3.4/32"]', "sshAllowCidrs.x=1"),
])
def test_set_on_a_field_of_a_non_object_is_refused(sets):
    with pytest.raises(StackFileError) as caught:
        stack_spec("entry-t4", sets)
    assert "not an object" in caught.value.render()


# ---------------------------------------------------------------- the entry points exit 2

def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"})


def test_preview_exits_2_naming_the_prefix_when_user_data_would_not_fit():
    result = run_cli("scripts/preview.py", "tc-entry-t4", "--set", "checkpoint.prefix=" + NOISE)
    assert result.returncode == 2, result.stderr[-800:]
    assert "error: checkpoint.prefix:" in result.stderr and "Traceback" not in result.stderr


def test_preview_json_never_prints_a_non_standard_token():
    def strict(text):
        return json.loads(text, parse_constant=lambda token: pytest.fail(f"non-standard JSON token {token}"))

    refused = run_cli("scripts/preview.py", "medium-a100", "--json", "--set", "spotMaxPricePerHour=inf")
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout[:300]
    shown = run_cli("scripts/preview.py", "medium-a100", "--json", "--set", "spotMaxPricePerHour=55.5")
    assert shown.returncode == 0, shown.stderr[-500:]
    strict(shown.stdout)


def script(name: str):
    """A command line of scripts/ as a module, to call its main() in-process (scripts/ is not a package)."""
    loader = importlib.util.spec_from_file_location(f"script_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(loader)
    sys.modules[loader.name] = module  # dataclasses look their module up there
    loader.loader.exec_module(module)
    return module


def test_preview_main_refuses_a_stack_file_that_is_not_utf8(stacks_dir, capsys):
    preview = script("preview")

    (stacks_dir / "Pulumi.latin1.yaml").write_bytes(GOOD.replace("entry", "entr\xe9e").encode("latin-1"))
    assert preview.main(["latin1"]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_the_pulumi_program_exits_2_at_validation():
    """Under the engine (__main__.py on the mock engine), a bad value stops the program with 2, by key."""
    from tools.mockrun import ProgramExit, run_program

    config = stackfiles.apply_overrides(stackfiles.load_stack_config("entry-t4"), ["nodes=inf"])
    with pytest.raises(ProgramExit) as stop:
        run_program(config, "entry-t4")
    assert stop.value.code == 2 and "nodes:" in stop.value.stderr


def test_recommend_write_stack_exits_2_on_a_bad_set(tmp_path, capsys):
    recommend = script("recommend")

    code = recommend.main(["--model", "resnet18", "--images", "50000", "--epochs", "10", "--deadline", "24",
                           "--region", "alicloud:cn-hangzhou", "--write-stack", "t", "--stacks-dir", str(tmp_path),
                           "--set", "nodes=inf", "--json"])
    assert code == 2
    assert "nodes:" in capsys.readouterr().err
    assert not (tmp_path / "Pulumi.t.yaml").exists()


def test_rehearse_exits_2_on_a_broken_stack_file(stacks_dir, capsys):
    rehearse = script("rehearse")

    (stacks_dir / "Pulumi.dup.yaml").write_bytes((GOOD + "  gpu-training:tier: large\n").encode())
    assert rehearse.main(["dup"]) == 2
    assert "given twice" in capsys.readouterr().err


# ---------------------------------------------------------------- the shipped example bucket (audit A4)

@pytest.mark.parametrize("stack", ["entry-t4", "tc-entry-t4"])
def test_the_shipped_example_bucket_is_warned_about_until_it_is_changed(stack):
    _, spec = stack_spec(stack)
    (warning,) = [f for f in spec.findings if f.key == "checkpoint.bucket"]
    assert warning.level == "warning" and "example name" in warning.message and spec.checkpoint.bucket in warning.message
    _, own = stack_spec(stack, ('checkpoint={"bucket": "team-ckpt-1250001234"}',))
    assert not [f for f in own.findings if f.key == "checkpoint.bucket"]


@pytest.mark.parametrize("stack", ["entry-t4", "tc-entry-t4", "hw-entry-t4", "bd-large-a100"])
def test_a_tag_value_longer_than_the_cloud_takes_is_refused_naming_the_tag(stack):
    from components import tags

    limit = tags.rules(stack_spec(stack)[1].provider).value.max_length
    assert_refused(stack, (json.dumps({"team": "v" * (limit + 1)}).join(["tags=", ""]),), "tags.team",
                   f"at most {limit}")
    _, spec = stack_spec(stack, (json.dumps({"team": "v" * limit}).join(["tags=", ""]),))
    assert spec.tags["team"] == "v" * limit


def test_a_command_longer_than_one_exec_argument_is_refused():
    """It compresses into any user-data, but sh -c could not be started with it (E2BIG)."""
    from components.spec import MAX_COMMAND_BYTES

    assert_refused("entry-t4", ("train.command=python t.py " + "x" * MAX_COMMAND_BYTES,), "train.command",
                   "MAX_ARG_STRLEN")
    _, spec = stack_spec("entry-t4", ("train.command=python t.py " + "x" * 1000,))
    assert spec.train.command.endswith("x" * 1000)


# ---------------------------------------------------------------- newcomer trial: region key, shared FS on one node

@pytest.mark.parametrize("stack", ["entry-t4", "tc-entry-t4", "hw-entry-t4", "bd-large-a100"])
def test_a_bare_region_key_is_pointed_to_the_clouds_own_region_key(stack):
    from components import providers

    region_key = providers.profile(stack_spec(stack)[1].provider).region_key
    assert_refused(stack, ("region=cn-beijing",), "gpu-training:region", f"did you mean {region_key!r}")


@pytest.mark.parametrize("stack,kind", [("entry-t4", "cpfs"), ("hw-entry-t4", "sfsturbo"), ("medium-a100", "cpfs")])
def test_a_shared_file_system_on_a_single_node_tier_is_warned_about_with_what_it_bills(stack, kind):
    _, spec = stack_spec(stack, (f"sharedStorage={kind}",))
    (warning,) = [f for f in spec.findings if f.key == "sharedStorage" and "single node" in f.message]
    assert warning.level == "warning" and f"{spec.shared_storage_gb:,} GiB" in warning.message
    assert "pulumi destroy" in warning.message and "rate" in warning.message
    _, plain = stack_spec(stack)
    assert not [f for f in plain.findings if f.key == "sharedStorage" and "single node" in f.message]


@pytest.mark.parametrize("stack", ["tc-large-a100", "bd-large-a100"])  # the 16 KB clouds: under 1 KB free at 3e4f50b
def test_the_preview_reports_at_least_8_kb_of_user_data_headroom(stack, capsys):
    preview = script("preview")
    assert preview.main([stack, "--json"]) == 0
    user_data = json.loads(capsys.readouterr().out)["userData"]
    assert user_data["limit"] == 16384 and user_data["headroom"] == 16384 - user_data["encodedSize"] >= 8192
    assert preview.main([stack]) == 0
    assert f"limit 16,384; {user_data['headroom']:,} free)" in " ".join(capsys.readouterr().out.split())
