"""PaddlePaddle on the nodes: which GPU wheel index matches the node's CUDA toolkit, and its defaults.

PaddlePaddle publishes its GPU wheels (paddlepaddle-gpu 3.x, which bring their CUDA runtime libraries
as nvidia-* wheels) on its own package index, one per CUDA version:
https://www.paddlepaddle.org.cn/packages/stable/cu<major><minor>/ (PaddlePaddle/FastDeploy#4414,
docs/get_started/installation/nvidia_gpu.md: `pip install paddlepaddle-gpu==3.2.0 -i
https://www.paddlepaddle.org.cn/packages/stable/cu126/`; the index pages for cu126 and cu129 list
paddlepaddle-gpu). PyPI's paddlepaddle-gpu stops at 2.6.2. Only the indexes seen are listed; another
CUDA version needs bootstrap.frameworkIndexUrl. The driver a CUDA version needs: CUDA Toolkit release
notes, table "CUDA Toolkit and Corresponding Driver Versions" (12.6 GA: >= 560.28.03; 12.9 GA: >= 575.51.03).
"""
from __future__ import annotations

from typing import Optional

DEFAULT_VERSION = "3.2.0"  # the release FastDeploy's install doc pairs with cu126
DEFAULT_CUDA_TOOLKIT = "12-6"
INDEX = "https://www.paddlepaddle.org.cn/packages/stable/cu{code}/"
INDEXED_TOOLKITS = ("12-6", "12-9")
MIN_DRIVER_BRANCH = {"12-6": 560, "12-9": 575}


def index_for(cuda_toolkit: str) -> Optional[str]:
    """The wheel index for a cudaToolkit such as '12-6', or None when none is known."""
    if cuda_toolkit not in INDEXED_TOOLKITS:
        return None
    return INDEX.format(code=cuda_toolkit.replace("-", ""))


def driver_too_old(driver_branch: str, cuda_toolkit: str) -> Optional[int]:
    """The lowest driver branch the toolkit needs, when `driver_branch` is below it; else None."""
    wanted = MIN_DRIVER_BRANCH.get(cuda_toolkit)
    try:
        branch = int(driver_branch.split("-")[0])
    except ValueError:
        return None
    return wanted if wanted and branch < wanted else None
