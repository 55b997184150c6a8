"""The checkout's folders, found without importing the project (the CLI's start-up must stay light)."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STACKS = REPO / "stacks"
SCRIPTS = REPO / "scripts"
# Run records, reports and kept rehearsals; GPU_TRAINING_OUT moves them (tests, a second checkout).
OUT = Path(os.environ.get("GPU_TRAINING_OUT") or REPO / "out")


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
