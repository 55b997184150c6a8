"""Agent delivery through the checkpoint bucket, for real: the rendered bootstrap in the sandbox runs
scripts/bootstrap/fetch_agent.py with the project's Python, which takes role credentials from a
hardened-metadata stub and downloads the bundle from a moto S3 server, both on 127.0.0.1."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
import yaml
from moto.server import ThreadedMotoServer

from components.bootstrap import render_user_data
from components.bootstrap.sandbox import Sandbox, Scenario

from bootstrap_helpers import load_config

TOKEN = "sandbox-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Metadata(BaseHTTPRequestHandler):
    """Alibaba's hardened metadata service: a PUT token first, then role credentials with it."""
    role = ""
    reads: list = []

    def do_PUT(self):
        ok = self.path == "/latest/api/token" and self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds")
        self._send(200 if ok else 400, TOKEN if ok else "")

    def do_GET(self):
        if self.headers.get("X-aliyun-ecs-metadata-token") != TOKEN:
            return self._send(403, "")
        Metadata.reads.append(self.path)
        if self.path == f"/latest/meta-data/ram/security-credentials/{self.role}":
            return self._send(200, json.dumps({"Code": "Success", "AccessKeyId": "STS.sandbox",
                                               "AccessKeySecret": "sandbox", "SecurityToken": "sandbox",
                                               "Expiration": "2099-01-01T00:00:00Z"}))
        self._send(404, "")

    def _send(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def servers():
    port = free_port()
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    s3.start()
    meta = ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=meta.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{meta.server_address[1]}"
    meta.shutdown()
    s3.stop()


def node_config(servers, bucket):
    s3_url, meta_url = servers
    cfg = load_config("stack:entry-t4")
    cfg["endpoints"]["metadata"] = meta_url
    cfg["checkpoint"].update(bucket=bucket, endpoint=s3_url, region="us-east-1", addressingStyle="path",
                             signatureVersion="s3v4")
    Metadata.role = cfg["identity"]["roleName"]
    client = boto3.client("s3", endpoint_url=s3_url, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    client.create_bucket(Bucket=bucket)
    return cfg, client


def test_bundled_agent_is_fetched_verified_and_unpacked(servers, tmp_path):
    cfg, client = node_config(servers, "ckpt-good")
    r = render_user_data(cfg, agent_delivery="bundle")
    client.put_object(Bucket="ckpt-good", Key=r.agent_bundle.key, Body=r.agent_bundle.data)
    sb = Sandbox(tmp_path / "sb", r.cloud_config, cfg, Scenario(gpus=1))
    first = sb.run()
    assert first.rc == 0, first.log
    assert {s["name"]: s["result"] for s in first.status["steps"]}["agent_code"] == "done"
    agent = sb.path(cfg["paths"]["agent"]) / "node_agent"
    embedded = render_user_data(cfg, agent_delivery="embed", max_encoded=None)
    want = {f["path"]: f["content"] for f in yaml.safe_load(embedded.cloud_config)["write_files"]
            if f["path"].startswith(cfg["paths"]["agent"] + "/node_agent/")}
    got = {"/" + str(p.relative_to(sb.root)): p.read_text() for p in agent.rglob("*.py")}
    assert got == want
    assert any("security-credentials" in p for p in Metadata.reads)

    before = sb.snapshot()
    second = sb.run()
    assert second.rc == 0 and sb.snapshot() == before
    assert not [c for c in second.called("venv-python") if c and c[0].endswith("fetch_agent.py")]


def test_a_tampered_bundle_is_refused_and_nothing_is_unpacked(servers, tmp_path):
    cfg, client = node_config(servers, "ckpt-bad")
    r = render_user_data(cfg, agent_delivery="bundle")
    data = bytearray(r.agent_bundle.data)
    data[len(data) // 2] ^= 0xFF
    client.put_object(Bucket="ckpt-bad", Key=r.agent_bundle.key, Body=bytes(data))
    sb = Sandbox(tmp_path / "sb", r.cloud_config, cfg, Scenario(gpus=1))
    result = sb.run()
    assert result.rc == 1
    assert {s["name"]: s["result"] for s in result.status["steps"]}["agent_code"] == "failed"
    assert "sha256" in result.log and "not unpacked" in result.log
    agent = sb.path(cfg["paths"]["agent"]) / "node_agent"
    assert sorted(p.name for p in agent.glob("*.py")) == ["cloud_runtime.py"]
    assert "agent_code" in sb.path(cfg["paths"]["state"] + "/UNHEALTHY").read_text()
