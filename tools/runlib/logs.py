"""What `gpu-training logs STACK` prints: the nodes' trainer.log and agent.log from the bucket.

The agent ships each log in segments (node_agent/logship.py); reading a node's segments in order gives
its file back. --follow polls the segments and prints what is new until every followed node's marker is
final (and one more look found nothing new), so it ends by itself when the run does.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Optional

from .markers import FINAL_STATES

LOG_NAMES = ("trainer.log", "agent.log")


class LogError(Exception):
    """No such node, or no log in the bucket: the message says what there is."""


def pick_nodes(known: list[str], wanted: Optional[str]) -> list[str]:
    """Every known node, or the one `wanted` names: an id, a unique prefix of one, or an index (0 = first)."""
    if wanted is None:
        return known
    if wanted in known:
        return [wanted]
    if wanted.isdigit() and int(wanted) < len(known):
        return [known[int(wanted)]]
    matches = [n for n in known if n.startswith(wanted)]
    if len(matches) == 1:
        return matches
    raise LogError(f"--node {wanted}: {'ambiguous' if matches else 'no such node'}; nodes with logs: "
                   f"{', '.join(f'{i}={n}' for i, n in enumerate(known)) or 'none'}")


def nodes_with_logs(bucket) -> list[str]:
    """Nodes that shipped a log, in `status` order (newest marker first; nodes without a marker last),
    so `--node 0` is the first row of `gpu-training status`."""
    have = {node for node, _ in bucket.log_segments()}
    updated = {m.node: m.body.get("updatedAt") or "" for m in bucket.markers()}
    return sorted(have, key=lambda n: (n not in updated, "" if n not in updated else _desc(updated[n]), n))


def _desc(text: str) -> str:
    """A key that sorts ISO times newest first."""
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


class LogReader:
    """Reads the logs of some nodes, remembering how much of each segment was printed (for --follow)."""

    def __init__(self, bucket, nodes: Iterable[str], names: Iterable[str] = LOG_NAMES):
        self.bucket, self.nodes, self.names = bucket, list(nodes), tuple(names)
        self.printed: dict[str, int] = {}  # segment key -> bytes already printed

    def new_text(self) -> list[tuple[str, str, str]]:
        """[(node, log name, text not printed before)], in node and log order."""
        out = []
        segments = self.bucket.log_segments()
        for node in self.nodes:
            for name in self.names:
                chunks = []
                for seg in segments.get((node, name), []):
                    done = self.printed.get(seg["Key"], 0)
                    if seg.get("Size", done + 1) <= done:
                        continue
                    body = self.bucket.get_bytes(seg["Key"]) or b""
                    chunks.append(body[done:])
                    self.printed[seg["Key"]] = len(body)
                if chunks:
                    out.append((node, name, b"".join(chunks).decode(errors="replace")))
        return out


def tail_lines(text: str, lines: Optional[int]) -> str:
    if not lines:
        return text
    return "".join(text.splitlines(keepends=True)[-lines:])


def follow(reader: LogReader, emit: Callable[[str, str, str], None], finished: Callable[[], bool],
           poll_s: float = 2.0, sleep=time.sleep, timeout_s: Optional[float] = None) -> None:
    """Print what is new every poll_s until finished() and a last look found nothing (or the timeout)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        done = finished()
        fresh = reader.new_text()
        for item in fresh:
            emit(*item)
        if (done and not fresh) or (deadline is not None and time.monotonic() >= deadline):
            return
        sleep(poll_s)


def all_final(bucket, nodes: list[str]) -> Callable[[], bool]:
    def check() -> bool:
        states = {m.node: m.state for m in bucket.markers()}
        return all(states.get(n) in FINAL_STATES for n in nodes)
    return check
