"""Run the real Pulumi program (__main__.py) under Pulumi's mock engine and record the plan.

No CLI, no credentials, no network: the mock monitor receives every resource registration (type,
name, parent, the inputs the engine would send to the provider) and answers the few data-source
calls the program makes (zones, images, prices) with placeholders that say where the real value
comes from. Used by scripts/preview.py and by the tests.
"""
from __future__ import annotations

import contextlib
import io
import os
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.rpc_manager import RPCManager
from pulumi.runtime.sync_await import _sync_await

from components import providers
from components.stackfiles import engine_form

REPO_ROOT = Path(__file__).resolve().parent.parent
PROGRAM = REPO_ROOT / "__main__.py"
CREDENTIAL_PREFIXES = ("ALICLOUD_", "ALIBABA_CLOUD_", "TENCENTCLOUD_", "AWS_")
CREDENTIAL_WORDS = ("KEY", "SECRET", "TOKEN")

@dataclass
class PlannedResource:
    type: str
    name: str
    parent: Optional[str]
    inputs: dict
    custom: bool
    retain_on_delete: bool = False

    def as_dict(self) -> dict:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs}


@dataclass
class Plan:
    stack: str
    resources: list[PlannedResource] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    calls: list[tuple[str, dict]] = field(default_factory=list)
    log: str = ""

    def of_type(self, type_token: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_token]


class _Recorder(pulumi_mocks.Mocks):
    def __init__(self, plan: Plan, call_answers: Mapping[str, Any], computed: Mapping[str, Mapping[str, str]]):
        self.plan = plan
        self.call_answers = call_answers
        self.computed = computed
        self.counter = 0

    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        self.counter += 1
        state = dict(args.inputs)
        for key, template in self.computed.get(args.typ, {}).items():
            state.setdefault(key, template.format(index=self.counter % 250 + 2, name=args.name))
        self.plan.resources.append(PlannedResource(args.typ, args.name, None, dict(args.inputs),
                                                   bool(args.custom)))
        return f"{args.name}-id", state

    def call(self, args: pulumi_mocks.MockCallArgs):
        self.plan.calls.append((args.token, dict(args.args)))
        answer = self.call_answers.get(args.token)
        return answer(dict(args.args)) if callable(answer) else (answer or {})


class _ParentTrackingMonitor(pulumi_mocks.MockMonitor):
    """The stock mock monitor does not tell mocks a resource's parent; remember it from the request.

    Registrations arrive on several threads, so parents are keyed by (type, name), unique in a plan.
    """

    def __init__(self, mocks: _Recorder):
        super().__init__(mocks)
        self.names_by_urn: dict[str, str] = {}
        self.parents: dict[tuple[str, str], Optional[str]] = {}
        self.retained: set[tuple[str, str]] = set()

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type != "pulumi:pulumi:Stack":
            self.names_by_urn[urn] = request.name
            self.parents[(request.type, request.name)] = self.names_by_urn.get(request.parent)
            if getattr(request, "retainOnDelete", False):
                self.retained.add((request.type, request.name))
        return super().RegisterResource(request)


def provider_answers() -> tuple[dict, dict]:
    """Data-source answers and computed outputs declared by every registered provider's preview module."""
    calls: dict = {}
    computed: dict = {}
    for name in providers.names():
        module = providers.preview_module(name)
        calls.update(getattr(module, "CALL_ANSWERS", {}))
        computed.update(getattr(module, "COMPUTED_OUTPUTS", {}))
    return calls, computed


class ProgramExit(Exception):
    """The program stopped on its own (bad config): its exit code and what it printed."""

    def __init__(self, code: int, stderr: str):
        super().__init__(stderr)
        self.code = code
        self.stderr = stderr


def _resolve(value: Any) -> Any:
    return _sync_await(pulumi.Output.from_input(value).future())


def run_program(config: Mapping[str, Any], stack: str, *, project: str = "gpu-training",
                call_answers: Optional[Mapping[str, Any]] = None, preview: bool = True) -> Plan:
    """Evaluate __main__.py for `stack` with `config` (flat map, as in a stack file) and return the plan.

    preview=False runs the program as `pulumi up` would (deploy-time lookups happen, against whatever
    endpoints the environment names): for tests with local stand-ins; credentials are then left alone.
    """
    plan = Plan(stack=stack)
    calls, computed = provider_answers()
    recorder = _Recorder(plan, {**calls, **(call_answers or {})}, computed)
    pulumi_settings.ROOT.set(None)
    # The RPC manager and the pending outputs outlive set_mocks, and with them a failed run's exception.
    pulumi_settings.SETTINGS.rpc_manager = RPCManager()
    pulumi_settings.SETTINGS.outputs = set()
    pulumi.runtime.set_all_config(engine_form(config))
    monitor = _ParentTrackingMonitor(recorder)
    pulumi_mocks.set_mocks(recorder, project=project, stack=stack, preview=preview, monitor=monitor)
    stderr = io.StringIO()
    exports: dict[str, Any] = {}

    def program() -> None:
        try:
            with contextlib.redirect_stderr(stderr):
                runpy.run_path(str(PROGRAM), run_name="__main__")
        except SystemExit as stop:
            raise ProgramExit(int(stop.code or 0), stderr.getvalue()) from None
        root = pulumi_settings.get_root_resource()
        exports.update(getattr(root, "outputs", {}) or {})

    cwd = os.getcwd()
    os.chdir(REPO_ROOT)
    # Offline means offline: the program never sees cloud credentials here, so nothing it does at
    # deploy time (e.g. reading the CPFS export's address) can reach a cloud from a preview.
    hidden = {k: os.environ.pop(k) for k in list(os.environ) if preview
              and k.startswith(CREDENTIAL_PREFIXES) and any(w in k for w in CREDENTIAL_WORDS)}
    try:
        _sync_await(pulumi_mocks.run_pulumi_func(program))
        plan.outputs = {name: _resolve(value) for name, value in exports.items()}
        for record in plan.resources:
            record.parent = monitor.parents.get((record.type, record.name))
            record.retain_on_delete = (record.type, record.name) in monitor.retained
    finally:
        os.chdir(cwd)
        os.environ.update(hidden)
    plan.log = stderr.getvalue()
    return plan
