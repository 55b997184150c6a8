"""Run the real Pulumi program (components/program.py, what __main__.py runs) under Pulumi's mock engine
and record the plan.

No CLI, no credentials, no network: the mock monitor receives every resource registration (type,
name, parent, the inputs the engine would send to the provider) and answers the few data-source
calls the program makes (zones, images, prices) with placeholders that say where the real value
comes from. Used by scripts/preview.py and by the tests. In a preview it reads a registration and
writes its answer itself where they are plain data, in the same wire form as the SDK's reader and
serialiser (engine_inputs, engine_answer): they were most of the monitor's time per node.

A plan is reproducible: resources are listed in the order the program constructs them (the engine
receives registrations on several threads, in an order that varies between runs), with the
resource options that decide what a later `pulumi up` does to them (`options`). Given the plan of
an earlier run (`prior`), outputs the provider computes once at creation keep their earlier value,
as the state would keep them: that is how the day-2 test plans a second `pulumi up`.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import hashlib
import io
import os
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc as pulumi_rpc
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.rpc_manager import RPCManager
from pulumi.runtime.sync_await import _sync_await

from components import clock, generated_key, providers
from components.project import root as project_root
from tools.stackfiles import engine_form

CREDENTIAL_WORDS = ("KEY", "SECRET", "TOKEN")

# The event loops the mock engine ran on (pulumi's _sync_await makes one per thread and never closes it).
_LOOPS: set = set()


@atexit.register
def close_event_loops() -> None:
    """Close the engine's event loops at exit, while their self-pipe sockets are still open.

    Left to the garbage collector, a loop is closed by its finalizer during interpreter shutdown; when
    the collector finalizes the loop's self-pipe socket first (the order varies, and a busy machine
    shows it), close() reads fileno() -1 from that socket and the selector raises
    `ValueError: Invalid file descriptor: -1`, printed after the program's own exit (issue 23).
    """
    for loop in list(_LOOPS):
        if not loop.is_closed() and not loop.is_running():
            loop.close()
    _LOOPS.clear()


# The resource options that decide what a later `pulumi up` does to a resource, as the engine gets them.
OPTION_NAMES = ("ignoreChanges", "replaceOnChanges", "replacementTrigger", "retainOnDelete", "protect")


@dataclass
class PlannedResource:
    type: str
    name: str
    parent: Optional[str]
    inputs: dict
    custom: bool
    options: dict = field(default_factory=dict)  # OPTION_NAMES, each as the engine received it
    outputs: dict = field(default_factory=dict)  # the state the mock engine answered (inputs + computed)

    @property
    def retain_on_delete(self) -> bool:
        return bool(self.options.get("retainOnDelete"))

    def as_dict(self) -> dict:
        return {"type": self.type, "name": self.name, "parent": self.parent, "inputs": self.inputs,
                "options": self.options}


@dataclass
class Plan:
    stack: str
    resources: list[PlannedResource] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    calls: list[tuple[str, dict]] = field(default_factory=list)
    log: str = ""

    def of_type(self, type_token: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_token]

    def find(self, type_token: str, name: str) -> Optional[PlannedResource]:
        return next((r for r in self.resources if r.type == type_token and r.name == name), None)


def _static_time(inputs: dict, earlier: Optional[PlannedResource]) -> dict:
    """pulumiverse-time's Static: the clock at creation, kept until its triggers change (then replaced)."""
    if earlier is not None and earlier.inputs.get("triggers") == inputs.get("triggers") \
            and earlier.inputs.get("rfc3339") == inputs.get("rfc3339"):
        return {k: v for k, v in earlier.outputs.items() if k not in inputs}
    moment = clock.parse(inputs["rfc3339"]) if inputs.get("rfc3339") else clock.now()
    return {"rfc3339": clock.rfc3339(moment), "unix": int(moment.timestamp()), "year": moment.year,
            "month": moment.month, "day": moment.day, "hour": moment.hour, "minute": moment.minute,
            "second": moment.second}


def _generated_key(inputs: dict, earlier: Optional[PlannedResource]) -> dict:
    """components/generated_key.py: a public key made at creation (its private half discarded), kept after."""
    return {"public_key": f"ssh-rsa <made by `pulumi up`, private key discarded> {inputs.get('comment', '')}".strip()}


# Outputs of provider-neutral resources, computed as their provider would: {type: (inputs, earlier) -> outputs}.
NEUTRAL_OUTPUTS = {clock.TIME_STATIC: _static_time, generated_key.TYPE: _generated_key}


