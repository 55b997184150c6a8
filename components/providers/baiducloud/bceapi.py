"""Calls to Baidu AI Cloud's APIs for the dynamic provider: clients from the environment, retries,
and errors that name the resource, the call and the cloud's error code.

Credentials are read from the environment inside each call and never held by an object that
Pulumi pickles into the state (dynamic.py's providers keep only plain settings). Variables:
BAIDUCLOUD_ACCESS_KEY / BAIDUCLOUD_SECRET_KEY (the names baidubce/terraform-provider-baiducloud
reads: website/docs/index.html.markdown, "Environment variables") and BAIDUCLOUD_SESSION_TOKEN for
STS credentials. Endpoints: `bcc.<region>.baidubce.com` for BCC and VPC (bce-python-sdk 0.9.79
samples, doc "BCC API: 查询实例套餐规格(新)" Host: bcc.bj.baidubce.com), `iam.bj.baidubce.com`
(IAM is global; bce-python-sdk 0.9.79 baidubce/services/iam), `bkm.<region>.baidubce.com` (KMS).
BAIDUCLOUD_ENDPOINT overrides every service's endpoint (the tests' stand-in on 127.0.0.1).

Retries: the SDK's own policy is off (NoRetryPolicy); one tenacity loop here retries throttling
(HTTP 429 or a throttling code), 5xx and timeouts. A retried create carries the same client token,
so the cloud returns what the first attempt made instead of making a second one.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any, Callable

ACCESS_KEY_ENV, SECRET_KEY_ENV, TOKEN_ENV = "BAIDUCLOUD_ACCESS_KEY", "BAIDUCLOUD_SECRET_KEY", "BAIDUCLOUD_SESSION_TOKEN"
ENDPOINT_ENV = "BAIDUCLOUD_ENDPOINT"
# Throttling: HTTP 429, or one of these codes. The codes are not confirmed from a Baidu error-code list
# (none was found in the sources read): retrying an unlisted throttling code is the cost of a miss.
THROTTLE_CODES = ("RequestLimitExceeded", "TooManyRequests", "Throttling")
NOT_FOUND_CODES = ("NoSuchObject", "NoSuchInstance", "Instance.NotFound", "InstanceNotFound", "NotFound",
                   "NoSuchVpc", "NoSuchSubnet", "SecurityGroup.NotFound", "EntityNotExist", "NoSuchEntity")


class CredentialsMissing(RuntimeError):
    pass


class BceApiError(RuntimeError):
    """An API call failed: names the resource, the call and the cloud's error code."""

    def __init__(self, resource: str, call: str, code: str | None, status: int | None, message: str,
                 request_id: str | None = None):
        self.resource, self.call, self.code, self.status = resource, call, code, status
        super().__init__(f"{resource}: {call} failed: {code or 'no error code'}"
                         f" (HTTP {status if status is not None else 'none'}"
                         f"{', request ' + request_id if request_id else ''}): {message}")

    @property
    def not_found(self) -> bool:
        return self.status == 404 or (self.code or "") in NOT_FOUND_CODES


@dataclass(frozen=True)
class Settings:
    """Plain, non-secret call settings: what a pickled provider may carry."""
    region: str
    attempts: int = 6
    first_wait_s: float = 1.0
    max_wait_s: float = 30.0
    timeout_ms: int = 30_000


def credentials() -> Any:
    from baidubce.auth.bce_credentials import BceCredentials

    key, secret = os.environ.get(ACCESS_KEY_ENV), os.environ.get(SECRET_KEY_ENV)
    if not key or not secret:
        raise CredentialsMissing(f"Baidu AI Cloud credentials: set {ACCESS_KEY_ENV} and {SECRET_KEY_ENV}"
                                 " (read at each call, never stored in the Pulumi state)")
    return BceCredentials(key, secret)


def endpoint(service: str, region: str) -> str:
    override = os.environ.get(ENDPOINT_ENV)
    if override:
        return override
    if service == "iam":
        return "https://iam.bj.baidubce.com"
    host = {"bcc": "bcc", "vpc": "bcc", "kms": "bkm"}[service]
    return f"https://{host}.{region}.baidubce.com"


