"""The processes below a local stand-in's process (a rehearsed node's agent, a platform job's launcher):
torchrun starts its workers, and the node agent its trainer, in sessions of their own, so a process group does
not hold them; stopping a stand-in as a powered-off machine or a deleted job means finding them by parent."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def _children() -> dict[int, list[int]]:
    """Each parent pid's children, from /proc where there is one, else POSIX `ps` (macOS)."""
    children: dict[int, list[int]] = {}
    if os.path.exists("/proc/self/stat"):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):  # a process that ended while we read
                    continue
                children.setdefault(parent, []).append(int(entry))
    else:
        listed = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True)
        for line in listed.stdout.splitlines():
            pid, parent = map(int, line.split())
            children.setdefault(parent, []).append(pid)
    return children


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, read at once (before any is killed, while the parent links still hold)."""
    children, found, todo = _children(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    """`sig` to the process group `pid` leads and to every process below it, wherever its session."""
    below = descendants(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
    for child in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, sig)
