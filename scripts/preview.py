#!/usr/bin/env python3
"""Offline preview of a stack: the resources the program would create, their key settings, the
hourly cost, the expiry and the findings. Runs the real program under Pulumi's mock engine; needs
no Pulumi CLI, no credentials and no network.

Exit status: 0 plan shown, 2 invalid stack/config (every problem listed), 1 the program failed.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys

from components import billing, cost, dataset, egress, reclaim, safety, targets
from components.bootstrap import decode, user_data_limit
from components.providers import facts
from components.spec import Spec, SpecError
from tools.cliargs import FAILED as EXIT_FAILED, USAGE as EXIT_INVALID
from tools.mockrun import Plan, ProgramExit, run_program
from tools.stackfiles import StackFileError, stack_names, stack_spec

COLLAPSE_AFTER = 3  # siblings of one type beyond this are summarised in the human view


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  gpu-training preview medium-a100\n  gpu-training preview medium-a100 --json\n"
               "  gpu-training preview entry-t4 --set billing=spot --set checkpoint.bucket=my-bucket\n"
               "  gpu-training preview large-h20 --set nodes=64\n  gpu-training preview entry-t4 --user-data")
    parser.add_argument("stack", help=f"stack name (stacks/Pulumi.<stack>.yaml): {', '.join(stack_names())}")
    parser.add_argument("--json", action="store_true", help="print one JSON document (schema in README.md)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a stack key for a what-if (repeatable): billing=spot, nodes=2,"
                             " checkpoint.bucket=x, alicloud:region=cn-beijing")
    parser.add_argument("--user-data", action="store_true", help="print node 0's user-data, decoded")
    return parser.parse_args(argv)


def node_user_data(plan: Plan, spec: Spec) -> tuple[str, int] | None:
    """The encoded user-data of node 0 (the first resource that carries one) and its size; where a
    resource holds it is the provider's `node.user_data_inputs` (e.g. Huawei's instanceConfig.userData)."""
    for resource in plan.resources:
        for path in spec.profile.node.user_data_inputs:
            value = facts.input_at(resource.inputs, path)
            if isinstance(value, str) and value:
                return value, len(value)
    return None


def root_cause(error: Exception) -> str:
    """Pulumi wraps a failure inside an input in layers of "While processing ...": keep the innermost."""
    text = str(error).strip()
    return text.split("has risen:")[-1].strip() if "has risen:" in text else text


def findings_of(spec: Spec) -> list[dict]:
    return [{"level": f.level, "key": f.key, "message": f.message} for f in spec.findings]


def document(spec: Spec, plan: Plan) -> dict:
    user_data = node_user_data(plan, spec)
    target = targets.of(spec)
    return {
        "stack": spec.stack,
        "provider": spec.provider,
        "target": target.kind,
        "resources": [r.as_dict() for r in plan.resources],
        "outputs": plan.outputs,
        "cost": cost_section(spec),
        "userData": {"encodedSize": user_data[1] if user_data else None, "limit": user_data_limit(spec.provider),
                     "headroom": user_data_limit(spec.provider) - user_data[1] if user_data else None},
        # Only nodes reach endpoints themselves: a platform's job has the platform's network (components/targets).
        "egress": egress.describe(spec, plan.resources) if target.node_endpoints else None,
        "keepsBilling": [item.as_dict() for item in target.keeps_billing(spec)],
        "reclaim": reclaim.describe(spec),
        "data": dataset.describe(spec),
        "unclassifiedResourceTypes": unclassified(spec, plan),
        "targetLines": target.preview_lines(spec, plan.outputs),
        "findings": findings_of(spec),
    }


def _as_written(value):
    """The value with whole floats as integers: the engine carries every number as a double (protobuf
    Struct), so a 3600 the program sets arrives as 3600.0; the human view shows what was set."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_as_written(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_written(v) for k, v in value.items()}
    return value


def _short(value, width: int = 90) -> str:
    value = _as_written(value)
    if isinstance(value, str):
        text = value if len(value) <= width else f"<{len(value)} characters>"
    elif isinstance(value, (list, dict)):
        text = json.dumps(value, sort_keys=True)
        if len(text) > width * 2:
            text = text[: width * 2] + "..."
    else:
        text = json.dumps(value)
    return text


