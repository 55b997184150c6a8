"""The platform path (docs/platforms.md): stacks preview on the mock engine, bad input is refused by key, and
the declared job request passes the platform's API data (api.yaml) and keeps the contract."""
from __future__ import annotations

import pytest

from components.validation import SpecError, build_spec
from tools.stackfiles import load_stack_config

HW, DLC = "hw-large-910b-modelarts", "large-a100-dlc"


def _spec(stack, **overrides):
    config = {**load_stack_config(stack), **{f"gpu-training:{k}": v for k, v in overrides.items()}}
    return build_spec(config, stack=stack)


def _errors(stack, **overrides):
    with pytest.raises(SpecError) as caught:
        _spec(stack, **overrides)
    return {f.key: f.message for f in caught.value.errors}


def test_910b_on_ecs_points_to_modelarts():
    config = {**load_stack_config("hw-large-a100"), "gpu-training:gpu": "Ascend-910B"}
    with pytest.raises(SpecError) as caught:
        build_spec(config, stack="hw-large-a100")
    assert "platform: {kind: modelarts}" in caught.value.render()


def test_modelarts_job_request_keeps_the_contract():
    """On the public pool the code comes through algorithm.code_dir and the checkpoints go out through an output
    channel, OBS paths in the /bucket/path form those fields take; spec.volumes is a dedicated pool's only."""
    from components.providers.huaweicloud.modelarts import job

    spec = _spec(HW)
    body = job.request(spec)
    assert job.API.problems("submit", body) == []
    assert body["spec"]["resource"] == {"node_count": 1, "flavor_id": spec.instance.name}
    assert body["spec"]["auto_stop"] == {"time_unit": "HOURS", "duration": 24}
    assert "volumes" not in body["spec"]
    algorithm = body["algorithm"]
    assert algorithm["code_dir"] == "/my-gpu-training/gpu-training/hw-large-910b-modelarts/code/"
    assert "cd \"${MA_JOB_DIR:-/home/ma-user/modelarts/user-job-dir}/code\"" in algorithm["command"]
    [output] = algorithm["outputs"]
    assert output["remote"]["obs"]["obs_url"] == "/my-gpu-training/gpu-training/hw-large-910b-modelarts/platform/checkpoints/"
    env = algorithm["environments"]
    assert env["CKPT_DIR"] == env["RESUME_FROM"] == output["local_dir"]
    assert body["spec"]["log_export_path"]["obs_url"].startswith("obs://my-gpu-training/")


def test_a_modelarts_dedicated_pool_mounts_the_prefix_in_the_documented_form():
    from components.providers.huaweicloud.modelarts import job

    body = job.request(_spec(HW, platform={"kind": "modelarts", "pool": "dedicated", "poolId": "pool-abc"}))
    assert job.API.problems("submit", body) == []
    assert body["spec"]["resource"] == {"node_count": 1, "pool_id": "pool-abc",
                                        "flavor_id": "modelarts.pool.visual.8xlarge"}  # the pool's 8-card flavor
    assert body["spec"]["volumes"] == [{"obs": {"obs_path": "/my-gpu-training/gpu-training/hw-large-910b-modelarts/",
                                                "local_path": "/home/ma-user/gpu-training"}}]


def test_the_modelarts_rules_as_data_refuse_the_old_public_pool_form():
    """api.yaml's rules (with their sources) refuse what the stack sent before: the prefix as a volume on a public
    pool (no pool_id) and an obs:// volume path."""
    from components.providers.huaweicloud.modelarts import job

    body = job.request(_spec(HW))
    body["spec"]["volumes"] = [{"obs": {"obs_path": "obs://my-gpu-training/gpu-training/x/", "local_path": "/m"}}]
    problems = job.API.problems("submit", body)
    assert any(p.startswith("spec.volumes: taken only with spec.resource.pool_id (TFDOC") for p in problems), problems
    assert any(p.startswith("spec.volumes[].obs.obs_path: 'obs://") for p in problems), problems


def test_dlc_job_request_has_spot_limit_and_max_running_time():
    from components.providers.alicloud.dlc import job

    spec = _spec(DLC, billing="spot", spotMaxPricePerHour=150,
                 platform={"kind": "pai-dlc", "workspaceId": "123456", "resourceQuotaId": "quota-1"})
    body = job.request(spec)
    assert job.API.problems("submit", body) == []
    assert body["JobMaxRunningTimeMinutes"] == 24 * 60
    assert body["JobSpecs"][0]["SpotSpec"] == {"SpotStrategy": "SpotWithPriceLimit", "SpotPriceLimit": 2.5}
    assert body["WorkspaceId"] == "123456" and body["ResourceId"] == "quota-1"


