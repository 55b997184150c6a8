"""The example trainer's device layer (examples/cnn/cnn_device.py): CUDA, an Ascend NPU, or the CPU.

No NPU is here, so the NPU case runs against a stand-in `torch_npu` package that does what the real
one does to torch when imported: rename the PrivateUse1 backend to "npu" (torch.utils.
rename_privateuse1_backend) and register a `torch.npu` device module (torch._register_device_module).
Each case runs in its own interpreter: a backend can be renamed once per process."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FAKE_TORCH_NPU = '''
"""Stand-in for torch_npu: the npu device type and a torch.npu module with N visible cards."""
import os
import types

import torch

torch.utils.rename_privateuse1_backend("npu")
npu = types.ModuleType("torch.npu")
npu.calls = []
npu.is_available = lambda: int(os.environ.get("FAKE_NPUS", "8")) > 0
npu.device_count = lambda: int(os.environ.get("FAKE_NPUS", "8"))
npu.set_device = lambda device: npu.calls.append(str(device))
npu.get_rng_state_all = lambda: ["npu-rng"] * npu.device_count()
npu.set_rng_state_all = lambda states: npu.calls.append(("rng", len(states)))
torch._register_device_module("npu", npu)
'''


def run(tmp_path: Path, code: str, fake_npu: bool = True, npus: int = 8) -> dict:
    if fake_npu:
        (tmp_path / "torch_npu.py").write_text(FAKE_TORCH_NPU)
    script = "import json, torch\nfrom cnn_device import choose, DeviceError\n" + textwrap.dedent(code)
    paths = [str(REPO / "examples" / "cnn")] + ([str(tmp_path)] if fake_npu else [])
    env = {"PYTHONPATH": ":".join(paths), "FAKE_NPUS": str(npus), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_auto_picks_the_npu_with_hccl_and_its_own_rng(tmp_path):
    out = run(tmp_path, """
        a = choose(torch, "auto", 3)
        print(json.dumps({"kind": a.kind, "device": str(a.device), "backend": a.backend, "calls": torch.npu.calls,
                          "rng": a.rng_states()[:1], "nhwc": a.channels_last}))
    """)
    assert out == {"kind": "npu", "device": "npu:3", "backend": "hccl", "calls": ["npu:3"], "rng": ["npu-rng"],
                   "nhwc": False}


def test_a_rank_beyond_the_visible_npus_is_a_usage_error(tmp_path):
    out = run(tmp_path, """
        try:
            choose(torch, "npu", 8)
        except DeviceError as e:
            print(json.dumps({"error": str(e)}))
    """)
    assert "LOCAL_RANK=8" in out["error"] and "8 NPU devices" in out["error"]


@pytest.mark.parametrize("fake_npu,npus", [(False, 0), (True, 0)])
def test_npu_asked_for_but_absent_names_the_option(tmp_path, fake_npu, npus):
    out = run(tmp_path, """
        try:
            choose(torch, "npu", 0)
        except DeviceError as e:
            print(json.dumps({"error": str(e), "auto": choose(torch, "auto", 0).kind}))
    """, fake_npu=fake_npu, npus=npus)
    assert out["error"].startswith("--device npu:") and out["auto"] == "cpu"


def test_the_cpu_keeps_gloo_and_no_scaler(tmp_path):
    out = run(tmp_path, """
        a = choose(torch, "cpu", 0)
        s = a.scaler(torch, enabled=True)
        print(json.dumps({"kind": a.kind, "backend": a.backend, "scaler": s.is_enabled(), "rng": a.rng_states()}))
    """)
    assert out == {"kind": "cpu", "backend": "gloo", "scaler": False, "rng": []}
