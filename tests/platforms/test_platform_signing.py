"""PAI-DLC's job API calls are signed (components/providers/alicloud/dlc/job.py): the Tea OpenAPI client's
ACS3-HMAC-SHA256 signer makes each request's Authorization, and the stand-in checks it with
localcloud/signatures.acs3, written from Alibaba's "V3 request structure and signature", not from the SDK:
a job is submitted, read, its log fetched and stopped with the right key (an AccessKey pair, or STS
credentials with their token), and refused with the gateway's error with a wrong or unknown one.
"""
from __future__ import annotations

import pytest

from components.platforms.jobapi import JobApiError
from components.platforms.standin import kill_tree
from components.validation import build_spec
from tools.stackfiles import load_stack_config

STACK = "large-a100-dlc"
KEYS = {"LTAI-local-key": "local-secret", "STS.local-key": "sts-secret"}


@pytest.fixture
def dlc(tmp_path):
    from components.providers.alicloud.dlc import job

    (tmp_path / "bucket" / "code").mkdir(parents=True)
    standin = job.stand_in(tmp_path / "bucket", tmp_path, keys=KEYS)
    server = standin.serve()
    config = {**load_stack_config(STACK), "gpu-training:train": {"command": "echo signed; sleep 30",
                                                                 "launcher": "direct"}}
    spec = build_spec(config, stack=STACK)
    yield job, spec, f"http://127.0.0.1:{server.server_address[1]}"
    for item in standin.jobs.values():
        if item.process and item.process.poll() is None:
            kill_tree(item.process.pid)
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("credentials", [
    {"access_key_id": "LTAI-local-key", "access_key_secret": "local-secret"},
    {"access_key_id": "STS.local-key", "access_key_secret": "sts-secret", "security_token": "a-token"},
], ids=["access-key", "sts"])
def test_signed_requests_submit_read_and_stop_a_job(dlc, credentials):
    job, spec, url = dlc
    api = job.client(spec.region, base_url=url, credentials=credentials)
    job_id = api.submit(job.request(spec))
    assert api.state(job_id)["state"] == "running"
    assert isinstance(api.logs(job_id, PodId=f"{job_id}-worker-0"), str)
    api.stop(job_id)


@pytest.mark.parametrize("credentials, code", [
    ({"access_key_id": "LTAI-local-key", "access_key_secret": "another-secret"}, "SignatureDoesNotMatch"),
    ({"access_key_id": "LTAI-nobody", "access_key_secret": "local-secret"}, "InvalidAccessKeyId.NotFound"),
], ids=["wrong-secret", "unknown-key"])
def test_a_bad_signature_is_refused_with_the_gateways_error(dlc, credentials, code):
    job, spec, url = dlc
    with pytest.raises(JobApiError, match=code):
        job.client(spec.region, base_url=url, credentials=credentials).submit(job.request(spec))


def test_an_unsigned_request_is_refused(dlc):
    job, spec, url = dlc
    with pytest.raises(JobApiError, match="IncompleteSignature"):
        job.client(spec.region, base_url=url).submit(job.request(spec))


def test_without_credentials_the_cloud_client_says_which_variables_to_set(monkeypatch):
    from components.providers.alicloud.dlc import job

    for name in ("GPU_TRAINING_PLATFORM_ENDPOINT", "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY",
                 "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(JobApiError, match="ALICLOUD_ACCESS_KEY and ALICLOUD_SECRET_KEY"):
        job.client("cn-hangzhou")
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "LTAI-local-key")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "local-secret")
    api = job.client("cn-hangzhou")
    assert api.base_url == "https://pai-dlc.cn-hangzhou.aliyuncs.com" and api.signer is not None
