"""The one answer of a cloud API client that the tools run (prices, regions) when its credentials are not
in the environment: which variables to set, and what the key must be allowed to do (each client says)."""
from __future__ import annotations

from typing import Iterable, Mapping, Optional


def unset(env: Mapping[str, str], names: Iterable[str], needs: str) -> Optional[str]:
    """None when every variable of `names` is set in `env`, else "set A and B (needs)"."""
    missing = [name for name in names if not env.get(name)]
    return f"set {' and '.join(missing)} ({needs})" if missing else None
