#!/usr/bin/env python3
"""Run a stack's training end to end: `pulumi up`, watch the nodes' markers in object storage, download
the utilisation report, then `pulumi refresh` + `destroy` once every node's data is saved.

It refuses to destroy while markers say data exists only on a node (SYNC_FAILED, a node still
RUNNING, no marker at all) unless --force, and says what to do instead. Ctrl-C leaves the stack
running and prints the commands to resume watching or to destroy. See docs/run.md.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from tools import project
from tools.runlib import exitcodes
from tools.runlib.driver import DEFAULT_TIMEOUT_H, Driver, RunOptions

# The project `pulumi up` works in: the current one (tools/project.py), not the installed checkout by default.
REPO = project.root()

STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class UsageError(Exception):
    """Bad arguments: one clear line, exit 2."""


class Refused(UsageError):
    """What the preview finds that `up` cannot create: every problem at once, before anything is created (exit 2)."""

    def __init__(self, stack: str, problems: list[str]):
        self.problems = problems
        if len(problems) == 1:  # one line, as every command says a single problem
            super().__init__(f"stack {stack}, before `pulumi up` (nothing was created): {problems[0]}")
        else:
            super().__init__(f"stack {stack}: {len(problems)} problems found before `pulumi up`; nothing was"
                             " created:\n" + "\n".join(f"  {line}" for line in problems))


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=exitcodes.HELP + """
credentials: one pair per cloud, the variables its Pulumi provider reads, for `pulumi up` and for
  the watcher's bucket reads alike: ALICLOUD_ACCESS_KEY/ALICLOUD_SECRET_KEY,
  TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY, HW_ACCESS_KEY/HW_SECRET_KEY,
  BAIDUCLOUD_ACCESS_KEY/BAIDUCLOUD_SECRET_KEY (docs/cli.md, "Credentials"); `pulumi login` as usual.

examples:
  run.py entry-t4                       up, watch (24 h at most), report, ask, destroy
  run.py entry-t4 --yes --timeout 6     unattended, give up watching after 6 h
  run.py entry-t4 --keep                up and watch, leave the stack for another run
  run.py entry-t4 --watch-only          resume watching after Ctrl-C
  run.py entry-t4 --destroy-only        check the markers once, then destroy if data is saved
  run.py entry-t4 --set checkpoint.bucket=my-bucket --set billing=spot
                                        change keys as preview's --set does, written to the stack's config

before `up`: the stack as the preview reads it (with --set); an error it finds, the stack files' example bucket
  and missing credentials are named all at once, exit 2, and nothing is created.

stock-outs: when the cloud answers that the type is sold out (or a quota is reached) where it was asked,
  a stack that lists alternatives (its `failover` key: zones, instanceTypes, regions) is torn down and
  tried again at the next one; each attempt and why it moved on is printed (docs/capacity.md).
