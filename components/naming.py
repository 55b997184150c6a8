"""Names the program gives a stack's resources that other code finds them by (the node role, the spot pool).

The provider parts create resources under these names and the node config carries them to the agent;
the clouds' length limits on them are checked at validation (the provider profile's naming.limits).
"""
from __future__ import annotations

from components.spec import Spec

ROLE_SUFFIX = "-node"


def pool_name(spec: Spec) -> str:
    """The spot pool's name (auto provisioning / scaling group): the agent finds its pool by it."""
    return f"gpu-training-{spec.stack}"  # within the clouds' limits: checked at validation (naming.limits)


def role_name(spec: Spec) -> str:
    # Not cut to fit: a cut name could be another stack's role. The clouds' limits are checked at
    # validation (the provider profile's naming.limits).
    return f"gpu-training-{spec.stack}{ROLE_SUFFIX}"

