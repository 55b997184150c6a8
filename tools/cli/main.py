"""`gpu-training`: make a project, preview, run, watch, read and tear down a training stack from one command line.

Thin wrappers: init is tools/commands/init.py; preview, rehearse, recommend, pack, prices and regions hand
their arguments to the scripts/ of the same name (their --help is the script's); up and down drive
scripts/run.py; status, logs and report read the bucket (tools/runlib). Imports happen inside each
command, so `--help` and shell completion load click only.
"""
from __future__ import annotations

import os
import sys

import click

from ..cliargs import FAILED as EXIT_FAILED, USAGE as EXIT_USAGE
from ..runlib.exitcodes import HELP as RUN_EXIT_CODES, INTERRUPTED as EXIT_INTERRUPTED
from . import paths

# The commands that work on a project's stacks: outside any project they stop with where they looked.
NEEDS_PROJECT = {"preview", "rehearse", "up", "down", "status", "logs", "report", "ssh"}
PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}
EPILOG = """\b
Exit codes (every subcommand): 0 done, 1 failed (a check, the bucket, the cloud), 2 bad arguments or
missing credentials (nothing started); `up` and `down` add their own (3-8, 130: `gpu-training up --help`).
Credentials: one pair per cloud, the variables its Pulumi provider reads:
ALICLOUD_ACCESS_KEY/ALICLOUD_SECRET_KEY, TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY,
HW_ACCESS_KEY/HW_SECRET_KEY, BAIDUCLOUD_ACCESS_KEY/BAIDUCLOUD_SECRET_KEY.
Shell completion: eval "$(_GPU_TRAINING_COMPLETE=bash_source gpu-training)" (zsh_source, fish_source).
"""


def complete_stack(ctx, param, incomplete):
    return [name for name in paths.stack_names() if name.startswith(incomplete)]


def check_stack(ctx, param, value):
    if value is not None and value not in paths.stack_names():
        from tools.stackfiles import missing_stack

        raise click.BadParameter(missing_stack(value, paths.stack_names(),
                                               f"{paths.STACKS}/Pulumi.{value}.yaml does not exist"))
    return value


def stack_argument(required: bool = True):
    return click.argument("stack", shell_complete=complete_stack, callback=check_stack, required=required)


def source_options(f):
    f = click.option("--endpoint", metavar="URL", help="an S3 endpoint instead of the stack's (a local server)")(f)
    f = click.option("--rehearsal", is_flag=True,
                     help="read the rehearsal kept by `gpu-training rehearse STACK --keep` (offline)")(f)
    return f


