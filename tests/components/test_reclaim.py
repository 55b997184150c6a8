"""A spot reclaim said plainly (components/reclaim.py): per cloud, how the node learns of it, how early, and the
work it can lose; the shorter periodic sync where nothing warns the node; the preview prints it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components import providers, reclaim
from components.nodeconfig import build_node_config
from tools.stackfiles import stack_spec

REPO = Path(__file__).resolve().parents[2]
SPOT_STACKS = {"alicloud": "medium-a100", "tencentcloud": "tc-medium-a100", "huaweicloud": "hw-medium-v100",
               "baiducloud": "bd-large-a100-spot"}


def spot_spec(cloud, *overrides):
    _, spec = stack_spec(SPOT_STACKS[cloud], ("billing=spot", *overrides))
    return spec


@pytest.mark.parametrize("cloud", sorted(SPOT_STACKS))
def test_each_clouds_spot_stack_states_mechanism_lead_and_work_at_risk(cloud):
    section = reclaim.describe(spot_spec(cloud))
    assert section["mechanism"] and section["lead"] and section["source"] and section["workAtRisk"]
    notice = providers.profile(cloud).spot
    assert notice.reclaim_notice == (section["leadSeconds"] != 0), "the rehearsal's drill and the notice agree"
    if section["leadSeconds"] == 0:
        assert "no warning reaches the node" in section["workAtRisk"] and section["graceSeconds"] is None
    else:
        assert "signalled within 0.5 s" in section["workAtRisk"]


def test_huawei_says_its_metadata_notice_and_five_minutes():
    section = reclaim.describe(spot_spec("huaweicloud"))
    assert "/openstack/latest/spot/instance-action" in section["mechanism"] and section["leadSeconds"] == 300
    assert section["graceSeconds"] == 120, "min(maxGraceSeconds 120, 300 s less the 30 s upload allowance)"
    assert "竞享" in section["note"], "spot block ECSs have no lead time, and the preview says so"


def test_baidu_says_no_lead_time_its_bid_mode_and_the_protection_hour():
    market = reclaim.describe(spot_spec("baiducloud"))
    assert market["leadSeconds"] == 0 and "BCC抢占实例释放事件" in market["lead"]
    assert "only for lack of inventory" in market["note"] and "One-hour protection period" in market["note"]
    capped = reclaim.describe(spot_spec("baiducloud", "spotMaxPricePerHour=60"))
    assert "passes the cap" in capped["note"]


def test_a_spot_node_that_nothing_warns_syncs_every_minute():
    """What survives an unannounced reclaim is the last periodic sync: 60 s there, 300 s elsewhere."""
    for cloud in SPOT_STACKS:
        spec = spot_spec(cloud)
        got = build_node_config(spec, shared_fs_address=None)["agent"]["syncIntervalSeconds"]
        assert got == (60 if cloud == "baiducloud" else 300), cloud
        assert reclaim.describe(spec)["syncIntervalSeconds"] == got
    _, on_demand = stack_spec("bd-large-a100", ())
    assert build_node_config(on_demand, shared_fs_address=None)["agent"]["syncIntervalSeconds"] == 300
    assert reclaim.describe(on_demand) is None


def test_the_upload_allowance_is_the_agents_own_default():
    from node_agent import config

    defaults = dict(kv.split("=") for kv in config.NUMBERS.split())
    assert float(defaults["agent.uploadAllowanceSeconds"]) == reclaim.UPLOAD_ALLOWANCE_SECONDS


def test_the_baidu_preview_prints_mechanism_lead_time_and_work_at_risk():
    done = subprocess.run([sys.executable, "scripts/preview.py", "bd-large-a100-spot"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ, "COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "spot reclaim: none reaches the node" in out and "lead time: none on the node" in out
    assert "work at risk: no warning reaches the node" in out and "syncIntervalSeconds 60" in out
    document = json.loads(subprocess.run([sys.executable, "scripts/preview.py", "hw-medium-v100", "--json"],
                                         cwd=REPO, capture_output=True, text=True, timeout=300).stdout)
    assert document["reclaim"]["leadSeconds"] == 300


def test_kubernetes_and_platform_stacks_say_what_the_trainer_sees():
    _, pod = stack_spec("large-a100-k8s", ("billing=spot",))
    assert "from the pod" in reclaim.describe(pod)["mechanism"] and "SIGTERM" in reclaim.describe(pod)["mechanism"]
    _, job = stack_spec("large-a100-dlc", ("billing=spot", "spotMaxPricePerHour=50", "platform.resourceQuotaId=quota-1"))
    section = reclaim.describe(job)
    assert "fails and stops" in section["mechanism"] and "not documented" in section["lead"]
    assert section["leadSeconds"] is None
    assert section["syncIntervalSeconds"] is None, "no agent, no sync in a platform job"
