"""The `kubernetes:` section's frozen record (KubernetesSpec) and the image-reference facts it and the parts share.

components/validation/kubernetes.py builds it from the stack config; components/spec.py's Spec carries it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from components.providers.profile_records import KubernetesOffer

# A reference's registry host: its first '/'-separated part when that holds '.' or ':' or is localhost,
# else Docker Hub; index.docker.io is Docker Hub's legacy name (distribution/reference normalize.go,
# splitDockerDomain: https://github.com/distribution/reference/blob/main/normalize.go), and
# registry-1.docker.io the host its pulls go to: all three are read as DOCKER_HUB.
DOCKER_HUB = "docker.io"
DOCKER_HUB_ALIASES = frozenset({DOCKER_HUB, "index.docker.io", "registry-1.docker.io"})
# How long after `up` the Job's pods may take to start before run.py fails the Job (no pod Running: an image
# that cannot be pulled, or pods that cannot be scheduled): GPU nodes scaled up from zero (minutes), the
# image pulled, the agent's packages installed. The upper bound keeps the check inside the kubeconfig's life.
DEFAULT_START_DEADLINE_MINUTES = 30


@dataclass(frozen=True)
class KubernetesSpec:
    offer: KubernetesOffer
    version: Optional[str]  # None: the provider's default (newest) version
    api_allow_cidrs: tuple[str, ...]
    system_nodes: int
    system_instance_type: str
    image: str
    gpu_operator: bool
    namespace: str
    start_deadline_minutes: int = DEFAULT_START_DEADLINE_MINUTES


def image_registry(image: str) -> str:
    """The registry host an image reference is pulled from (DOCKER_HUB when it names none)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return DOCKER_HUB if first in DOCKER_HUB_ALIASES else first
    return DOCKER_HUB
