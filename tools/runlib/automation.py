"""The thin layer over Pulumi's Automation API: the only part of run.py that needs the Pulumi CLI.

Everything here is one call into ``pulumi.automation``; all decisions live elsewhere, so tests
replace this class with a recording fake of the same methods (refresh and destroy take
run_program: whether the CLI runs the program first; set_config is called only when `up` moves on
from a stock-out to the stack's next alternative).
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable, Optional

from components.teardown import TEARDOWN_ENV


# `pulumi refresh --run-program` / `pulumi destroy --run-program` (the Automation API's run_program=True).
RUN_PROGRAM_SINCE = (3, 160, 0)
RUN_PROGRAM_SOURCE = ("Pulumi blog 'Improved refresh and destroy experience' (v3.160.0, https://pulumi.com/blog/"
                      "improved-refresh-destroy-experience) and docs 'Running your program on refresh and destroy'"
                      " (https://www.pulumi.com/docs/iac/operations/stack-management/run-program/)")


class AutomationError(Exception):
    """Pulumi could not be driven (CLI missing, login needed): a clear message, no traceback."""


class PulumiStack:
    """One stack of the local program (``Pulumi.yaml`` in ``work_dir``)."""

    def __init__(self, name: str, work_dir: Path, create: bool = True):
        try:
            from pulumi import automation
        except ImportError as exc:  # the runtime requirements are missing
            raise AutomationError(f"the pulumi package is not importable ({exc}): run `make preview` once "
                                  "or `pip install -r requirements.txt`") from None
        self.name = name
        try:
            if create:
                self._stack = automation.create_or_select_stack(stack_name=name, work_dir=str(work_dir))
            else:
                # Watching or destroying must not create an empty stack as a side effect.
                self._stack = automation.select_stack(stack_name=name, work_dir=str(work_dir))
        except automation.StackNotFoundError:
            raise AutomationError(f"stack {name!r} does not exist in the current Pulumi backend "
                                  "(`pulumi stack ls` lists them)") from None
        except FileNotFoundError:
            raise AutomationError("the Pulumi CLI is not installed (`pulumi` is not on PATH): "
                                  "https://www.pulumi.com/docs/install/ ; then `pulumi login`") from None
        except automation.CommandError as exc:
            raise AutomationError(f"pulumi could not select stack {name!r}: {str(exc).strip()[-800:]}") from None

    def up(self, on_output: Callable[[str], None]) -> dict:
        result = self._stack.up(on_output=on_output)
        return {k: v.value for k, v in result.outputs.items()}

    def outputs(self) -> dict:
        return {k: v.value for k, v in self._stack.outputs().items()}

    def last_update_started(self) -> Optional[datetime]:
        info = self._stack.info()
        return info.start_time if info is not None else None

    def set_config(self, changes: dict) -> None:
        """Config changes as `pulumi config set` makes them (into stacks/Pulumi.<stack>.yaml): a value, a
        list (each item by its path), or None to remove the key. Keys are `namespace:name` or a path in one."""
        from pulumi.automation import CommandError, ConfigValue

        for key, value in changes.items():
            path = "." in key.split(":", 1)[-1] or "[" in key
            if value is None or isinstance(value, list):
                try:
                    self._stack.remove_config(key, path=path)
                except CommandError:  # not set: nothing to remove
                    pass
            if isinstance(value, list):
                for i, item in enumerate(value):
                    self._stack.set_config(f"{key}[{i}]", ConfigValue(_config_text(item)), path=True)
            elif value is not None:
                self._stack.set_config(key, ConfigValue(_config_text(value)), path=path)

    def refresh(self, on_output: Callable[[str], None], run_program: bool = False) -> None:
        self._stack.refresh(on_output=on_output, **self._program_option(run_program))

    def destroy(self, on_output: Callable[[str], None], run_program: bool = False) -> None:
        self._stack.destroy(on_output=on_output, **self._program_option(run_program))

    def _program_option(self, run_program: bool) -> dict:
        """run_program: run the program first, so providers get the credentials it computes now (a Kubernetes
        stack's temporary kubeconfig) instead of the ones recorded in state at the last `up` (Pulumi docs,
        "Running your program on refresh and destroy": RUN_PROGRAM_SOURCE)."""
        if not run_program:
            return {}
        version = _version(getattr(self._stack.workspace, "pulumi_version", None))
        if version is not None and version < RUN_PROGRAM_SINCE:
            raise AutomationError(
                f"Pulumi CLI {'.'.join(map(str, version))} cannot run the program on refresh and destroy (--run-program"
                f" came in {'.'.join(map(str, RUN_PROGRAM_SINCE))}, {RUN_PROGRAM_SOURCE}); without it this stack's"
                " teardown uses an expired credential. Upgrade the CLI (https://www.pulumi.com/docs/install/) and"
                " run the destroy again")
        # The program then runs only to give the providers fresh credentials: rules about what `up` would create
        # are warnings, so a stack made before such a rule can still be torn down (components/teardown.py).
        workspace = self._stack.workspace
        workspace.env_vars = {**(getattr(workspace, "env_vars", None) or {}), TEARDOWN_ENV: "1"}
        return {"run_program": True}


def _config_text(value) -> str:
    """The text `pulumi config set` is given for a value: a boolean as Pulumi writes it (true, not Python's True),
    so that --path turns it back into the same boolean (tools.stackfiles.path_value)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _version(text: Optional[str]) -> Optional[tuple[int, ...]]:
    try:
        return tuple(int(part) for part in str(text).lstrip("v").split("-")[0].split(".")[:3]) if text else None
    except ValueError:
        return None
