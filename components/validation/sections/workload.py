"""The workload sections: the training command, its code and environment, the node software, the lifetime."""
from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Optional

from node_agent import launch

from components import project, schema, shipped
from components.artifacts import SKIP_PARTS
from components.bootstrap import config as bootstrap_rules
from components.spec import MAX_COMMAND_BYTES, MAX_HOURS, TrainSpec
from components.tiers import Gpu
from components.validation.read import Problems, show, suggest

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Text that a process receives as an argument or environment value can hold no NUL; the other
# control characters (but tab and newline) are typing accidents that break the agent's log lines.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def check_train(values: dict, nodes: int, gpus_per_node: int, problems: Problems) -> TrainSpec:
    raw = {**schema.BY_NAME["train"].default, **values.get("train", {})}
    command = str(raw.get("command", "")).strip()
    if not command:
        problems.error("train.command", "is empty; give the command that starts training"
                       f" (default: {schema.DEFAULT_TRAIN_COMMAND!r})")
    elif _CONTROL_RE.search(command):
        problems.error("train.command", f"{show(command)} holds a control character; allowed: printable text,"
                       " tabs and newlines")
    elif len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
        problems.error("train.command", f"{len(command.encode('utf-8')):,} bytes; the node starts it as one argument"
                       f" of sh -c, and Linux takes at most {MAX_COMMAND_BYTES:,} here (execve(2): a single"
                       " argument may not exceed MAX_ARG_STRLEN, 32 pages = 131,072 bytes; 1 KiB is kept for the"
                       " torchrun words the agent adds); put a long command in a script in train.codeDir")
    command_ok = not problems.has_key("train.command")
    code_dir = _code_dir(raw.get("codeDir"), problems)
    setup = _setup(raw.get("setup"), problems)
    given = values.get("train", {})
    example = _first_script(schema.DEFAULT_TRAIN_COMMAND)
    if given.get("codeDir") not in (None, schema.DEFAULT_CODE_DIR) and "command" not in given \
            and (code_dir is not None or not given["codeDir"]) \
            and not (code_dir is not None and example and (code_dir / example).is_file()):  # (no folder: its own error)
        # The default command is the example trainer's: in the user's own code folder (not a copy of the example)
        # it names a file that is not there, and the first sign of it would be a paid node failing at once.
        problems.error("train.command", f"not set, so the nodes would run the example trainer's command"
                       f" ({schema.DEFAULT_TRAIN_COMMAND!r}) in train.codeDir {show(given['codeDir'])}"
                       + (", your own code;" if given["codeDir"] else " (no code folder at all);") +
                       " allowed: the command that starts YOUR trainer in train.codeDir, e.g. --set"
                       f" \"train.command=python {_a_trainer(code_dir)}\" (or train: {{command: ...}} in the stack file)")
    elif command_ok and code_dir is not None:
        _check_script(command, code_dir, given.get("codeDir"), bool(setup), problems)
    requirements = _requirements(raw.get("requirements"), raw.get("codeDir"), code_dir, problems)
    if setup or requirements:  # said, so that a requirements.txt installed by default is no surprise
        what = ([f"pip install -r {requirements}" + (" (found in train.codeDir; train.requirements: \"\" for none)"
                                                      if raw.get("requirements") is None else "")]
                if requirements else []) + ([f"{len(setup)} command(s) of train.setup"] if setup else [])
        problems.info("train.setup" if setup else "train.requirements",
                      f"the nodes run {' then '.join(what)} once each, before training (docs/training-contract.md §6)")
    launcher = raw.get("launcher") or ("torchrun" if nodes > 1 or gpus_per_node > 1 else "direct")
    if launcher not in ("direct", "torchrun"):
        problems.error("train.launcher", f"{launcher!r} is not allowed; allowed: direct, torchrun")
    elif launcher == "torchrun" and (word := launch.starts_torchrun(command)):
        # The node runs the command once per GPU under torchrun (node_agent/launch.py): a torchrun in it would
        # start a second launcher in every rank, each waiting for a rendezvous of its own.
        problems.error("train.command", f"{show(command)} starts torchrun itself ({word!r}), and this stack's"
                       " launcher is torchrun already: the node runs the command as each rank's program, so"
                       " torchrun would start twice. Give the command without torchrun (`python train.py ...`),"
                       " or set train.launcher: direct to start torchrun yourself")
    env = raw.get("env") or {}
    for name, value in env.items():
        if not _ENV_NAME_RE.fullmatch(name):
            problems.error(f"train.env.{name}", "is not a valid environment variable name (letters, digits and"
                           " '_', not starting with a digit)")
        if _CONTROL_RE.search(value):
            problems.error(f"train.env.{name}", f"{show(value)} holds a control character; allowed: printable"
                           " text, tabs and newlines")
        if re.search(r"(SECRET|PASSWORD|ACCESS_KEY|TOKEN)", name.upper()):
            problems.error(f"train.env.{name}", "looks like a credential: user-data is readable on the node and"
                           " in the cloud console; give the node role access instead")
    return TrainSpec(command, dict(env), code_dir, launcher, setup, requirements)


