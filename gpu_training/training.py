"""TrainingCluster: gpu-training as one Pulumi component with typed arguments, for a Pulumi program of your own.

The arguments go through the same validation as a stack file (components/validation), and the component
builds what the stack program builds (components/targets: VM nodes, a Kubernetes job or a platform
job), bootstrap and self-release included. Export its outputs (`cluster.export()`) under their
own names, and `gpu-training status`, `logs`, `report` and `down` work on the stack as on any other.
"""
from __future__ import annotations

from typing import Optional

import pulumi

from components import program, providers, schema, targets
from components.spec import Finding, Spec, SpecError
from components.validation import build_spec
from gpu_training.args import TrainingArgs, python_key

COMPONENT_TYPE = "gpu-training:index:Training"


class ConfigError(ValueError):
    """TrainingArgs that do not validate: every problem at once, each named by its field."""

    def __init__(self, error: SpecError):
        self.findings: list[Finding] = error.findings
        self.errors: list[Finding] = error.errors
        lines = [f"invalid TrainingArgs ({len(self.errors)} error{'s' if len(self.errors) != 1 else ''}):"]
        lines += [f"  {f.level}: {python_key(f.key)}: {f.message}" for f in self.findings]
        super().__init__("\n".join(lines))


def validate(args: TrainingArgs, *, stack: str, project: str, region: Optional[str] = None) -> Spec:
    """The validated spec of `args` (ConfigError otherwise). The region is the cloud's own config key,
    read from the stack's config unless given."""
    config = args.stack_config()
    provider = args.provider or schema.BY_NAME["provider"].default
    if provider in providers.names():
        key = providers.profile(provider).region_key
        namespace, _, name = key.partition(":")
        region = region if region is not None else pulumi.Config(namespace).get(name)
        if region is not None:
            config[key] = region
    try:
        return build_spec(config, stack=stack, project=project)
    except SpecError as error:
        raise ConfigError(error) from None


class TrainingCluster(pulumi.ComponentResource):
    """GPU training on one of the clouds gpu-training knows, from typed arguments.

        cluster = TrainingCluster("cnn", TrainingArgs(tier="entry", gpu="T4",
                                  checkpoint=Checkpoint(bucket="my-bucket"),
                                  train=Train(command="python train.py", code_dir="trainer")))
        cluster.export()

    Attributes: `spec` (the validated record), `outputs` (the stack outputs the commands read: nodes,
    bucket, expiry, cost, what keeps billing). Raises ConfigError, before any resource is declared, when
    the arguments do not validate.
    """

    spec: Spec
    outputs: dict

    def __init__(self, name: str, args: TrainingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        spec = validate(args, stack=pulumi.get_stack(), project=pulumi.get_project())
        super().__init__(COMPONENT_TYPE, name, None, opts)
        program.log_findings(spec)
        self.spec = spec
        self.outputs = dict(targets.of(spec).component(name, spec, pulumi.ResourceOptions(parent=self)).outputs)
        self.register_outputs(self.outputs)

    def export(self, prefix: str = "") -> None:
        """Export every output under its own name (the names gpu-training's commands read), or prefixed."""
        for key, value in self.outputs.items():
            pulumi.export(prefix + key, value)