def run_script(name: str, argv: list[str], entry: str = "main", command: str | None = None) -> int:
    """scripts/<name>.py's main(argv) (or its `entry`), with `gpu-training <command>` (default: <name>) as the
    program name in its usage and its errors: the command the person typed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"gpu_training_script_{name}", paths.scripts() / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses (and pickling) look their module up there
    spec.loader.exec_module(module)
    saved, sys.argv[0] = sys.argv[0], f"gpu-training {command or name}"
    try:
        return getattr(module, entry)(list(argv))
    finally:
        sys.argv[0] = saved


def console():
    from rich.console import Console

    # A wide, unwrapped table when the output is a file or a pipe: ids and URLs stay whole.
    return Console(width=None if sys.stdout.isatty() else 200)


def fail(message: str, code: int = EXIT_FAILED) -> None:
    click.echo(f"gpu-training: {message}", err=True)
    raise SystemExit(code)


def open_source(stack, rehearsal, endpoint):
    from .sources import SourceError, open_stack

    if rehearsal and endpoint:
        fail("--rehearsal and --endpoint: pick one", EXIT_USAGE)
    try:
        return open_stack(stack, rehearsal, endpoint)
    except SourceError as error:
        fail(str(error), error.code)


def bucket_errors():
    """The errors reading a bucket can raise; each ends the command with exit 1 and one line."""
    from botocore.exceptions import BotoCoreError, ClientError

    from tools.runlib.bucket import BucketError

    return BucketError, BotoCoreError, ClientError


# What users of SkyPilot, dstack or Pulumi type for our commands: an unknown command that is one of these is
# answered with ours (click's own did-you-mean only catches misspellings).
SYNONYMS = {
    "launch": "up", "apply": "up", "start": "up", "run": "up",
    "destroy": "down", "stop": "down", "teardown": "down", "delete": "down",
    "advise": "recommend", "advisor": "recommend", "size": "recommend", "suggest": "recommend",
    "gpus": "prices show", "show-gpus": "prices show", "offer": "prices show", "offers": "prices show",
    "catalog": "prices show", "price": "prices",
    "plan": "preview", "dry-run": "preview", "ps": "status", "queue": "status", "jobs": "status",
    "log": "logs", "tail": "logs", "new": "init", "create": "init", "drill": "rehearse", "test": "rehearse",
}


class Commands(click.Group):
    def resolve_command(self, ctx, args):
        name = args[0] if args else None
        if name and name not in self.commands and name in SYNONYMS:
            raise click.UsageError(f"No such command {name!r}: gpu-training's is `gpu-training {SYNONYMS[name]}`"
                                   f" (see gpu-training {SYNONYMS[name].split()[0]} --help).", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=Commands, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="gpu-training", prog_name="gpu-training")
@click.option("--project", "project_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="the project (a folder with Pulumi.yaml and its stacks) to work on; default: the one holding"
                   " the working directory (Pulumi.yaml found upward), else the installed checkout")
def cli(project_dir):
    """Provision GPU training on Alibaba, Tencent, Huawei and Baidu clouds (or ACK), run it, watch it, read
    its logs and report, and tear it down. Start a project in your repository, and try it offline first:

    \b
      gpu-training init                         Pulumi.yaml, a stack (stacks/), .gitignore, next steps
      gpu-training preview entry-t4             the plan, cost and findings (no cloud, no credentials)
      gpu-training rehearse entry-t4 --keep     the training lifecycle on this CPU, bucket kept
      gpu-training status entry-t4 --rehearsal  nodes, markers, step, TTL, cost, what keeps billing
      gpu-training logs entry-t4 --rehearsal    the trainer's and the agent's log
      gpu-training report entry-t4 --rehearsal  utilisation table, diagnosis, plot

    Then for real: `gpu-training up STACK`, `status`, `logs --follow`, `down`.
    """
    from components import project

    if project_dir is not None:  # the scripts run here and their subprocesses read it from the environment
        if not os.path.isfile(os.path.join(project_dir, project.PROJECT_FILE)):
            fail(f"--project {project_dir!r}: holds no {project.PROJECT_FILE}; allowed: a gpu-training project"
                 f" folder (a checkout, or a copy with {project.PROJECT_FILE} and its stack files)", EXIT_USAGE)
        os.environ[project.ENV] = os.path.abspath(project_dir)
    if click.get_current_context().invoked_subcommand == "init":
        return  # it makes a project: where one is (or is not) now does not matter
    try:
        note = paths.current().note()
    except project.ProjectError as error:
        if click.get_current_context().invoked_subcommand in NEEDS_PROJECT:
            fail(str(error), EXIT_USAGE)
        note = None  # init makes one; prices, regions, recommend and check need none
    if note:
        click.echo(f"gpu-training: note: {note}", err=True)
    if not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        os.environ["COLUMNS"] = "200"  # rich (in the scripts too) wraps at 80 columns without a terminal


# --- init: a project in the user's repository -------------------------------------------------------
@cli.command("init", epilog="Exit codes: 0 written; 2 bad options or files in the way (nothing written).")
@click.argument("folder", default=".", type=click.Path(file_okay=False, path_type=str), metavar="[DIR]")
@click.option("--cloud", metavar="NAME", help="alicloud, tencentcloud, huaweicloud or baiducloud (default: the advisor's pick)")
@click.option("--tier", type=click.Choice(["entry", "medium", "large"]),
              help="the guide's scenario: entry 1x T4/A10, medium 2-4x A100/A10, large 8x H100/A100 per node"
                   " (default: entry)")
@click.option("--gpu", metavar="MODEL", help="the accelerator, e.g. T4, A10, A100-80G, H100 (default: the advisor's pick)")
@click.option("--region", metavar="REGION", help="the cloud's region (with --cloud; default: where the pick is cheapest)")
@click.option("--stack", "stack_name", metavar="NAME",
              help="the stack's name (default: TIER-GPU after the cloud's prefix: entry-a10 on Alibaba, tc-, hw-, bd-"
                   " on Tencent, Huawei, Baidu)")
@click.option("--name", "project_name", metavar="NAME", help="the Pulumi project's name (default: DIR's name)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="another stack key for the file (repeatable), e.g. zone=cn-bj-a, billing=spot")
@click.option("--from", "source", metavar="STACK",
              help="copy a stack gpu-training ships instead of the advisor's pick, e.g. tc-entry-t4 (README.md,"
                   " \"Stacks\"); --stack names the copy (default: the same name)")
@click.option("--force", is_flag=True, help="replace files init would write that exist already")
def init_command(folder, cloud, tier, gpu, region, stack_name, project_name, overrides, source, force):
    """Make DIR (default: here) a gpu-training project: a Pulumi.yaml whose program is the installed
    package, a stack file for the cloud and tier (the advisor's pick of type and region for the tier's
    typical job, narrowed by --cloud, --gpu and --region), a .gitignore and a README of next steps.

    In a project init made before (its Pulumi.yaml and __main__.py gpu-training's own, edited or not), it adds
    the stack file only. Existing files are never replaced without --force: a stack file that exists is
    refused (--stack NAME picks another name)."""
    from pathlib import Path

    from tools.commands.init import InitError, init

    try:
        done = init(Path(folder), cloud=cloud, tier=tier, gpu=gpu, region=region, stack=stack_name,
                    name=project_name, overrides=overrides, force=force, source=source)
    except InitError as error:
        fail(str(error), EXIT_USAGE)
    click.echo(f"gpu-training project in {done.folder}: {done.why}")
    for path in done.kept:
        click.echo(f"  kept {path} (gpu-training's already)")
    for path in done.files:
        click.echo(f"  wrote {path}")
    for path in done.appended:
        click.echo(f"  added gpu-training's lines to {path}")
    where = "" if Path(folder).resolve() == Path.cwd().resolve() else f"cd {folder} && "
    click.echo(f"next: {where}gpu-training preview {done.stack}   (then rehearse, up: see {done.notes})")


# --- thin wrappers over scripts/ ---------------------------------------------------------------------
def pass_through(name: str, summary: str, entry: str = "main"):
    """`gpu-training <name> ARGS`: scripts/<name>.py's `entry` with ARGS, then exit with its status."""
    @click.argument("args", nargs=-1, type=click.UNPROCESSED, shell_complete=complete_stack)
    def command(args):
        sys.exit(run_script(name, list(args), entry))

    command.__doc__ = f"{summary}\n\n`gpu-training {name} --help` lists its arguments."
    return cli.command(name, context_settings=PASS_THROUGH, add_help_option=False, short_help=summary)(command)


# The process ends with the preview: process_main leaves the plan's garbage to the exit (scripts/preview.py).
pass_through("preview", "The offline plan of STACK: resources, hourly cost, user-data headroom, findings.",
             entry="process_main")
pass_through("rehearse", "Rehearse STACK's lifecycle on this CPU (preemption drill); --keep keeps its bucket.")
pass_through("recommend", "Size a run: which stack, GPU and node count fit a model, data set and deadline.")
pass_through("pack", "Pack an image folder into shards for staging (and --upload them to a stack's bucket).")


def cloud_pass_through(name: str, summary: str):
    """prices and regions call the cloud SDKs, which may read other names: the scripts fill those from the
    convention (tools/runlib/credentials.use_sdk_names); a missing pair is said here in the convention's names."""
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args):
        from components import providers

        wanted = _provider_argument(list(args))
        # A cloud with a public price feed is refreshed without an account: the script picks the path.
        public = name == "prices" and wanted in providers.with_module("public_prices") and "--signed" not in args
        if "refresh" in args and wanted in providers.with_module("credentials") and not public:
            from tools.runlib.credentials import MissingCredentials, from_env
            try:
                from_env(wanted)
            except MissingCredentials as error:  # the convention's names, not the SDK's
                fail(str(error), EXIT_USAGE)
        sys.exit(run_script(name, list(args)))

    command.__doc__ = f"{summary}\n\n`gpu-training {name} --help` lists its arguments."
    return cli.command(name, context_settings=PASS_THROUGH, add_help_option=False, short_help=summary)(command)