def render_human(spec: Spec, plan: Plan) -> None:
    from rich.console import Console
    from rich.tree import Tree

    console = Console()
    by_parent: dict = {}
    for resource in plan.resources:
        by_parent.setdefault(resource.parent, []).append(resource)
    title = (f"[bold]{spec.stack}[/] on {spec.profile.display_name} {spec.region}: {spec.nodes} x"
             f" {spec.instance.name} ({spec.gpus_per_node}x {spec.gpu.name}), {spec.billing}")
    tree = Tree(title)
    # Every resource carries the same stack tags: the tree leaves out the inputs that hold them (the
    # provider's conformance adapter names them).
    tag_inputs = set(safety.adapter(spec.provider).get("tags", {}).get("inputs", ()))

    def add(branch, parent_name):
        children = by_parent.get(parent_name, [])
        shown_per_type: dict = {}
        for resource in children:
            same = [r for r in children if r.type == resource.type]
            shown_per_type[resource.type] = shown_per_type.get(resource.type, 0) + 1
            if len(same) > COLLAPSE_AFTER and shown_per_type[resource.type] > COLLAPSE_AFTER - 1:
                if shown_per_type[resource.type] == COLLAPSE_AFTER:  # one summary line for the rest
                    rest = same[COLLAPSE_AFTER - 1:]
                    branch.add(f"[cyan]{resource.type}[/] ... and {len(rest)} more like it"
                               f" ({rest[0].name} .. {rest[-1].name}; --json lists them all)")
                continue
            node = branch.add(f"[cyan]{resource.type}[/] {resource.name}")
            if resource.custom:
                for key, value in sorted(resource.inputs.items()):
                    if key in tag_inputs:
                        continue
                    node.add(f"[dim]{key}[/] = {_short(value)}")
            add(node, resource.name)

    roots = [r.parent for r in plan.resources if r.parent not in {x.name for x in plan.resources}]
    for root in dict.fromkeys(roots):
        add(tree, root)
    console.print(tree)

    render_cost(console, spec)
    target = targets.of(spec)
    for line in target.preview_lines(spec, plan.outputs):  # what runs, its image, when it ends and who ends it
        console.print(line, highlight=False)
    if target.node_endpoints:
        render_egress(console, egress.describe(spec, plan.resources))
    render_keeps_billing(console, spec, plan)
    render_reclaim(console, reclaim.describe(spec))
    data = dataset.describe(spec)
    if data["stage"] and target.data_disks:
        size = "size unknown" if data["sizeGb"] is None else f"{data['sizeGb']:.2f} GB"
        shards = f", {data['shards']} shards, {data['samples']:,} images" if data["shards"] else ""
        least = data["stagingMinutesAtLeast"]
        when = f"at least {least:g} min" if least is not None else "unknown"
        console.print(f"data: {size}{shards}, staged onto each node's {spec.data_disk.size_gb} GiB data disk before"
                      f" training; staging time: {when}")
        console.print(f"  [dim]{data['basis']}[/]")
    user_data = node_user_data(plan, spec)
    if user_data:
        limit = user_data_limit(spec.provider)
        free = limit - user_data[1]
        # The loader alone is user-data (the stack's own values ride in the boot payload): under HEADROOM_GOAL free,
        # the loader or the cloud runtime has grown and should shed weight (issues 23, 33).
        style = "" if free >= HEADROOM_GOAL else "[yellow]"
        console.print(f"{style}user-data: {user_data[1]:,} bytes encoded (limit {limit:,}; {free:,} free"
                      + ("" if free >= HEADROOM_GOAL else f", under the {HEADROOM_GOAL:,} a stack should keep free")
                      + ")" + ("[/]" if style else ""))
    for finding in spec.findings:
        colour = {"warning": "yellow", "info": "blue"}.get(finding.level, "red")
        console.print(f"[{colour}]{finding.level}[/] {finding.key}: {finding.message}")


def cost_section(spec: Spec) -> dict:
    """The preview's costs: per node-hour, per hour for all nodes and for the whole maxHours, on-demand and
    spot side by side, with what this stack pays, the price's source and date, or how to get it."""
    hourly = cost.spec_cost(spec)
    unit = cost.node_hours_cost(spec, 1.0)

    def scaled(value, factor):
        return None if value is None else round(value * factor, 4)

    disks = cost.data_disk_cost(spec)
    shared = cost.shared_storage_cost(spec)
    return {**hourly.as_dict(), "maxHours": spec.max_hours, "dataDisks": {
                **disks.as_dict(), "perMaxHours": scaled(disks.per_hour, spec.max_hours)},
            "sharedStorage": None if shared is None else {
                **shared.as_dict(), "perMaxHours": scaled(shared.per_hour, spec.max_hours)},
            "onDemandPerMaxHours": scaled(hourly.on_demand_per_hour, spec.max_hours),
            "spotPerMaxHours": scaled(hourly.spot_per_hour, spec.max_hours),
            "effectivePerMaxHours": scaled(hourly.effective_per_hour, spec.max_hours),
            "perNodeHour": unit.per_node_hour}