""")
    parser.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--keep", action="store_true", help="do not destroy at the end")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_H, metavar="H",
                        help=f"stop watching after H hours (default {DEFAULT_TIMEOUT_H:g}); the nodes' own "
                             "TTL (agent.maxHours) still applies")
    parser.add_argument("--yes", action="store_true", help="destroy without asking")
    parser.add_argument("--force", action="store_true",
                        help="destroy even when markers say data is not saved (loses it)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--watch-only", action="store_true", help="skip `up`: watch a running stack, then destroy")
    mode.add_argument("--destroy-only", action="store_true",
                      help="skip `up` and the watch: check the markers once, then destroy")
    parser.add_argument("--poll", type=float, default=10.0, metavar="S",
                        help="seconds between looks at the markers (default 10)")
    parser.add_argument("--data", type=Path, default=None, metavar="DIR",
                        help="upload this packed data set (scripts/pack.py) before `up` (after it when the stack "
                             "creates its bucket: nodes wait data.waitMinutes); default: the stack's data.localDir "
                             "(docs/data.md)")
    parser.add_argument("--allow-region-change", action="store_true",
                        help="when the stack's failover lists regions, move to the next one on a stock-out without "
                             "asking (the checkpoint bucket stays where it is: docs/capacity.md)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where the report and the run record go (default out/<stack>/)")
    # Pulumi's own `pulumi up --config` saves its values to the stack's config file too
    # (https://www.pulumi.com/docs/iac/cli/commands/pulumi_up/: "Config to use during the update and save to the
    # stack config file"): later refreshes, destroys and ups read the stack that was deployed.
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a stack key for this up, as preview's --set (repeatable; KEY is gpu-training:KEY unless"
                             " it names a namespace, checkpoint.bucket=NAME sets one field); written to the stack's"
                             " config before `pulumi up`, as `pulumi up --config` does")
    return parser


def options(argv: list[str] | None, work_dir: Path | None = None, check_credentials: bool = False) -> RunOptions:
    """The run's options; in full mode the stack is checked as the preview checks it (Refused names every
    problem, `check_credentials`: the stack's cloud's credentials among them)."""
    work_dir = work_dir or REPO
    args = build_parser().parse_args(argv)
    stacks = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in project.stacks_dir(work_dir).glob("Pulumi.*.yaml"))
    if not STACK_NAME.match(args.stack) or args.stack not in stacks:
        from tools.stackfiles import missing_stack

        raise UsageError(missing_stack(args.stack, stacks, f"stacks/Pulumi.{args.stack}.yaml does not exist"))
    if not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout:g}: must be > 0 hours")
    if not args.poll > 0:
        raise UsageError(f"--poll {args.poll:g}: must be > 0 seconds")
    if args.keep and args.destroy_only:
        raise UsageError("--keep with --destroy-only: they contradict each other; pick one")
    if args.keep and args.force:
        raise UsageError("--force with --keep: --force only matters when destroying")
    mode = "watch" if args.watch_only else "destroy" if args.destroy_only else "full"
    if args.data is not None and mode != "full":
        raise UsageError("--data is uploaded with `up`: not with --watch-only or --destroy-only "
                         "(upload with scripts/pack.py DIR OUT --upload STACK)")
    if args.overrides and mode != "full":
        raise UsageError("--set changes what `up` creates: not with --watch-only or --destroy-only (change the"
                         " stack's config with `pulumi config set` instead)")
    spec, data = preflight(args.stack, args.overrides, args.data, check_credentials, work_dir) \
        if mode == "full" else (None, {})
    capacity = stack_capacity(args.stack, spec) if spec is not None else {}
    # out/ moves with GPU_TRAINING_OUT (docs/cli.md), as everywhere else.
    out_root = project.out_dir() if os.environ.get(project.OUT_ENV) else work_dir / "out"
    return RunOptions(stack=args.stack, work_dir=work_dir, out_dir=args.out or out_root / args.stack,
                      mode=mode, keep=args.keep, force=args.force, yes=args.yes, timeout_h=args.timeout,
                      poll_s=args.poll, teardown_runs_program=teardown_runs_program(args.stack, spec),
                      allow_region_change=args.allow_region_change, config_changes=config_changes(args.overrides),
                      **capacity, **data)


def preflight(stack: str, overrides: list[str], data_dir: Path | None, check_credentials: bool,
              work_dir: Path | None = None):
    """(spec, data options) of the stack as `up` would create it (its file with `overrides`), or Refused naming in
    one pass each error the preview finds, each finding `up` cannot get past (Finding.blocks_up: the example
    bucket), a data set that does not fit, (check_credentials) missing credentials of the stack's cloud, and a
    folder of the project (`work_dir`, where `pulumi up` runs the program) that hides one of our packages."""
    from components.spec import SpecError
    from gpu_training.shadowing import hidden_in
    from tools.stackfiles import StackFileError, apply_overrides, load_stack_config, stack_spec
    problems: list[str] = hidden_in(work_dir) if work_dir is not None else []
    spec, data, findings = None, {}, []
    try:
        spec = stack_spec(stack, tuple(overrides))[1]
        findings = list(spec.findings)
    except StackFileError as exc:
        problems.append(str(exc))
    except SpecError as exc:
        findings = exc.findings
    problems += [f"{f.key}: {f.message}" for f in findings if f.level == "error"]
    problems += [f"{f.key}: {f.message} (`up` stops here: --set {f.key}=... or change the stack file)"
                 for f in findings if f.blocks_up]
    if spec is not None:
        # A target's own placeholders (a platform stack's example workspace id): the preview flags them too.
        from components import targets
        named = {f.key for f in findings if f.blocks_up}
        problems += [f"{p.key}: {p.value!r} is {p.why} (`up` stops here: --set {p.key}=... or change the stack file)"
                     for p in getattr(targets.of(spec), "placeholders", lambda _: [])(spec) if p.key not in named]
        try:
            data = stack_data(stack, data_dir, spec)
        except UsageError as exc:
            problems.append(str(exc))
    if check_credentials:
        from tools.runlib.credentials import MissingCredentials, from_env
        try:
            provider = spec.provider if spec is not None else str(
                apply_overrides(load_stack_config(stack), overrides).get("gpu-training:provider", "alicloud"))
            from_env(provider)
        except MissingCredentials as exc:
            problems.append(f"credentials: {exc}")
        except (StackFileError, KeyError, ValueError):
            pass  # the stack's cloud is unknown: the errors above say why
    if problems:
        raise Refused(stack, problems)
    return spec, data


def config_changes(overrides: list[str]) -> dict:
    """`--set` as the config keys and values `pulumi config set` writes: gpu-training:KEY (or the namespace
    given) holds the text; a dotted KEY is a path into the object (checkpoint.bucket) whose value is typed by
    the same conversion the check used (tools.stackfiles.path_value: Pulumi's --path rule)."""
    from tools.stackfiles import config_path, full_key, path_value
    changes = {}
    for assignment in overrides:
        key, _, value = assignment.partition("=")
        key = key.strip()
        changes[full_key(key)] = path_value(value) if config_path(key)[1] else value
    return changes


def stack_capacity(stack: str, spec) -> dict:
    """The stack's cloud (whose stock-out codes `up` knows) and the attempts its `failover` key allows."""
    from tools.runlib.failover import plan_for
    return {"provider": spec.provider, "failover": plan_for(spec)}


def teardown_runs_program(stack: str, spec=None) -> bool:
    """Whether the stack's target needs refresh and destroy to run the program (components/targets): a
    Kubernetes stack's provider takes a temporary kubeconfig that the program reads (docs/kubernetes.md), so
    without it they use the expired one recorded at the last `up`."""
    from components import targets
    from components.spec import SpecError
    from tools.stackfiles import StackFileError, stack_spec
    try:
        return targets.of(spec or stack_spec(stack)[1]).teardown_runs_program
    except (StackFileError, SpecError) as exc:
        raise UsageError(exc.render()) from None


def stack_data(stack: str, override: Path | None, spec) -> dict:
    """The data set run.py uploads (data_dir) and the bucket its stack file names (data_bucket)."""
    from components.dataset import DataSpec, read_manifest
    folder = override or spec.data.local_dir
    if folder is None:
        return {}
    if override is not None:
        if not spec.data.stage:
            raise UsageError(f"--data {override}: stack {stack} has no data config, so its nodes stage nothing; set "
                             "data.localDir (or data.sizeGb for a set uploaded another way) in its stack file")
        if spec.data.local_dir is not None and override.resolve() != spec.data.local_dir:
            raise UsageError(f"--data {override}: stack {stack} is planned with data.localDir "
                             f"{spec.data.local_dir} (its nodes stage only that manifest); change data.localDir instead")
    try:
        manifest = read_manifest(folder)
    except ValueError as exc:
        raise UsageError(f"--data / data.localDir: {exc}") from None
    need = DataSpec(stage=True, size_gb=manifest["bytes"] / 1e9).disk_needed_gib()
    if need > spec.data_disk.size_gb:
        raise UsageError(f"--data {folder}: {manifest['bytes'] / 1e9:.1f} GB needs a {need} GiB data disk; stack "
                         f"{stack} has {spec.data_disk.size_gb} GiB (dataDiskGb)")
    return {"data_dir": folder, "data_bucket": spec.checkpoint.output(), "data_bucket_from_stack": spec.checkpoint.create}


def stack_provider(stack: str) -> str:
    """The cloud of a stack, from its stack file (whose credentials the watcher reads the bucket with)."""
    from components.spec import SpecError
    from tools.stackfiles import StackFileError, stack_spec
    try:
        return stack_spec(stack)[1].provider
    except (StackFileError, SpecError) as exc:
        raise UsageError(exc.render()) from None


def program() -> str:
    """The command as the person typed it: `gpu-training up` or `gpu-training down` (tools/cli/main.py sets
    it), run.py when run directly."""
    return os.path.basename(sys.argv[0]) or "run.py"


def main(argv: list[str] | None = None, stack_factory=None, **driver_kwargs) -> int:
    """The command; tests pass a recording ``stack_factory`` in place of the Automation API layer."""
    try:
        # With the real Automation layer, missing credentials are named with the stack's problems, in one pass.
        opts = options(argv, check_credentials=stack_factory is None)
    except UsageError as exc:
        print(f"{program()}: error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    if stack_factory is None:
        from functools import partial

        from tools.runlib.automation import PulumiStack
        from tools.runlib.bucket import StackBucket
        from tools.runlib.credentials import MissingCredentials, from_env
        try:
            # Checked before `up`: a stack nobody can watch would never be destroyed by this run.
            credentials = from_env(opts.provider or stack_provider(opts.stack))  # full mode: the checked stack's
        except (MissingCredentials, UsageError) as exc:
            print(f"{program()}: error: {exc}", file=sys.stderr)
            return exitcodes.USAGE
        stack_factory = PulumiStack
        driver_kwargs.setdefault("bucket_factory", partial(StackBucket, session=credentials.boto3_session()))
    return Driver(opts, stack_factory, **driver_kwargs).run()


if __name__ == "__main__":
    sys.exit(main())
