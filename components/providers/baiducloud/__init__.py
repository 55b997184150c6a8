"""Baidu AI Cloud: BCC GPU instances, VPC, IAM, KMS and BOS, built as Pulumi dynamic resources over
bce-python-sdk (dynamic.py), since no Pulumi provider exists for Baidu and the Terraform provider has no
bid (spot) instances. Docs: docs/baiducloud.md (what is built, the sources, what is unverified).
"""
