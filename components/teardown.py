"""Whether this run of the program is a teardown: Pulumi running it for `refresh`/`destroy --run-program`.

scripts/run.py (and so `gpu-training down`) sets TEARDOWN_ENV while Pulumi runs the program for those
commands. The program then runs only to give the providers fresh credentials (a Kubernetes stack's temporary
kubeconfig), so a rule that guards only what `up` would create must not keep a stack made before that rule
from being torn down (components/validation/read.py, creation_error).
"""
from __future__ import annotations

import os

TEARDOWN_ENV = "GPU_TRAINING_TEARDOWN"


def tearing_down() -> bool:
    return os.environ.get(TEARDOWN_ENV) == "1"
