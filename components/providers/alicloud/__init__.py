"""Alibaba Cloud provider: VPC network, RAM node role, OSS/CPFS/NAS storage, ECS nodes or a spot pool.

Same part names as every provider package: `network`, `identity`, `storage`, `compute`; `profile`
holds the declared capabilities. Built on pulumi-alicloud 4.x, non-deprecated resources only.
"""
