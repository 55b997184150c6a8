"""The stack config keys of the `gpu-training` namespace: type, default, allowed values, description.

This table is the single source of truth: the spec parser reads it, Pulumi.yaml's `config:` block
and the README's reference table are checked against it by the tests.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Iterable, Optional

NAMESPACE = "gpu-training"

DEFAULT_TRAIN_COMMAND = "python train_cnn.py --steps 2000 --ckpt-every 200"
# The example trainer, relative to the project; a project without one gets the copy installed with gpu-training.
DEFAULT_CODE_DIR = "examples/cnn"
# The pip requirements file the nodes install when train.codeDir holds one and train.requirements names none.
DEFAULT_REQUIREMENTS = "requirements.txt"


@dataclass(frozen=True)
class Key:
    name: str
    type: str  # string | integer | number | boolean | array | object (fields also: map, commands)
    default: Any
    description: str
    allowed: Optional[tuple] = None  # fixed choices; provider-dependent choices are checked in spec
    fields: Optional[dict[str, str]] = None  # for objects: field -> type


KEYS: tuple[Key, ...] = (
    Key("provider", "string", "alicloud", "Cloud provider (a name in components/providers)."),
    Key("tier", "string", "entry", "Scenario of the selection guide.", ("entry", "medium", "large")),
    Key("gpu", "string", None, "Accelerator model (components/data/gpus.yaml); default: the tier's first."),
    Key("gpusPerNode", "integer", None, "Accelerators per node; default: the tier's first count."),
    Key("nodes", "integer", 1, "Number of nodes; more than one only in the large tier."),
    Key("instanceType", "string", None, "Instance type override, validated against the provider catalog."),
    Key("billing", "string", "on-demand", "Billing model.", ("on-demand", "spot")),
    Key("spotMaxPricePerHour", "number", None,
        "Spot price cap per node-hour in the catalog currency; default: the on-demand price (never more)."),
    Key("spotFallback", "boolean", False, "Let pay-as-you-go fill the capacity that spot cannot."),
    Key("spotZones", "array", [], "Extra zones the spot pool may use besides `zone`; each must be a declared zone of the region."),
    Key("zone", "string", None, "Availability zone, one the provider declares for the region; default: the first zone that offers the instance type."),
    Key("dataDiskGb", "integer", None, "Data disk size in GiB, within the provider's range for the disk category; default: the tier's default, or larger to hold the staged data set (data)."),
    Key("dataDiskCategory", "string", None, "Provider disk category override (SSD classes only)."),
    Key("datasetGb", "integer", None, "Training data size in GB (0 or more), for the RAM rule (RAM >= 2x data)."),
    Key("sharedStorage", "string", None,
        "Shared file system: none, or a kind the provider offers (alicloud: cpfs, nas; tencentcloud: cfsturbo); default: the tier's."),
    Key("sharedStorageGb", "integer", None, "Shared file system capacity in GiB; default: the provider minimum."),
    Key("sshAllowCidrs", "array", [], "CIDRs allowed to reach SSH; empty means no SSH ingress at all."),
    Key("allowWorldSsh", "boolean", False, "Must be true to accept 0.0.0.0/0, ::/0, or CIDRs that together cover either, in sshAllowCidrs."),
    Key("sshPublicKey", "string", None, "OpenSSH public key installed on the nodes."),
    Key("publicEgress", "boolean", True,
        "Nodes get an outbound-only public address billed by traffic (no inbound from outside: the security"
        " group admits none); false: in-VPC endpoints only, refused if a node would lose an endpoint it needs."),
    Key("image", "string", None, "Image id of the stack's cloud (Alibaba m-... or <os>_..._alibase_<date>.vhd,"
        " Tencent img-..., Huawei a UUID, Baidu m-...; the preview refuses a name such as ubuntu); default: the"
        " provider's Ubuntu 22.04 public image."),
    Key("maxHours", "integer", 24, "Hard time to live: the cloud releases the nodes this many hours after they were created (a time kept in state, docs/day2.md)."),
    Key("idleMinutes", "integer", 30, "GPU idle this long means a hung job: save, mark FAILED, release (0 = off; at most 43200)."),
    Key("keep", "boolean", False, "Keep the nodes after training ends (no self-release)."),
    Key("checkpoint", "object", {"prefix": "gpu-training"},
        "Object storage for checkpoints, markers and reports.",
        fields={"bucket": "string", "prefix": "string", "endpoint": "string", "create": "boolean", "region": "string"}),
    Key("train", "object", {"command": DEFAULT_TRAIN_COMMAND, "env": {}, "codeDir": DEFAULT_CODE_DIR},
        "The training job: command, env, the local code folder shipped to the nodes, and what the nodes install"
        " before training (setup: shell commands; requirements: a pip requirements file in codeDir, default"
        f" {DEFAULT_REQUIREMENTS} when there is one; docs/training-contract.md).",
        fields={"command": "string", "env": "map", "codeDir": "string", "launcher": "string",
                "setup": "commands", "requirements": "string"}),
    Key("data", "object", {},
        "The packed data set the nodes stage onto their disk before training (scripts/pack.py, docs/data.md).",
        fields={"localDir": "string", "sizeGb": "number", "waitMinutes": "number"}),
    Key("bootstrap", "object", {},
        "Node software: driverBranch, cudaToolkit, framework (pytorch|paddle), frameworkVersion, frameworkIndexUrl"
        " (paddle: the PaddlePaddle wheel index of cudaToolkit by default), ascendPackagesUrl.",
        fields={"driverBranch": "string", "cudaToolkit": "string", "framework": "string",
                "frameworkVersion": "string", "frameworkIndexUrl": "string", "ascendPackagesUrl": "string"}),
    Key("tags", "object", {}, "Extra tags put on every resource that takes tags.", fields={"*": "string"}),
    Key("platform", "object", None,
        "Submit the training as a job to a managed training platform instead of VMs (docs/platforms.md):"
        " kind modelarts (Huawei, Ascend 910B) or pai-dlc (Alibaba, GPU); absent: VM nodes.",
        fields={"kind": "string", "image": "string", "pool": "string", "poolId": "string",
                "workspaceId": "string", "resourceQuotaId": "string"}),
    Key("failover", "object", {},
        "Where `gpu-training up` tries next when the cloud answers that the type is sold out (or a quota is"
        " reached) where it was asked (docs/capacity.md): zones of the region, instance types with the same"
        " GPU and count, and regions (a region change needs --allow-region-change or a yes), each in order.",
        fields={"zones": "array", "instanceTypes": "array", "regions": "array"}),
    Key("kubernetes", "object", None,
        "Run on a managed Kubernetes cluster instead of VMs (docs/kubernetes.md); absent: VM nodes.",
        fields={"version": "string", "apiAllowCidrs": "array", "systemNodes": "integer",
                "systemInstanceType": "string", "image": "string", "gpuOperator": "boolean",
                "namespace": "string", "startDeadlineMinutes": "integer"}),
)

BY_NAME = {key.name: key for key in KEYS}


class UnknownStackKey(ValueError):
    """A refusal table names a stack key, or a value, that no stack can set: the refusal would never apply."""


def check_refusals(owner: str, declared: Iterable[str]) -> None:
    """Raise UnknownStackKey, naming `owner` (whose table it is), when an entry of `declared` can never apply."""
    problems = unknown_refusals(declared)
    if problems:
        raise UnknownStackKey(f"{owner} refuses what no stack can set, so the refusal would never apply:"
                              f" {'; '.join(problems)}")


def unknown_refusals(declared: Iterable[str]) -> list[str]:
    """What is wrong with the entries of a refusal table (a profile's or a platform's `unsupported`):
    each is "key", refusing the key whatever its value, or "key=value", refusing that value as validation
    spells it (booleans as true/false). An entry that names no key of KEYS, or a value the key can never
    take, would refuse nothing: one line per such entry, empty when every entry can apply."""
    problems = []
    for entry in declared:
        name, has_value, value = entry.partition("=")
        key = BY_NAME.get(name)
        if key is None:
            close = difflib.get_close_matches(name, list(BY_NAME), n=1)
            problems.append(f"{entry!r}: {name!r} is not a stack key" + (f" (did you mean {close[0]!r}?)" if close
                                                                           else " (components/schema.py KEYS)"))
        elif has_value and _never_matches(key, value):
            problems.append(f"{entry!r}: {name} ({key.type}) never takes {value!r}"
                            + (f"; allowed: {', '.join(map(str, key.allowed))}" if key.allowed else ""))
    return problems


def _never_matches(key: Key, value: str) -> bool:
    """Whether a "key=value" refusal can never match a stack's value (compared as its text): a value outside
    the key's choices or its type, or any value of an array or object key (refuse such a key whole)."""
    if key.allowed is not None:
        return value not in key.allowed
    if key.type == "boolean":
        return value not in ("true", "false")
    if key.type in ("integer", "number"):
        try:
            (int if key.type == "integer" else float)(value)
        except ValueError:
            return True
        return False
    return key.type in ("array", "object") or not value


# Bootstrap defaults: a driver branch with a fabric manager package for NVSwitch machines, and the
# CUDA toolkit/PyTorch pair PyTorch publishes wheels for.
BOOTSTRAP_DEFAULTS = {
    "driverBranch": "550",
    "cudaToolkit": "12-4",
    "framework": "pytorch",
    "frameworkVersion": "2.4.1",
    "frameworkIndexUrl": "",
    "ascendPackagesUrl": "",
}