def _provider_argument(args: list[str]):
    for i, word in enumerate(args):
        if word == "--provider" and i + 1 < len(args):
            return args[i + 1]
        if word.startswith("--provider="):
            return word.split("=", 1)[1]
    return None


cloud_pass_through("prices", "The GPU catalog with dated prices (show), or refresh them: public feed, no account.")
cloud_pass_through("regions", "Show or refresh the declared regions and zones of each cloud.")


# --- up and down: scripts/run.py ----------------------------------------------------------------------
@cli.command(epilog="\b\n" + RUN_EXIT_CODES)
@stack_argument()
@click.option("--keep", is_flag=True, help="do not destroy at the end")
@click.option("--yes", is_flag=True, help="destroy without asking")
@click.option("--force", is_flag=True, help="destroy even when markers say data is not saved (loses it)")
@click.option("--watch-only", is_flag=True, help="skip `pulumi up`: watch a running stack, then decide")
@click.option("--timeout", type=float, metavar="H", help="stop watching after H hours (default 24)")
@click.option("--poll", type=float, metavar="S", help="seconds between looks at the markers (default 10)")
@click.option("--data", type=click.Path(), metavar="DIR", help="a packed data set to upload before `up`")
@click.option("--out", type=click.Path(), metavar="DIR", help="report and run record folder (default out/STACK/)")
@click.option("--allow-region-change", is_flag=True,
              help="on a stock-out, move to the next region the stack's failover lists without asking")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="a stack key, as preview's --set (repeatable); written to the stack's config before `pulumi up`")
