"""Poll a stack's markers until the run ends (or the timeout), with a live status line.

The poll and the stop rule are plain code over ``StackBucket.markers`` and ``markers.assess``;
the only side effects are the sleep between polls and the status line.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Mapping, Optional

from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console
from rich.live import Live
from rich.text import Text

from .bucket import BucketError
from .markers import Marker, Verdict, assess, current
from .spend import cost_so_far, money_text


@dataclass
class WatchResult:
    markers: list[Marker] = field(default_factory=list)
    verdict: Optional[Verdict] = None
    preemptions: int = 0
    timed_out: bool = False
    polls: int = 0
    last_error: Optional[str] = None
    start_failed: Optional[str] = None  # why the run never started (startcheck.py): nothing ran, nothing to lose
    job: Optional[dict] = None  # a platform job's last state (jobwatch.py), instead of markers


@dataclass(frozen=True)
class PollClock:
    """The times of one watch: when it began, when the stack started (what the cost so far counts from: the
    stack's start when known, else the watch's), and the deadline (`timeout_s` after it began)."""
    began: float
    started: float
    deadline: float

    @classmethod
    def starting(cls, now: float, stack_started: Optional[float], timeout_s: float) -> "PollClock":
        return cls(began=now, started=stack_started or now, deadline=now + timeout_s)

    def expired(self, now: float) -> bool:
        return now >= self.deadline

    def pause(self, poll_s: float, now: float) -> float:
        """How long to sleep before the next poll: poll_s, or less to wake at the deadline."""
        return max(0.0, min(poll_s, self.deadline - now))


def clock_text(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def status_line(result: WatchResult, running_s: float, cost: Mapping) -> str:
    """One line: elapsed, cost so far (spend.cost_so_far), node states, last utilisation, preemptions."""
    verdict = result.verdict
    money = money_text(cost)
    states = ", ".join(f"{n} {s}" for s, n in sorted(verdict.counts.items())) if verdict and verdict.counts \
        else "no node reported yet"
    # The most recently written marker that carries a utilisation summary.
    with_util = [m for m in result.markers if m.gpu_util is not None]
    with_util.sort(key=lambda m: m.updated_at.timestamp() if m.updated_at else 0.0)
    util = f"{with_util[-1].gpu_util:.0f}%" if with_util else "n/a"
    line = (f"elapsed {clock_text(running_s)} | cost so far {money} | {states} | GPU util {util} | "
            f"preemptions {result.preemptions}")
    if result.last_error:
        line += f" | last poll failed: {result.last_error}"
    return line


class Watcher:
    def __init__(self, bucket, node_count: int, outputs: Mapping, *, baseline: Optional[Mapping[str, str]],
                 since: Optional[datetime] = None, stack_started: Optional[float] = None,
                 timeout_s: float, poll_s: float = 10.0, settle_s: float = 600.0,
                 console: Optional[Console] = None,
                 now: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 start_check: Optional[Callable[[float], Optional[str]]] = None):
        # The stack's outputs: costPerHour and nodeCount price the run so far (spend.py).
        self.bucket, self.node_count, self.outputs = bucket, node_count, outputs
        # Called with the seconds since the watch began (right after `up`) while no node has reported; a reason
        # ends the watch.
        self.start_check = start_check
        self.baseline, self.since = baseline, since
        self.timeout_s, self.poll_s, self.settle_s = timeout_s, poll_s, settle_s
        self.console = console or Console()
        self.now, self.sleep = now, sleep
        self.stack_started = stack_started
        self._known: dict[str, Marker] = {}
        self._preempted: set[tuple[str, str]] = set()

    def poll(self, result: WatchResult) -> WatchResult:
        """One look at the bucket; transient errors are noted and the previous view kept."""
        try:
            every = self.bucket.markers(self._known)
        except BucketError:
            raise
        except (BotoCoreError, ClientError, OSError) as exc:
            result.last_error = f"{type(exc).__name__}: {exc}"
            return result
        self._known = {m.key: m for m in every}
        result.markers = current(every, self.baseline, self.since)
        # A preemption is a PREEMPTED marker write: a node that comes back rewrites its key.
        self._preempted |= {(m.key, m.etag) for m in result.markers if m.state == "PREEMPTED"}
        result.preemptions = len(self._preempted)
        result.verdict = assess(result.markers, self.node_count)
        result.last_error = None
        result.polls += 1
        return result

    def finished(self, verdict: Optional[Verdict], failed_since: Optional[float], now: float) -> bool:
        if verdict is None:
            return False
        if verdict.state in ("DONE", "SYNC_FAILED"):
            return True
        if verdict.state == "FAILED":
            # Give the other nodes time to stop and write their own final markers.
            return verdict.settled or (failed_since is not None and now - failed_since >= self.settle_s)
        return False

    def run(self) -> WatchResult:
        result = WatchResult()
        clock = PollClock.starting(self.now(), self.stack_started, self.timeout_s)
        failed_since = None
        live = Live(Text(""), console=self.console, refresh_per_second=2, transient=False) \
            if self.console.is_terminal else None
        last_printed = None
        try:
            if live:
                live.start()
            while True:
                self.poll(result)
                now = self.now()
                if result.verdict is not None and result.verdict.state == "FAILED":
                    failed_since = failed_since or now
                line = status_line(result, now - clock.started,
                                   cost_so_far(self.outputs, result.markers, now, clock.started))
                if live:
                    live.update(Text(line))
                else:
                    # No terminal (CI, a log file): a line when something changes, not every poll.
                    key = (result.verdict.counts if result.verdict else None, result.preemptions, result.last_error)
                    if key != last_printed:
                        self.console.print(line, highlight=False)
                        last_printed = key
                if self.finished(result.verdict, failed_since, now):
                    return result
                if self.start_check and not result.markers:
                    result.start_failed = self.start_check(now - clock.began)
                    if result.start_failed:
                        return result
                if clock.expired(now):
                    result.timed_out = True
                    return result
                self.sleep(clock.pause(self.poll_s, now))
        finally:
            if live:
                live.stop()