def render_cost(console, spec: Spec) -> None:
    from rich.table import Table

    section = cost_section(spec)
    currency = section["currency"]
    documented = section.get("spotRangePerHour")  # the cloud's documented range: no spot figure was read
    spot_kind = ("spot (documented range)" if documented else
                 {"cloud": "spot (cloud price)", "estimate": "spot (estimate)"}.get(section["spotSource"], "spot"))
    ending = targets.of(spec).ending
    table = Table(title=f"cost ({spec.nodes} node(s), {spec.billing}; {ending} ({spec.max_hours:g} h))")
    for column in ("", "on-demand", spot_kind, "this stack pays"):
        table.add_column(column)

    def money(value, unit="", in_currency=None):
        return "unknown" if value is None else f"{value:,.2f} {in_currency or currency}{unit}"

    def spot(value, factor: float, unit=""):
        if not documented:
            return money(value, unit)
        low, high = documented[0] * factor, documented[1] * factor
        return (f"up to {high:,.2f}" if low == 0 else f"{low:,.2f}-{high:,.2f}") + f" {currency}{unit}"

    pays_spot = spec.billing == "spot"
    per_node = [None if v is None else v / spec.nodes for v in
                (section["onDemandPerHour"], section["spotPerHour"], section["effectivePerHour"])]
    node = 1 / spec.nodes
    table.add_row("per node-hour", money(per_node[0], "/h"), spot(per_node[1], node, "/h"),
                  spot(per_node[2], node, "/h") if pays_spot else money(per_node[2], "/h"))
    table.add_row(f"per hour, {spec.nodes} node(s)", money(section["onDemandPerHour"], "/h"),
                  spot(section["spotPerHour"], 1, "/h"),
                  spot(section["effectivePerHour"], 1, "/h") if pays_spot else money(section["effectivePerHour"], "/h"))
    table.add_row(f"whole maxHours ({spec.max_hours:g} h)", money(section["onDemandPerMaxHours"]),
                  spot(section["spotPerMaxHours"], spec.max_hours),
                  spot(section["effectivePerMaxHours"], spec.max_hours) if pays_spot
                  else money(section["effectivePerMaxHours"]))
    disks = section["dataDisks"]
    has_disks = targets.of(spec).data_disks  # a platform's flavor brings its own disk: no row of ours
    # Storage is priced in its own currency (a disk's price book may not be the instance's): never relabelled.
    disk_hour = money(disks["perHour"], "/h", disks["currency"])
    disk_run = money(disks["perMaxHours"], "", disks["currency"])
    if has_disks:
        table.add_row(f"data disks ({spec.nodes} x {disks['sizeGb']} GiB {disks['kind']}), per hour",
                      disk_hour, disk_hour, disk_hour)
        table.add_row("data disks, whole maxHours", disk_run, disk_run, disk_run)
    shared = section["sharedStorage"]
    if shared is not None:
        shared_hour = money(shared["perHour"], "/h", shared["currency"])
        shared_run = money(shared["perMaxHours"], "", shared["currency"])
        table.add_row(f"shared file system ({shared['kind']}, {shared['sizeGb']:,} GiB), per hour",
                      shared_hour, shared_hour, shared_hour)
        table.add_row("shared file system, whole maxHours (it bills on until destroyed)", shared_run, shared_run,
                      shared_run)
    console.print(table)
    console.print(f"[dim]instances: {section['basis']}[/]", highlight=False)
    if has_disks:
        console.print(f"[dim]data disks: {disks['basis']}[/]", highlight=False)
    if shared is not None:
        console.print(f"[dim]shared file system: {shared['basis']}[/]", highlight=False)
    console.print(f"[dim]object storage (the bucket): {cost.object_storage_rate(spec)}[/]", highlight=False)
    console.print("[dim]what keeps billing after that is listed below[/]")


HEADROOM_GOAL = 8192  # bytes of encoded user-data a stack keeps free (the loader; issue 33: >= 8 KB on every cloud)


