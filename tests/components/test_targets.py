"""The target as a typed seam (components/targets, tools/runlib/targets.py): the program builds the component of
the stack's target, every target exports one vocabulary with a `target` key, and the tools find the run from
that key alone. A fourth target, a stub, is a module of its own and one registry line: nothing else changes,
and the program, the preview and `status` serve it."""
from __future__ import annotations

import json
import subprocess

import pytest

from components import targets
from components.targets.base import COMMON_KEYS, RUN_STYLES, Target
from components.validation import build_spec
from tools.runlib import targets as run_targets
from tools.stackfiles import load_stack_config

ONE_OF_EACH = {"medium-a100": "vm", "large-a100-k8s": "kubernetes", "hw-large-910b-modelarts": "platform",
               "large-a100-dlc": "platform"}


@pytest.mark.parametrize("stack,kind", sorted(ONE_OF_EACH.items()))
def test_each_stack_exports_the_common_vocabulary_with_its_target(plan_for, stack, kind):
    spec = build_spec(load_stack_config(stack), stack=stack)
    assert targets.of(spec).kind == kind
    outputs = plan_for(stack).outputs
    assert [key for key in COMMON_KEYS if key not in outputs] == []
    assert outputs["target"] == kind and isinstance(outputs["expiresAt"], str) and outputs["instanceType"]
    assert targets.of_outputs(outputs) is targets.get(kind)
    assert outputs["keepsBilling"] == [item.as_dict() for item in targets.get(kind).keeps_billing(spec)]


def test_every_registered_target_meets_the_protocol():
    for kind in targets.names():
        target = targets.get(kind)
        assert isinstance(target, Target) and target.kind == kind and target.run in RUN_STYLES, kind
    assert targets.names()[-1] == "vm", "the default target must be asked last"


def test_the_tools_follow_the_run_by_the_target_output_alone():
    """A Kubernetes stack's outputs once carried `platform: kubernetes`, and status and logs took the platform
    path; now only `target` decides."""
    assert run_targets.for_outputs({"target": "kubernetes", "platform": "kubernetes"}).name == "pods"
    assert run_targets.for_outputs({"target": "platform", "platform": "modelarts"}).name == "job"
    assert run_targets.for_outputs({"target": "vm"}).name == "nodes"
    with pytest.raises(targets.UnknownTarget, match="known: platform, kubernetes, vm"):
        run_targets.for_outputs({"target": "mainframe"})


def test_a_platform_stack_keeps_billing_what_the_platform_keeps_not_the_clouds_vm_facts():
    spec = build_spec(load_stack_config("hw-large-910b-modelarts"), stack="hw-large-910b-modelarts")
    lingering = targets.of(spec).keeps_billing(spec)
    assert [item.what for item in lingering] == ["training code the program uploads",
                                                 "checkpoints and logs the job wrote"]
    assert not any("KMS" in item.what for item in lingering)  # the VM path's disk key: not in this plan


# ------------------------------------------------------------------------- a fourth target, a stub

STUB = '''"""A stub target: what a TKE or a third platform kind would add (test_targets.py)."""
from __future__ import annotations

from components.targets.base import common_outputs, expiry_text


class StubTarget:
    kind = "stub"
    description = "a stub target"
    run = "nodes"
    ending = "the stub ends after maxHours"
    node_endpoints = False
    data_disks = False
    teardown_runs_program = False

    def selects(self, spec) -> bool:
        return spec.tags.get("target") == "stub"

    def component(self, name, spec, opts=None):
        import pulumi

        target = self

        class Stub(pulumi.ComponentResource):
            def __init__(self):
                super().__init__("gpu-training:index:Stub", name, None, opts)
                self.outputs = common_outputs(target, spec, expires_at="2030-01-01T00:00:00Z",
                                              keeps_billing=target.keeps_billing(spec))
                self.register_outputs(self.outputs)

        return Stub()

    def keeps_billing(self, spec) -> list:
        from components import billing

        return [billing.checkpoint_data(spec, "what the stub wrote")]

    def preview_lines(self, spec, outputs) -> list[str]:
        return [f"runs as: the stub until {expiry_text(outputs)}"]


TARGET = StubTarget()
'''
# Runs in the copy: the real program on the mock engine, then `status` on its outputs over an empty local bucket.
PLAN_AND_STATUS = """
import json, sys, tempfile
from tools.mockrun import run_program
from tools.runlib import status
from tools.runlib.bucket import StackBucket
from tools.runlib.localbucket import FolderClient
from tools.stackfiles import apply_overrides, load_stack_config
plan = run_program(apply_overrides(load_stack_config("entry-t4"), ["tags.target=stub"]), "entry-t4")
folder = tempfile.mkdtemp()
bucket = StackBucket(plan.outputs["checkpoint"], "entry-t4", client=FolderClient(folder))
doc = status.gather(bucket, plan.outputs, "entry-t4")
print(json.dumps({"outputs": plan.outputs, "types": sorted({r.type for r in plan.resources}),
                  "state": doc["state"], "target": doc["target"]}))
"""


@pytest.mark.slow
def test_a_fourth_target_touches_only_its_module_and_the_registry(tmp_path):
    from tests.providers.test_contract import in_copy, repository_copy

    root = repository_copy(tmp_path)
    (root / "components" / "targets" / "stub.py").write_text(STUB)
    registry = root / "components" / "targets" / "__init__.py"
    text = registry.read_text()
    assert text.count('REGISTRY: dict[str, str] = {\n') == 1
    registry.write_text(text.replace('REGISTRY: dict[str, str] = {\n',
                                     'REGISTRY: dict[str, str] = {\n    "stub": "components.targets.stub",\n'))

    run = in_copy(root, "-c", PLAN_AND_STATUS)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["outputs"]["target"] == "stub" and result["target"] == "stub"
    assert result["types"] == ["gpu-training:index:Stub"], result["types"]  # its component, no VM parts
    assert result["state"] == "NO_MARKERS"  # the `nodes` run style: status reads its markers
    preview = in_copy(root, "scripts/preview.py", "entry-t4", "--set", "tags.target=stub")
    assert preview.returncode == 0, preview.stderr[-2000:]
    assert "runs as: the stub until 2030-01-01T00:00:00Z" in preview.stdout
    assert "node endpoints" not in preview.stdout  # the stub says its nodes reach no endpoint of ours

    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert sorted(line[3:] for line in changed) == ["components/targets/__init__.py", "components/targets/stub.py"]


def test_the_nodes_get_the_stacks_expiry_as_a_moment(plan_for):
    """One clock (components/clock.py): the user-data of every VM node carries the stack's expiresAt output, the
    moment the cloud releases it, so the agent stops before it whenever the node booted."""
    from components.bootstrap import node_config_in_plan

    plan = plan_for("medium-a100")
    carriers = [r for r in plan.resources if isinstance(r.inputs.get("userData"), str)]
    assert carriers, [r.type for r in plan.resources]
    for resource in carriers:
        agent = node_config_in_plan(resource.inputs["userData"], plan.resources)["agent"]
        assert agent["expiresAt"] == plan.outputs["expiresAt"], agent
