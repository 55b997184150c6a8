"""`gpu-training init [DIR]`: make a folder of the user's own repository a gpu-training project.

It writes a Pulumi project whose program is the installed package (a two-line __main__.py that imports
gpu_training and runs it: no copy of gpu-training's code), one stack file for the chosen cloud and tier,
a .gitignore (lines added to the user's own), and a short README of the next steps. The stack is the
advisor's pick (tools/advisor) for a reference workload of the tier (REFERENCE_WORKLOADS), among the
types of the tier's own GPUs first, so `--cloud`, `--tier` and `--gpu` only narrow the choice; the file
is validated by the same spec as a preview before anything is written. With `source` (`--from NAME`) the
stack is a copy of one gpu-training ships (stacks/, in a wheel gpu_training/_shipped/stacks) instead.

In a project init made before (`is_ours`: its Pulumi.yaml and __main__.py are the ones init writes, edited
or not) only the stack file is added, so one project holds a stack per cloud; the default names carry the
cloud's prefix (profile.stack_prefix) for that. Nothing is overwritten without `force`, a stack file least
of all; every refusal is InitError (the CLI: exit 2, one message, nothing written).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Optional, Sequence

import yaml

from components import project, schema
from components.datafiles import atomic_write

NS = schema.NAMESPACE
PROGRAM = "__main__.py"
STACKS = "stacks"
GITIGNORE_LINES = (".venv/", "__pycache__/", "*.pyc", "/out/")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
PROJECT_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")  # Pulumi: "alphanumeric characters, hyphens, underscores, and periods"
# The workload the advisor sizes a new project's stack for, per tier: the tier's typical job in the guide.
# entry: a CIFAR-10-sized run (50,000 images at 32 px); medium and large: ResNet-50 on ImageNet-1k
# (1,281,167 images), a shorter and a full recipe. `gpu-training recommend ... --write-stack` sizes for yours.
REFERENCE_WORKLOADS = {
    "entry": {"model": "resnet18", "images": 50_000, "resolution": 32, "epochs": 30, "deadline_hours": 12},
    "medium": {"model": "resnet50", "images": 1_281_167, "epochs": 30, "deadline_hours": 48},
    "large": {"model": "resnet50", "images": 1_281_167, "epochs": 90, "deadline_hours": 12},
}


class InitError(Exception):
    """Bad options, or files that would be overwritten: nothing was written."""


@dataclass(frozen=True)
class Pick:
    """The advisor's choice for the new stack, and how it was made."""
    provider: str
    region: str
    tier: str
    gpu: str
    config: dict
    why: str


@dataclass(frozen=True)
class Written:
    folder: Path
    stack: str
    why: str              # what the stack is: the advisor's pick and how it was made, or the shipped stack copied
    files: list[str]      # written, relative to the folder
    appended: list[str]   # existing files that got lines added
    kept: list[str]       # the project's own files, gpu-training's already (is_ours): left as they are
    notes: str            # the file with the next steps (README.md, or GPU-TRAINING.md beside the user's)


