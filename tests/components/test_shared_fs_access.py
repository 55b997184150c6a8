"""Shared file systems end to end (issue 10, item 2): the access path the nodes can use, wired from the
plan to the mount, in a zone that sells both the GPU type and the file system.

- CPFS: a protocol service and an NFS export (not a POSIX mount target, which needs the CPFS POSIX
  client and bills three quorum ECS instances); the export's domain is read with
  DescribeProtocolMountTarget (against a local stand-in of the NAS API here) and is what the node's
  bootstrap mounts with the kernel's NFSv3 client (the CPFS-NFS client does not list Ubuntu 22.04).
- Zones: the program intersects the zones selling the instance type with those selling CPFS
  (nas.get_zones) or CFS Turbo (cfs.get_available_zone) and stops with a clear message when none does.
- CFS Turbo High-Performance: 10,240 GiB minimum, steps of 10,240 (CFS API CreateCfsFileSystem).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from components.bootstrap import node_config_in_plan
from tests.localcloud.http_standin import RecordingStandIn
from tools.stackfiles import apply_overrides, load_stack_config, stack_spec  # noqa: F401  (the child process star-imports them)

REPO = Path(__file__).resolve().parents[2]
DOMAIN = "cpfs-0a1b2c3d4e5f6a7b-000001.cn-beijing.cpfs.aliyuncs.com"


class NasApi(RecordingStandIn):
    """A local stand-in of the NAS API: answers DescribeProtocolMountTarget with `domain` (none when empty)."""

    def __init__(self, domain: str = DOMAIN):
        super().__init__()
        self.domain = domain

    @staticmethod
    def parameters(request: dict) -> dict:
        """A recorded request's parameters (query and form body), its action, and whether an ACS3 key signed it."""
        query = {k: v[0] for k, v in {**parse_qs(urlsplit(request["path"]).query), **parse_qs(request["body"])}.items()}
        query["action"] = request["headers"].get("x-acs-action")
        query["signed"] = request["headers"].get("authorization", "").startswith("ACS3-HMAC-SHA256 Credential=AK")
        return query

    def respond(self, method: str, path: str, headers: dict, body: str) -> tuple[int, str, bytes]:
        export = self.parameters({"path": path, "body": body, "headers": headers}).get("Filters.1.Value")
        targets = [{"ExportId": export, "ProtocolMountTargetDomain": self.domain, "ProtocolType": "NFS"}] \
            if self.domain else []
        return 200, "application/json", json.dumps({"RequestId": "r-1", "ProtocolMountTargets": targets}).encode()


@pytest.fixture
def nas_api():
    with NasApi() as api:
        yield api


def failing_program(stack: str, overrides=(), answers: str = "None", preview: bool = True) -> str:
    """Run the program where it is expected to fail, in a child process; the error text it stops with.

    In-process, a program that fails mid-way leaves the Pulumi runtime's threads busy, and CPython 3.11's
    AST converter (used by the next run's user-data) is not thread-safe (gh-106905): hence the child.
    """
    code = ("from test_shared_fs_access import *\n"
            "from tools.mockrun import run_program\n"
            f"config = apply_overrides(load_stack_config({stack!r}), {tuple(overrides)!r})\n"
            "try:\n"
            f"    run_program(config, {stack!r}, call_answers={answers}, preview={preview!r})\n"
            "except Exception as error:\n"
            "    print('FAILED:', str(error).split('has risen:')[-1].strip())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z",
                                 "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "components"), os.environ["PYTHONPATH"]])})
    assert "FAILED:" in result.stdout, result.stdout + result.stderr
    return result.stdout.split("FAILED:", 1)[1].strip()




def test_cpfs_gets_a_protocol_service_and_an_nfs_export_not_a_posix_mount_target(plan_for):
    plan = plan_for("large-h20")
    (fs,) = plan.of_type("alicloud:nas/fileSystem:FileSystem")
    (service,) = plan.of_type("alicloud:nas/protocolService:ProtocolService")
    (export,) = plan.of_type("alicloud:nas/protocolMountTarget:ProtocolMountTarget")
    (vpc,) = plan.of_type("alicloud:vpc/network:Network")
    assert not plan.of_type("alicloud:nas/mountTarget:MountTarget")
    assert service.inputs["fileSystemId"] == f"{fs.name}-id" and service.inputs["protocolType"] == "NFS"
    assert service.inputs["protocolSpec"] == "General" and service.inputs["vpcId"] == f"{vpc.name}-id"
    assert export.inputs["protocolServiceId"] == f"<protocol service id of {service.name}>"
    assert export.inputs["fileSystemId"] == f"{fs.name}-id" and export.inputs["path"] == "/"


def test_the_export_domain_read_at_deploy_time_is_what_every_node_mounts(monkeypatch, nas_api):
    from tools.mockrun import run_program

    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "AK")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "SK")
    monkeypatch.setenv("GPU_TRAINING_NAS_ENDPOINT", nas_api.url)
    plan = run_program(load_stack_config("large-h20"), "large-h20", preview=False)
    assert plan.outputs["sharedFsAddress"] == DOMAIN
    (request,) = [NasApi.parameters(r) for r in nas_api.requests]
    assert request["action"] == "DescribeProtocolMountTarget" and request["signed"]
    assert request["FileSystemId"] == "large-h20-cpfs-id" and request["Filters.1.Key"] == "ExportIds"
    assert request["Filters.1.Value"] == "<export id of large-h20-cpfs-export>"
    nodes = plan.of_type("alicloud:ecs/instance:Instance")
    assert len(nodes) == 2
    for node in nodes:
        assert node_config_in_plan(node.inputs["userData"], plan.resources)["bootstrap"]["sharedFs"] == {"type": "cpfs", "address": DOMAIN, "mountOptions": None}


