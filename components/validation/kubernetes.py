"""The stack's `kubernetes:` section -> a KubernetesSpec, every problem recorded by its dotted key.

A Kubernetes stack is a tier plus this section: the tier, GPU, nodes, billing, disks and checkpoint
rules of components/validation apply unchanged; these are the cluster's own settings. Facts about the
provider's managed Kubernetes (versions, system pool, billing) come from its profile's KubernetesOffer;
the record itself is components/kubernetes/spec.py.
"""
from __future__ import annotations

import re
from typing import Optional

from components import cidrs
from components.kubernetes.spec import DEFAULT_START_DEADLINE_MINUTES, KubernetesSpec, image_registry
from components.providers.profile_records import KubernetesOffer

# A DNS-1123 label: what Kubernetes accepts as a namespace name (at most 63 characters).
_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# An image reference: [registry/]path[:tag][@sha256:digest]; no spaces or shell characters.
_IMAGE_RE = re.compile(r"[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?")
# The training container: PyTorch with CUDA and cuDNN runtime libraries (the GPU driver comes from the
# node: ACK installs it). It is on Docker Hub: where the provider says the nodes cannot pull from there
# (KubernetesOffer.image_pull_problem, e.g. mainland China), kubernetes.image must name a registry they reach.
DEFAULT_IMAGE = "pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime"
DEFAULT_NAMESPACE = "gpu-training"
MAX_SYSTEM_NODES = 10
MIN_START_DEADLINE_MINUTES = 10


def check(raw: Optional[dict], offer: Optional[KubernetesOffer], problems, region: Optional[str] = None,
          max_hours: Optional[float] = None) -> Optional[KubernetesSpec]:
    """The validated section, or None when the stack has none (a VM stack) or it could not be built."""
    if raw is None:
        return None
    if offer is None:  # the provider's `unsupported` entry has said why, by key
        return None
    version = raw.get("version")
    if version is not None:
        match = re.fullmatch(offer.version_pattern, version)
        if not match:
            problems.error("kubernetes.version", f"{version!r} is not a {offer.service} version; expected the form"
                           f" of {offer.version_pattern!r} (e.g. 1.{offer.min_minor}.1-aliyun.1), or leave it unset"
                           " for the newest the cloud offers")
        elif int(match.group(1)) < offer.min_minor:
            problems.error("kubernetes.version", f"{version!r} is older than 1.{offer.min_minor}: the training Job"
                           " uses podFailurePolicy (GA in 1.31) so evictions do not count as failures")
    cidrs = _api_cidrs(raw.get("apiAllowCidrs"), problems)
    system_nodes = raw.get("systemNodes", offer.default_system_nodes)
    if not 1 <= system_nodes <= MAX_SYSTEM_NODES:
        problems.error("kubernetes.systemNodes", f"{system_nodes} is out of range; allowed: 1-{MAX_SYSTEM_NODES}"
                       " (CoreDNS and the cluster's controllers run there; 2 keep it up through one node's loss)")
    image = raw.get("image", DEFAULT_IMAGE)
    if not _IMAGE_RE.fullmatch(image):
        problems.error("kubernetes.image", f"{image!r} is not a container image reference; expected"
                       " registry/path:tag (e.g. registry.cn-beijing.aliyuncs.com/you/pytorch:2.4.1-cuda12.4)")
    elif region and offer.image_pull_problem:
        why = offer.image_pull_problem(region, image_registry(image))
        if why:
            given = "not set, so the default" if "image" not in raw else "set to"
            problems.creation_error("kubernetes.image", f"{given} {image!r}: {why}")
    start = _start_deadline(raw.get("startDeadlineMinutes", DEFAULT_START_DEADLINE_MINUTES), offer, max_hours,
                            problems)
    if offer.credential_minutes:
        problems.info("kubernetes", f"the Kubernetes provider's kubeconfig from `up` expires after"
                      f" {offer.credential_minutes} minutes: tear down with scripts/run.py, or by hand with"
                      " `GPU_TRAINING_TEARDOWN=1 pulumi refresh --run-program` and `GPU_TRAINING_TEARDOWN=1 pulumi destroy"
                      " --run-program` (Pulumi CLI >= 3.160), which"
                      " read a new one; a plain `pulumi destroy` after that fails with Unauthorized and leaves the"
                      " cluster billing (docs/kubernetes.md, Access)")
    namespace = raw.get("namespace", DEFAULT_NAMESPACE)
    if not _LABEL_RE.fullmatch(namespace):
        problems.error("kubernetes.namespace", f"{namespace!r} is not a Kubernetes namespace name; allowed:"
                       " lowercase letters, digits and '-', 1-63 characters, starting and ending with a letter"
                       " or digit")
    system_type = raw.get("systemInstanceType", offer.default_system_type)
    if raw.get("gpuOperator"):
        problems.warning("kubernetes.gpuOperator", f"true: NVIDIA's GPU Operator is installed for monitoring and"
                         f" feature discovery only (driver, toolkit and device plugin off): {offer.gpu_stack_note}")
    return KubernetesSpec(offer, version, cidrs, system_nodes, system_type, image,
                          bool(raw.get("gpuOperator", False)), namespace, start)


def _start_deadline(value, offer: KubernetesOffer, max_hours: Optional[float], problems) -> int:
    """kubernetes.startDeadlineMinutes: run.py reads the pods with the kubeconfig from `up`, so the check must
    come before that credential expires (offer.credential_minutes), and before maxHours ends the Job."""
    most = offer.credential_minutes - 30 if offer.credential_minutes else 24 * 60
    if max_hours is not None:
        most = max(MIN_START_DEADLINE_MINUTES, min(most, int(max_hours * 60)))
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_START_DEADLINE_MINUTES <= value <= most:
        limit = (f"the kubeconfig from `up` lasts {offer.credential_minutes} minutes"
                 if offer.credential_minutes else "one day")
        problems.creation_error("kubernetes.startDeadlineMinutes", f"{value!r} is out of range; allowed: whole minutes"
                       f" {MIN_START_DEADLINE_MINUTES}-{most} (GPU nodes from zero and the image pull take minutes;"
                       f" {limit}, and maxHours ends the Job)")
        return DEFAULT_START_DEADLINE_MINUTES
    return value


def _api_cidrs(value, problems) -> tuple[str, ...]:
    """Who may reach the API server: `pulumi up` itself talks to it, so at least the deploying machine."""
    if not value:
        problems.error("kubernetes.apiAllowCidrs", "empty; pulumi up creates the training Job through the cluster's"
                       " API server, which admits only these CIDRs: give your address, e.g. ['198.51.100.7/32']")
        return ()
    found = []
    for key, item, network in cidrs.parsed_entries(value, "kubernetes.apiAllowCidrs", "198.51.100.7/32", problems):
        if network.prefixlen == 0:
            problems.error(key, f"{item!r} opens the API server to the whole Internet; list the addresses that run"
                           " pulumi up and kubectl")
        else:
            found.append(str(network))
    for world, pieces in cidrs.world_unions(found):
        problems.error("kubernetes.apiAllowCidrs", f"{pieces}: together these cover {world}, which opens the API"
                       " server to the whole Internet; list the addresses that run pulumi up and kubectl")
    return tuple(found)