def choose(cloud: Optional[str], tier: str, gpu: Optional[str], region: Optional[str],
           overrides: Sequence[str] = ()) -> Pick:
    """The advisor's pick for the tier's reference workload, narrowed by the options given; `overrides`
    (KEY=VALUE, as `preview --set` takes them) are written into the stack too."""
    from components import providers
    from components.providers import regions as region_tables
    from components.tiers import tiers
    from tools.advisor import stackfile
    from tools.advisor.optimiser import search
    from tools.advisor.request import RequestError, build_request, usable_providers
    from tools.stackfiles import StackFileError

    table = tiers()
    if tier not in table:
        raise InitError(f"--tier {tier!r}: allowed: {', '.join(table)}")
    usable = usable_providers()
    if cloud is not None and cloud not in usable:
        raise InitError(f"--cloud {cloud!r}: allowed: {', '.join(usable)}")
    the_tier = table[tier]
    if gpu is not None and not the_tier.accepts(gpu):
        raise InitError(f"--gpu {gpu!r}: the {tier} tier takes {', '.join(the_tier.gpus + the_tier.extra_gpus)}")
    if region is not None and cloud is None:
        raise InitError("--region names a region of one cloud: give --cloud too")
    workload = REFERENCE_WORKLOADS[tier]
    try:
        request = build_request(**workload, provider_names=[cloud] if cloud else [],
                                regions=[f"{cloud}:{region}"] if region else [])
    except RequestError as error:  # a region the cloud does not declare
        raise InitError(str(error).replace("--region", "--region (with --cloud)")) from None
    result = search(request)

    def wanted(offer) -> bool:
        return offer.tier is not None and offer.tier.name == tier and (gpu is None or offer.instance.gpu == gpu)

    def where(ev) -> Optional[str]:
        """The priced region of the pick, else the first region the cloud declares (regions.yaml)."""
        table = region_tables.load(ev.offer.provider)
        return stackfile.region_for(ev, request.regions) or (next(iter(table.regions)) if table else None)

    fitting = [ev for ev in result.ranked if wanted(ev.offer)]
    # The tier's own GPUs before the ones it only accepts (tiers.yaml: extraGpus, a stand-in with a warning).
    fitting.sort(key=lambda ev: ev.offer.instance.gpu not in the_tier.gpus)
    placed = [ev for ev in fitting if where(ev)]
    if not placed:
        scope = f"{cloud}'s catalog" if cloud else "any cloud's catalog"
        why = ([f"{r.offer.instance.name}: {r.message}" for r in result.rejections if wanted(r.offer)][:3]
               or ["no type of the tier" + (f" with {gpu}" if gpu else "")])
        if fitting:
            why = [f"{fitting[0].offer.instance.name} fits, but {cloud or fitting[0].offer.provider} has no region"
                   " table to pick a region from: give --region"]
        raise InitError(f"no instance type of {scope} fits the {tier} tier" + (f" with {gpu}" if gpu else "")
                        + (f" in {region}" if region else "") + " for its typical job (" + "; ".join(why)
                        + f"). The tier takes {', '.join(the_tier.gpus + the_tier.extra_gpus)}; `gpu-training prices`"
                        " lists what each cloud sells")
    ev = placed[0]
    chosen_region = where(ev)
    try:
        # The cloud's example name (a COS name carries an APPID): the preview warns of it and `up` refuses it.
        example = providers.profile(ev.offer.provider).object_storage.example_bucket or stackfile.DEFAULT_BUCKET
        config = stackfile.stack_config(ev, request, region=chosen_region, bucket=example, overrides=overrides)
    except StackFileError as error:
        raise InitError(f"--set: {error}") from None
    # Sized for the reference workload, not the user's: the schema's defaults say less that is wrong.
    config.pop(f"{NS}:datasetGb", None)
    config.pop(f"{NS}:maxHours", None)
    row = ev.offer.instance
    cost = "price unknown" if ev.cost is None else f"~{ev.cost:,.0f} {ev.run.currency}"
    why = (f"the advisor's pick for {workload['model']} on {workload['images']:,} images x {workload['epochs']}"
           f" epochs within {workload['deadline_hours']} h ({cost}, {result.mode} ranking): {ev.nodes} x {row.name}"
           f" ({row.gpu_count}x {row.gpu}) in {chosen_region} on {providers.profile(ev.offer.provider).display_name}")
    return Pick(ev.offer.provider, chosen_region, tier, row.gpu, config, why)


def stack_name(pick: Optional[Pick], given: Optional[str]) -> str:
    """`given`, else PREFIX-TIER-GPU with the cloud's prefix (profile.stack_prefix: tc-, hw-, bd-, none for
    Alibaba, as the shipped stacks are named), so one tier and GPU on two clouds are two stacks."""
    from components import providers

    name = given or re.sub(r"[^a-z0-9-]+", "-", (providers.profile(pick.provider).stack_prefix
                                                  + f"{pick.tier}-{pick.gpu}").lower()).strip("-")
    if not NAME_RE.match(name):
        raise InitError(f"--stack {name!r}: a stack name is lowercase letters, digits and '-' (at most 63"
                        " characters), e.g. entry-t4")
    return name


