"""localcloud.LocalS3: an S3-only server, whatever a request's signature looks like.

moto's server picks a backend per request. For a request to 127.0.0.1 it reads the service from
the Authorization header as a SigV4 credential scope: `Credential=<key>/<date>/<region>/<service>/aws4_request`,
split on "/" (moto/moto_server/werkzeug_app.py, infer_service_region_host, moto 5.2). A SigV2
header ("AWS <key>:<base64 signature>", what Alibaba's OSS nodes sign with) splits into five
parts whenever the key and the signature hold exactly four "/" between them, and moto then looks
for a service named by a piece of the signature: "Unable to find appropriate backend for
sk.<...>.amazonaws.com", HTTP 500. A base64 HMAC-SHA1 signature (27 characters and "=") has four "/" about
once in 1,400 requests, so a test making a few dozen SigV2 requests failed now and then.
"""
import http.client
import uuid

import pytest

from localcloud import LocalS3


@pytest.fixture(scope="module")
def server():
    s = LocalS3()
    yield s
    s.stop()


def _get(server, path, authorization):
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", path, headers={"Authorization": authorization, "Date": "Fri, 04 Dec 2026 10:00:00 GMT"})
    r = conn.getresponse()
    return r.status, r.read()


@pytest.mark.parametrize("authorization", [
    # SigV2 whose signature has four "/": read by moto as the scope <k>/<d>/<region>/<service>/<x>.
    "AWS local:ab/cd/sk+x/yz/Q0RFRg==",
    "AWS local:abcdefghijklmnopqrstuvwxyz0=",   # no "/" (the common case)
    "AWS4-HMAC-SHA256 Credential=local/20261204/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00",
])
def test_every_signed_request_reaches_the_s3_backend(server, authorization):
    bucket = f"b-{uuid.uuid4().hex[:10]}"
    server.client().create_bucket(Bucket=bucket)
    server.client().put_object(Bucket=bucket, Key="k", Body=b"payload")
    status, body = _get(server, f"/{bucket}/k", authorization)
    assert (status, body) == (200, b"payload")
