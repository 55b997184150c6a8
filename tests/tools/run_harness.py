"""scripts/run.py in the test process: the script's module, a recorded stand-in of its Pulumi Automation layer
(tools/runlib/automation.py says tests replace it so), and one call of its main with that stand-in."""
from __future__ import annotations

import importlib.util
import io
from pathlib import Path

from rich.console import Console

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("run_cli_under_test", REPO / "scripts" / "run.py")
run_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_cli)


class FakeStack:
    """The Automation layer's methods over fixed outputs, recorded; ``on_up`` plays the nodes' part and
    ``on_destroy`` sees the bucket as the teardown finds it."""

    def __init__(self, outputs: dict, on_up=None, on_destroy=None, stack: str = "entry-t4"):
        self._outputs, self.on_up, self.on_destroy, self.stack = outputs, on_up, on_destroy, stack
        self.calls: list[str] = []
        self.created: list[bool] = []
        self.run_program: list[bool] = []  # refresh's and destroy's run_program, in call order
        self.config: dict = {}  # what set_config wrote (up's --set, a failover's next attempt)

    def factory(self, name, work_dir, create=True):
        assert name == self.stack and Path(work_dir) == REPO
        self.created.append(create)
        return self

    def up(self, on_output):
        self.calls.append("up")
        on_output(f"Updating ({self.stack}):")
        if self.on_up:
            self.on_up()
        return dict(self._outputs)

    def outputs(self):
        self.calls.append("outputs")
        return dict(self._outputs)

    def last_update_started(self):
        return None

    def set_config(self, changes: dict):
        self.config.update(changes)

    def refresh(self, on_output, run_program=False):
        self.calls.append("refresh")
        self.run_program.append(run_program)

    def destroy(self, on_output, run_program=False):
        self.calls.append("destroy")
        self.run_program.append(run_program)
        if self.on_destroy:
            self.on_destroy()


# The shipped stacks name the example bucket, which `up` refuses before creating anything: a full run under test
# names a bucket of its own with --set, as a user does (the fake stack's outputs say which bucket is watched).
TEST_BUCKET = "checkpoint.bucket=gpu-training-run-under-test"


def run_main(out_dir: Path, stack: FakeStack, *args: str, **driver) -> tuple[int, str]:
    """run.py's main on `stack` (polling every 0.1 s, its run records under `out_dir`); (exit code, console text).
    `driver` goes to the driver as given (confirm=...)."""
    out = io.StringIO()
    full = not {"--watch-only", "--destroy-only"} & set(args)
    code = run_cli.main([stack.stack, "--poll", "0.1", "--out", str(out_dir), *(["--set", TEST_BUCKET] if full else []),
                         *args], stack_factory=stack.factory,
                        console=Console(file=out, width=220, force_terminal=False), **driver)
    return code, out.getvalue()