def project_name(folder: Path, given: Optional[str]) -> str:
    name = given or re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.resolve().name).strip("-") or "gpu-training"
    if not PROJECT_NAME_RE.match(name):
        raise InitError(f"--name {name!r}: a Pulumi project name is letters, digits, '-', '_' and '.'")
    return name


def virtualenv() -> Optional[str]:
    """The virtual environment this gpu-training runs in (pipx's, or a venv), for Pulumi.yaml: `pulumi up`
    then runs the program with the same interpreter and packages. None outside one (a system install)."""
    return sys.prefix if sys.prefix != sys.base_prefix else None


def version() -> str:
    try:
        return metadata.version("gpu-training")
    except metadata.PackageNotFoundError:  # a clone on sys.path without an install
        return "unknown"


def pulumi_yaml(name: str, venv: Optional[str]) -> str:
    options = ["    toolchain: pip"]
    if venv:
        # pulumi/pulumi sdk/python/toolchain (resolveVirtualEnvironmentPath): an absolute path is used as given.
        options.append(f"    virtualenv: {venv}  # the environment gpu-training is installed in (gpu-training init)")
    return "\n".join([
        f"# {name}: GPU training environments made with gpu-training {version()} (`gpu-training init`).",
        "# The program is the installed gpu_training package (__main__.py); the stacks say what to build.",
        f"name: {name}",
        "description: GPU training environments (gpu-training)",
        "runtime:",
        "  name: python",
        "  options:",
        *options,
        f"stackConfigDir: {STACKS}",
        "",
    ])


MAIN_PY = '''"""This project's Pulumi program: gpu-training's own, from the installed package (no copy of its code).
The stack file (stacks/Pulumi.<stack>.yaml) says what to build; `gpu-training --help` and README.md say how."""
import gpu_training

gpu_training.main()
'''