def up(stack, keep, yes, force, watch_only, timeout, poll, data, out, allow_region_change, overrides):
    """Upload the data set, `pulumi up` STACK, watch its nodes to the end, download the report, then
    destroy once every node's data is saved. Ctrl-C leaves it running.

    When the cloud answers that the type is sold out (or a quota is reached) and the stack lists
    alternatives (its `failover` key), what the attempt created is removed and the next zone, type or
    region is tried, each attempt printed with why it moved on.

    Before anything is created, the stack (with --set) is checked as the preview checks it: each error, the
    stack files' example bucket and missing credentials are named in one pass (exit 2)."""
    argv = [stack, *(arg for value in overrides for arg in ("--set", value)), *(["--keep"] if keep else []), *(["--yes"] if yes else []), *(["--force"] if force else []),
            *(["--watch-only"] if watch_only else []), *(["--allow-region-change"] if allow_region_change else [])]
    for flag, value in (("--timeout", timeout), ("--poll", poll), ("--data", data), ("--out", out)):
        if value is not None:
            argv += [flag, str(value)]
    sys.exit(run_script("run", argv, command="up"))


@cli.command(epilog="Exit codes: 0 destroyed, 1 an unexpected error, 2 bad arguments, 4 data not saved (nothing "
                    "destroyed), 7 destroy failed, 8 not confirmed (`gpu-training up --help` lists them all).")
