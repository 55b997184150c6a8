"""Watch a platform job to its end through its job API (the `job` run style, tools/runlib/targets.py), and
decide whether run.py may destroy the stack. A job writes no markers: the platform's state is the truth.

The job's checkpoints and logs go to the stack's bucket prefix while it runs (docs/platforms.md), so once the
job has ended nothing lives only on a machine the destroy would take: destroy. A job still pending or running
at the timeout (or at `down`) is refused unless --force: destroying stops it, and the work since its last
checkpoint is lost.
"""
from __future__ import annotations

import time
from typing import Callable, Mapping, Optional

from rich.console import Console

from . import exitcodes
from .decide import Commands, Decision
from .spend import cost_so_far, money_text
from .watch import PollClock, WatchResult, clock_text

ENDED = ("succeeded", "failed", "stopped")  # the job API's neutral states after which nothing runs or bills


def ended(job: Optional[Mapping]) -> bool:
    return bool(job) and not job.get("error") and job.get("state") in ENDED


def job_text(job: Optional[Mapping]) -> str:
    if not job:
        return "job state unknown"
    if job.get("error"):
        return f"job state unknown ({job['error']})"
    return f"job {job.get('jobId')} on {job.get('platform')}: {job.get('state')} ({job.get('phase')})"


class JobWatcher:
    """Ask the job's state every poll_s until it ended or timeout_s passed; print a line when it changes."""

    def __init__(self, outputs: Mapping, ask: Callable[[Mapping], dict], *, timeout_s: float, poll_s: float,
                 stack_started: Optional[float], console: Optional[Console] = None,
                 now: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep):
        self.outputs, self.ask = outputs, ask
        self.timeout_s, self.poll_s, self.stack_started = timeout_s, poll_s, stack_started
        self.console = console or Console()
        self.now, self.sleep = now, sleep

    def run(self) -> WatchResult:
        result = WatchResult()
        clock = PollClock.starting(self.now(), self.stack_started, self.timeout_s)
        last = None
        while True:
            job = self.ask(self.outputs)
            result.job, result.polls = job, result.polls + 1
            result.last_error = job.get("error")
            now = self.now()
            line = (f"elapsed {clock_text(now - clock.started)} | cost so far "
                    f"{money_text(cost_so_far(self.outputs, [], now, clock.started))} | {job_text(job)}")
            key = (job.get("state"), job.get("phase"), job.get("error"))
            if key != last:
                self.console.print(line, highlight=False)
                last = key
            if ended(job):
                return result
            if clock.expired(now):
                result.timed_out = True
                return result
            self.sleep(clock.pause(self.poll_s, now))


def decide_job(job: Optional[Mapping], keep: bool, force: bool, cmd: Commands) -> Decision:
    """Destroy or not once the watch (or `down`'s one look) has the job's state."""
    if ended(job):
        code = exitcodes.DONE if job["state"] == "succeeded" else exitcodes.FAILED
        headline = f"{job_text(job)}; its checkpoints and logs are in the bucket"
        if keep:
            return Decision(False, code, headline + "; stack kept (--keep)", (f"Destroy later:  {cmd.destroy}",))
        return Decision(True, code, headline)
    headline = (f"{job_text(job)}: destroying stops it, and the work since its last checkpoint is lost"
                if job and not job.get("error") else f"{job_text(job)}: it may still be running (and billing)")
    advice = (f"Watch longer:  {cmd.watch}", f"Stop it and destroy the stack anyway:  {cmd.force_destroy}")
    if keep:
        return Decision(False, exitcodes.TIMED_OUT, headline + "; stack kept (--keep)", advice)
    if force:
        return Decision(True, exitcodes.FAILED, headline + "; destroying anyway (--force)")
    return Decision(False, exitcodes.NOT_SAVED, "refusing to destroy: " + headline, advice)