def with_security_token(client, token: str | None):
    """STS credentials need x-bce-security-token on every request. bce-python-sdk 0.9.79 sends it for
    BOS, CFC and BTS only (grep STS_SECURITY_TOKEN), not for BCC, VPC, IAM or KMS, so it is added here,
    before signing (the signer signs every x-bce-* header)."""
    if not token:
        return client
    name = "_send_iam_request" if hasattr(client, "_send_iam_request") else "_send_request"
    original = getattr(client, name)

    def send(http_method, path, body=None, headers=None, *args, **kwargs):
        headers = dict(headers or {})
        headers[b"x-bce-security-token"] = token.encode()
        return original(http_method, path, body, headers, *args, **kwargs)

    setattr(client, name, send)
    return client


def client(service: str, settings: Settings):
    """A fresh SDK client for `service` (bcc | vpc | subnet | iam | kms) with the current credentials."""
    return with_security_token(_client(service, settings), os.environ.get(TOKEN_ENV))


def _client(service: str, settings: Settings):
    from baidubce.bce_client_configuration import BceClientConfiguration
    from baidubce.retry.retry_policy import NoRetryPolicy

    config = BceClientConfiguration(credentials=credentials(), security_token=os.environ.get(TOKEN_ENV), endpoint=endpoint(
        "vpc" if service == "subnet" else service, settings.region), retry_policy=NoRetryPolicy(),
        connection_timeout_in_mills=settings.timeout_ms)
    if service == "bcc":
        from baidubce.services.bcc.bcc_client import BccClient
        return BccClient(config)
    if service == "vpc":
        from baidubce.services.vpc.vpc_client import VpcClient
        return VpcClient(config)
    if service == "subnet":
        from baidubce.services.subnet.subnet_client import SubnetClient
        return SubnetClient(config)
    if service == "iam":
        from baidubce.services.iam.iam_client import IamClient
        return IamClient(config)
    if service == "kms":
        from baidubce.services.kms.kms_client import KmsClient
        return KmsClient(config)
    raise ValueError(f"unknown Baidu service {service!r}")


def _decode(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def translate(resource: str, call: str, error: BaseException) -> BaseException:
    """The SDK's exception as a BceApiError (or the original when it is not an API answer)."""
    from baidubce.exception import BceHttpClientError, BceServerError

    inner = error.last_error if isinstance(error, BceHttpClientError) else error
    if isinstance(inner, BceServerError):
        return BceApiError(resource, call, _decode(inner.code), inner.status_code, _decode(str(inner)) or "",
                           _decode(inner.request_id))
    if isinstance(inner, (socket.timeout, TimeoutError)):
        return BceApiError(resource, call, "Timeout", None, f"no answer within the client timeout ({inner})")
    if isinstance(inner, (ConnectionError, OSError)):
        return BceApiError(resource, call, "ConnectionError", None, str(inner))
    return error


def retryable(error: BaseException) -> bool:
    if not isinstance(error, BceApiError):
        return False
    return (error.status == 429 or (error.code or "") in THROTTLE_CODES or (error.status or 0) >= 500
            or error.code in ("Timeout", "ConnectionError"))


def call(settings: Settings, resource: str, name: str, function: Callable[[], Any]) -> Any:
    """Run one API call with retries; `name` is the call as the error message shows it."""
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

    def attempt():
        try:
            return function()
        except Exception as error:  # the SDK raises several kinds; translate() keeps what it does not know
            translated = translate(resource, name, error)
            if translated is error:
                raise
            raise translated from None

    retrying = Retrying(stop=stop_after_attempt(settings.attempts), reraise=True,
                        wait=wait_exponential(multiplier=settings.first_wait_s, max=settings.max_wait_s),
                        retry=retry_if_exception(retryable))
    return retrying(attempt)


def body(response: Any) -> dict:
    """A BceResponse's fields as a dict (the SDK maps the JSON answer onto attributes)."""
    def plain(value):
        if hasattr(value, "__dict__"):
            return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_") and k != "metadata"}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value
    return plain(response)
