"""What a rehearsed trainer's own output proves about the training contract (docs/training-contract.md §3, §4):
did the replacement's trainer resume from the saved step, and did the preempted one save on the stop signal?

scripts/rehearse.py judges the example trainer by its summary line; any other command is judged here, from the
trainer and not the agent: the agent setting RESUME_FROM says nothing of whether the trainer read it. Evidence,
from the trainer only:
- the steps it reports: `step N` in its output (also `Step N`, `step: N`, `global_step=N`), and the `step` of
  GPU_TRAINING_STATS_FILE as the agent samples it into loader.csv (time, step, ...);
- the files it wrote into CKPT_DIR after the stop signal (their modification times), and how it ended (the
  preempted node's marker: exit code, "killed after the grace period").
With no step reported at all the resume is not verified (ok None), never passed.
"""
from __future__ import annotations

import csv
import os
import re
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path

# `step 47`, `[train_cnn] step 47/300`, `Step 47`, `step: 47`, `global_step=47`; not `steps 300` or `max_steps=300`.
STEP = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:global_)?step\b[\s:=#'\"]*(\d+)")
# The agent's temporary names (node_agent/store.py TEMP): work in progress, never a checkpoint.
TEMP = (".tmp", ".part", ".partial", ".swp", "~", ".lock")
CONTRACT = "docs/training-contract.md"


EXAMPLE = "train_cnn.py"  # the example trainer (examples/cnn): judged by its own summary line instead


def runs_the_example(command: str) -> bool:
    """Whether a rehearsed command runs the example trainer (any word of it names train_cnn.py)."""
    return any(Path(word).name == EXAMPLE for word in shlex.split(command))


def logged_steps(text: str) -> list[int]:
    """The step numbers a trainer's output reports, in order."""
    return [int(m.group(1)) for m in STEP.finditer(text)]


def stats_steps(loader_csv: Path, since: float = 0.0, until: float = float("inf")) -> list[int]:
    """The `step` of GPU_TRAINING_STATS_FILE as the agent sampled it (loader.csv rows: time, step, ...), in
    order, of the rows sampled in [since, until)."""
    try:
        with open(loader_csv, newline="") as f:
            rows = list(csv.reader(f))
    except OSError:
        return []
    found = []
    for row in rows[1:]:
        try:
            at, step = float(row[0]), int(float(row[1]))
        except (IndexError, ValueError):
            continue  # a row without a step (the trainer wrote none), or one cut short
        if since <= at < until:
            found.append(step)
    return found


@dataclass
class Resume:
    """The verdict on a replacement's trainer: ok True (resumed), False (started over) or None (no evidence)."""
    ok: bool | None
    detail: str
    lost: int | None  # steps trained before the preemption and trained again after it


def judge_resume(offered: str, before: list[int], first: int | None, reached: int, saved: int,
                 checkpoint: str) -> Resume:
    """Whether the replacement's trainer resumed from what RESUME_FROM offered (`offered`: the directory, empty when
    the agent set none). `before`: the steps the first run reported, in order; `first`: the first step the
    replacement's trainer reported (None: none); `reached`: the highest step any trainer reported; `saved`: the
    number in the name of the newest snapshot's checkpoint `checkpoint` (0: none). The saved step is believed only
    when a trainer reported a step at least that high (a name may carry a date or a version instead)."""
    if not offered:
        return Resume(False, "the replacement's agent set no RESUME_FROM: nothing was restored for the trainer", None)
    stopped, opening = max(before, default=None), min(before, default=None)
    known = 0 < saved <= reached
    named = f"{checkpoint} (saved at step {saved})" if known else (checkpoint or "the newest snapshot")
    if first is None:
        return Resume(None, f"RESUME_FROM offered {named}, but the replacement's trainer reported no step (no `step N`"
                            " in its output, no step in GPU_TRAINING_STATS_FILE): whether it resumed is unknown; print"
                            f" `step N` lines or write the stats file ({CONTRACT} §1, §3)", None)
    if known:
        over = first < saved
    else:
        # No saved step to compare with: a trainer that starts over reports the first run's opening steps again.
        over = first <= 1 or (opening is not None and stopped is not None and first <= opening < stopped)
    if over:
        reach = "" if known or stopped is None else f" (the first run had reached step {stopped})"
        return Resume(False, f"the replacement's trainer reported step {first} first after RESUME_FROM offered {named}"
                             f"{reach}: it started over; read RESUME_FROM and load the newest checkpoint in it"
                             f" ({CONTRACT} §3)", stopped)
    lost = max(0, stopped - saved) if known and stopped is not None else None
    upto = "" if stopped is None else f"; the first run reported up to step {stopped}"
    return Resume(True, f"the replacement's trainer went on from step {first} (RESUME_FROM offered {named}{upto})",
                  lost)


def written_since(folders: list[Path], since: float, until: float) -> list[tuple[float, str]]:
    """(modification time, name) of the checkpoint files in `folders` written in [since, until), oldest first;
    temporary and dot names skipped, as the agent skips them."""
    found = []
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.startswith(".") or name.endswith(TEMP):
                    continue
                path = Path(root) / name
                try:
                    mtime = path.stat().st_mtime
                except OSError:
                    continue
                if since <= mtime < until:
                    found.append((mtime, str(path.relative_to(folder))))
    return sorted(found)


def judge_stop(marker: dict, stop_signal: str, told: float, written: list[tuple[float, str]],
               launcher: str) -> tuple[bool, str]:
    """Whether the preempted node's trainer saved on the stop signal and exited within the grace: its marker (exit
    code, reason), the signal's name and time (`told`, epoch seconds), and the checkpoint files written after it."""
    code, reason = marker.get("exitCode"), marker.get("reason") or ""
    grace = (marker.get("stopSignal") or {}).get("graceSeconds")
    signum = int(getattr(signal, stop_signal, signal.SIGTERM))
    asked = f"{CONTRACT} §4: on {stop_signal}, finish the step, save into CKPT_DIR, exit 75"
    if "killed after the grace period" in reason:
        return False, (f"the trainer was still running {grace} s after {stop_signal} and was killed (SIGKILL)"
                       f"{' (its last file: ' + written[-1][1] + ')' if written else ', having saved nothing'}; {asked}")
    if code in (128 + signum, -signum) and launcher != "torchrun":
        return False, (f"the trainer died of {stop_signal} (exit code {code}): it has no handler for it, so it saved"
                       f" nothing at the stop; {asked}")
    if not written:
        return False, (f"the trainer exited {code} after {stop_signal} without writing a checkpoint into CKPT_DIR"
                       f" (its steps since the last periodic save are lost); {asked}")
    mtime, name = written[-1]
    note = "" if code == 75 or launcher == "torchrun" else " (the contract's code for a saved stop is 75)"
    return True, f"{name} written {mtime - told:.2f} s after {stop_signal}; the trainer exited {code}{note}"
