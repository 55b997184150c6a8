"""The platforms' job API calls are signed, each with its cloud's SDK signer, and checked by a stand-in with
localcloud/signatures.py, which is written from the clouds' specifications and not from the SDKs:
- PAI-DLC (components/providers/alicloud/dlc/job.py): ACS3-HMAC-SHA256, the Authorization from the Tea
  OpenAPI's own get_authorization; an AccessKey pair, or STS credentials with their token;
- ModelArts (components/providers/huaweicloud/modelarts/job.py): SDK-HMAC-SHA256 by huaweicloudsdkcore's
  Signer.
A job is submitted, read, its log fetched and stopped with the right key, and a wrong or unknown key, or
no signature, is refused with the API gateway's error.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from components.platforms.jobapi import JobApiError, NoCredentials
from components.validation import build_spec
from tools.stackfiles import load_stack_config
from localcloud import standins


@dataclass
class Platform:
    stack: str
    package: str
    keys: dict  # what the stand-in knows: key id -> secret
    tokens: dict  # key id -> the STS token the key must come with
    good: list  # credentials the client signs with, in the client's form, each accepted
    bad: list  # (credentials, the gateway's error the stand-in answers)
    unsigned: str  # the error for a request with no signature


PLATFORMS = {
    "pai-dlc": Platform(
        "large-a100-dlc", "components.providers.alicloud.dlc.job",
        {"LTAI-local-key": "local-secret", "STS.local-key": "sts-secret"}, {"STS.local-key": "a-token"},
        [{"access_key_id": "LTAI-local-key", "access_key_secret": "local-secret"},
         {"access_key_id": "STS.local-key", "access_key_secret": "sts-secret", "security_token": "a-token"}],
        [({"access_key_id": "LTAI-local-key", "access_key_secret": "another"}, "SignatureDoesNotMatch"),
         ({"access_key_id": "LTAI-nobody", "access_key_secret": "local-secret"}, "InvalidAccessKeyId.NotFound"),
         ({"access_key_id": "STS.local-key", "access_key_secret": "sts-secret"},
          "InvalidSecurityToken.MismatchWithAccessKey")],
        "IncompleteSignature"),
    "modelarts": Platform(
        "hw-large-910b-modelarts", "components.providers.huaweicloud.modelarts.job",
        {"HWLOCALAK": "local-sk", "HWTEMPAK": "temp-sk"}, {"HWTEMPAK": "temp-token"},
        [("HWLOCALAK", "local-sk"), ("HWTEMPAK", "temp-sk", "temp-token")],
        [(("HWLOCALAK", "another"), "APIG.0301"), (("HWNOBODY", "local-sk"), "APIG.0301"),
         (("HWTEMPAK", "temp-sk"), "APIG.0301")],
        "APIG.0301"),
}


@pytest.fixture(params=list(PLATFORMS))
def platform(request, tmp_path):
    import importlib

    p = PLATFORMS[request.param]
    job = importlib.import_module(p.package)
    (tmp_path / "bucket" / "code").mkdir(parents=True)
    standin = standins.job_api(job.OFFER, tmp_path / "bucket", tmp_path, keys=p.keys, tokens=p.tokens)
    server = standin.serve()
    config = {**load_stack_config(p.stack), "gpu-training:train": {"command": "echo signed; sleep 30",
                                                                   "launcher": "direct"}}
    yield p, job, build_spec(config, stack=p.stack), f"http://127.0.0.1:{server.server_address[1]}"
    standin.close(server)


def test_signed_requests_submit_read_and_stop_a_job(platform):
    p, job, spec, url = platform
    for number, credentials in enumerate(p.good):
        api = job.client(spec.region, base_url=url, credentials=credentials)
        job_id = api.submit(job.API.named(job.request(spec), str(number)))  # a name per submit, as JobProvider's
        assert api.state(job_id)["state"] == "running"
        assert isinstance(job.logs(job_id, spec.region, base_url=url, credentials=credentials), str)
        api.stop(job_id)


def test_a_bad_signature_is_refused_with_the_gateways_error(platform):
    p, job, spec, url = platform
    for credentials, code in p.bad:
        with pytest.raises(JobApiError, match=code):
            job.client(spec.region, base_url=url, credentials=credentials).submit(job.request(spec))
    with pytest.raises(JobApiError, match=p.unsigned):
        job.client(spec.region, base_url=url).submit(job.request(spec))


@pytest.mark.parametrize("platform", ["pai-dlc"], indirect=True)  # ModelArts' signature names no operation
def test_a_request_signed_for_another_operation_is_refused(platform):
    """PAI-DLC signs the operation's name (x-acs-action): a GetJob signature on the stop path is refused."""
    p, job, spec, url = platform
    api = job.client(spec.region, base_url=url, credentials=p.good[0])
    job_id = api.submit(job.request(spec))
    sign = api.signer
    api.signer = lambda operation, *rest: sign("state" if operation == "stop" else operation, *rest)
    with pytest.raises(JobApiError, match="InvalidAction.NotFound"):
        api.stop(job_id)


@pytest.mark.parametrize("package, names, endpoint", [
    ("components.providers.alicloud.dlc.job", ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY"),
     "https://pai-dlc.cn-hangzhou.aliyuncs.com"),
    ("components.providers.huaweicloud.modelarts.job", ("HW_ACCESS_KEY", "HW_SECRET_KEY", "HW_PROJECT_ID"),
     "https://modelarts.cn-hangzhou.myhuaweicloud.com"),
])
def test_without_credentials_the_cloud_client_says_which_variables_to_set(monkeypatch, package, names, endpoint):
    import importlib

    job = importlib.import_module(package)
    for name in ("GPU_TRAINING_PLATFORM_ENDPOINT", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                 *names):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(NoCredentials, match=f"{names[0]} and {names[1]}"):
        job.client("cn-hangzhou")
    for name in names:
        monkeypatch.setenv(name, "VALUE")
    api = job.client("cn-hangzhou")
    assert api.base_url == endpoint and api.signer is not None


@pytest.mark.parametrize("stack, names", [("large-a100-dlc", "ALICLOUD_ACCESS_KEY and ALICLOUD_SECRET_KEY"),
                                          ("hw-large-910b-modelarts", "HW_ACCESS_KEY and HW_SECRET_KEY and HW_PROJECT_ID")])
def test_pulumi_up_without_the_job_apis_credentials_stops_before_creating_anything(monkeypatch, stack, names):
    """The job is submitted from the dynamic provider's process with the environment's credentials: the
    program says what is missing at `pulumi up` (not a preview), before the code upload, not in a traceback."""
    from components import providers
    from tools.mockrun import run_program

    for name in [n for n in list(__import__("os").environ) if n.startswith(providers.credential_env_prefixes())]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GPU_TRAINING_PLATFORM_ENDPOINT", raising=False)
    monkeypatch.delenv("HW_PROJECT_ID", raising=False)
    config = load_stack_config(stack)
    assert run_program(config, stack).resources  # a preview needs none
    with pytest.raises(Exception, match=names) as caught:
        run_program(config, stack, preview=False)
    assert "Pulumi config" in str(caught.value)
