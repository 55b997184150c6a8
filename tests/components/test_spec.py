"""Stack config validation: every error at once, each naming its key; the guide's rules enforced."""
from __future__ import annotations

import json

import pytest

from components.validation import SpecError, build_spec

BASE = {
    "alicloud:region": "cn-hangzhou",
    "gpu-training:tier": "entry",
    "gpu-training:checkpoint": json.dumps({"bucket": "my-ckpt-bucket"}),
}


def spec_of(catalog=None, **changes):
    config = dict(BASE)
    for key, value in changes.items():
        full = key if ":" in key else f"gpu-training:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value if isinstance(value, str) else json.dumps(value)
    return build_spec(config, stack="t", catalog=catalog)


def errors_of(catalog=None, **changes) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        spec_of(catalog, **changes)
    messages: dict[str, str] = {}
    for finding in caught.value.errors:
        messages[finding.key] = (messages.get(finding.key, "") + " | " + finding.message).strip(" |")
    return messages


BAD_CONFIGS = [
    # (changes, the key that must be named, a fragment the message must contain)
    ({"gpuPerNode": "1"}, "gpu-training:gpuPerNode", "did you mean 'gpusPerNode'"),
    ({"tier": "huge"}, "tier", "allowed: entry, medium, large"),
    ({"provider": "alicloudd"}, "provider", "did you mean 'alicloud'"),
    ({"gpu": "T5"}, "gpu", "did you mean 'T4'"),
    ({"gpu": "H100", "tier": "large"}, "gpu", "no instance type has 8x H100"),
    ({"gpu": "A100-80G"}, "gpu", "does not fit the entry tier"),
    ({"gpusPerNode": 2}, "gpusPerNode", "does not fit the entry tier"),
    ({"nodes": 2}, "nodes", "only allowed in the large tier"),
    ({"nodes": "two"}, "nodes", "is not an integer"),
    ({"tier": "large", "gpu": "L20", "gpusPerNode": 8, "nodes": 2}, "gpu", "does not fit the large tier"),
    ({"billing": "spot", "checkpoint": {"prefix": "x"}}, "checkpoint.bucket", "spot billing needs"),
    ({"billing": "reserved"}, "billing", "allowed: on-demand, spot"),
    ({"sshAllowCidrs": ["0.0.0.0/0"]}, "sshAllowCidrs[0]", "allowWorldSsh"),
    ({"sshAllowCidrs": ["10.0.0.300/32"]}, "sshAllowCidrs[0]", "is not a CIDR"),
    ({"dataDiskCategory": "cloud_efficiency"}, "dataDiskCategory", "only SSD classes"),
    ({"dataDiskCategory": "cloud"}, "dataDiskCategory", "HDD"),
    ({"datasetGb": 200}, "datasetGb", "needs at least 400 GB RAM"),
    ({"instanceType": "ecs.gn6i-c8g1.2xlarg"}, "instanceType", "did you mean 'ecs.gn6i-c8g1.2xlarge'"),
    ({"instanceType": "ecs.gn6i-c24g1.12xlarge"}, "instanceType", "the entry tier allows 1 per node"),
    ({"instanceType": "ecs.gn6i-c24g1.12xlarge", "gpusPerNode": 1}, "instanceType", "has 2 GPUs but gpusPerNode"),
    ({"tier": "medium", "gpu": "A10", "gpusPerNode": 2, "instanceType": "ecs.gn6i-c24g1.12xlarge"},
     "instanceType", "has T4 GPUs but gpu is 'A10'"),
    ({"sharedStorage": "lustre"}, "sharedStorage", "allowed: none, cpfs, nas"),
    ({"tier": "large", "gpu": "H20", "gpusPerNode": 8, "sharedStorageGb": 100}, "sharedStorageGb", "minimum"),
    ({"maxHours": 0}, "maxHours", "out of range"),
    ({"checkpoint": {"bucket": "Bad_Bucket"}}, "checkpoint.bucket", "not a valid bucket name"),
    ({"checkpoint": {"buckt": "x"}}, "checkpoint.buckt", "did you mean 'bucket'"),
    ({"train": {"env": {"AWS_SECRET_ACCESS_KEY": "x"}}}, "train.env.AWS_SECRET_ACCESS_KEY", "credential"),
    ({"train": {"codeDir": "no/such/dir"}}, "train.codeDir", "is not a folder"),
    ({"alicloud:region": None}, "alicloud:region", "pulumi config set alicloud:region"),
    ({"billing": "spot", "spotMaxPricePerHour": -1}, "spotMaxPricePerHour", "greater than 0"),
    ({"billing": "spot", "spotFallback": True}, "spotFallback", "CompensateWithOnDemand"),
    ({"tags": {"gpu-training:stack": "x"}}, "tags.gpu-training:stack", "set by gpu-training itself"),
    ({"bootstrap": {"framework": "jax"}}, "bootstrap.framework", "allowed: pytorch, paddle"),
]


