"""The per-section rules of validation, each on the raw values read from the config (components/validation/read.py).

compute.py: GPU, instance type, spot pool, nodes, spot price and zones; storage.py: checkpoint bucket,
data disk, staged data, shared file system; access.py: SSH and the boot image; workload.py: the training
command, node software and lifetime; cloud.py: the provider's capabilities, regions, zones and tag rules.
Each rule records its problems by dotted key and returns the value to use; build.py composes them.
"""
from __future__ import annotations
