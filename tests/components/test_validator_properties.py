"""Property tests: generated stack configs either validate, or are refused by key, never anything else.

Hypothesis throws configs at the validator: every key of the schema, unknown and mistyped keys,
values of every JSON type (and their text forms, as the engine passes them), non-finite and huge
numbers, unicode, nested objects, lists where scalars belong, on top of a valid base so that deep
rules are reached too. build_spec takes the volume; the real CLI (scripts/preview.py) a sample;
the stack-file reader takes arbitrary bytes. Exit status 2 must name a key (README, "Errors exit
with status 2, name the dotted key ...").
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import schema
from components.spec import Spec
from components.validation import SpecError, build_spec
from tools.stackfiles import StackFileError, parse_stack_text

REPO = Path(__file__).resolve().parents[2]
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REGION_KEYS = ("alicloud:region", "tencentcloud:region")
BASE = {
    "alicloud:region": "cn-hangzhou",
    "gpu-training:tier": "entry",
    "gpu-training:checkpoint": json.dumps({"bucket": "my-gpu-training-checkpoints"}),
}
# Values a user plausibly means, so that generated configs also pass and reach the deeper rules.
PLAUSIBLE = {
    "provider": ["alicloud", "tencentcloud"], "tier": ["entry", "medium", "large"], "gpu": ["T4", "A10", "A100-80G"],
    "gpusPerNode": [1, 2, 4, 8], "nodes": [1, 2], "billing": ["on-demand", "spot"], "zone": ["cn-hangzhou-h"],
    "spotZones": [["cn-hangzhou-i"]], "dataDiskGb": [20, 200, 1000], "datasetGb": [0, 10, 100],
    "sshAllowCidrs": [["203.0.113.7/32"], ["0.0.0.0/1", "128.0.0.0/1"]], "spotMaxPricePerHour": [1.5, 60],
    "maxHours": [1, 24, 720], "idleMinutes": [0, 30], "sharedStorage": ["none", "nas", "cpfs"],
    "train": [{"command": "python train_cnn.py", "env": {"A": "1"}}], "tags": [{"team": "ml"}],
    "bootstrap": [{"frameworkVersion": "2.4.1"}, {"driverBranch": "550-server"}],
    "checkpoint": [{"bucket": "abc-123", "prefix": "runs/x"}], "sshPublicKey": ["ssh-ed25519 AAAAC3Nza me@host"],
}

scalars = st.one_of(
    st.text(max_size=40), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.sampled_from(["inf", "-inf", "NaN", "1e400", "Infinity", "0", "-1", "1.5", "", " ", "\x00", "\u202e",
                     "0.0.0.0/0", "::/0", "$(id)", "`id`", "a\nb", "x" * 3000]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=8)
as_engine = st.one_of(values, values.map(lambda v: json.dumps(v) if not isinstance(v, str) else v))


@st.composite
def configs(draw):
    config = dict(BASE) if draw(st.integers(0, 9)) < 8 else {}
    names = list(schema.BY_NAME) + ["gpuPerNode", "", "a.b", "\u00e9"]
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        name = draw(st.sampled_from(names))
        if draw(st.integers(0, 9)) == 0:
            key = draw(st.sampled_from(REGION_KEYS + ("gpu-trainng:tier", "other:x")))
        else:
            key = f"{schema.NAMESPACE}:{name}"
        plausible = PLAUSIBLE.get(name)
        if plausible and draw(st.booleans()):
            value = draw(st.sampled_from(plausible))
            value = value if isinstance(value, str) else json.dumps(value)
        else:
            value = draw(as_engine)
        config[key] = value
    return config


def key_roots(config) -> set[str]:
    roots = set(schema.BY_NAME) | set(REGION_KEYS)
    roots |= {str(k) for k in config} | {str(k).partition(":")[2] for k in config}
    return roots


def root(key: str) -> str:
    return re.split(r"[.\[]", key, maxsplit=1)[0] if not key.startswith(schema.NAMESPACE + ":") else key


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_build_spec_accepts_or_refuses_by_key(config):
    try:
        spec = build_spec(config, stack="prop")
    except SpecError as error:
        assert error.errors, error.render()
        roots = key_roots(config)
        for finding in error.errors:
            assert finding.key and finding.message, finding
            assert root(finding.key) in roots, (finding.key, roots)
        return
    assert isinstance(spec, Spec)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=400),
                 st.text(max_size=400).map(lambda t: ("config:\n  " + t).encode("utf-8", "surrogatepass")),
                 st.dictionaries(st.text(max_size=20), values, max_size=5).map(
                     lambda d: ("config: " + json.dumps(d)).encode())))
def test_any_stack_file_bytes_read_or_refused_by_name(data):
    try:
        config = parse_stack_text(data, "Pulumi.prop.yaml")
    except StackFileError as error:
        assert "Pulumi.prop.yaml" in error.render()
        return
    assert isinstance(config, dict) and all(isinstance(k, str) for k in config)


def assignment(pair) -> str:
    name, value = pair
    return f"{name}={value if isinstance(value, str) else json.dumps(value)}"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(sorted(schema.BY_NAME)), values), min_size=1, max_size=3))
def test_the_preview_cli_exits_0_or_2_naming_a_key(pairs):
    sets = [assignment(p) for p in pairs]
    if any("\x00" in s for s in sets):
        sets = [s.replace("\x00", "\\u0000") for s in sets]  # argv cannot carry NUL; the JSON escape can
    argv = [sys.executable, str(REPO / "scripts" / "preview.py"), "entry-t4"]
    for s in sets:
        argv += ["--set", s]
    result = subprocess.run(argv, capture_output=True, text=True, errors="replace", cwd=REPO, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z"})
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    assert result.returncode in (0, 2), (sets, result.returncode, result.stderr[-1000:])
    if result.returncode == 2:
        assert re.search(r"^(  )?error: \S+", result.stderr, re.M), result.stderr[-1000:]