def stack_yaml(stack: str, pick: Pick) -> str:
    header = [
        f"{stack}: written by `gpu-training init` ({version()}): {pick.why}.",
        f"Before `pulumi up`: set {NS}:checkpoint.bucket to a bucket you own (same region), and {NS}:train to your"
        f" job: command, and codeDir, your code's folder relative to this project (without codeDir the example"
        f" trainer that ships with gpu-training runs). `gpu-training preview {stack}` shows what it would"
        " build; the keys and their defaults: gpu-training's README.md, \"Config reference\".",
    ]
    lines = []
    for text in header:
        lines += _wrap(text)
    body = yaml.safe_dump({"config": pick.config}, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return "\n".join(lines) + "\n" + body


def _wrap(text: str, width: int = 100) -> list[str]:
    lines, current = [], ""
    for word in text.split(" "):
        if current and len(current) + 1 + len(word) > width - 2:
            lines.append("# " + current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return lines + ["# " + current]


def readme(stack: str, why: str) -> str:
    return f"""# GPU training with gpu-training

This folder is a Pulumi project whose program is the installed `gpu-training` package; the stack files
in `{STACKS}/` say what to build. `{STACKS}/Pulumi.{stack}.yaml` is {why}.

## Next steps

1. Look at the plan, offline (no cloud account, no Pulumi CLI): resources, hourly cost, what keeps billing.

       gpu-training preview {stack}

2. Point the stack at your job: in `{STACKS}/Pulumi.{stack}.yaml` set `{NS}:checkpoint.bucket` (a bucket you
   own), and `{NS}:train.command` with `{NS}:train.codeDir` (your code's folder, relative to this folder).
   Try another size with `gpu-training preview {stack} --set gpusPerNode=2`, or let the advisor size a
   stack for your model: `gpu-training recommend --model resnet50 --images 1281167 --epochs 90
   --deadline 24 --write-stack my-run`.

3. Rehearse the lifecycle on this machine's CPU (bootstrap, agent, checkpoints, a preemption drill):

       gpu-training rehearse {stack}

4. Deploy, watch and tear down (credentials: `gpu-training check`):

       gpu-training up {stack}        # or: pulumi up --stack {stack}
       gpu-training status {stack}
       gpu-training logs {stack} --follow
       gpu-training down {stack}

A Pulumi program of your own can use the same components with typed arguments instead:
`from gpu_training import TrainingCluster, TrainingArgs`.
"""


def plan_files(folder: Path, stack: str, stack_text: str, why: str, name: str,
               venv: Optional[str]) -> tuple[dict[str, str], list[str]]:
    """(each file init writes, relative to the folder, and its text; the project files it keeps). In a
    project init made before (its Pulumi.yaml gpu-training's own, `is_ours`) that is the stack file, and a
    project file only where it is missing; otherwise the project files, the stack file and the next steps,
    whose README.md moves aside for an existing one."""
    stack_file = {f"{STACKS}/Pulumi.{stack}.yaml": stack_text}
    if is_ours(folder, project.PROJECT_FILE):
        kept = [path for path in PROJECT_FILES if is_ours(folder, path)]
        return {**{p: t for p, t in _project_files(name, venv).items() if p not in kept}, **stack_file}, kept
    notes = "README.md" if not (folder / "README.md").exists() else "GPU-TRAINING.md"
    return {**_project_files(name, venv), **stack_file, notes: readme(stack, why)}, []


def _project_files(name: str, venv: Optional[str]) -> dict[str, str]:
    return {project.PROJECT_FILE: pulumi_yaml(name, venv), PROGRAM: MAIN_PY}


def is_ours(folder: Path, path: str) -> bool:
    """Whether the project file `path` exists and is one `gpu-training init` writes, edited or not: a
    Pulumi.yaml of the python runtime whose stack files are in stacks/ (its name, description and
    virtualenv are the user's to change), a __main__.py that only imports gpu_training and calls its main().
    Such a project gets another stack without --force; any other Pulumi.yaml or __main__.py is the user's."""
    import ast

    try:
        text = (folder / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if path == project.PROJECT_FILE:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            return False
        runtime = doc.get("runtime") if isinstance(doc, dict) else None
        runtime = runtime.get("name") if isinstance(runtime, dict) else runtime
        return runtime == "python" and doc.get("stackConfigDir") == STACKS and doc.get("main") in (None, ".")
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return False
    statements = {ast.unparse(node) for node in body
                  if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))}  # the docstring
    return statements == {"import gpu_training", "gpu_training.main()"}


PROJECT_FILES = (project.PROJECT_FILE, PROGRAM)


def validate(stack: str, pick: Pick) -> None:
    """The stack as the engine would pass it, through the spec (it names no folder of the project yet)."""
    from components.spec import SpecError
    from components.validation import build_spec
    from tools.stackfiles import engine_form

    try:
        build_spec(engine_form(pick.config), stack=stack)
    except SpecError as error:  # what the pick leaves unsaid (Baidu's zone): the keys to give with --set
        problems = "\n".join(f"  {f.key}: {f.message}" for f in error.errors)
        raise InitError(f"the stack would not validate; give what it needs with --set KEY=VALUE (nothing was"
                        f" written):\n{problems}") from None


def shipped_stack(source: str, stack: str) -> tuple[str, str]:
    """(the text of stack file `stack`, what it is): a copy of the stack gpu-training ships as `source`
    (README.md, "Stacks"), comments and example values (the checkpoint bucket) kept as they are, under a
    line saying where it came from; InitError naming the shipped stacks (and the closest) when there is none."""
    from components import shipped
    from tools.stackfiles import closest, shipped_stack_names

    names = shipped_stack_names()
    if source not in names:
        guess = closest(source, names)
        raise InitError(f"--from {source!r}: gpu-training ships no such stack{f' (did you mean {guess}?)' if guess else ''};"
                        f" allowed: {', '.join(names) or 'none (a wheel without stacks: reinstall gpu-training)'}")
    text = (shipped.folder("stacks") / f"Pulumi.{source}.yaml").read_text(encoding="utf-8")
    why = f"a copy of the stack {source} that gpu-training {version()} ships"
    header = _wrap(f"{stack}: {why} (`gpu-training init --from {source}`). Before `pulumi up`: set"
                   f" {NS}:checkpoint.bucket to a bucket you own (the preview warns while it is the example name).")
    return "\n".join(header) + "\n" + text, why


def init(folder: Path, *, cloud: Optional[str] = None, tier: Optional[str] = None, gpu: Optional[str] = None,
         region: Optional[str] = None, stack: Optional[str] = None, name: Optional[str] = None,
         overrides: Sequence[str] = (), force: bool = False, source: Optional[str] = None) -> Written:
    """Write the project into `folder` (made if missing), its stack the advisor's pick or, with `source`, a
    copy of a shipped stack; InitError, with nothing written, otherwise."""
    if folder.exists() and not folder.is_dir():
        raise InitError(f"{folder}: is a file; give a folder (made if missing)")
    if source is not None:
        given = [option for option, value in (("--cloud", cloud), ("--tier", tier), ("--gpu", gpu),
                                              ("--region", region), ("--set", overrides)) if value]
        if given:
            raise InitError(f"--from {source!r} copies a shipped stack as it is, so {', '.join(given)} cannot go"
                            " with it (they narrow the advisor's pick: init without --from); change the copy in its"
                            " file, or try a value with `gpu-training preview STACK --set KEY=VALUE`")
        stack = stack_name(None, stack or source)
        stack_text, why = shipped_stack(source, stack)
        pick = None
    else:
        pick = choose(cloud, tier or "entry", gpu, region, overrides)
        stack = stack_name(pick, stack)
        stack_text, why = stack_yaml(stack, pick), pick.why
    name = project_name(folder, name)
    files, kept = plan_files(folder, stack, stack_text, why, name, virtualenv())
    existing = sorted(path for path in files if (folder / path).exists())
    if existing and not force:
        raise InitError(_refusal(folder, stack, existing))
    if pick is not None:
        validate(stack, pick)
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        _write(target, text)
    existed, added = _gitignore(folder / ".gitignore")
    written = list(files) + ([".gitignore"] if added and not existed else [])
    notes = next((path for path in ("GPU-TRAINING.md", "README.md") if (folder / path).exists()), "README.md")
    return Written(folder.resolve(), stack, why, written, [".gitignore"] if added and existed else [], kept, notes)


def _refusal(folder: Path, stack: str, existing: list[str]) -> str:
    """Why nothing was written: the files in the way, and for each kind what to do instead."""
    stack_file = f"{STACKS}/Pulumi.{stack}.yaml"
    reasons = []
    if stack_file in existing:
        reasons.append(f"{stack_file} exists already (stack {stack}): --stack NAME writes the new stack under"
                       " another name, --force replaces that file")
    theirs = [path for path in existing if path in PROJECT_FILES]
    if theirs:
        reasons.append(f"{' and '.join(theirs)} {'is' if len(theirs) == 1 else 'are'} not gpu-training init's (a"
                       f" {project.PROJECT_FILE} of the python runtime with stackConfigDir: {STACKS}, a {PROGRAM}"
                       " that imports gpu_training and calls gpu_training.main()): init another folder (gpu-training"
                       " init DIR), or --force replaces them")
    rest = [path for path in existing if path != stack_file and path not in PROJECT_FILES]
    if rest:
        reasons.append(f"{', '.join(rest)} exist{'s' if len(rest) == 1 else ''} already (--force replaces them)")
    return f"{folder}: " + "; ".join(reasons) + "; nothing was written"


def _gitignore(path: Path) -> tuple[bool, bool]:
    """Add the lines gpu-training needs to the folder's .gitignore: (the file existed, lines were added)."""
    existed = path.exists()
    text = path.read_text(encoding="utf-8") if existed else ""
    missing = [line for line in GITIGNORE_LINES if line not in text.splitlines()]
    if missing:
        gap = ("" if text.endswith("\n") else "\n") + "\n" if text else ""
        block = "# gpu-training: the virtualenv, caches, and run records and reports (out/)\n" + "\n".join(missing)
        _write(path, text + gap + block + "\n")
    return existed, bool(missing)


def _write(path: Path, text: str) -> None:
    """Replace the file atomically, with the permissions it had, or those the umask gives a new file
    (atomic_write's temporary file is private to its owner)."""
    import os

    if path.exists():
        mode = path.stat().st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    atomic_write(path, text)
    path.chmod(mode)