def _fill(template: Any, **values: Any) -> Any:
    """A computed output's template: a string, or an object of them (e.g. a cluster's OIDC metadata)."""
    if isinstance(template, dict):
        return {key: _fill(item, **values) for key, item in template.items()}
    return template.format(**values)


class _Recorder(pulumi_mocks.Mocks):
    def __init__(self, plan: Plan, call_answers: Mapping[str, Any], computed: Mapping[str, Mapping[str, str]],
                 prior: Optional[Plan] = None):
        self.plan = plan
        self.call_answers = call_answers
        self.computed = computed
        self.prior = prior
        self.order: dict[tuple[str, str], int] = {}  # (type, name) -> construction order
        self.id_formats = id_formats()

    def constructed(self, args: pulumi.ResourceTransformationArgs) -> None:
        """A stack transformation: runs in the program's own thread, in construction order."""
        self.order.setdefault((args.type_, args.name), len(self.order))

    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        state = dict(args.inputs)
        # The construction order, not the arrival order, numbers computed values: the same each run.
        index = self.order.get((args.typ, args.name), 0)
        for key, template in self.computed.get(args.typ, {}).items():
            state.setdefault(key, _fill(template, index=index % 250 + 2, name=args.name))
        if args.typ in NEUTRAL_OUTPUTS:
            earlier = self.prior.find(args.typ, args.name) if self.prior else None
            state.update(NEUTRAL_OUTPUTS[args.typ](dict(args.inputs), earlier))
        self.plan.resources.append(PlannedResource(args.typ, args.name, None, dict(args.inputs),
                                                   bool(args.custom), outputs=state))
        return resource_id(args.typ, args.name, self.id_formats), state

    def call(self, args: pulumi_mocks.MockCallArgs):
        self.plan.calls.append((args.token, dict(args.args)))
        answer = self.call_answers.get(args.token)
        return answer(dict(args.args)) if callable(answer) else (answer or {})


class _ParentTrackingMonitor(pulumi_mocks.MockMonitor):
    """The stock mock monitor does not tell mocks a resource's parent; remember it from the request.

    Registrations arrive on several threads, so parents are keyed by (type, name), unique in a plan.
    A preview's registrations are answered here (engine_answer) rather than by the stock monitor.
    """

    def __init__(self, mocks: _Recorder):
        super().__init__(mocks)
        self.names_by_urn: dict[str, str] = {}
        self.parents: dict[tuple[str, str], Optional[str]] = {}
        self.options: dict[tuple[str, str], dict] = {}

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        self._remember(urn, request)
        if request.type == "pulumi:pulumi:Stack" or not pulumi.runtime.is_dry_run():
            # The stack itself, and a run as `pulumi up` (preview=False): the stock monitor's answer.
            return super().RegisterResource(request)
        _worker_loop()  # deserialising a resource reference makes futures, which need this thread's loop
        inputs = engine_inputs(request.object)
        transforms = pulumi_mocks._resolve_callbacks(request.transforms) if request.transforms else None
        id_, state = self.mocks.new_resource(pulumi_mocks.MockResourceArgs(
            typ=request.type, name=request.name, inputs=inputs, provider=request.provider,
            resource_id=request.importId, custom=request.custom or False, transforms=transforms))
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=engine_answer(state))

    def _remember(self, urn: str, request) -> None:
        if request.type != "pulumi:pulumi:Stack":
            self.names_by_urn[urn] = request.name
            self.parents[(request.type, request.name)] = self.names_by_urn.get(request.parent)
            self.options[(request.type, request.name)] = _options(request)


def _worker_loop() -> None:
    """The calling thread's event loop, made if it has none (the engine's worker threads); closed at exit."""
    try:
        asyncio.get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        _LOOPS.add(loop)


def is_plain(value: Any) -> bool:
    """Made only of what a protobuf Struct holds as it is (text, numbers, booleans, null, lists, objects
    with text keys): no Output, unknown, resource, asset or archive, which only the SDK can serialise."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and is_plain(item) for key, item in value.items())
    return False


class _NotPlain(Exception):
    """A registration's object holds an unknown, a secret, a resource reference, an asset or an archive."""


def _plain_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        if value.string_value == pulumi_rpc.UNKNOWN:
            raise _NotPlain
        return value.string_value
    if kind == "struct_value":
        return _plain_object(value.struct_value)
    if kind == "list_value":
        return [_plain_value(item) for item in value.list_value.values]
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "null_value":
        return None
    raise _NotPlain