@stack_argument()
@click.option("--yes", is_flag=True, help="destroy without asking")
@click.option("--force", is_flag=True, help="destroy even when markers say data is not saved (loses it)")
@click.option("--out", type=click.Path(), metavar="DIR", help="the run record folder (default out/STACK/)")
def down(stack, yes, force, out):
    """Check the markers once, then `pulumi refresh` + `destroy` STACK if every node's data is saved.
    The checkpoint bucket is never deleted."""
    argv = [stack, "--destroy-only", *(["--yes"] if yes else []), *(["--force"] if force else [])]
    if out:
        argv += ["--out", str(out)]
    sys.exit(run_script("run", argv, command="down"))


# --- check: credentials, stock and quotas ----------------------------------------------------------------
@cli.command(epilog="Exit codes: 0 all well; 1 a problem found (sold out, a quota short, keys refused), each "
                    "named; 2 credentials missing (the variables to set are listed, every cloud at once).")
@stack_argument(required=False)
@click.option("--endpoint", "endpoints", multiple=True, metavar="CLOUD=URL",
              help="a cloud's API at another address (a local stand-in); repeatable")
@click.option("--json", "as_json", is_flag=True, help="one JSON document")
def check(stack, endpoints, as_json):
    """Which clouds (and Kubernetes, ModelArts, PAI-DLC) the credentials in the environment can use, with
    the reason where not; with STACK, whether its instance types are on sale in its zones right now and
    whether the account's quotas hold what it needs (instances, vCPUs, public IPs), with the numbers.
    Read-only calls only."""
    import json

    from tools.runlib import check as check_lib

    where = {}
    for item in endpoints:
        cloud, sep, url = item.partition("=")
        if not sep or cloud not in providers_names() or not url:
            fail(f"--endpoint {item!r}: expected CLOUD=URL with CLOUD one of {', '.join(providers_names())}", EXIT_USAGE)
        where[cloud] = url
    env = check_lib.environment()
    missing = check_lib.missing_variables(env)
    if stack is None:
        rows = check_lib.cloud_rows(env, where)
        code, line = check_lib.verdict(rows)
        usable = any(r.ok for r in rows)
        code = 0 if usable and code else code
        if not usable and len(missing) >= len(providers_names()):
            code, line = EXIT_USAGE, "no cloud credentials in the environment"
        title = "clouds the credentials in the environment can use"
    else:
        from components.spec import SpecError
        from tools.stackfiles import StackFileError, stack_spec

        try:
            _, spec = stack_spec(stack)
        except (StackFileError, SpecError) as error:
            fail(error.render(), EXIT_USAGE)
        if check_lib.credentials(spec.provider, env) is None:
            for line in missing:
                click.echo(f"  {line}", err=True)
            fail(f"{stack} is on {spec.profile.display_name}: its credentials are not set (above: every cloud's)",
                 EXIT_USAGE)
        rows = check_lib.stack_rows(spec, env, where.get(spec.provider))
        code, line = check_lib.verdict(rows)
        title = f"stack {stack}: {spec.nodes} x {spec.instance.name} ({spec.billing}) in {spec.region}"
    if as_json:
        click.echo(json.dumps({"rows": [vars(r) for r in rows], "missing": missing, "verdict": line}, indent=1))
    else:
        out = console()
        check_lib.render(out, title, rows)
        for item in missing:
            out.print(f"to use it: {item}", highlight=False, soft_wrap=True)
        out.print(("ok: " if code == 0 else "problem: ") + line, highlight=False, soft_wrap=True,
                  style="green" if code == 0 else "bold red")
    sys.exit(code)


def providers_names() -> list[str]:
    from components import providers

    return providers.names()


