"""A simulated node's venv: its own site-packages on top of this environment's, for the rehearsal and tests.

On a node the bootstrap makes a venv and installs the framework into it; the user's setup installs into
that venv (node_agent/setup.py). Locally, the setup must neither touch the user's own environment nor
install torch again: `layered(path)` makes a venv (no pip of its own) whose site-packages loads this
environment's through a .pth line (site.addsitedir, so that folder's own .pth files, editable installs
among them, apply too), with `pip` and `pip3` scripts that run this environment's pip under the venv's
Python. pip then installs into the venv, sees the framework as installed, and leaves this environment's
packages alone (pip does not uninstall outside the environment it installs into).
"""
from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
from pathlib import Path

PIP_SCRIPT = '#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n'


def layered(path: Path) -> Path:
    """The venv at `path` (made once); its folder."""
    python = path / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                       capture_output=True, timeout=120)
    own = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    base = [p for p in dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"]]) if Path(p).is_dir()]
    (own / "_gpu_training_base.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in base), encoding="utf-8")
    for name in ("pip", "pip3"):
        script = path / "bin" / name
        script.write_text(PIP_SCRIPT, encoding="utf-8")
        script.chmod(0o755)
    return path
