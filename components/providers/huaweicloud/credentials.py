"""Huawei Cloud: the one set of credential variables every gpu-training command reads (docs/cli.md).

pulumi-huaweicloud is bridged from terraform-provider-huaweicloud v1.73.3, whose provider schema
defaults access_key to HW_ACCESS_KEY, secret_key to HW_SECRET_KEY and security_token to
HW_SECURITY_TOKEN (huaweicloud/terraform-provider-huaweicloud@v1.73.3:huaweicloud/provider.go,
schema.MultiEnvDefaultFunc / EnvDefaultFunc); OBS takes the same AK/SK through its S3-compatible API.
"""
ACCESS_KEY, SECRET_KEY, TOKEN = "HW_ACCESS_KEY", "HW_SECRET_KEY", "HW_SECURITY_TOKEN"
SOURCE = "huaweicloud/terraform-provider-huaweicloud@v1.73.3:huaweicloud/provider.go (access_key, secret_key, security_token)"
# The Huawei Cloud Python SDK's environment provider reads these (huaweicloudsdkcore/auth/provider.py).
SDK_ALIASES = {ACCESS_KEY: "HUAWEICLOUD_SDK_AK", SECRET_KEY: "HUAWEICLOUD_SDK_SK", TOKEN: "HUAWEICLOUD_SDK_SECURITY_TOKEN"}