# --- status, logs, report: the bucket ---------------------------------------------------------------
@cli.command()
@stack_argument(required=False)
@source_options
@click.option("--all", "every_run", is_flag=True, help="markers of earlier runs too")
@click.option("--json", "as_json", is_flag=True, help="one JSON document")
def status(stack, rehearsal, endpoint, every_run, as_json):
    """STACK's nodes and their markers (RUNNING, DONE, FAILED, SYNC_FAILED, PREEMPTED), the newest
    checkpoint's step, the time to the TTL, the cost so far and what keeps billing. Reads the bucket
    and the Pulumi stack outputs (the stack file when there are none); no SSH.

    Without STACK: every stack of the project, one row each (target, cloud/region, state, nodes, GPU
    utilisation, step, cost so far, what keeps billing), looked at in parallel."""
    import json

    from tools.runlib import status as status_lib

    if stack is None:
        if rehearsal or endpoint or every_run:
            fail("--rehearsal, --endpoint and --all need a STACK", EXIT_USAGE)
        from .sources import every_stack

        rows, notes = every_stack(paths.stack_names())
        if as_json:
            click.echo(json.dumps({"stacks": rows, "notes": notes}, indent=1, default=str))
            return
        from tools.runlib.overview import render_all

        out = console()
        for note in notes:
            out.print(f"note: {note}", style="yellow", highlight=False, soft_wrap=True)
        render_all(out, rows)
        return
    source = open_source(stack, rehearsal, endpoint)
    try:
        doc = status_lib.gather(source.bucket, source.outputs, stack, source.baseline, source.since, every_run)
    except bucket_errors() as error:
        fail(f"object storage: {error}")
    doc["notes"] = source.notes
    if as_json:
        click.echo(json.dumps(doc, indent=1, default=str))
        return
    out = console()
    for note in source.notes:
        out.print(f"note: {note}", style="yellow", highlight=False, soft_wrap=True)
    status_lib.render(out, doc)


@cli.command()
@stack_argument()
@source_options
@click.option("--node", metavar="N", help="one node: its id, a unique prefix, or its index in the list")
@click.option("--trainer", "which", flag_value="trainer.log", help="the trainer's log only")
@click.option("--agent", "which", flag_value="agent.log", help="the agent's log only (it holds the trainer's lines too)")
@click.option("--tail", "lines", type=int, metavar="N", help="the last N lines of each log")
@click.option("--follow", "-f", is_flag=True, help="keep printing new lines until every node's marker is final")
@click.option("--poll", type=float, default=2.0, show_default=True, metavar="S", help="seconds between looks (--follow)")
def logs(stack, rehearsal, endpoint, node, which, lines, follow, poll):
    """The trainer's and the agent's log of STACK's nodes, from the bucket (the agent ships them with each
    periodic sync and before it ends), so a node that is gone still has its log."""
    from tools.runlib import logs as logs_lib

    source = open_source(stack, rehearsal, endpoint)
    from tools.runlib import platformjob, targets as run_targets

    try:  # a run whose log is not in the bucket (a platform job's: its job API) says so here
        text = run_targets.for_outputs(source.outputs).log(source.outputs)
    except platformjob.JobUnreachable as error:
        fail(str(error))
    if text is not None:
        click.echo(logs_lib.tail_lines(text, lines) if lines else text, nl=not text.endswith("\n"))
        return
    names = (which,) if which else logs_lib.LOG_NAMES
    try:
        known = logs_lib.nodes_with_logs(source.bucket)
        nodes = logs_lib.pick_nodes(known, node)
        if not nodes and not follow:
            fail(f"no logs in {source.bucket.url}logs/ yet (the agent ships them with its periodic sync)")
        reader = logs_lib.LogReader(source.bucket, nodes, names)
        header = len(nodes) * len(names) > 1

        def emit(who, name, text):
            if header:
                click.secho(f"==> {who} {name} <==", bold=True)
            click.echo(logs_lib.tail_lines(text, lines) if lines else text, nl=not text.endswith("\n"))

        for item in reader.new_text():
            emit(*item)
        if follow and source.rehearsal is None:
            if node is None:  # nodes that start logging later (a replacement) join in
                reader.nodes = nodes or known
            lines = None
            logs_lib.follow(reader, emit, logs_lib.all_final(source.bucket, reader.nodes), poll_s=poll)
    except logs_lib.LogError as error:
        fail(str(error), EXIT_USAGE)
    except bucket_errors() as error:
        fail(f"object storage: {error}")
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


