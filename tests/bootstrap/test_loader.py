"""node_agent/loader.py in-process: its request signatures are the ones botocore makes for the same GET (so any
S3-compatible store that takes boto3's takes the loader's), a payload only runs when it matches, and a payload
cannot write outside the root. The end-to-end runs (user-data in the sandbox, a moto S3 server, a tampered or
missing payload) are in test_bootstrap_fetch.py."""
from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timezone

import pytest
from botocore.auth import HmacV1Auth, S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from node_agent import loader

CREDS = {"access_key": "STS.NodeRoleKey", "secret_key": "node-role-secret/+=", "token": "session-token-of-the-role"}
NOW = datetime(2026, 12, 7, 12, 30, 5, tzinfo=timezone.utc)
KEY = "gpu-training/tc-entry-t4/boot/0123abcd.json"


MARKER = b'{"state": "FAILED"}'


def botocore_headers(url: str, auth, method="GET", body=b"", extra=None) -> dict:
    request = AWSRequest(method=method, url=url, data=body,
                         headers={"x-amz-content-sha256": hashlib.sha256(body).hexdigest(), **(extra or {})})
    auth.add_auth(request)
    return {name.lower(): value for name, value in request.headers.items()}


@pytest.mark.parametrize("style", ["path", "virtual"])
def test_the_v4_signature_is_botocores(style, monkeypatch):
    store = {"bucket": "ckpt-1250001234", "endpoint": "https://cos.ap-guangzhou.myqcloud.com", "addressingStyle": style}
    url, headers = loader.signed_request(store, KEY, CREDS, NOW, "ap-guangzhou")
    expected_url = (f"https://cos.ap-guangzhou.myqcloud.com/ckpt-1250001234/{KEY}" if style == "path"
                    else f"https://ckpt-1250001234.cos.ap-guangzhou.myqcloud.com/{KEY}")
    assert url == expected_url
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *a, **k: NOW.replace(tzinfo=None))
    theirs = botocore_headers(url, S3SigV4Auth(Credentials(CREDS["access_key"], CREDS["secret_key"], CREDS["token"]),
                                               "s3", "ap-guangzhou"))
    assert headers["authorization"] == theirs["authorization"]
    assert headers["x-amz-date"] == theirs["x-amz-date"] and headers["x-amz-security-token"] == CREDS["token"]


def test_the_v4_signature_of_a_marker_put_is_botocores(monkeypatch):
    """The stopped boot's marker (loader.report_stopped): a PUT signs its body's sha256, Content-MD5 and type."""
    store = {"bucket": "ckpt", "endpoint": "https://obs.cn-north-4.myhuaweicloud.com"}
    url, headers = loader.signed_request(store, "gpu-training/s/markers/i-1.json", CREDS, NOW, "cn-north-4",
                                         "PUT", MARKER)
    assert headers["content-md5"] == base64.b64encode(hashlib.md5(MARKER).digest()).decode()
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *a, **k: NOW.replace(tzinfo=None))
    theirs = botocore_headers(url, S3SigV4Auth(Credentials(CREDS["access_key"], CREDS["secret_key"], CREDS["token"]),
                                               "s3", "cn-north-4"), "PUT", MARKER,
                              {"Content-MD5": headers["content-md5"], "Content-Type": "application/json"})
    assert headers["authorization"] == theirs["authorization"]
    assert headers["x-amz-content-sha256"] == hashlib.sha256(MARKER).hexdigest()


def test_the_v2_signature_of_a_marker_put_is_botocores(monkeypatch):
    store = {"bucket": "ckpt", "endpoint": "https://oss-cn-hangzhou-internal.aliyuncs.com", "signatureVersion": "s3"}
    url, headers = loader.signed_request(store, KEY, CREDS, NOW, "cn-hangzhou", "PUT", MARKER)
    request = AWSRequest(method="PUT", url=url, data=MARKER, headers={
        "Date": headers["date"], "Content-MD5": headers["content-md5"], "Content-Type": "application/json"})
    request.auth_path = f"/ckpt/{KEY}"
    monkeypatch.setattr(HmacV1Auth, "_get_date", lambda self: headers["date"])
    HmacV1Auth(Credentials(CREDS["access_key"], CREDS["secret_key"], CREDS["token"])).add_auth(request)
    assert headers["authorization"] == request.headers["Authorization"]


def test_the_v2_signature_is_botocores(monkeypatch):
    """OSS's S3 API with checkpoint.signatureVersion 's3' (Signature Version 2)."""
    store = {"bucket": "ckpt", "endpoint": "https://oss-cn-hangzhou-internal.aliyuncs.com", "signatureVersion": "s3"}
    url, headers = loader.signed_request(store, KEY, CREDS, NOW, "cn-hangzhou")
    assert url == f"https://ckpt.oss-cn-hangzhou-internal.aliyuncs.com/{KEY}"
    request = AWSRequest(method="GET", url=url, headers={"Date": headers["date"]})
    request.auth_path = f"/ckpt/{KEY}"  # V2 signs /bucket/key in either addressing style (botocore sets it so)
    monkeypatch.setattr(HmacV1Auth, "_get_date", lambda self: headers["date"])  # it dates the request itself
    HmacV1Auth(Credentials(CREDS["access_key"], CREDS["secret_key"], CREDS["token"])).add_auth(request)
    assert headers["authorization"] == request.headers["Authorization"]
    assert headers["date"] == "Mon, 07 Dec 2026 12:30:05 GMT"


def test_a_payload_path_outside_the_root_is_refused(tmp_path):
    for path in ("etc/relative", "/etc/../../escape"):
        payload = json.dumps({"version": 1, "files": [{"path": path, "mode": "0644", "content": "x"}], "run": "/b"})
        with pytest.raises(ValueError, match="is not absolute"):
            loader.install(payload.encode(), str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_payload_file_is_verified_like_a_download(tmp_path, capsys, monkeypatch):
    payload = json.dumps({"version": 1, "files": [{"path": "/etc/a", "mode": "0600", "content": "one\n"}],
                          "run": "/usr/local/sbin/b"}).encode()
    (tmp_path / "payload.json").write_bytes(payload)
    cfg = {"payload": {"key": KEY, "sha256": hashlib.sha256(payload).hexdigest()}, "paths": {"logs": "/logs"},
           "checkpoint": {"bucket": "b", "endpoint": "http://127.0.0.1:9"}, "agent": {"uploadAttempts": 1}}
    (tmp_path / "loader.json").write_text(json.dumps(cfg))
    root = tmp_path / "root"
    args = [str(tmp_path / "loader.json"), "--payload-file", str(tmp_path / "payload.json"), "--install-only"]
    monkeypatch.setenv("GPU_TRAINING_ROOT", str(root))
    assert loader.main(args) == 0
    assert (root / "etc/a").read_text() == "one\n" and (root / "etc/a").stat().st_mode & 0o777 == 0o600
    (tmp_path / "payload.json").write_bytes(payload.replace(b"one", b"two"))
    assert loader.main(args) == 1
    assert (root / "etc/a").read_text() == "one\n"  # the mismatching payload wrote nothing
    err = capsys.readouterr().err
    assert "is not the" in err and "BOOT STOPPED: no verified boot payload" in err


def test_a_loader_config_without_the_payload_is_exit_2(tmp_path, capsys):
    (tmp_path / "loader.json").write_text(json.dumps({"checkpoint": {"bucket": "b", "endpoint": "http://x"}}))
    assert loader.main([str(tmp_path / "loader.json")]) == 2
    assert "payload (key, sha256) and checkpoint (bucket, endpoint) are required" in capsys.readouterr().err
