"""The clouds' stock-out and quota answers as data (components/providers/<cloud>/capacity.yaml):
every entry has its source, Tencent's codes are the SDK's own, and a failed up's text is classified."""
from __future__ import annotations

import pytest

from components import capacity, providers


@pytest.mark.parametrize("cloud", providers.names())
def test_every_cloud_says_what_its_stock_and_quota_answers_are_with_sources(cloud):
    data = capacity.of(cloud)
    assert data.status_source, f"{cloud}: how check reads the sale status needs a source"
    for answer in data.answers:
        assert answer.source and answer.meaning and answer.kind in (capacity.STOCK, capacity.QUOTA)


def test_tencents_codes_are_the_sdks_own_list():
    from tencentcloud.cvm.v20170312 import errorcodes

    known = {v for k, v in vars(errorcodes).items() if k.isupper() and isinstance(v, str)}
    codes = [a.code for a in capacity.of("tencentcloud").answers]
    assert codes and set(codes) <= known, set(codes) - known
    assert {"ResourceInsufficient.SpecifiedInstanceType", "ResourcesSoldOut.SpecifiedInstanceType"} <= set(codes)


@pytest.mark.parametrize("cloud, text, code, kind", [
    ("alicloud", "error: 1 error occurred:\n\t* creating urn:pulumi:entry-t4::gpu-training::alicloud:ecs/instance:"
                 "Instance::entry-t4-node-0: 1 error occurred:\n\t* [ERROR] terraform-provider-alicloud/alicloud/"
                 "resource_alicloud_instance.go: Resource alicloud_instance RunInstances Failed!!! "
                 "[SDK alibaba-cloud-sdk-go ERROR]:\nSDKError:\n   StatusCode: 403\n   Code: OperationDenied.NoStock\n"
                 "   Message: The requested resource is sold out in the specified zone",
     "OperationDenied.NoStock", "stock"),
    ("alicloud", "Code: QuotaExceed.ElasticQuota Message: The number of vCPUs ...", "QuotaExceed.ElasticQuota", "quota"),
    ("tencentcloud", "[TencentCloudSDKError] Code=ResourceInsufficient.SpecifiedInstanceType, Message=...",
     "ResourceInsufficient.SpecifiedInstanceType", "stock"),
    ("tencentcloud", "Code=LimitExceeded.SpotQuota", "LimitExceeded.SpotQuota", "quota"),
    ("huaweicloud", "error waiting for instance: job failed: Ecs.0001 Insufficient ECS quota", "Ecs.0001", "quota"),
    ("huaweicloud", "the job failed: Flavor p2s.8xlarge.8 is sold out", "", "stock"),
])
def test_a_failed_ups_text_is_classified_by_the_documented_code(cloud, text, code, kind):
    found = capacity.classify(cloud, text)
    assert found is not None and found.kind == kind and found.code == code


def test_other_errors_and_near_miss_codes_are_not_capacity():
    assert capacity.classify("alicloud", "Code: InvalidParameter Message: bad") is None
    assert capacity.classify("alicloud", "Code: OperationDenied.NoStockX") is None
    assert capacity.classify("baiducloud", "CreateInstanceBySpec failed: InternalError") is None
