"""pulumi-huaweicloud, imported once for the parts (network, identity, storage, compute).

pulumi-huaweicloud 0.0.12's `_utilities.py` imports `pkg_resources` at import time, which warns that
the API is deprecated (setuptools < 82 still ships it: requirements.txt pins it, with the reason).
The warning is about the SDK's own code, not ours, so it is silenced here and nowhere else.
"""
from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
    import pulumi_huaweicloud as huaweicloud
    from pulumi_huaweicloud import as_, dew, ecs, iam, ims, obs, sfs, vpc

__all__ = ["huaweicloud", "as_", "dew", "ecs", "iam", "ims", "obs", "sfs", "vpc"]