@pytest.mark.parametrize("changes,key,fragment", BAD_CONFIGS, ids=[c[1] + ":" + c[2][:20] for c in BAD_CONFIGS])
def test_bad_config_names_the_key(changes, key, fragment):
    errors = errors_of(**changes)
    assert key in errors, errors
    assert fragment in errors[key]


def test_every_problem_is_reported_at_once():
    errors = errors_of(tier="entry", gpu="T5", nodes=3, sshAllowCidrs=["0.0.0.0/0"], billing="spot",
                       checkpoint={"prefix": "p"})
    assert {"gpu", "nodes", "sshAllowCidrs[0]", "checkpoint.bucket"} <= set(errors)


def test_world_ssh_is_accepted_only_when_asked_for():
    spec = spec_of(sshAllowCidrs=["0.0.0.0/0"], allowWorldSsh=True, sshPublicKey="ssh-ed25519 AAAA x")
    assert spec.ssh_allow_cidrs == ("0.0.0.0/0",)
    assert any(f.level == "warning" and f.key == "sshAllowCidrs[0]" for f in spec.findings)


def test_a_cidr_list_refuses_each_bad_entry_by_its_index_and_keeps_the_good_ones():
    """sshAllowCidrs and kubernetes.apiAllowCidrs read their entries with one helper (components/cidrs.py)."""
    from components import cidrs
    from components.validation.read import Problems, show

    problems = Problems()
    parsed = cidrs.parsed_entries(["10.0.0.300/32", "198.51.100.7", {"a": 1}], "kubernetes.apiAllowCidrs",
                                  "198.51.100.7/32", problems)
    assert [(key, entry, str(network)) for key, entry, network in parsed] == [
        ("kubernetes.apiAllowCidrs[1]", "198.51.100.7", "198.51.100.7/32")]
    assert [(f.level, f.key, f.message) for f in problems.items] == [
        ("error", "kubernetes.apiAllowCidrs[0]", "'10.0.0.300/32' is not a CIDR (e.g. 198.51.100.7/32)"),
        ("error", "kubernetes.apiAllowCidrs[2]", "{'a': 1} is not a CIDR (e.g. 198.51.100.7/32)")]
    cidrs.parsed_entries([{"a": 1}], "sshAllowCidrs", "203.0.113.7/32", problems, show)
    assert problems.items[-1].message == '{"a": 1} is not a CIDR (e.g. 203.0.113.7/32)'
    spec = spec_of(sshAllowCidrs=["203.0.113.7/32", "198.51.100.0/24"], sshPublicKey="ssh-ed25519 AAAA x")
    assert spec.ssh_allow_cidrs == ("203.0.113.7/32", "198.51.100.0/24")
    assert set(errors_of(sshAllowCidrs=["203.0.113.7/32", "nonsense"])) >= {"sshAllowCidrs[1]"}


def test_vcpu_per_gpu_outside_the_guide_is_a_warning_not_an_error():
    spec = spec_of(instanceType="ecs.gn6i-c4g1.xlarge")  # 4 vCPU for one T4
    assert any(f.level == "warning" and "vCPU per GPU" in f.message for f in spec.findings)


def test_medium_and_large_have_a_64_gb_ram_floor():
    # 2x T4 with 186 GiB passes; a hypothetical small-RAM type is caught by the datasetGb rule instead.
    spec = spec_of(tier="medium", gpu="A10", gpusPerNode=2)
    assert spec.instance.memory_gb >= 64


