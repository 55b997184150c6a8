"""The environment variables a cloud API client that the tools run (prices, regions, capacity) reads its key
from: the one answer when they are not set (which to set, and what the key must be allowed to do: each client
says), and the variables filled from a key the tools already hold."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence


def unset(env: Mapping[str, str], names: Iterable[str], needs: str) -> Optional[str]:
    """None when every variable of `names` is set in `env`, else "set A and B (needs)"."""
    missing = [name for name in names if not env.get(name)]
    return f"set {' and '.join(missing)} ({needs})" if missing else None


def as_env(creds: Any, names: Sequence[str], token: str) -> dict[str, str]:
    """The variables a client reads (`names`: the key id's and the secret's, `token`: the session token's), filled
    from a key already resolved (its access_key, secret_key and token, the last empty when there is none)."""
    key_id, secret = names
    return {key_id: creds.access_key, secret: creds.secret_key, token: creds.token or ""}