def test_deploying_cpfs_without_credentials_stops_with_what_to_set(monkeypatch):
    for name in ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_ID",
                 "ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    assert "set ALICLOUD_ACCESS_KEY and ALICLOUD_SECRET_KEY" in failing_program("large-h20", preview=False)


def test_an_export_the_api_does_not_know_is_a_clear_error():
    from components.providers.alicloud.cpfs_export import ExportLookupError, export_domain

    with NasApi(domain="") as api, pytest.raises(ExportLookupError, match="no domain for export exp-1 of cpfs-1"):
        export_domain("cn-beijing", "cpfs-1", "exp-1", {"access_key_id": "AK", "access_key_secret": "SK"}, api.url)


def test_the_offline_preview_never_sees_credentials(monkeypatch):
    from tools.mockrun import run_program

    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "AK")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "SK")
    monkeypatch.setenv("GPU_TRAINING_NAS_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: a call would fail
    plan = run_program(load_stack_config("large-h20"), "large-h20")
    assert plan.outputs["sharedFsAddress"] == "<cpfs-export-domain>"
    import os
    assert os.environ["ALICLOUD_ACCESS_KEY"] == "AK"  # given back afterwards


def test_the_bootstrap_mounts_the_export_with_the_kernel_nfs_v3_client_and_downloads_nothing(tmp_path):
    from components.bootstrap.render import render_user_data
    from localcloud.sandbox import Sandbox, Scenario
    from components.nodeconfig import build_node_config

    _, spec = stack_spec("large-h20")
    config = build_node_config(spec, shared_fs_address=DOMAIN)
    sandbox = Sandbox(tmp_path, render_user_data(config), config, Scenario(gpus=8))
    result = sandbox.run()
    assert result.rc == 0, result.log
    assert "nfs-common" in result.installs()
    (mount,) = [c for c in result.called("mount") if "nfs" in c]
    assert mount[:2] == ["-t", "nfs"] and mount[3].startswith("vers=3,") and mount[4] == f"{DOMAIN}:/share"
    assert not [c for c in result.called("curl") if "alinas" in " ".join(c)]
    assert f"{DOMAIN}:/share /shared nfs vers=3," in sandbox.path("/etc/fstab").read_text()


# --- zones ----------------------------------------------------------------------------------------
def zone_answers(instance_zones, cpfs_zones):
    return {
        "alicloud:index/getZones:getZones": lambda args: {"ids": instance_zones,
                                                          "zones": [{"id": z, "localName": z} for z in instance_zones]},
        "alicloud:nas/getZones:getZones": lambda args: {"zones": [
            {"zoneId": z, "instanceTypes": [{"storageType": "advance_100", "protocolType": "cpfs"}]} for z in cpfs_zones]},
    }


def test_the_stack_lands_in_a_zone_that_sells_both_the_gpu_type_and_cpfs():
    from tools.mockrun import run_program

    plan = run_program(load_stack_config("large-h20"), "large-h20",
                       call_answers=zone_answers(["cn-beijing-a", "cn-beijing-l"], ["cn-beijing-h", "cn-beijing-l"]))
    (switch,) = plan.of_type("alicloud:vpc/switch:Switch")
    (fs,) = plan.of_type("alicloud:nas/fileSystem:FileSystem")
    assert switch.inputs["zoneId"] == fs.inputs["zoneId"] == "cn-beijing-l"


def test_no_zone_selling_both_stops_the_program_naming_both_lists():
    error = failing_program("large-h20", answers="zone_answers(['cn-beijing-a'], ['cn-beijing-h'])")
    assert error.startswith("no zone in cn-beijing sells both ecs.gn8v-8x.16xlarge (zones: cn-beijing-a) and CPFS"
                            " (advance_100) (zones: cn-beijing-h)"), error


def test_a_chosen_zone_without_cpfs_is_refused():
    error = failing_program("large-h20", ("zone=cn-beijing-c",), "zone_answers(['cn-beijing-c'], ['cn-beijing-h'])")
    assert error.startswith("zone cn-beijing-c sells no CPFS"), error


def turbo_answers(instance_zones, turbo_zones, listed=True):
    rows = [{"availabilityZone": z, "instanceType": "GT4.41XLARGE948", "family": "GT4", "status": "SELL"}
            for z in instance_zones]
    kinds = lambda z: ([{"type": "TP", "prepayment": False, "protocols": [  # noqa: E731
        {"protocol": "TURBO", "saleStatus": "saling" if z in turbo_zones else "sale_out"}]}] if listed else
        [{"type": "SD", "prepayment": True, "protocols": [{"protocol": "NFS", "saleStatus": "saling"}]}])
    zones = sorted(set(instance_zones) | set(turbo_zones))
    return {
        "tencentcloud:Instance/getTypes:getTypes": lambda args: {"instanceTypes": rows},
        "tencentcloud:Cfs/getAvailableZone:getAvailableZone": lambda args: {"regionZones": [{
            "region": "ap-guangzhou", "regionName": "gz", "regionCnName": "gz", "regionStatus": "AVAILABLE",
            "zones": [{"zone": z, "zoneId": 1, "zoneName": z, "zoneCnName": z, "types": kinds(z)} for z in zones]}]},
    }


def test_tencent_turbo_zone_is_intersected_with_the_gpu_type_zones():
    from tools.mockrun import run_program

    plan = run_program(load_stack_config("tc-large-a100"), "tc-large-a100",
                       call_answers=turbo_answers(["ap-guangzhou-3", "ap-guangzhou-6"], ["ap-guangzhou-6"]))
    (fs,) = plan.of_type("tencentcloud:Cfs/fileSystem:FileSystem")
    assert fs.inputs["availabilityZone"] == "ap-guangzhou-6"
    error = failing_program("tc-large-a100", answers="turbo_answers(['ap-guangzhou-3'], ['ap-guangzhou-6'])")
    assert "sells both GT4.41XLARGE948" in error, error


def test_tencent_says_so_when_the_api_lists_no_turbo_class():
    from tools.mockrun import run_program

    plan = run_program(load_stack_config("tc-large-a100"), "tc-large-a100",
                       call_answers=turbo_answers(["ap-guangzhou-3"], [], listed=False))
    (fs,) = plan.of_type("tencentcloud:Cfs/fileSystem:FileSystem")
    assert fs.inputs["availabilityZone"] == "ap-guangzhou-3"


@pytest.mark.parametrize("gb,ok", [(10240, True), (20480, True), (30720, True), (5120, False), (15360, False)])
def test_cfs_turbo_high_performance_sizes_follow_the_create_api(gb, ok):
    from components.spec import SpecError

    if ok:
        _, spec = stack_spec("tc-large-a100", (f"sharedStorageGb={gb}",))
        assert spec.shared_storage_gb == gb
    else:
        with pytest.raises(SpecError, match="sharedStorageGb"):
            stack_spec("tc-large-a100", (f"sharedStorageGb={gb}",))


def test_offline_the_documented_cpfs_regions_and_the_china_site_rule_are_said():
    _, spec = stack_spec("large-h20", ("alicloud:region=eu-central-1",))
    said = [f.message for f in spec.findings if f.key == "sharedStorage" and f.level == "warning"]
    assert any("eu-central-1: not among the regions" in m for m in said), said
    _, spec = stack_spec("large-h20")
    said = [f.message for f in spec.findings if f.key == "sharedStorage" and f.level == "warning"]
    assert any("China site" in m for m in said) and not any("not among" in m for m in said)