@cli.command()
@stack_argument()
@source_options
@click.option("--dir", "folder", type=click.Path(file_okay=False), metavar="DIR",
              help="read this downloaded report folder (<DIR>/<node>/...) instead of the bucket")
@click.option("--all", "every_run", is_flag=True, help="every node that ever reported, not only the newest run's")
@click.option("--json", "as_json", is_flag=True, help="one JSON document (nodes, run, plot)")
def report(stack, rehearsal, endpoint, folder, every_run, as_json):
    """Every node's utilisation report of STACK in one table, the run's diagnosis and advice, one combined plot,
    and what the run cost (each node's hours x the stack's prices, its data disk, the shared file system, with
    the prices' sources and dates."""
    argv = [stack, *(["--all"] if every_run else []), *(["--json"] if as_json else [])]
    if not rehearsal and not folder:
        from tools.runlib import targets as run_targets

        from .sources import SourceError, offline_outputs
        try:
            run = run_targets.for_outputs(offline_outputs(stack))
        except SourceError as error:
            fail(str(error), error.code)
        if not run.report:
            fail(f"stack {stack} runs on {run.target.description}: no node agent, so no utilisation report; its state"
                 f" is `gpu-training status {stack}` and its log `gpu-training logs {stack}` (the job API's)")
    if rehearsal:
        source = open_source(stack, rehearsal, None)
        target = source.rehearsal / "report"
        try:
            source.bucket.download_report(source.bucket.report_nodes(), target)
            from tools.runlib.runcost import save_markers

            save_markers(source.bucket.markers(), target)  # each node's hours: the run's cost
        except bucket_errors() as error:
            fail(f"object storage: {error}")
        if not as_json:
            click.echo("rehearsal: the accelerator is simulated (a fake nvidia-smi at a fixed utilisation): the "
                       "figures below test the report, they measure nothing")
            sys.stdout.flush()
        argv += ["--dir", str(target)]
    elif folder:
        argv += ["--dir", folder]
    elif endpoint:
        argv += ["--endpoint", endpoint]
    sys.exit(run_script("report", argv))


@cli.command()
@stack_argument()
@click.option("--print", "only_print", is_flag=True, help="print the ssh command instead of running it")
def ssh(stack, only_print):
    """Log in to STACK's node over SSH, where the stack allows it (sshAllowCidrs and sshPublicKey); otherwise
    say how to allow it. The address comes from the stack's `sshCommand` output (Pulumi)."""
    import shlex

    from .sources import offline_outputs, pulumi_outputs

    outputs, why = pulumi_outputs(stack)
    command = (outputs or {}).get("sshCommand")
    if not command:
        from tools.stackfiles import stack_spec

        allowed = stack_spec(stack)[1].ssh_allow_cidrs if outputs is None else ()
        offline_outputs(stack)  # a stack file that does not validate is exit 2 with its message
        reason = (f"no Pulumi stack outputs ({why})" if outputs is None else "its sshCommand output is empty")
        fail(f"stack {stack}: no SSH command: {reason}. "
             + ("" if allowed else "SSH is closed by default: set sshAllowCidrs (your address, e.g. "
                "'[\"203.0.113.7/32\"]') and sshPublicKey in stacks/Pulumi." + stack + ".yaml, then `gpu-training up "
                + stack + "`; the nodes release themselves when training ends unless keep: true"))
    if only_print or "<" in command:  # a spot pool's placeholder: the address is only known per node
        click.echo(command)
        return
    words = shlex.split(command)
    os.execvp(words[0], words)


def main():  # the console script (pyproject [project.scripts])
    cli(prog_name="gpu-training")


if __name__ == "__main__":
    main()
