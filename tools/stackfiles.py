"""Reading stack files (stacks/Pulumi.<stack>.yaml) and applying `--set KEY=VALUE` what-if overrides.

A stack file is read the way the Pulumi CLI reads it, and refused (StackFileError, exit 2 in the
CLIs) where Pulumi would refuse it or where its values could not reach the program as config: not
UTF-8, not YAML, a key given twice (Pulumi's YAML reader refuses duplicates), YAML-only types (dates,
binary, sets) that the engine's JSON cannot carry, and alias chains that expand beyond any real
stack file (a "billion laughs" document).
"""
from __future__ import annotations

import datetime
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from components import schema
from components.nodeconfig import build_node_config
from tools import project

# The current project's stack files (tools/project.py: GPU_TRAINING_PROJECT, else Pulumi.yaml found from
# the working directory upward, else the installed checkout), not the installed package's by default.
STACKS_DIR = project.stacks_dir(project.root())
PLACEHOLDER_FS_ADDRESS = "<shared-fs-mount-address>"  # what the cloud computes at deploy time


class StackFileError(Exception):
    """A stack that does not exist or a file that is not a Pulumi stack file."""

    def render(self) -> str:
        return f"error: {self}"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def stack_path(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def shipped_stack_names() -> list[str]:
    """The example stacks gpu-training ships (README.md, "Stacks"): the clone's stacks/, else the wheel's copy
    (components/shipped.py); `gpu-training init --from NAME` copies one into a project."""
    from components import shipped

    try:
        folder = shipped.folder("stacks")
    except FileNotFoundError:  # a wheel built before it shipped them
        return []
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def closest(name: str, names: Iterable[str]) -> str | None:
    """The one of `names` that `name` most likely misspells (difflib's ratio at least 0.6), or None."""
    import difflib

    found = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return found[0] if found else None


def missing_stack(stack: str, known: Iterable[str], where: str) -> str:
    """The message for a stack with no file (`where`: the file looked for, and why it is not there): the
    project's stacks, the closest name when it looks misspelt, and `gpu-training init --from` when
    gpu-training ships a stack of that name (or one close to it) that the project lacks."""
    known = sorted(known)
    message = f"no stack {stack!r}: {where}; stacks: {', '.join(known) or 'none'}"
    shipped_names = [name for name in shipped_stack_names() if name not in known]
    if stack in shipped_names:
        return message + (f". gpu-training ships a stack {stack}: `gpu-training init --from {stack}` copies it into"
                          " this project (README.md, \"Stacks\")")
    guess = closest(stack, known + shipped_names)
    if guess in known:
        return message + f". Did you mean {guess}?"
    if guess:
        return message + (f". Did you mean {guess}? gpu-training ships it: `gpu-training init --from {guess}`"
                          " copies it into this project")
    return message


# Far above any real stack file (the largest here has ~30 values), far below what exhausts memory.
MAX_YAML_NODES = 100_000


class _StackLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what Pulumi's YAML reader refuses: a mapping key given twice."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # PyYAML reports unhashable keys itself
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice (first {seen[key]}); Pulumi refuses duplicate keys",
                    key_node.start_mark)
            seen[key] = f"at line {key_node.start_mark.line + 1}"
        return super().construct_mapping(node, deep)


def _expanded_size(node, memo: dict) -> int:
    """Nodes in the document once every alias is expanded (aliases share node objects)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1  # a recursive alias counts once
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[id(node)] = min(size, MAX_YAML_NODES + 1)
    return memo[id(node)]


def parse_stack_text(data: bytes, where: str) -> dict[str, Any]:
    """The `config:` map of a stack file's bytes; StackFileError names `where` and what is wrong."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise StackFileError(f"{where}: not UTF-8 text: byte 0x{data[error.start]:02x} at line {line} (offset"
                             f" {error.start}); save the file as UTF-8, as Pulumi reads it") from None
    try:
        loader = _StackLoader(text)
        try:
            root = loader.get_single_node()
            if root is not None and _expanded_size(root, {}) > MAX_YAML_NODES:
                raise StackFileError(f"{where}: its aliases expand to more than {MAX_YAML_NODES:,} values;"
                                     " a stack file lists its config values")
            document = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise StackFileError(f"{where}: not valid YAML: {error}") from None
    except RecursionError:  # PyYAML composes recursively: thousands of nested brackets end here
        raise StackFileError(f"{where}: its values nest too deeply to be config (thousands of levels)") from None
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise StackFileError(f"{where}: no `config:` map (a stack file is `config:` followed by `key: value` lines)")
    for key, value in config.items():
        if not isinstance(key, str):
            raise StackFileError(f"{where}: config key {key!r} is not a string; keys look like gpu-training:tier"
                                 " or alicloud:region")
        _check_engine_value(value, key, where)
    return dict(config)


