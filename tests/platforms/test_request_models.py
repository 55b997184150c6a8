"""Every job request the program sends, built into the cloud SDK's own request model: huaweicloudsdkmodelarts'
CreateTrainingJobRequest(Job) and alibabacloud_pai_dlc20201203's CreateJobRequest (requirements-dev.txt, pinned to
the versions api.yaml cites). A field the model does not have, or a value of another type than the model's
(a float where it types int: what Pulumi hands a dynamic provider), is named with its path.

The bodies are those JobProvider sends (api.yaml `integers` applied, a name per submit) for the shipped stacks
and their variants: a dedicated ModelArts pool, a staged data set, torchrun, DLC spot on a quota.
"""
from __future__ import annotations

import importlib
import inspect
import re

import pytest

from components.validation import build_spec
from tools.stackfiles import load_stack_config

HW, DLC = "hw-large-910b-modelarts", "large-a100-dlc"
TORCHRUN = {"command": "python train_cnn.py --steps 10", "launcher": "torchrun"}
DATA = {"sizeGb": 2}
VARIANTS = [
    (HW, {}), (HW, {"train": TORCHRUN, "data": DATA}), (HW, {"nodes": 2, "train": TORCHRUN}),
    (HW, {"platform": {"kind": "modelarts", "pool": "dedicated", "poolId": "pool-1", "workspaceId": "ws-1"}}),
    (DLC, {}), (DLC, {"train": TORCHRUN, "data": DATA}),
    (DLC, {"billing": "spot", "spotMaxPricePerHour": 150,
           "platform": {"kind": "pai-dlc", "workspaceId": "123456", "resourceQuotaId": "quota-1"}}),
]


def sent_body(stack: str, overrides: dict) -> tuple[object, dict]:
    config = {**load_stack_config(stack), **{f"gpu-training:{k}": v for k, v in overrides.items()}}
    spec = build_spec(config, stack=stack)
    job = importlib.import_module(f"{spec.platform.offer.package}.job")
    # As JobProvider.create sends it, after Pulumi turned every number into a float.
    declared = _floats(job.request(spec))
    return job, job.API.named(job.API.wire("submit", declared), "0a1b2c3d")


def _floats(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- ModelArts: openapi_types / attribute_map

def huawei_model(cls, data: dict, path: str = ""):
    """An instance of the SDK model class `cls` from the JSON `data`, every key and type checked."""
    import huaweicloudsdkmodelarts.v1.model as models

    by_json = {json_key: attr for attr, json_key in cls.attribute_map.items()}
    kwargs = {}
    for key, value in data.items():
        assert key in by_json, f"{path}{key}: not a field of {cls.__name__} (fields: {', '.join(sorted(by_json))})"
        attr = by_json[key]
        kwargs[attr] = _huawei_value(cls.openapi_types[attr], value, f"{path}{key}", models)
    return cls(**kwargs)


def _huawei_value(kind: str, value, path: str, models):
    scalar = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if kind in scalar:
        ok = isinstance(value, scalar[kind]) and not (kind == "int" and isinstance(value, bool))
        assert ok, f"{path}: {value!r} is not {kind}"
        return value
    if kind.startswith("list["):
        assert isinstance(value, list), f"{path}: {value!r} is not a list"
        return [_huawei_value(kind[5:-1], v, f"{path}.{i}", models) for i, v in enumerate(value)]
    if kind.startswith("dict("):
        inner = kind[5:-1].split(", ", 1)[1]
        assert isinstance(value, dict), f"{path}: {value!r} is not a dict"
        return {k: _huawei_value(inner, v, f"{path}.{k}", models) for k, v in value.items()}
    assert isinstance(value, dict), f"{path}: {value!r} is not a {kind} object"
    return huawei_model(getattr(models, kind), value, f"{path}.")


# ---------------------------------------------------------------- PAI-DLC: __init__ annotations / to_map

def dlc_check(model, data: dict, path: str = "") -> None:
    """Every key of `data` is a field of the Tea model (its __init__ parameter, the key in snake case, which
    from_map filled) of the type the parameter is annotated with; nested models likewise."""
    from darabonba.model import DaraModel

    hints = {name: p.annotation for name, p in inspect.signature(type(model).__init__).parameters.items()
             if name != "self"}
    for key, value in data.items():
        attr, where = _snake(key), f"{path}{key}"
        assert attr in hints, f"{where}: not a field of {type(model).__name__}"
        hint, built = hints[attr], getattr(model, attr)
        if isinstance(built, DaraModel):
            dlc_check(built, value, where + ".")
        elif isinstance(built, list):
            assert hint.startswith("List["), f"{where}: a list where the model has {hint}"
            for i, item in enumerate(built):
                if isinstance(item, DaraModel):
                    dlc_check(item, value[i], f"{where}.{i}.")
        elif hint.startswith("Dict[str, str]"):
            assert isinstance(value, dict) and all(isinstance(v, str) for v in value.values()), f"{where}: {value!r}"
        else:
            kind = {"int": int, "str": str, "bool": bool, "float": (int, float)}[hint]
            ok = isinstance(value, kind) and not (hint == "int" and isinstance(value, bool))
            assert ok, f"{where}: {value!r} is not {hint}"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize("stack,overrides", VARIANTS, ids=[f"{s}-{i}" for i, (s, _) in enumerate(VARIANTS)])
def test_the_request_builds_the_sdks_own_request_model(stack, overrides):
    job, body = sent_body(stack, overrides)
    assert job.API.problems("submit", body) == []
    if stack == HW:
        from huaweicloudsdkmodelarts.v1.model.create_training_job_request import CreateTrainingJobRequest
        from huaweicloudsdkmodelarts.v1.model.job import Job

        request = CreateTrainingJobRequest(body=huawei_model(Job, body))
        assert request.body.spec.resource.node_count == body["spec"]["resource"]["node_count"]
    else:
        from alibabacloud_pai_dlc20201203.models import CreateJobRequest

        dlc_check(CreateJobRequest().from_map(body), body)


def test_a_float_where_the_model_types_int_is_named():
    """The check itself: the body Pulumi hands over, without the provider's integers, is refused by each model."""
    from alibabacloud_pai_dlc20201203.models import CreateJobRequest
    from huaweicloudsdkmodelarts.v1.model.job import Job

    job, _ = sent_body(HW, {})
    with pytest.raises(AssertionError, match="node_count: 1.0 is not int"):
        huawei_model(Job, _floats(job.request(build_spec(load_stack_config(HW), stack=HW))))
    dlc, _ = sent_body(DLC, {})
    raw = _floats(dlc.request(build_spec(load_stack_config(DLC), stack=DLC)))
    with pytest.raises(AssertionError, match="is not int"):
        dlc_check(CreateJobRequest().from_map(raw), raw)
    sent = dlc.API.wire("submit", raw)
    with pytest.raises(AssertionError, match="Volumes: not a field of CreateJobRequest"):
        dlc_check(CreateJobRequest().from_map({**sent, "Volumes": []}), {**sent, "Volumes": []})