def _a_trainer(code_dir: Optional[Path]) -> str:
    """The script a user's command probably starts, for a message: the code folder's one train*.py, else train.py."""
    found = sorted(path.name for path in code_dir.glob("*.py") if path.name.startswith("train")) if code_dir else []
    return found[0] if len(found) == 1 else "train.py"


# Text the shell would expand or that names no path inside the code folder: left to the node (and the rehearsal).
_NOT_PLAIN = re.compile(r"[$`~*?\[\]{}\\]")


def _first_script(command: str) -> Optional[str]:
    """The file, relative to the command's starting folder, of the first program `command` runs, when it can be
    told without running anything: `python [options] SCRIPT`, `sh|bash SCRIPT` or `./SCRIPT`, after `cd DIR`s and
    assignments (`cd src && WANDB_MODE=offline python -u train.py | tee log` runs src/train.py). None for any other
    first program (it may make the file: `tar xf code.tgz && python train.py`), python -m/-c, and a path that is
    absolute, leaves the folder or holds shell expansions. Words: node_agent/launch.py, as the node splits them."""
    folder = ""
    for words in launch.simple_commands(command) or []:
        name = words[0].rsplit("/", 1)[-1]
        if name == "cd" or name == "export":
            if name == "cd":
                if len(words) != 2 or not _plain(words[1]):
                    return None
                folder = posixpath.join(folder, words[1])
            continue
        if name.startswith("python"):
            program = launch.python_program(words)
            script = program[1] if program and program[0] == "script" else None
        elif name in ("sh", "bash"):
            script = words[1] if len(words) > 1 and not words[1].startswith("-") else None
        else:
            script = words[0] if "/" in words[0] else None
        if script is None or not _plain(script):
            return None
        path = posixpath.normpath(posixpath.join(folder, script))
        return None if path == ".." or path.startswith("../") else path
    return None


def _plain(path: str) -> bool:
    return bool(path) and not path.startswith("/") and not _NOT_PLAIN.search(path)


def _check_script(command: str, code_dir: Path, code_dir_value: Optional[str], setup: bool,
                  problems: Problems) -> None:
    """The command's script must be in the code folder the nodes get (the agent runs the command there):
    a warning in the preview and a refusal by `up` (Finding.blocks_up), or a warning alone when train.setup
    runs first and could make it (a clone, a download). `code_dir_value`: train.codeDir as given (None: unset)."""
    script = _first_script(command)
    if script is None:
        return
    skipped = sorted(SKIP_PARTS.intersection(Path(script).parts))
    try:
        if (code_dir / script).is_dir() or ((code_dir / script).is_file() and not skipped):
            return  # python DIR runs DIR/__main__.py: left to the node
        folder = (code_dir / script).parent
        near = [path.name for path in folder.iterdir() if path.is_file()] if folder.is_dir() else []
    except OSError:  # a name longer than the file system takes, a folder that cannot be read
        return
    where = (f"(not set: the example trainer, {code_dir})" if code_dir_value is None else
             f"{show(code_dir_value)} ({code_dir})")
    what = (f"{show(command)} runs {script!r}, which is not in train.codeDir {where}"
            + (f" (files under {', '.join(skipped)} are not uploaded)" if skipped else "")
            + "; the nodes run the command there")
    fix = ("allowed: a command that starts a script in train.codeDir"
           + (", or train.codeDir set to your code's folder" if code_dir_value is None else
              suggest(Path(script).name, near, n=1)))
    if setup:
        problems.warning("train.command", f"{what}, after train.setup: unless a setup command makes it, the trainer"
                         f" fails at once; {fix}")
    else:
        problems.up_blocker("train.command", f"{what}, and the trainer would fail at once; {fix}")


