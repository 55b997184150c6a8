"""Alibaba Cloud: the one set of credential variables every gpu-training command reads (docs/cli.md).

They are the ones `pulumi up` already needs: pulumi-alicloud is bridged from terraform-provider-alicloud,
whose provider schema defaults access_key, secret_key and security_token to these variables
(aliyun/terraform-provider-alicloud@81c43b672:alicloud/provider.go, the "access_key" / "secret_key" /
"security_token" schema entries). OSS takes the same AccessKey pair through its S3-compatible API.
"""
ACCESS_KEY, SECRET_KEY, TOKEN = "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN"
SOURCE = "aliyun/terraform-provider-alicloud@81c43b672:alicloud/provider.go (access_key, secret_key, security_token)"
# The Alibaba Cloud SDKs (Tea OpenAPI: prices, regions) read these names instead; filled from the ones above.
SDK_ALIASES = {ACCESS_KEY: "ALIBABA_CLOUD_ACCESS_KEY_ID", SECRET_KEY: "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
               TOKEN: "ALIBABA_CLOUD_SECURITY_TOKEN"}
