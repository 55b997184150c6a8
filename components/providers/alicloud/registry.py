"""Alibaba Cloud: which container registries an ACK cluster's nodes can pull the training image from.

The nodes of the Kubernetes path have no public address: they reach the Internet through the NAT
gateway ACK creates (cluster.py, new_nat_gateway). From a mainland-China region, Docker Hub is an
overseas registry: ACK's own guide for pulling from it ("docker.io") is a Global Accelerator
instance with cross-border bandwidth (ACK doc "Using GA to accelerate cross-region container image
pulling in ACK", DOCKER_HUB_SOURCE). Without one, the pull may stall in ImagePullBackOff while the
GPU nodes bill. So a mainland region takes the image from Container Registry in the stack's region
(ACR_SOURCE) or a mirror the user names, never from Docker Hub. That Docker Hub is refused outright
from mainland networks (rather than slow) is not stated by a primary source read here: unverified.
"""
from __future__ import annotations

from typing import Optional

from components.kubernetes.spec import DOCKER_HUB

# Public registries served from outside mainland China, as image_registry() names them (Docker Hub's aliases
# are read as docker.io there): the same cross-border pull as Docker Hub's. Not a closed list: a host not
# here is taken as the mirror the user says the nodes reach.
OVERSEAS_REGISTRIES = frozenset({DOCKER_HUB, "ghcr.io", "gcr.io", "quay.io", "nvcr.io", "registry.k8s.io",
                                 "public.ecr.aws", "mcr.microsoft.com"})
DOCKER_HUB_SOURCE = ("ACK doc 'Using GA to accelerate cross-region container image pulling in ACK'"
                     " (https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/"
                     "cross-domain-accelerated-pulling-container-images)")
# Hong Kong is an Alibaba region with a cn- id outside the mainland (ACS doc "Supported regions", which
# lists mainland China and Hong Kong apart: regions.yaml's sources).
OUTSIDE_MAINLAND = frozenset({"cn-hongkong"})
# Container Registry serves every mainland region (ACR doc "Supported regions",
# https://www.alibabacloud.com/help/doc-detail/215426.htm). The address of a repository is the one the ACR
# console shows for the instance; the example's form (registry.<region>.aliyuncs.com, Personal Edition) is
# not checked against a primary source here.
ACR_SOURCE = "ACR doc 'Supported regions' (https://www.alibabacloud.com/help/doc-detail/215426.htm)"
EXAMPLE_IMAGE = "registry.{region}.aliyuncs.com/<namespace>/pytorch:2.4.1-cuda12.4-cudnn9-runtime"


def mainland(region: str) -> bool:
    return region.startswith("cn-") and region not in OUTSIDE_MAINLAND


def image_pull_problem(region: str, registry_host: str) -> Optional[str]:
    """Why nodes in `region` should not pull from `registry_host`, with the fix; None when they can."""
    if not mainland(region) or registry_host not in OVERSEAS_REGISTRIES:
        return None
    where = f"Docker Hub ({registry_host})" if registry_host == DOCKER_HUB else f"{registry_host}, outside mainland China"
    return (f"the image is on {where}, which the nodes of {region} (mainland China, egress"
            f" through the NAT gateway) reach only through a cross-border accelerator ({DOCKER_HUB_SOURCE}); a"
            f" stalled pull keeps the GPU nodes billing. Push the image to a Container Registry (ACR) instance in"
            f" {region} and set kubernetes.image to the address ACR shows for it (e.g."
            f" {EXAMPLE_IMAGE.format(region=region)}), or to a mirror your nodes reach")
