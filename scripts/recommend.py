#!/usr/bin/env python3
"""Sizing and cost advisor: the cheapest configuration that trains your model by the deadline, and why.

Give the model, the data set, the epochs and a deadline; the advisor evaluates every instance type of
the registered providers' catalogs (1 to --max-nodes nodes, on-demand and, with --spot, spot), ranks
what fits by total cost at list prices where known (by GPU-hours where not, and says which), explains each pick
(VRAM for the batch, vCPU per GPU, RAM against the data set, disk and shared FS) and why the rest
were rejected. --write-stack NAME writes stacks/Pulumi.NAME.yaml for the first pick, validated by
the same spec the preview uses. Estimates come from components/data/perf.yaml (docs/advisor.md).

Exit status: 0 configurations found, 1 nothing fits (the failed constraints and what would relax
them are printed), 2 bad arguments or a stack that cannot be written.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from components import catalog
from components.spec import SpecError
from tools import cliargs
from tools.advisor import explain, stackfile
from tools.advisor.optimiser import Evaluation, Result, relaxations, search
from tools.advisor.request import Request, RequestError, build_request
from tools.cliargs import OK, USAGE
from tools.stackfiles import STACKS_DIR, StackFileError

NO_FIT = cliargs.FAILED  # the search ran and no configuration fits


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = cliargs.command_line(
        "scripts/recommend.py", __doc__,
        epilog="examples:\n"
               "  gpu-training recommend --model resnet50 --images 1281167 --epochs 90 --deadline 24\n"
               "  gpu-training recommend --model resnet18 --images 50000 --resolution 32 --epochs 200 --deadline 12\n"
               "  gpu-training recommend --model yolov5s --images 118287 --dataset-gb 19 --epochs 300 --deadline 72 --spot\n"
               "  gpu-training recommend --gflops 12 --params 30 --resolution 256 --images 200000 --epochs 50 --deadline 10\n"
               "  gpu-training recommend --model vit-b --images 1281167 --dataset-gb 140 --epochs 300 --deadline 12 \\\n"
               "      --region alicloud:cn-beijing --write-stack large-vit")
    work = parser.add_argument_group("the workload")
    work.add_argument("--model", help="resnet18/34/50/101, resnext50/101, efficientnet-b0..b4, yolov5n..x,"
                      " yolov8n..x, vit-b, vit-l, unet, mnist-cnn; or use --gflops and --params")
    work.add_argument("--gflops", type=float, help="custom model: forward GFLOPs per sample at --resolution"
                      " (a multiply-add counts 2)")
    work.add_argument("--params", type=float, help="custom model: parameters, in millions")
    work.add_argument("--images", type=float, help="training images (samples) per epoch")
    work.add_argument("--resolution", type=float, help="input side in pixels (default: the model's)")
    work.add_argument("--dataset-gb", type=float, help="data set size in GB (default: estimated from --images)")
    work.add_argument("--epochs", type=float)
    work.add_argument("--batch-size", type=float, help="per-GPU batch (default: the recipe's, lowered to fit)")
    limits = parser.add_argument_group("time, money and place")
    limits.add_argument("--deadline", type=float, help="hours from launch to the end of training")
    limits.add_argument("--budget", type=float, help="most the run may cost, in the catalog currency")
    limits.add_argument("--provider", action="append", default=[], help="allowed provider (repeatable; default: all)")
    limits.add_argument("--region", action="append", default=[], metavar="PROVIDER:REGION",
                        help="region for a provider, e.g. alicloud:cn-hangzhou (repeatable)")
    limits.add_argument("--spot", action="store_true", help="spot instances are allowed (the job checkpoints)")
    limits.add_argument("--max-nodes", type=float, default=64, help="most nodes for multi-node (default 64)")
    out = parser.add_argument_group("output")
    out.add_argument("--top", type=int, default=8, help="configurations to list (default 8)")
    out.add_argument("--explain", type=int, default=3, help="how many picks to explain (default 3)")
    out.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    out.add_argument("--write-stack", metavar="NAME", help="write stacks/Pulumi.NAME.yaml for the pick")
    out.add_argument("--pick", type=int, default=1, help="which ranked configuration --write-stack writes (default 1)")
    out.add_argument("--bucket", default=stackfile.DEFAULT_BUCKET, help="checkpoint bucket for the stack file")
    out.add_argument("--train-command", help="the command that starts your training, written as train.command"
                     " (without it the stack runs the example trainer, and the advisor says so)")
    out.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="extra stack key for the written file (repeatable), e.g. spotMaxPricePerHour=20")
    out.add_argument("--force", action="store_true", help="replace an existing stack file")
    out.add_argument("--stacks-dir", type=Path, default=STACKS_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.top < 1 or args.explain < 0 or args.pick < 1:
        parser.error("--top and --pick must be 1 or more, --explain 0 or more")
    return args


def request_from(args: argparse.Namespace) -> Request:
    return build_request(model=args.model, gflops=args.gflops, params_m=args.params, images=args.images,
                         resolution=args.resolution, dataset_gb=args.dataset_gb, epochs=args.epochs,
                         deadline_hours=args.deadline, budget=args.budget, provider_names=args.provider,
                         regions=args.region, spot=args.spot, batch=args.batch_size, max_nodes=args.max_nodes)


# ---------------------------------------------------------------- output

def _money(value, currency: str) -> str:
    return "unknown" if value is None else f"{value:,.0f} {currency}"


def _hours(value) -> str:
    if value is None:
        return "-"
    return f"{value * 60:.0f} min" if value < 1 else f"{value:.1f} h"


def _gpu_hours(ev: Evaluation, mode: str) -> str:
    text = f"{ev.gpu_hours:,.1f}"
    if mode == "gpu-hours" and ev.billing == "spot":
        text += f" (x{ev.offer.profile.spot.discount:g})"  # the weight the ranking applied
    return text


def evaluation_doc(ev: Evaluation, request: Request) -> dict:
    row = ev.offer.instance
    return {
        "provider": ev.offer.provider, "instanceType": row.name, "tier": ev.offer.tier.name, "gpu": row.gpu,
        "standIn": ev.offer.stand_in,
        "gpusPerNode": row.gpu_count, "nodes": ev.nodes, "billing": ev.billing, "batchPerGpu": ev.fit.batch,
        "imagesPerSecond": round(ev.images_per_second, 1), "cpuBound": ev.cpu_bound,
        "scalingEfficiency": round(ev.scaling.efficiency, 4), "trainHours": round(ev.train_hours, 3),
        "hours": round(ev.hours, 3), "gpuHours": round(ev.gpu_hours, 2),
        "region": ev.offer.region,
        "cost": {"currency": ev.run.currency, "onDemand": ev.run.on_demand, "spot": ev.run.spot,
                 "onDemandHours": round(ev.run.on_demand_hours, 3),
                 "spotHours": None if ev.run.spot_hours is None else round(ev.run.spot_hours, 3),
                 "basis": ev.run.basis, "priceSource": row.price.source, "priceDate": row.price.date,
                 "priceSite": row.price.site},
        "reasons": explain.reasons(ev, request),
    }


def document(result: Result) -> dict:
    request = result.request
    return {
        "request": {"model": request.model.name, "images": request.images, "resolution": request.resolution,
                    "datasetGb": round(request.dataset_gb, 2), "datasetEstimated": request.dataset_estimated,
                    "epochs": request.epochs, "deadlineHours": request.deadline_hours, "budget": request.budget,
                    "providers": list(request.providers), "spot": request.spot, "maxNodes": request.max_nodes},
        "rankedBy": result.mode,
        "rankingCurrency": result.currency,
        "ranking": explain.ranking_note(result),
        "configurations": [evaluation_doc(ev, request) for ev in result.ranked],
        "rejected": [{"provider": r.offer.provider, "instanceType": r.offer.instance.name, "billing": r.billing,
                      "constraint": r.constraint, "message": r.message} for r in result.rejections],
        "relaxations": [] if result.feasible else relaxations(result),
        "notes": result.notes,
    }


def render(result: Result, top: int, explain_count: int, console, args: argparse.Namespace) -> None:
    from rich.table import Table

    request = result.request
    dataset = f"{request.dataset_gb:,.1f} GB" + (" (estimated; --dataset-gb to set it)" if request.dataset_estimated else "")
    console.print(f"[bold]{request.model.name}[/]: {request.images:,} images at {request.resolution}px x"
                  f" {request.epochs:g} epochs = {request.samples:,.0f} samples; data set {dataset};"
                  f" deadline {request.deadline_hours:g} h"
                  + (f"; budget {request.budget:,.0f}" if request.budget else "")
                  + f"; providers {', '.join(request.providers)}; spot {'allowed' if request.spot else 'not allowed'}")
    if result.ranked:
        table = Table(title=f"configurations that fit ({len(result.ranked)}; best {min(top, len(result.ranked))} shown)")
        for column in ("#", "provider", "instance type", "region", "nodes x GPUs", "tier", "billing", "img/s",
                       "time", "on-demand", "spot+reclaims", "GPU-h"):
            table.add_column(column, justify="right" if column in ("#", "img/s", "time", "GPU-h") else "left",
                             no_wrap=column in ("instance type", "nodes x GPUs"))
        for index, ev in enumerate(result.ranked[:top], 1):
            row, run = ev.offer.instance, ev.run
            spot = "not viable" if run.spot_hours is None else _money(run.spot, run.currency)
            gpus = f"{ev.nodes} x {row.gpu_count} {row.gpu}" + (" (stand-in)" if ev.offer.stand_in else "")
            table.add_row(str(index), ev.offer.provider, row.name, ev.offer.region or "-", gpus,
                          ev.offer.tier.name, ev.billing, f"{ev.images_per_second:,.0f}" + ("*" if ev.cpu_bound else ""),
                          _hours(ev.hours), _money(run.on_demand, run.currency), spot, _gpu_hours(ev, result.mode))
        console.print(table)
        console.print(f"[dim]{explain.ranking_note(result)}. * = CPU-bound. Time = billed hours (start-up"
                      " included). Costs cover the instances only: disks, shared FS, object storage and traffic"
                      " are extra (`gpu-training preview` of a written stack lists them).[/]", highlight=False)
        blockers: dict[str, list[int]] = {}  # one text, said once, with the picks it holds for
        unpriced: dict[str, list[int]] = {}
        for index, ev in enumerate(result.ranked[:explain_count], 1):
            console.print(f"\n[bold]#{index} {ev.nodes} x {ev.offer.instance.name}[/] ({ev.billing}) fits because:")
            for line in explain.reasons(ev, request):
                if line.startswith("cost: unknown"):  # the same command for every pick of a cloud: said once
                    unpriced.setdefault(catalog.refresh_command(ev.offer.provider, ev.offer.region), []).append(index)
                    continue
                console.print(f"  - {line}", highlight=False)
            for blocker in stackfile.write_problems(ev, request, bucket=args.bucket, overrides=args.overrides):
                blockers.setdefault(blocker, []).append(index)
        for command, picks in unpriced.items():
            console.print(f"\n[dim]cost of pick {', '.join(f'#{i}' for i in picks)}: unknown until {command}[/]",
                          highlight=False)
        if blockers:
            console.print("\n[yellow]to write a stack (--write-stack NAME --pick K), give:[/]")
            for blocker, picks in blockers.items():
                console.print(f"  - [yellow]{blocker}[/] (pick {', '.join(f'#{i}' for i in picks)})", highlight=False)
    else:
        console.print("\n[bold red]no configuration meets the request[/]")
        for line in relaxations(result):
            console.print(f"  - {line}", highlight=False)
    groups = explain.rejection_groups(result.rejections)
    if groups:
        console.print("\n[bold]rejected[/]")
        for title, lines, more in groups:
            console.print(f" {title}:")
            for line in lines:
                console.print(f"  - {line}", highlight=False)
            if more:
                console.print(f"  - ... and {more} more")
    for note in result.notes:
        console.print(f"[dim]note: {note}[/]")


def write_stack(args: argparse.Namespace, result: Result, console) -> int:
    if not result.ranked:
        print("error: --write-stack: no configuration fits, so there is nothing to write", file=sys.stderr)
        return NO_FIT
    if args.pick > len(result.ranked):
        print(f"error: --pick {args.pick}: only {len(result.ranked)} configurations fit", file=sys.stderr)
        return USAGE
    ev = result.ranked[args.pick - 1]
    request = result.request
    try:
        path = stackfile.target_path(args.stacks_dir, args.write_stack)
        region = stackfile.region_for(ev, request.regions)
        if not region:
            raise stackfile.StackWriteError(
                f"--write-stack needs a region for {ev.offer.provider}: the catalog price has none; add"
                f" --region {ev.offer.provider}:<region> (e.g. the region your bucket is in)")
        config = stackfile.stack_config(ev, request, region=region, bucket=args.bucket, overrides=args.overrides,
                                        train_command=args.train_command)
        stackfile.validate(config, args.write_stack)
        text = stackfile.render(args.write_stack, ev, request, config, explain.ranking_note(result))
        stackfile.write(path, text, args.force)
    except (stackfile.StackWriteError, StackFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE
    except SpecError as error:
        print(f"error: the stack for {ev.nodes} x {ev.offer.instance.name} does not validate, nothing written;"
              " add the missing keys with --set KEY=VALUE (or --bucket):", file=sys.stderr)
        print(error.render(), file=sys.stderr)
        return USAGE
    message = f"wrote {path}: preview it with `gpu-training preview {args.write_stack}`"
    demo = stackfile.runs_the_example(config)
    if console is not None:
        console.print(f"\n[green]{message}[/]")
        if demo:
            console.print(f"[bold red]WARNING: {demo}[/]", highlight=False)
    else:
        print(message, file=sys.stderr)
        if demo:
            print(f"WARNING: {demo}", file=sys.stderr)
    return OK


def early_problems(args: argparse.Namespace, request: Request) -> list[tuple[str, str]]:
    """What makes the run pointless, found before any ranking is printed: a region a cloud does not have, a
    stack name or --set that cannot be written."""
    from components.providers import regions as region_tables

    problems = []
    for provider, regions in request.regions.items():
        table = region_tables.load(provider)
        if table is None:
            continue
        for region in regions:
            if region not in table.regions:
                problems.append(("--region", f"{provider}:{region} is not among {provider}'s regions; known:"
                                             f" {', '.join(sorted(table.regions))}"))
    if args.write_stack:
        try:
            path = stackfile.target_path(args.stacks_dir, args.write_stack)
        except stackfile.StackWriteError as error:
            problems.append(("--write-stack", str(error).removeprefix(f"--write-stack {args.write_stack!r}: ")))
        else:
            if path.exists() and not args.force:
                problems.append(("--write-stack", f"{path} exists; pick another name, or pass --force to replace it"))
    if args.train_command is not None and not args.train_command.strip():
        problems.append(("--train-command", "is empty; give the command that starts your training"))
    return problems


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        request = request_from(args)
    except RequestError as error:
        for key, message in error.problems:
            print(f"error: {key}: {message}", file=sys.stderr)
        return USAGE
    early = early_problems(args, request)
    if early:
        for key, message in early:
            print(f"error: {key}: {message}", file=sys.stderr)
        return USAGE
    result = search(request)
    console = None
    if args.json:
        print(json.dumps(document(result), indent=2))
    else:
        from rich.console import Console
        console = Console()
        if not console.is_terminal:  # piped or captured: keep the table whole rather than 80 columns
            console = Console(width=160)
        render(result, args.top, args.explain, console, args)
    status = OK if result.feasible else NO_FIT
    if args.write_stack:
        written = write_stack(args, result, console)
        status = written if written != OK else status
    return status


if __name__ == "__main__":
    sys.exit(main())
