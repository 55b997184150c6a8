"""The user's setup in a rehearsal (train.setup, train.requirements; docs/training-contract.md §6).

The rehearsed agent installs exactly as a node's agent does (node_agent/setup.py), with two things of this
machine in place of the node's:
- the node's venv: each rehearsed node gets its own (localcloud.nodevenv.layered: a venv that sees this
  environment's packages, the framework among them), so nothing is ever installed into the user's own
  environment, and a replacement node starts with an empty one, as a new spot node does;
- the node's package index (the bootstrap's pipIndex): `--wheels DIR` serves a folder of wheels on
  127.0.0.1 as a PEP 503 index (localcloud.pyindex) and pip reads nothing else (no pip.conf, no other
  index); without it, pip uses the user's own configuration.
The drill then checks what a node would show: the first node installed from the index before training,
and the replacement from the bucket's wheel cache (when the first node added any), with the times.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping, Optional


class SetupRehearsal:
    """What one rehearsal adds for the stack's setup; `wanted` is False when the stack names none."""

    def __init__(self, spec, wheels: Optional[Path]):
        self.commands, self.requirements = tuple(spec.train.setup), spec.train.requirements
        self.wanted = bool(self.commands or self.requirements)
        self.index = None
        if self.wanted and wheels is not None:
            from localcloud.pyindex import PackageIndex

            self.index = PackageIndex(wheels)

    def describe(self) -> str:
        what = ([f"requirements {self.requirements}"] if self.requirements else []) + (
            [f"{len(self.commands)} setup command(s)"] if self.commands else [])
        source = (f"the wheels of --wheels, served on {self.index.index_url}" if self.index
                  else "your pip's own configuration (--wheels DIR serves a folder of wheels instead)")
        return f"{' and '.join(what)}, from {source}, into each node's own venv"

    def venv(self, root: Path) -> str:
        """The node's venv (made here), or "" when the stack installs nothing."""
        if not self.wanted:
            return ""
        from localcloud import nodevenv

        return str(nodevenv.layered(root / "venv"))

    def env(self, env: Mapping[str, str]) -> dict:
        """The agent's environment: with --wheels, pip sees that index and nothing else of the user's."""
        if not self.index:
            return dict(env)
        kept = {k: v for k, v in env.items() if not k.startswith("PIP_")}
        return {**kept, "PIP_INDEX_URL": self.index.index_url, "PIP_CONFIG_FILE": os.devnull}

    def check(self, check: Callable[[str, bool, str], None], first: Optional[Mapping],
              replacement: Optional[Mapping], first_id: str, replacement_id: str) -> None:
        """The drill's "setup" check from the markers' setup records (the first node's, the replacement's)."""
        if not self.wanted:
            return
        one, two = (first or {}).get("setup") or {}, (replacement or {}).get("setup") or {}
        cached = (one.get("wheels") or 0) > 0
        ok = one.get("source") == "index" and two.get("source") == ("cache" if cached else "index")
        check("setup before training", ok,
              f"{first_id}: {_text(one)}; replacement {replacement_id}: {_text(two)}"
              + ("" if cached else " (the first node added no wheels to cache)"))
        self.check_index(check)

    def check_index(self, check: Callable[[str, bool, str], None]) -> None:
        """With --wheels: pip asked the local index (and, configured so, nothing else)."""
        if self.index:
            asked = sum(1 for path in self.index.requests if path.startswith("/simple"))
            check("setup packages from the local index only", asked > 0,
                  f"{asked} index requests to {self.index.index_url}")

    def stop(self) -> None:
        if self.index:
            self.index.stop()


def _text(record: Mapping) -> str:
    if not record:
        return "no setup record"
    if record.get("failed"):
        return f"failed: {record['failed']}"
    wheels = f", {record['wheels']} wheels" if record.get("wheels") is not None else ""
    return f"{record.get('seconds')} s from the {record.get('source')}{wheels}"
