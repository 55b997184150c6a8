"""The project a command works on: moved to components/project.py (the program resolves the stack's
relative paths against it too); these names stay importable for the commands that read them here."""
from components.project import (  # noqa: F401
    ENV, INSTALL_ROOT, OUT_ENV, PROJECT_FILE, Project, ProjectError, find_upward, locate, out_dir, root, stacks_dir,
)