def test_the_dlc_data_source_is_an_oss_path_with_the_oss_endpoint():
    """DataSources[].Uri in the form DLC documents (api.yaml's pattern, from the PAI API's DataSourceItem), not
    the S3-compatible host the nodes' agent uses (oss://bucket.s3.oss-<region>-internal...)."""
    from components.providers.alicloud.dlc import job

    body = job.request(_spec(DLC))
    assert body["DataSources"][0]["Uri"] == \
        "oss://my-gpu-training-checkpoints.oss-cn-hangzhou-internal.aliyuncs.com/gpu-training/large-a100-dlc/"
    assert job.API.problems("submit", body) == []
    body["DataSources"][0]["Uri"] = "oss://my-gpu-training.s3.oss-cn-hangzhou-internal.aliyuncs.com/gpu-training/x/"
    assert any(p.startswith("DataSources[].Uri:") for p in job.API.problems("submit", body))


@pytest.mark.parametrize("stack, overrides, key, words", [
    (HW, {"platform": {"kind": "sagemaker"}}, "platform.kind", "allowed: modelarts"),
    (HW, {"billing": "spot"}, "billing", "allowed: on-demand"),
    (HW, {"platform": {"kind": "modelarts", "pool": "shared"}}, "platform.pool", "allowed: public, dedicated"),
    (HW, {"platform": {"kind": "modelarts", "pool": "dedicated"}}, "platform.poolId", "not set"),
    (HW, {"sshAllowCidrs": ["203.0.113.7/32"]}, "sshAllowCidrs", "allowed: []"),
    (HW, {"gpusPerNode": 4}, "gpusPerNode", "allowed: 8"),
    (DLC, {"platform": {"kind": "pai-dlc"}}, "platform.workspaceId", "workspace"),
    (DLC, {"billing": "spot", "spotMaxPricePerHour": 150}, "billing", "AIMaster"),
    (DLC, {"billing": "spot", "platform": {"kind": "pai-dlc", "workspaceId": "1", "resourceQuotaId": "q"}},
     "spotMaxPricePerHour", "SpotWithPriceLimit"),
    (DLC, {"platform": {"kind": "pai-dlc", "workspaceId": "a b"}}, "platform.workspaceId", "not an id"),
])
def test_bad_platform_input_is_refused_by_key(stack, overrides, key, words):
    config = {**load_stack_config(stack)}
    for name, value in overrides.items():
        if value is None:
            config.pop(f"gpu-training:{name}", None)
        else:
            config[f"gpu-training:{name}"] = value
    with pytest.raises(SpecError) as caught:
        build_spec(config, stack=stack)
    errors = {f.key: f.message for f in caught.value.errors}
    assert key in errors and words in errors[key], errors


def test_api_data_refuses_a_malformed_request():
    from components.providers.alicloud.dlc import job

    body = job.request(_spec(DLC, billing="spot", spotMaxPricePerHour=150,
                             platform={"kind": "pai-dlc", "workspaceId": "1", "resourceQuotaId": "q"}))
    body["JobSpecs"][0]["SpotSpec"]["SpotStrategy"] = "SpotAsPriceGo"
    del body["UserCommand"]
    problems = job.API.problems("submit", body)
    assert any(p.startswith("UserCommand: required") for p in problems)
    assert any("SpotAsPriceGo" in p for p in problems)


@pytest.mark.parametrize("stack", [HW, DLC])
def test_platform_stacks_preview_offline(plan_for, stack):
    plan = plan_for(stack)
    jobs = [r for r in plan.resources if "request" in (r.inputs or {})]
    assert len(jobs) == 1


@pytest.mark.parametrize("stack", [HW, DLC])
def test_the_code_the_job_runs_is_uploaded_where_the_contract_mounts_it(plan_for, stack):
    """The job's command does `cd <mount>/code` (components/platforms/training_contract.py): `pulumi up` must put
    train.codeDir there, every file once, through the cloud's own object upload (as the VM path does)."""
    import importlib
    import shlex
    from pathlib import Path

    from components.platforms import training_contract
    from node_agent import layout

    plan = plan_for(stack)
    spec = build_spec(load_stack_config(stack), stack=stack)
    uploaded = {r.inputs["key"]: r.inputs["source"] for r in plan.resources if r.type.endswith("ucketObject")}
    code = training_contract.stack_root(spec) + layout.CODE
    expected = {code + p.relative_to(spec.train.code_dir).as_posix()
                for p in Path(spec.train.code_dir).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert set(uploaded) == expected and expected, sorted(uploaded)
    job = next(r for r in plan.resources if "request" in (r.inputs or {}))
    paths = importlib.import_module(f"{spec.platform.offer.package}.job").paths(spec)
    assert f"cd {shlex.quote(paths.code) if '$' not in paths.code else chr(34) + paths.code + chr(34)} &&" \
        in str(job.inputs["request"]), "the job's command changes into it"
