"""A local stand-in for the Pulumi Automation layer (tools/runlib/automation.py's PulumiStack), for the
tests and `gpu-training rehearse --stock-out ZONE`: the Pulumi CLI and the clouds are not reachable here.

`up` runs the real program (__main__.py) under Pulumi's mock engine (tools/mockrun.py) with the stack's
config as it stands (the stack file, then every `set_config`), and "creates" the plan's resources in the
program's order into a local state. What the cloud decides is left to the cloud's API stand-in: each
resource that starts nodes (the cloud's `NODE_TYPES`, localcloud/standins/<cloud>.py) is
launched there with the cloud's SDK (its `launch`), so a stock-out comes back as the stand-in answers it,
in the cloud's documented error. Like `pulumi up`, a failed create stops the update: what was created
before it stays in the state, and the error names the resource and carries the cloud's answer.
`destroy` removes the state's resources in reverse order, releasing the launched nodes at the stand-in.
Not modelled: parallel creates, updates of an existing state, outputs computed by the providers.
"""
from __future__ import annotations

import copy
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from components import providers
from localcloud import standins


class LocalUpError(Exception):
    """A failed local `up`: the resource that failed and the cloud's answer, as `pulumi up` reports it."""


@dataclass
class Created:
    type: str
    name: str
    node_id: Optional[str] = None  # the stand-in's instance id, for a node


@dataclass
class LocalStack:
    name: str
    config: dict
    api_url: str
    on_up: Optional[Callable[[dict], dict]] = None  # the nodes' part after a successful up (and output changes)
    state: list[Created] = field(default_factory=list)
    outputs_now: dict = field(default_factory=dict)
    log: list[str] = field(default_factory=list)  # what happened, in order: "up", "destroy", "set_config ..."

    def factory(self, name, work_dir, create=True):  # run.py's stack_factory signature
        assert name == self.name, (name, self.name)
        return self

    @property
    def cloud(self) -> str:
        return str(self.config.get("gpu-training:provider", "alicloud"))

    def _region(self) -> str:
        return str(self.config.get(providers.profile(self.cloud).region_key) or "")

    def up(self, on_output: Callable[[str], None]) -> dict:
        from tools.mockrun import run_program

        self.log.append("up")
        stand_in = standins.of(self.cloud)
        plan = run_program(self.config, self.name)
        on_output(f"Updating ({self.name}): {len(plan.resources)} resources planned")
        known = {(c.type, c.name) for c in self.state}
        for resource in plan.resources:
            if (resource.type, resource.name) in known:
                continue
            node_id = None
            if resource.type in getattr(stand_in, "NODE_TYPES", ()):
                try:
                    node_id = stand_in.launch(self.api_url, self._region(), resource.name, resource.inputs)
                except Exception as error:  # the cloud SDK's own error, as the provider would report it
                    on_output(f"  + {resource.type} {resource.name} creating failed")
                    raise LocalUpError(f"error: creating urn:pulumi:{self.name}::gpu-training::{resource.type}::"
                                       f"{resource.name}: {error}") from None
            self.state.append(Created(resource.type, resource.name, node_id))
            on_output(f"  + {resource.type} {resource.name} created" + (f" ({node_id})" if node_id else ""))
        self.outputs_now = dict(plan.outputs)
        if self.on_up:
            self.outputs_now = self.on_up(self.outputs_now) or self.outputs_now
        return dict(self.outputs_now)

    def outputs(self) -> dict:
        return dict(self.outputs_now)

    def last_update_started(self):
        return None

    def refresh(self, on_output, run_program: bool = False) -> None:
        self.log.append("refresh")

    def destroy(self, on_output, run_program: bool = False) -> None:
        self.log.append("destroy")
        stand_in = standins.of(self.cloud)
        while self.state:
            item = self.state.pop()
            if item.node_id:
                stand_in.release(self.api_url, self._region(), item.node_id)
            on_output(f"  - {item.type} {item.name} deleted")
        self.outputs_now = {}

    def set_config(self, changes: dict[str, Any]) -> None:
        """As `pulumi config set` / `config rm` (path keys like gpu-training:checkpoint.region included)."""
        self.log.append("set_config " + ", ".join(f"{k}={v}" for k, v in changes.items()))
        config = copy.deepcopy(self.config)
        for key, value in changes.items():
            namespace, _, path = key.partition(":")
            head, _, rest = path.partition(".")
            top = f"{namespace}:{head}"
            if rest:
                holder = dict(config.get(top) or {})
                if value is None:
                    holder.pop(rest, None)
                else:
                    holder[rest] = value
                config[top] = holder
            elif value is None:
                config.pop(top, None)
            else:
                config[top] = value
        self.config = config