_YAML_ONLY = {datetime.date: "a YAML date", datetime.datetime: "a YAML timestamp", bytes: "YAML binary",
              set: "a YAML set"}


def _check_engine_value(value: Any, key: str, where: str) -> None:
    """Refuse what the engine's JSON config cannot carry, naming the dotted key and how to write it."""
    kind = next((word for cls, word in _YAML_ONLY.items() if isinstance(value, cls)), None)
    if kind is not None:
        raise StackFileError(f"{where}: {key}: {str(value)[:60]!r} is {kind}, which Pulumi config cannot hold;"
                             " quote it to make it a string")
    if isinstance(value, dict):
        for name, child in value.items():
            if not isinstance(name, str):
                raise StackFileError(f"{where}: {key}.{name}: keys of an object must be strings")
            _check_engine_value(child, f"{key}.{name}", where)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _check_engine_value(child, f"{key}[{index}]", where)


def load_stack_config(stack: str) -> dict[str, Any]:
    path = stack_path(stack)
    if not path.is_file():
        raise StackFileError(missing_stack(stack, stack_names(), f"{path} does not exist"))
    try:
        data = path.read_bytes()
    except OSError as error:
        raise StackFileError(f"{path}: cannot be read: {error.strerror}") from None
    return parse_stack_text(data, str(path))


