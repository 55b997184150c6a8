"""Tencent Cloud provider: VPC network, CAM node role, COS/CFS Turbo storage, CVM nodes or a spot pool.

Same part names as every provider package: `network`, `identity`, `storage`, `compute`; `profile`
holds the declared capabilities and value rules. Built on tencentcloud-iac-pulumi 0.2.3 (module
`tencentcloud_iac_pulumi`; its docstring examples import `pulumi_tencentcloud`, which does not exist).
User guide: docs/tencentcloud.md.
"""