def _plain_object(struct: struct_pb2.Struct) -> dict:
    fields = struct.fields
    if pulumi_rpc._special_sig_key in fields:
        raise _NotPlain
    # A property that is null is left out of an object (not of a list), as the SDK's reader leaves it out.
    return {key: plain for key, item in fields.items() if (plain := _plain_value(item)) is not None}


def engine_inputs(sent: struct_pb2.Struct) -> dict:
    """A registration's inputs as Python values, as the SDK's reader (pulumi.runtime.rpc.deserialize_properties)
    gives them: read here when they are plain data (no unknown, secret, resource, asset or archive, each
    marked on the wire), by the SDK's reader otherwise. The SDK's reader asks of every value whether it is
    the unknown marker and which special kind it is: most of the mock monitor's time per node.
    """
    try:
        return _plain_object(sent)
    except _NotPlain:
        return pulumi_rpc.deserialize_properties(sent)


def engine_answer(state: Mapping[str, Any]) -> struct_pb2.Struct:
    """A resource's state as the engine answers a registration: the SDK's wire form of `state`.

    The SDK's serialiser (pulumi.runtime.rpc.serialize_properties) is a coroutine, which the stock
    mock monitor runs on an event loop of the worker thread, once per resource: about half of the
    monitor's time per node, for values that are almost always plain data already. Plain values are
    written as the serialiser writes them (a property that is None is left out, as it leaves it out);
    any other value still goes through the serialiser.
    """
    answer = struct_pb2.Struct()
    plain = {key: value for key, value in state.items() if value is not None and is_plain(value)}
    answer.update(plain)
    rest = {key: value for key, value in state.items() if key not in plain and value is not None}
    if rest:
        answer.MergeFrom(_sync_await(pulumi_rpc.serialize_properties(rest, {})))
    return answer


def _options(request) -> dict:
    """OPTION_NAMES from a RegisterResourceRequest; unset ones as their defaults (empty, false, null)."""
    trigger = None
    if request.HasField("replacement_trigger"):
        trigger = json_format.MessageToDict(request.replacement_trigger)
    return {"ignoreChanges": sorted(request.ignoreChanges), "replaceOnChanges": sorted(request.replaceOnChanges),
            "replacementTrigger": trigger,
            "retainOnDelete": request.retainOnDelete if request.HasField("retainOnDelete") else False,
            "protect": request.protect if request.HasField("protect") else False}


def resource_id(type_token: str, name: str, formats: Optional[Mapping[str, str]] = None) -> str:
    """The id the mock engine gives a resource: `<name>-id`, or in the cloud's format where a provider
    declares one (preview.py ID_FORMATS: a validator downstream checks it, e.g. ACK's vsw-... vSwitch ids),
    with a digest of the name in place of the cloud's random part, so a plan is the same on every run.
    formats: id_formats(), read once by a run rather than for each resource."""
    template = (id_formats() if formats is None else formats).get(type_token)
    if template:
        return template.format(digest=hashlib.sha256(name.encode()).hexdigest()[:20])
    return f"{name}-id"


def id_formats() -> dict[str, str]:
    """Every registered provider's ID_FORMATS, by type."""
    formats: dict[str, str] = {}
    for name in reversed(providers.names()):  # the first provider that declares a type wins, as before
        formats.update(getattr(providers.preview_module(name), "ID_FORMATS", {}))
    return formats


def provider_answers() -> tuple[dict, dict]:
    """Data-source answers and computed outputs declared by every registered provider's preview module."""
    calls: dict = {}
    computed: dict = {}
    for name in providers.names():
        module = providers.preview_module(name)
        calls.update(getattr(module, "CALL_ANSWERS", {}))
        computed.update(getattr(module, "COMPUTED_OUTPUTS", {}))
    return calls, computed


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector while the program runs; restore its state after.

    The SDK turns each property a resource class declares into an Output of four futures and a task
    before the engine answers (pulumi/runtime/rpc.py transfer_properties, pulumi 3.272.0): an ECS
    instance is about 100 of them, alive until the run ends. Every allocation counts towards the
    collector's thresholds (https://docs.python.org/3/library/gc.html, gc.set_threshold), and the
    collections they set off traverse the growing pile of pending Outputs and the provider SDK's
    own few hundred thousand objects again and again: about two thirds of a node's cost in the plan
    (bench/preview_scale.py). Paused, the run's cycles are found by one collection after it instead.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class ProgramExit(Exception):
    """The program stopped on its own (bad config): its exit code and what it printed."""

    def __init__(self, code: int, stderr: str):
        super().__init__(stderr)
        self.code = code
        self.stderr = stderr


