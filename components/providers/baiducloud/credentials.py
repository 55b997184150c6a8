"""Baidu AI Cloud: the one set of credential variables every gpu-training command reads (docs/cli.md).

The names of Baidu's own Terraform provider (terraform-providers/terraform-provider-baiducloud:
baiducloud/provider.go, PROVIDER_ACCESS_KEY / PROVIDER_SECRET_KEY), which this project's dynamic
resources read too (bceapi.ACCESS_KEY_ENV, SECRET_KEY_ENV, TOKEN_ENV). bce-python-sdk itself reads no
environment variable (it takes BceCredentials from the caller), so there is no "SDK default" to follow.
BOS takes the same AK/SK through its S3-compatible API.
"""
from .bceapi import ACCESS_KEY_ENV, SECRET_KEY_ENV, TOKEN_ENV

ACCESS_KEY, SECRET_KEY, TOKEN = ACCESS_KEY_ENV, SECRET_KEY_ENV, TOKEN_ENV  # one copy: bceapi.py's

SOURCE = "terraform-providers/terraform-provider-baiducloud:baiducloud/provider.go (PROVIDER_ACCESS_KEY, PROVIDER_SECRET_KEY)"
SDK_ALIASES: dict[str, str] = {}
