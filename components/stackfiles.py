"""Reading stack files (stacks/Pulumi.<stack>.yaml) and applying `--set KEY=VALUE` what-if overrides."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from components import schema

REPO_ROOT = Path(__file__).resolve().parent.parent
STACKS_DIR = REPO_ROOT / "stacks"


class StackFileError(Exception):
    """A stack that does not exist or a file that is not a Pulumi stack file."""

    def render(self) -> str:
        return f"error: {self}"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def stack_path(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def load_stack_config(stack: str) -> dict[str, Any]:
    path = stack_path(stack)
    if not path.is_file():
        raise StackFileError(f"no stack {stack!r}: {path} does not exist; stacks: {', '.join(stack_names())}")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise StackFileError(f"{path}: not valid YAML: {error}") from None
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise StackFileError(f"{path}: no `config:` map")
    return dict(config)


def apply_overrides(config: Mapping[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """Apply `KEY=VALUE` (a bare key means gpu-training:KEY; `checkpoint.bucket=x` sets one object field)."""
    result = dict(config)
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise StackFileError(f"--set {assignment!r}: expected KEY=VALUE, e.g. --set billing=spot")
        full = key if ":" in key.split(".")[0] else f"{schema.NAMESPACE}:{key}"
        head, _, field = full.partition(".")
        if field:
            current = result.get(head, {})
            if isinstance(current, str):
                current = json.loads(current or "{}")
            current = dict(current or {})
            current[field] = _parse_scalar(value)
            result[head] = current
        else:
            result[head] = value
    return result


def _parse_scalar(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def engine_form(config: Mapping[str, Any]) -> dict[str, str]:
    """Config as the Pulumi engine hands it to a program: strings, with lists and objects as JSON."""
    form = {}
    for key, value in config.items():
        if isinstance(value, str):
            form[key] = value
        elif isinstance(value, bool):
            form[key] = "true" if value else "false"
        else:
            form[key] = json.dumps(value)
    return form


def stack_spec(stack: str, overrides: Iterable[str] = ()):
    """(config, Spec) of a stack file with `--set` overrides; raises StackFileError or SpecError,
    both with render() for a CLI to print before exiting 2."""
    from components.spec import build_spec

    config = apply_overrides(load_stack_config(stack), overrides)
    return config, build_spec(engine_form(config), stack=stack)
