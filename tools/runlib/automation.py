"""The thin layer over Pulumi's Automation API: the only part of run.py that needs the Pulumi CLI.

Everything here is one call into ``pulumi.automation``; all decisions live elsewhere, so tests
replace this class with a recording fake of the same five methods.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable, Optional


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

    def refresh(self, on_output: Callable[[str], None]) -> None:
        self._stack.refresh(on_output=on_output)

    def destroy(self, on_output: Callable[[str], None]) -> None:
        self._stack.destroy(on_output=on_output)