def failover_drill(stack: str, console, work_dir) -> tuple[bool, str]:
    """`gpu-training rehearse STACK --stock-out`: `up` against the cloud's API stand-in with the stack's first
    zone sold out, through the Driver's own failover; (passed, what happened). A stack without failover
    zones is given the region's next declared zone for the drill (the detail says so)."""
    import json as _json
    import tempfile

    from components.providers import regions
    from localcloud.standins import CloudApi
    from tools.runlib.driver import Driver, RunOptions
    from tools.runlib.failover import plan_for
    from tools.stackfiles import apply_overrides, load_stack_config, stack_spec

    _, spec = stack_spec(stack)
    stand_in = standins.of(spec.provider)
    from components import targets

    if targets.of(spec).kind != "vm":
        return False, f"failover re-plans VM nodes: a stack on {targets.of(spec).description} has none to move"
    if not getattr(stand_in, "NODE_TYPES", ()):
        return False, (f"the {spec.profile.display_name} stand-in launches no nodes for the local engine yet"
                       f" (what the cloud answers on a stock-out: components/providers/{spec.provider}/capacity.yaml)")
    table = regions.load(spec.provider)
    zones = list((table.regions.get(spec.region) or ()) if table else ())
    first = spec.zone or (zones[0] if zones else None)
    others = list(spec.failover.zones) or [z for z in zones if z != first][:1]
    if not first or not others:
        return False, f"{spec.region}: no second zone declared to move to"
    overrides = [f"zone={first}", f"failover.zones={_json.dumps(others)}"]
    note = "" if spec.failover.zones else f" (the stack lists no failover.zones: the drill used {others[0]})"
    config = apply_overrides(load_stack_config(stack), overrides)
    _, drilled = stack_spec(stack, tuple(overrides))
    api = CloudApi(spec.provider)
    api.sold_out_zones = {first}
    local = LocalStack(stack, config, api.url)
    try:
        with tempfile.TemporaryDirectory() as out:
            opts = RunOptions(stack=stack, work_dir=Path(work_dir), out_dir=Path(out), provider=spec.provider,
                              failover=plan_for(drilled))
            outputs = Driver(opts, local.factory, console=console, confirm=lambda question: False).up_with_failover(local)
        tried = [_zone_of(r["params"]) for r in api.requests if r["action"] in LAUNCH_ACTIONS]
        left_after_first = "destroy" in local.log and local.log.index("destroy") < len(local.log) - 1
        local.destroy(lambda line: None)
        ok = (outputs is not None and tried[:1] == [first] and tried[-1] != first and api.launched == {}
              and left_after_first)
        return ok, (f"{first} answered a stock-out; attempt 1's resources destroyed; deployed in {tried[-1]}; "
                    f"nothing left at the end{note}" if ok else f"zones tried {tried}, engine log {local.log}{note}")
    finally:
        api.stop()


LAUNCH_ACTIONS = ("RunInstances", "CreateServers")  # ECS and CVM RunInstances, Huawei ECS CreateServers


def _zone_of(params: dict) -> Optional[str]:
    return (params.get("ZoneId") or (params.get("Placement") or {}).get("Zone")
            or (params.get("server") or {}).get("availability_zone"))