def _setup(value, problems: Problems) -> tuple[str, ...]:
    """train.setup: shell commands the nodes run once before training, each as one argument of sh -c."""
    commands = []
    for index, command in enumerate(value or []):
        key = f"train.setup[{index}]"
        if not isinstance(command, str):
            problems.error(key, f"{show(command)} is not allowed; a shell command (a string) is required")
        elif not command.strip():
            problems.error(key, "is empty; give a shell command, or leave it out")
        elif _CONTROL_RE.search(command):
            problems.error(key, f"{show(command)} holds a control character; allowed: printable text, tabs and"
                           " newlines")
        elif len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
            problems.error(key, f"{len(command.encode('utf-8')):,} bytes; the node runs it as one argument of sh -c,"
                           f" at most {MAX_COMMAND_BYTES:,} bytes; put a long script in train.codeDir and run that")
        else:
            commands.append(command.strip())
    return tuple(commands)


def _requirements(value, code_dir_value, code_dir: Optional[Path], problems: Problems) -> Optional[str]:
    """train.requirements: a pip requirements file inside train.codeDir (the nodes get that folder), as a
    path relative to it. Not given: DEFAULT_REQUIREMENTS when the folder holds one; "" : none."""
    if value is None:
        found = code_dir is not None and (code_dir / schema.DEFAULT_REQUIREMENTS).is_file()
        return schema.DEFAULT_REQUIREMENTS if found else None
    if not value.strip():
        return None
    allowed = f"a file inside train.codeDir, relative to it (such as {schema.DEFAULT_REQUIREMENTS!r}), or \"\" for none"
    if code_dir is None:
        if code_dir_value:  # train.codeDir has its own error
            return None
        problems.error("train.requirements", f"{show(value)}: the nodes get no code folder (train.codeDir is"
                       " empty), so there is no file to install; set train.codeDir, or leave train.requirements out")
        return None
    relative = Path(value)
    if relative.is_absolute() or ".." in relative.parts or _CONTROL_RE.search(value):
        problems.error("train.requirements", f"{show(value)} is not allowed; allowed: {allowed}")
        return None
    path = code_dir / relative
    try:
        text = path.read_bytes().decode("utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError) as error:
        problems.error("train.requirements", f"{show(value)} cannot be read as UTF-8 text ({error})")
        return None
    if text is None:
        problems.error("train.requirements", f"{show(value)} is not a file in train.codeDir ({code_dir});"
                       f" allowed: {allowed}")
        return None
    return relative.as_posix()


def _code_dir(value: Optional[str], problems: Problems) -> Optional[Path]:
    """train.codeDir as a folder (relative to the user's project), or None with the problem recorded. The
    default names the example trainer: the project's own examples/cnn when it has one (a clone of this
    repository), else the copy installed with gpu-training, so a new project previews and rehearses as is."""
    if not value:
        return None
    root = project.root()
    try:
        code_dir = (root / value).resolve()
        if code_dir.is_dir():
            return code_dir
        if value == schema.DEFAULT_CODE_DIR:
            return shipped.folder("example-trainer")
        why = "is not a folder"
    except (OSError, ValueError) as error:  # a NUL byte, a name longer than the file system allows
        why = f"cannot be a folder ({getattr(error, 'strerror', None) or error})"
    problems.error("train.codeDir", f"{show(value)} {why} (relative to the project, {root})")
    return None


def check_bootstrap(values: dict, gpu: Optional[Gpu], problems: Problems) -> dict:
    """The node software keys: checked with the bootstrap's own rules (components/bootstrap/config.py),
    so a value the bootstrap would refuse at `pulumi up` is refused here, by its key."""
    given = values.get("bootstrap", {})
    merged = {**schema.BOOTSTRAP_DEFAULTS, **given}
    if merged["framework"] == "paddle":
        _paddle_defaults(merged, given, problems)
    if merged["framework"] not in bootstrap_rules.FRAMEWORKS:
        problems.error("bootstrap.framework", f"{show(merged['framework'])} is not allowed; allowed:"
                       f" {', '.join(bootstrap_rules.FRAMEWORKS)}")
    for name, rule in (("driverBranch", bootstrap_rules.DRIVER_BRANCH), ("cudaToolkit", bootstrap_rules.CUDA_TOOLKIT),
                       ("frameworkVersion", bootstrap_rules.FRAMEWORK_VERSION)):
        if not rule.accepts(merged[name]):
            problems.error(f"bootstrap.{name}", f"{show(merged[name])} is not allowed; expected {rule.allowed}")
    index = merged["frameworkIndexUrl"]
    if index and not bootstrap_rules.FRAMEWORK_INDEX_URL.accepts(index):
        problems.error("bootstrap.frameworkIndexUrl", f"{show(index)} is not allowed; expected"
                       f" {bootstrap_rules.FRAMEWORK_INDEX_URL.allowed}")
    url = merged["ascendPackagesUrl"]
    if url and not bootstrap_rules.ASCEND_PACKAGES_URL.accepts(url):
        problems.error("bootstrap.ascendPackagesUrl", f"{show(url)} is not allowed; expected"
                       f" {bootstrap_rules.ASCEND_PACKAGES_URL.allowed}")
    if gpu is not None and gpu.kind == "ascend" and not merged["ascendPackagesUrl"]:
        problems.error("bootstrap.ascendPackagesUrl", "Ascend nodes need the location of the driver, firmware"
                       " and CANN run-packages (an object storage URL or a path on the shared FS)")
    return merged


def _paddle_defaults(merged: dict, given: dict, problems: Problems) -> None:
    """PaddlePaddle's own defaults (version, CUDA toolkit, driver) and the wheel index that matches the
    CUDA toolkit (components/bootstrap/paddle.py); the user's values win, checked the same way."""
    from components.bootstrap import paddle

    for key, default in (("frameworkVersion", paddle.DEFAULT_VERSION), ("cudaToolkit", paddle.DEFAULT_CUDA_TOOLKIT)):
        merged[key] = given.get(key, default)
    if "driverBranch" not in given:
        merged["driverBranch"] = str(paddle.MIN_DRIVER_BRANCH.get(merged["cudaToolkit"], merged["driverBranch"]))
    if not given.get("frameworkIndexUrl"):
        merged["frameworkIndexUrl"] = paddle.index_for(merged["cudaToolkit"]) or ""
        if not merged["frameworkIndexUrl"]:
            problems.error("bootstrap.cudaToolkit", f"{show(merged['cudaToolkit'])}: no PaddlePaddle GPU wheel index"
                           f" is known for it; allowed: {', '.join(paddle.INDEXED_TOOLKITS)}, or set"
                           " bootstrap.frameworkIndexUrl to the index of your CUDA version")
    wanted = paddle.driver_too_old(merged["driverBranch"], merged["cudaToolkit"])
    if wanted:
        problems.error("bootstrap.driverBranch", f"{show(merged['driverBranch'])} is too old for CUDA"
                       f" {merged['cudaToolkit']}: at least {wanted} (CUDA Toolkit release notes, driver table)")


def check_lifetime(values: dict, problems: Problems) -> tuple[float, float]:
    """(maxHours, idleMinutes): the cloud-side TTL and the agent's idle limit."""
    max_hours = values.get("maxHours", schema.BY_NAME["maxHours"].default)
    if not 0 < max_hours <= MAX_HOURS:
        problems.error("maxHours", f"{max_hours:g} is out of range; allowed: more than 0, at most {MAX_HOURS}")
    idle = values.get("idleMinutes", schema.BY_NAME["idleMinutes"].default)
    if not 0 <= idle <= MAX_HOURS * 60:
        problems.error("idleMinutes", f"{idle:g} is out of range; allowed: 0 (off) to {MAX_HOURS * 60}"
                       f" (maxHours' own limit, {MAX_HOURS} h)")
    return max_hours, idle
