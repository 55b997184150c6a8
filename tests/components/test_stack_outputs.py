"""Both node paths export the same stack outputs, from one builder (components/stack_outputs.py).

scripts/run.py and tools/runlib read these keys from a VM stack and from a Kubernetes stack alike; the
real program runs on the mock engine for one of each, so a path that drops or renames a key fails here.
"""
from __future__ import annotations

from components import billing, cost, targets
from components.validation import build_spec
from components.stack_outputs import NODE_KEYS
from tools.stackfiles import load_stack_config

VM_STACK, KUBERNETES_STACK = "medium-a100", "large-a100-k8s"
# What the Kubernetes path exports on top of the shared keys (components/kubernetes/training.py).
KUBERNETES_KEYS = {"clusterId", "gpuPoolId", "kubeconfig", "apiServerAccess", "job", "restartAgent"}


def test_the_vm_path_exports_exactly_the_shared_keys(plan_for):
    assert sorted(plan_for(VM_STACK).outputs) == sorted(NODE_KEYS)


def test_the_kubernetes_path_exports_the_shared_keys_and_its_own(plan_for):
    outputs = plan_for(KUBERNETES_STACK).outputs
    assert [key for key in NODE_KEYS if key not in outputs] == []
    assert set(outputs) - set(NODE_KEYS) == KUBERNETES_KEYS
    assert outputs["poolId"] == outputs["gpuPoolId"] and outputs["instanceIds"] == [] and outputs["sshCommand"] is None


def test_the_shared_keys_say_the_same_of_the_spec_on_both_paths(plan_for):
    for stack in (VM_STACK, KUBERNETES_STACK):
        spec = build_spec(load_stack_config(stack), stack=stack, project="gpu-training")
        outputs = plan_for(stack).outputs
        assert outputs["costPerHour"] == cost.cost_output(spec, targets.of(spec).data_disks)
        assert outputs["keepsBilling"] == billing.as_output(spec) and outputs["target"] == targets.of(spec).kind
        assert (outputs["stack"], outputs["provider"], outputs["instanceType"], outputs["nodeCount"]) == \
            (stack, spec.provider, spec.instance.name, spec.nodes)