def test_gpu_and_count_resolve_to_a_type_inside_the_guides_ranges():
    spec = spec_of(gpu="T4", gpusPerNode=1)
    assert spec.instance.name == "ecs.gn6i-c8g1.2xlarge"  # 8 vCPU/GPU, 31 GiB: the guide's entry ranges
    assert 8 <= spec.instance.vcpus_per_gpu <= 16


def test_spot_pool_spans_substitute_gpus():
    spec = spec_of(tier="medium", gpu="A100-40G", gpusPerNode=4, billing="spot")
    names = [t.name for t in spec.pool_types]
    assert names[0] == spec.instance.name and len(names) >= 2
    assert all(t.gpu_count == 4 and t.gpu in ("A100-40G", "A100-80G") for t in spec.pool_types)


def test_spot_cap_above_on_demand_is_refused_when_the_price_is_known():
    # Catalog prices are data: a catalog with a known price makes the "never more" rule enforceable.
    import dataclasses

    from components.catalog import Price, load_catalog

    real = load_catalog("alicloud")
    price = Price(10.0, "CNY", "cn-hangzhou", "2026-12-01", "test catalog")
    priced = dataclasses.replace(real, instances=tuple(
        dataclasses.replace(row, price=price) if row.name == "ecs.gn6i-c8g1.2xlarge" else row
        for row in real.instances))
    errors = errors_of(priced, billing="spot", spotMaxPricePerHour=12.5)
    assert "more than the on-demand price" in errors["spotMaxPricePerHour"]


def test_large_tier_defaults_to_the_parallel_file_system():
    spec = spec_of(tier="large", gpu="H20", gpusPerNode=8, nodes=2)
    assert spec.shared_storage == "cpfs"
    assert spec.data_disk.performance_level == "PL3"


def test_small_disk_gets_the_highest_level_it_allows_with_a_note():
    spec = spec_of(tier="large", gpu="H20", gpusPerNode=8, dataDiskGb=500)
    assert spec.data_disk.performance_level == "PL2"
    assert any(f.key == "dataDiskGb" and "PL3 needs at least 1261" in f.message for f in spec.findings)


def test_an_unsized_data_disk_grows_to_hold_the_staged_data_set():
    spec = spec_of(data={"sizeGb": 400})
    need = spec.data.disk_needed_gib()
    assert need > 200 and spec.data_disk.size_gb == need, (need, spec.data_disk)
    notes = [f.message for f in spec.findings if f.key == "dataDiskGb" and f.level == "info"]
    assert any("sized to hold the staged data set (400.0 GB" in n for n in notes), notes


def test_a_data_disk_set_too_small_for_the_data_set_is_an_error_naming_the_need():
    errors = errors_of(data={"sizeGb": 400}, dataDiskGb=300)
    assert "cannot hold the staged data set (400.0 GB" in errors["dataDiskGb"], errors


def test_a_packed_data_set_pins_its_manifest_and_the_wait_in_the_node_config(tmp_path):
    import hashlib

    from components.nodeconfig import build_node_config
    from tools.datapack import example, packer, source

    example.make_folder(tmp_path / "images", classes=2, per_class=4, size=16)
    packer.pack(source.read(tmp_path / "images"), tmp_path / "packed", per_shard=4)
    spec = spec_of(data={"localDir": str(tmp_path / "packed"), "waitMinutes": 90})
    data = build_node_config(spec, shared_fs_address=None)["data"]
    assert data == {"stage": True, "waitMinutes": 90,
                    "manifestSha256": hashlib.sha256((tmp_path / "packed" / "manifest.json").read_bytes()).hexdigest()}
    # Without a wait set, the agent's default holds and nothing is written (user-data bytes).
    assert "waitMinutes" not in build_node_config(spec_of(data={"localDir": str(tmp_path / "packed")}), shared_fs_address=None)["data"]


@pytest.mark.parametrize("wait", [-1, 1e9])
def test_data_wait_minutes_out_of_range_is_refused_by_key(wait):
    assert "must be minutes from 0 to 1440" in errors_of(data={"sizeGb": 1, "waitMinutes": wait})["data.waitMinutes"]


def test_a_data_set_no_disk_can_hold_is_refused_on_the_data_key():
    errors = errors_of(data={"sizeGb": 40000})
    assert "the staged data set needs a 40999 GiB data disk" in errors["data"] and "at most 32768 GiB" in errors["data"]
    assert "dataDiskGb" not in errors, errors
