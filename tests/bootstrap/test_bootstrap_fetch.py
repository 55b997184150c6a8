"""The agent beyond its boot set comes from object storage, for real: the rendered bootstrap in the
sandbox runs `python -m node_agent.fetch` from the embedded boot set with the project's Python; it
takes role credentials from a hardened-metadata stub and downloads from a moto S3 server, both on
127.0.0.1 (docs/node-config.md, "Agent delivery")."""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from bootstrap_helpers import load_config

from components.artifacts import AGENT_SRC, agent_artifacts
from components.bootstrap import render_user_data
from localcloud import LocalS3
from localcloud.sandbox import Sandbox, Scenario

TOKEN = "sandbox-token"


class Metadata(BaseHTTPRequestHandler):
    """Alibaba's hardened metadata service: a PUT token first, then the role's credentials with it."""
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
    s3 = LocalS3()
    meta = ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=meta.serve_forever, daemon=True).start()
    yield s3.url, f"http://127.0.0.1:{meta.server_address[1]}"
    meta.shutdown()
    s3.stop()


def uploaded(servers, bucket, corrupt=None):
    """A node config pointed at the local servers, and its agent files uploaded as `pulumi up` would."""
    s3_url, meta_url = servers
    cfg = load_config("stack:entry-t4")
    cfg["endpoints"]["metadata"] = meta_url
    cfg["checkpoint"].update(bucket=bucket, endpoint=s3_url, region="us-east-1", addressingStyle="path",
                             signatureVersion="s3v4")
    cfg["agent"].update(uploadAttempts=2, retryBaseSeconds=0.01)
    Metadata.role = cfg["identity"]["roleName"]
    client = boto3.client("s3", endpoint_url=s3_url, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    client.create_bucket(Bucket=bucket)
    arts = agent_artifacts(cfg["checkpoint"]["prefix"], cfg["stack"])
    assert sorted(a.relative for a in arts) == cfg["artifacts"]["agent"]["files"]
    for a in arts:
        body = a.path.read_bytes()
        if a.relative == corrupt:
            body += b"\n# changed after pulumi up\n"
        client.put_object(Bucket=bucket, Key=a.key, Body=body)
    return cfg


def test_the_rest_of_the_agent_is_fetched_with_the_node_role_and_verified(servers, tmp_path):
    cfg = uploaded(servers, "ckpt-good")
    sb = Sandbox(tmp_path / "sb", render_user_data(cfg).cloud_config, cfg, Scenario(gpus=1, fetch="real"))
    first = sb.run()
    assert first.rc == 0, first.log
    assert {s["name"]: s["result"] for s in first.status["steps"]}["agent_code"] == "done"
    agent = sb.path(cfg["paths"]["agent"])
    for rel in cfg["artifacts"]["agent"]["files"]:
        assert (agent / rel).read_bytes() == (AGENT_SRC / rel.split("/", 1)[1]).read_bytes()
    assert any("security-credentials" in p for p in Metadata.reads)

    before = sb.snapshot()
    second = sb.run()
    assert second.rc == 0 and sb.snapshot() == before
    assert not [c for c in second.called("venv-python") if "node_agent.fetch" in c]


def test_a_file_that_does_not_match_node_json_stops_the_agent_from_starting(servers, tmp_path):
    cfg = uploaded(servers, "ckpt-bad", corrupt="node_agent/agent.py")
    sb = Sandbox(tmp_path / "sb", render_user_data(cfg).cloud_config, cfg, Scenario(gpus=1, fetch="real"))
    r = sb.run()
    assert r.rc == 1
    steps = {s["name"]: s["result"] for s in r.status["steps"]}
    assert steps["agent_code"] == "failed" and steps["agent"] == "failed"
    assert "sha256 does not match node.json's artifacts.agent.sha256" in r.log
    tampered = (AGENT_SRC / "agent.py").read_bytes() + b"\n# changed after pulumi up\n"
    assert f"node_agent/agent.py ({len(tampered)} B, sha256 {hashlib.sha256(tampered).hexdigest()})" in r.log
    assert not (sb.path(cfg["paths"]["agent"]) / "node_agent" / "agent.py").exists()
    assert not [c for c in r.called("systemctl") if "enable" in c]
    assert "agent_code" in sb.path(cfg["paths"]["state"] + "/UNHEALTHY").read_text()
