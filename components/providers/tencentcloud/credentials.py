"""Tencent Cloud: the one set of credential variables every gpu-training command reads (docs/cli.md).

The variables tencentcloud-iac-pulumi reads (installed SDK: tencentcloud_iac_pulumi/config/vars.py,
secret_id / secret_key, and provider.py, security_token: "It can be sourced from the
`TENCENTCLOUD_SECURITY_TOKEN` environment variable"); COS takes the same SecretId/SecretKey through
its S3-compatible API.
"""
ACCESS_KEY, SECRET_KEY, TOKEN = "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SECURITY_TOKEN"
SOURCE = "tencentcloud_iac_pulumi 0.2.x: config/vars.py (secretId, secretKey), provider.py (security_token)"
SDK_ALIASES: dict[str, str] = {}