def render_egress(console, section: dict) -> None:
    """What each node contacts and the route that reaches it; then what each route is and costs."""
    from rich.table import Table

    table = Table(title="node endpoints (bootstrap and agent) and their routes")
    table.add_column("endpoint")
    table.add_column("url", overflow="fold")
    table.add_column("used by")
    table.add_column("route", no_wrap=True)
    for e in section["endpoints"]:
        route = e["route"] or ("[red]NONE[/]" if e["required"] else "[yellow]none (only if needed)[/]")
        table.add_row(e["name"], e["url"], e["usedBy"], route)
    console.print(table)
    for r in section["routes"]:
        made = "" if r["resources"] == [] else (
            f" [dim](in the plan: {', '.join(r['resources'])})[/]" if r["inPlan"] else " [red](NOT in the plan)[/]")
        console.print(f"route [bold]{r['name']}[/]: {r['description']}{made}")
        console.print(f"  [dim]cost: {r['cost']}[/]")


def render_reclaim(console, section: dict | None) -> None:
    """A spot stack's reclaim: how the node learns of it, how early, and the work a reclaim can lose."""
    if not section:
        return
    console.print(f"[bold]spot reclaim[/]: {section['mechanism']}")
    console.print(f"  lead time: {section['lead']}")
    if section["note"]:
        console.print(f"  {section['note']}")
    console.print(f"  work at risk: {section['workAtRisk']}")
    console.print(f"  [dim]source: {section['source']}[/]", highlight=False)


def render_keeps_billing(console, spec: Spec, plan: Plan) -> None:
    """What bills once the nodes have released themselves: maxHours ends the nodes, not these."""
    from rich.table import Table

    target = targets.of(spec)
    table = Table(title="keeps billing after the nodes release themselves (maxHours ends the nodes only)"
                  if target.kind != "platform" else "keeps billing after the job ends (maxHours ends the job only)")
    for column in ("what", "size", "billed by", "rate", "until"):
        table.add_column(column, overflow="fold")
    for item in target.keeps_billing(spec):
        table.add_row(item.what, item.size, item.basis, item.rate or "unknown", item.until)
    console.print(table)
    for type_token in unclassified(spec, plan):
        console.print(f"[red]unclassified[/] {type_token}: the provider does not say whether it bills; treat it as billing")


def unclassified(spec: Spec, plan: Plan) -> list[str]:
    """The plan's resource types nobody says whether they bill (the provider's table and the target's)."""
    target = targets.of(spec)
    return billing.unclassified(spec, plan.resources, target.keeps_billing(spec),
                                getattr(target, "classified_types", lambda spec: {})(spec))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config, spec = stack_spec(args.stack, args.overrides)
    except (StackFileError, SpecError) as error:
        print(error.render(), file=sys.stderr)
        return EXIT_INVALID
    try:
        plan = run_program(config, args.stack)
    except ProgramExit as stop:
        print(stop.stderr, file=sys.stderr, end="")
        return stop.code or EXIT_FAILED
    except Exception as error:  # the program's own failure, shown without a traceback
        print(f"error: the program failed: {root_cause(error)}", file=sys.stderr)
        return EXIT_FAILED
    if args.user_data:
        user_data = node_user_data(plan, spec)
        target = targets.of(spec)
        if user_data is None and target.kind != "vm":
            print(f"error: --user-data: stack {args.stack} runs on {target.description}, which boots no VM of its own, so it"
                  " has no node user-data (the VM stacks have it; the plan and its settings: preview without"
                  " --user-data)", file=sys.stderr)
            return EXIT_INVALID
        if user_data is None:
            print("error: no node user-data in the plan", file=sys.stderr)
            return EXIT_FAILED
        print(decode(user_data[0]), end="")
    elif args.json:
        try:  # strict JSON: the spec admits no non-finite number, and a regression must not print NaN
            text = json.dumps(document(spec, plan), indent=2, sort_keys=False, default=str, allow_nan=False)
        except ValueError as error:
            print(f"error: the plan holds a number JSON cannot carry: {error}", file=sys.stderr)
            return EXIT_FAILED
        print(text)
    else:
        render_human(spec, plan)
    return 0


def process_main(argv: list[str] | None = None) -> int:
    """main() as the whole of a process (`python scripts/preview.py`, `gpu-training preview`): one plan, then exit.

    The cyclic garbage collector stays off throughout, and what is left at the end is frozen
    (gc.freeze: "ignored by all future collections", https://docs.python.org/3/library/gc.html): the
    plan's garbage (the SDK's futures, tasks and Outputs, tools/mockrun.py collector_paused) is let go
    with the process instead of being traversed first, by a collection after the run or at exit.
    Measured by bench/preview_scale.py, that was a third of a 256-node preview's CPU time. One plan's
    memory is bounded by `nodes` (at most 512). In-process callers (tests) use main(), which leaves
    the collector as it found it.
    """
    gc.disable()
    try:
        return main(argv)
    finally:
        gc.freeze()


if __name__ == "__main__":
    sys.exit(process_main())
