"""The bootstrap's CANN path (issue 13), run in the sandbox (localcloud/sandbox.py) with the stand-in
npu-smi: the documented install order (driver, firmware, reboot, toolkit, kernels), torch-npu chosen
for the CANN version found (components/data/torch_npu.yaml), and npu-smi's per-card health.

Expected values come from the node config and the data file under test, never from the stand-ins."""
from __future__ import annotations

import copy

from bootstrap_helpers import load_config

from components import datafiles
from components.bootstrap import render_user_data
from localcloud.sandbox import Sandbox, Scenario


def sandbox(tmp_path, cfg, scenario):
    return Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, scenario)


def ascend_config(**bootstrap) -> dict:
    cfg = copy.deepcopy(load_config("fixture:large-ascend-910b"))
    cfg["bootstrap"].update(bootstrap)
    return cfg


def steps(result) -> dict:
    return {s["name"]: s["result"] for s in result.status["steps"]}


def pip_args(result) -> list[str]:
    return [x for c in result.called("venv-pip") for x in c]


def test_new_firmware_stops_before_the_toolkit_and_says_reboot(tmp_path):
    cfg = ascend_config()
    sb = sandbox(tmp_path, cfg, Scenario(npus=None, npu_needs_reboot=True))
    r = sb.run()
    runs = [c[0].rsplit("/", 1)[-1] for c in r.called("ascend-run-package")]
    packages = cfg["bootstrap"]["ascend"]["packages"]
    assert runs == [packages["driver"], packages["firmware"]], "no toolkit before the reboot"
    assert r.rc == 1 and steps(r)["driver"] == "failed"
    assert "reboot the node and re-run the bootstrap" in r.log


def test_torch_npu_is_the_release_for_the_cann_version_found(tmp_path):
    """An image that ships CANN 8.0.RC2, torch 2.2.0 asked, no torchNpuVersion: the table's 2.2.0.post2."""
    cfg = ascend_config(frameworkVersion="2.2.0")
    del cfg["bootstrap"]["ascend"]["torchNpuVersion"]
    row = next(r for r in datafiles.load("torch_npu.yaml")["releases"] if (r["cann"], r["torch"]) == ("8.0.RC2", "2.2.0"))
    sb = sandbox(tmp_path, cfg, Scenario(npus=8, cann_installed=True, cann_version="8.0.RC2"))
    r = sb.run()
    assert r.rc == 0, r.log
    assert "torch==2.2.0" in pip_args(r) and f"torch-npu=={row['torchNpu']}" in pip_args(r)


def test_a_torch_without_a_torch_npu_release_for_that_cann_is_unhealthy_naming_the_choices(tmp_path):
    cfg = ascend_config(frameworkVersion="2.4.1")
    del cfg["bootstrap"]["ascend"]["torchNpuVersion"]
    sb = sandbox(tmp_path, cfg, Scenario(npus=8, cann_installed=True, cann_version="8.0.RC1"))
    r = sb.run()
    assert r.rc == 1 and steps(r)["framework"] == "failed"
    unhealthy = sb.path(cfg["paths"]["state"] + "/UNHEALTHY").read_text()
    assert "no torch-npu release for torch 2.4.1 on CANN 8.0.RC1" in unhealthy and "(2.2.0 2.1.0)" in unhealthy
    assert not [x for x in pip_args(r) if x.startswith("torch-npu")]


def test_the_toolkit_version_comes_from_the_package_on_a_bare_node(tmp_path):
    """Installed from packages, the version is read back from the toolkit the install wrote."""
    cfg = ascend_config(frameworkVersion="2.1.0")
    cfg["bootstrap"]["ascend"]["packages"]["toolkit"] = "Ascend-cann-toolkit_7.0.0_linux-aarch64.run"
    del cfg["bootstrap"]["ascend"]["torchNpuVersion"]
    r = sandbox(tmp_path, cfg, Scenario(npus=None)).run()
    assert r.rc == 0, r.log
    assert "CANN 7.0.0 in" in r.log and "torch-npu==2.1.0" in pip_args(r)


def test_a_card_npu_smi_reports_unhealthy_stops_the_node(tmp_path):
    cfg = ascend_config()
    health = ("OK", "OK", "Alarm", "OK", "OK", "OK", "OK", "Critical")
    sb = sandbox(tmp_path, cfg, Scenario(npus=8, cann_installed=True, npu_health=health))
    r = sb.run()
    assert r.rc == 1 and steps(r)["health"] == "failed"
    assert "npu-smi health not OK: 2 Alarm,7 Critical" in sb.path(cfg["paths"]["state"] + "/UNHEALTHY").read_text()
    healthy = sandbox(tmp_path / "ok", cfg, Scenario(npus=8, cann_installed=True)).run()
    assert healthy.rc == 0 and steps(healthy)["health"] == "unchanged", healthy.log
