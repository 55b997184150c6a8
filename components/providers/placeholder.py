"""Placeholder resources: what a cloud started from components/providers/_template/ declares until its parts
use the classes of the cloud's Pulumi SDK.

A template part declares each resource the way every cloud so far has needed one (a VPC, a node pool, a
managed cluster...), as `Placeholder("<cloud>:<module>:<Kind>", name, inputs, opts, outputs=...)`: a custom
resource of the cloud's own type token (the form a bridged SDK's tokens take, so components/providers'
`owns()` and the conformance suite see it as the cloud's), with the inputs the neutral program hands it.
The mock engine (tools/mockrun.py: the preview and the tests) records it like any resource and answers
the outputs the cloud's preview.py COMPUTED_OUTPUTS declares, so the new cloud's plan runs end to end
before its SDK is chosen. A real `pulumi up` stops at the first one: the engine finds no resource plugin
named after the cloud, so nothing is created until each placeholder is replaced (docs/providers.md).
"""
from __future__ import annotations

from typing import Any, Mapping

import pulumi


class Placeholder(pulumi.CustomResource):
    """A resource of the cloud's type token; `outputs` are the properties the cloud computes (the engine
    answers them), readable as attributes like the inputs, e.g. `cluster.kubeconfig`."""

    def __init__(self, type_token: str, name: str, inputs: Mapping[str, Any], opts: pulumi.ResourceOptions,
                 outputs: tuple[str, ...] = ()):
        super().__init__(type_token, name, {**inputs, **dict.fromkeys(outputs)}, opts)