def _resolve(value: Any) -> Any:
    return _sync_await(pulumi.Output.from_input(value).future())


def settle_failed_run() -> None:
    """Mark the failed run's futures' exceptions as seen, so none is reported later from a finalizer.

    A program that raises leaves its failure in many of the engine's futures (every Output that depends
    on the failed one), and only one reaches the caller. The others would be reported by their
    finalizers ("Future exception was never retrieved", asyncio's logger with the traceback) whenever
    the collector next frees them: at any allocation, in whatever the process does next. On CPython
    3.11 formatting a traceback calls ast.parse (the caret anchors), and ast's object builder keeps its
    recursion count in module-wide state, so a report set off inside another ast.parse ends that one
    with `SystemError: AST constructor recursion depth mismatch` (seen in CI: tests/test_import_graph.py
    after a test of a refused `pulumi up`; python/cpython#106905 and pytest-dev/pytest#10763 show the
    same error). The run's own exception is raised to the caller; these copies carry nothing more.
    """
    for item in gc.get_objects():
        # type(), not isinstance(): that reads __class__, which some objects answer with a warning
        # (torch's deprecated torch.distributed.reduce_op).
        if (issubclass(type(item), asyncio.Future) and item.done() and not item.cancelled()
                and item.get_loop() in _LOOPS):
            item.exception()  # marks it retrieved


def run_program(config: Mapping[str, Any], stack: str, *, project: str = "gpu-training",
                call_answers: Optional[Mapping[str, Any]] = None, preview: bool = True,
                prior: Optional[Plan] = None, program_file: Optional[Path] = None) -> Plan:
    """Evaluate the program for `stack` with `config` (flat map, as in a stack file) and return the plan.

    The program is gpu-training's own (components/program.py, installed or in a clone), run in the
    current project's folder as `pulumi up` runs it there; or a Pulumi program file of the
    user's (`program_file`: one that builds the components through gpu_training's API), run in its own folder.

    preview=False runs the program as `pulumi up` would (deploy-time lookups happen, against whatever
    endpoints the environment names): for tests with local stand-ins; credentials are then left alone.
    prior: the plan of an earlier run of this stack, whose state the run sees (a second `pulumi up`).
    """
    plan = Plan(stack=stack)
    calls, computed = provider_answers()
    recorder = _Recorder(plan, {**calls, **(call_answers or {})}, computed, prior)
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
        pulumi.runtime.register_stack_transformation(lambda args: recorder.constructed(args))
        try:
            with contextlib.redirect_stderr(stderr):
                if program_file is None:
                    from components.program import main

                    main()
                else:
                    runpy.run_path(str(program_file), run_name="__main__")
        except SystemExit as stop:
            raise ProgramExit(int(stop.code or 0), stderr.getvalue()) from None
        root = pulumi_settings.get_root_resource()
        exports.update(getattr(root, "outputs", {}) or {})

    cwd = os.getcwd()
    os.chdir(project_root() if program_file is None else Path(program_file).resolve().parent)
    # Offline means offline: the program never sees cloud credentials here, so nothing it does at
    # deploy time (e.g. reading the CPFS export's address) can reach a cloud from a preview.
    hidden = {k: os.environ.pop(k) for k in list(os.environ) if preview
              and k.startswith(providers.credential_env_prefixes()) and any(w in k for w in CREDENTIAL_WORDS)}
    try:
        _LOOPS.add(asyncio.get_event_loop())  # the loop _sync_await runs on (made here if there is none)
        with collector_paused():
            _sync_await(pulumi_mocks.run_pulumi_func(program))
            plan.outputs = {name: _resolve(value) for name, value in exports.items()}
            for record in plan.resources:
                record.parent = monitor.parents.get((record.type, record.name))
                record.options = monitor.options.get((record.type, record.name), {})
            plan.resources.sort(key=lambda r: recorder.order.get((r.type, r.name), len(recorder.order)))
    except BaseException:
        settle_failed_run()
        raise
    finally:
        os.chdir(cwd)
        os.environ.update(hidden)
    plan.log = stderr.getvalue()
    return plan
