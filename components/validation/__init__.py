"""Validation: the stack config -> one frozen Spec (components/spec.py), or SpecError with every problem.

read.py reads and coerces the config map; sections/ holds the per-section rules; kubernetes.py the
`kubernetes:` section; build.py composes them into `build_spec` and runs the whole-spec checks.
"""
from __future__ import annotations

from components.spec import SpecError
from components.validation.build import build_spec

__all__ = ["SpecError", "build_spec"]
