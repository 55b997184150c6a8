"""Creating a Pulumi dynamic resource without leaving the pickler wrapped (every dynamic resource of ours).

pulumi 3.272's serialize_provider (pulumi/dynamic/dynamic.py) sets pickle._Pickler._batch_setitems and
save_dict to sorting wrappers on every call and restores only pickle.Pickler, so each dynamic resource
wraps the wrapper of the one before: one process that serializes ~900 providers (a test session, a large
program) fails with RecursionError (the symptom of pulumi/pulumi#17803). `pickler_kept()` puts them back.
"""
from __future__ import annotations

import pickle
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def pickler_kept() -> Iterator[None]:
    saved = pickle._Pickler._batch_setitems, pickle._Pickler.save_dict
    try:
        yield
    finally:
        pickle._Pickler._batch_setitems, pickle._Pickler.save_dict = saved