def apply_overrides(config: Mapping[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """Apply `KEY=VALUE` as `pulumi config set --path` would store it: a bare key means gpu-training:KEY, and a
    path sets one value inside an object (`checkpoint.bucket=x`, `train.env.WANDB_MODE=offline`: train.env's
    own WANDB_MODE; `tags["a.b"]=x`: a name holding a dot), creating the objects on the way."""
    result = dict(config)
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise StackFileError(f"--set {assignment!r}: expected KEY=VALUE, e.g. --set billing=spot")
        head, path = config_path(key, assignment)
        if path:
            result[head] = _set_in(_as_object(result.get(head, {}), head, assignment), path, path_value(value),
                                   head, assignment)
        else:
            result[head] = value
    return result


def config_path(key: str, assignment: str = "") -> tuple[str, list[str]]:
    """(namespace:name, the names of the path inside its value) of a --set KEY, read as `pulumi config set
    --path` reads it: the text after the namespace is a property path (`a.b`, `a["b.c"]`, `a[0]`), its first
    name the config key's; a bare key is one of gpu-training. Grammar: ParsePropertyPath in
    pulumi/pulumi@02327a04dd7d169a5759decd986ef43e12edfcdd sdk/go/common/resource/properties_path.go. An index
    (`a[0]`) is refused: one item of a list is not set here, the whole list is."""
    namespace, _, rest = full_key(key).partition(":")
    try:
        names = _property_path(rest)
    except ValueError as error:
        raise StackFileError(f"--set {(assignment or key)[:80]!r}: {error}; a key is NAME, NAME.FIELD or"
                             ' NAME["FIELD.WITH.DOTS"]') from None
    if not names:  # `gpu-training:` alone: the spec names the key missing, with the known ones
        return f"{namespace}:", []
    if not isinstance(names[0], str):
        raise StackFileError(f"--set {(assignment or key)[:80]!r}: no key name; expected KEY=VALUE, e.g."
                             " --set billing=spot")
    index = next((at for at, name in enumerate(names) if isinstance(name, int)), None)
    if index is not None:
        listed, index = ".".join(map(str, names[:index])), names[index]
        raise StackFileError(f"--set {(assignment or key)[:80]!r}: [{index}] sets one item of a list; give the"
                             f" whole list instead: --set '{listed}=[\"a\", \"b\"]'")
    return f"{namespace}:{names[0]}", names[1:]


def full_key(key: str) -> str:
    """A --set KEY with its namespace: one given before the path (`alicloud:region`) or gpu-training."""
    namespace, colon, _ = key.partition(":")
    return key if colon and not {".", "["} & set(namespace) else f"{schema.NAMESPACE}:{key}"


_INDEX = re.compile(r"[+-]?[0-9]+")  # Go's strconv.ParseInt, base 10


def _property_path(text: str) -> list:
    """The names (str) and indexes (int) of a Pulumi property path; ValueError says what is malformed."""
    names: list = []
    at = 0
    while at < len(text):
        if text[at] == ".":
            at += 1
        elif text.startswith('["', at):
            name, at = [], at + 2
            while True:
                if at >= len(text):
                    raise ValueError("a quoted name has no closing quote")
                if text[at] == '"':
                    at += 1
                    break
                if text.startswith('\\"', at):
                    name.append('"')
                    at += 2
                else:
                    name.append(text[at])
                    at += 1
            if not text.startswith("]", at):
                raise ValueError("a quoted name has no closing bracket")
            names.append("".join(name))
            at += 1
        elif text[at] == "[":
            close = text.find("]", at)
            if close < 0:
                raise ValueError("a '[' has no closing ']'")
            inside = text[at + 1:close]
            if inside == "*":
                names.append("*")
            elif _INDEX.fullmatch(inside):
                names.append(int(inside))
            else:
                raise ValueError(f"[{inside}] is no list index; quote a name: [\"{inside}\"]")
            at = close + 1
        else:
            end = at
            while end < len(text) and text[end] not in ".[":
                end += 1
            names.append(text[at:end])
            at = end
    return names


def _set_in(current: dict, path: list[str], value: Any, head: str, assignment: str) -> dict:
    """`current` with `value` at `path`, the objects on the way copied (or made, where absent), as Pulumi's
    PropertyPath.Add does; a value on the way that is not an object (a string, a list) is refused, as there."""
    top = dict(current)
    place, where = top, head.partition(":")[2]
    for name in path[:-1]:
        where = f"{where}.{name}"
        child = place.get(name)
        if child is None:
            child = {}
        elif not isinstance(child, dict):
            raise StackFileError(f"--set {assignment[:80]!r}: {where} is {_describe(child)}, not an object, so it"
                                 f" has no fields; set the whole value with --set {where}=VALUE")
        place[name] = dict(child)
        place = place[name]
    place[path[-1]] = value
    return top


def _as_object(current: Any, head: str, assignment: str) -> dict:
    """The object a `--set head.field=value` changes; StackFileError when `head` holds no object."""
    if isinstance(current, str):
        try:
            current = json.loads(current) if current.strip() else {}
        except json.JSONDecodeError:
            pass
    if current is None:
        return {}
    if not isinstance(current, dict):
        raise StackFileError(f"--set {assignment[:80]!r}: {head} is {_describe(current)}, not an object, so it has"
                             f" no fields; set the whole value with --set {head}=VALUE")
    return dict(current)


def _describe(value: Any) -> str:
    shown = json.dumps(value) if not isinstance(value, str) else repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


# Go's strconv.Atoi: an optional sign and decimal digits that fit in an int (64 bits on the CLI's platforms).
_GO_ATOI = re.compile(r"[+-]?[0-9]+")


def path_value(text: str) -> bool | int | str:
    """A `--set head.field=TEXT` value as `pulumi config set --path` stores it, so the preview's check and the
    value `up` saves are what `pulumi up` then reads: "true"/"false" become booleans, a whole number
    becomes an int unless it has a leading zero ("0123" stays text), everything else stays the text given
    (1.5, null, [1] and {"a": 1} are strings, not JSON). Source: adjustObjectValue in
    pulumi/pulumi@05e382fdeeeced7d0b302810766b9372eb52b07d sdk/go/common/resource/config/map.go (unchanged in
    later versions, which return the same kinds as objects)."""
    if text in ("true", "false"):
        return text == "true"
    if len(text) > 1 and text[0] == "0":
        return text
    if _GO_ATOI.fullmatch(text):
        number = int(text)
        if -2**63 <= number < 2**63:  # beyond int64 Atoi fails: the text stays a string
            return number
    return text


def engine_form(config: Mapping[str, Any]) -> dict[str, str]:
    """Config as the Pulumi engine hands it to a program: strings, with lists and objects as JSON.

    A YAML infinity or NaN becomes the text the engine would pass ("Infinity", "NaN"), which the
    spec refuses by name; nothing here raises on a value `parse_stack_text` accepted.
    """
    form = {}
    for key, value in config.items():
        if isinstance(value, str):
            form[key] = value
        elif isinstance(value, bool):
            form[key] = "true" if value else "false"
        elif isinstance(value, float) and not math.isfinite(value):
            form[key] = repr(value).replace("inf", "Infinity").replace("nan", "NaN")
        else:
            form[key] = json.dumps(value, default=str)
    return form


def stack_spec(stack: str, overrides: Iterable[str] = ()):
    """(config, Spec) of a stack file with `--set` overrides; raises StackFileError or SpecError,
    both with render() for a CLI to print before exiting 2."""
    from components.validation import build_spec

    config = apply_overrides(load_stack_config(stack), overrides)
    return config, build_spec(engine_form(config), stack=stack)


def node_config_for_stack(stack: str, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """The node config of a stack file as the program would render it, with a placeholder FS address."""
    _, spec = stack_spec(stack, overrides)
    address = PLACEHOLDER_FS_ADDRESS if spec.shared_storage != "none" else None
    return build_node_config(spec, shared_fs_address=address)
