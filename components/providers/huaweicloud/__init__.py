"""Huawei Cloud provider: VPC network, an IAM agency for the nodes, OBS/SFS Turbo storage, pay-per-use ECS
nodes or a spot pool (AS group), and the Ascend/CANN path of the bootstrap.

Same part names as every provider package: `network`, `identity`, `storage`, `compute`; `profile`
holds the declared capabilities and value rules. Built on pulumi-huaweicloud 0.0.12 (bridged from
terraform-provider-huaweicloud v1.73.3), imported through `sdk.py`. User guide: docs/huaweicloud.md.
"""
