"""run.py's Kubernetes API client (tools/runlib/kubeapi.py) with a kubeconfig of the kind ACK issues:
the cluster's CA and a client certificate and key (DescribeClusterUserKubeconfig's `config`), against a
local HTTPS server that requires a client certificate signed by that CA, as an API server does.
The certificates are made here (cryptography), for 127.0.0.1 only.
"""
from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tools.runlib.kubeapi import KubeApi, KubeApiError


def _pem(cert) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _cert(subject: str, key, issuer=None, issuer_key=None, ca=False, ip=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer.subject if issuer else name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(hours=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
                                        critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


@pytest.fixture(scope="module")
def api_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("standin-ca", ca_key, ca=True)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    server = _cert("kube-apiserver", server_key, ca, ca_key, ip="127.0.0.1")
    client = _cert("kubernetes-admin", client_key, ca, ca_key)
    (folder / "server.pem").write_text(_pem(server) + _key_pem(server_key))
    (folder / "ca.pem").write_text(_pem(ca))
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.connection.getpeercert()["subject"]))
            body = json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [
                {"metadata": {"name": "train-0-x"}, "status": {"phase": "Running"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "server.pem")
    context.verify_mode = ssl.CERT_REQUIRED  # like an API server with client-certificate authentication
    context.load_verify_locations(folder / "ca.pem")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield {"url": f"https://127.0.0.1:{httpd.server_address[1]}", "ca": _pem(ca), "cert": _pem(client),
           "key": _key_pem(client_key), "seen": seen}
    httpd.shutdown()


def kubeconfig(server: dict, with_client_cert: bool = True) -> str:
    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    user = {"client-certificate-data": b64(server["cert"]), "client-key-data": b64(server["key"])} \
        if with_client_cert else {}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "kubernetes", "cluster": {"server": server["url"],
                                                        "certificate-authority-data": b64(server["ca"])}}],
        "users": [{"name": "admin", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "kubernetes", "user": "admin"}}]})


def test_a_client_certificate_kubeconfig_reaches_an_api_server_that_requires_one(api_server):
    pods = KubeApi.from_kubeconfig(kubeconfig(api_server)).pods("gpu-training", "job-name=train")
    assert [p["metadata"]["name"] for p in pods] == ["train-0-x"]
    path, subject = api_server["seen"][-1]
    assert path == "/api/v1/namespaces/gpu-training/pods?labelSelector=job-name%3Dtrain"
    assert (("commonName", "kubernetes-admin"),) in subject


def test_without_the_client_certificate_the_handshake_is_refused_and_said_so(api_server):
    with pytest.raises(KubeApiError) as refused:
        KubeApi.from_kubeconfig(kubeconfig(api_server, with_client_cert=False)).pods("gpu-training", "job-name=train")
    assert refused.value.status is None and "/pods" in str(refused.value)


BAD_CA = yaml.safe_dump({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                         "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1",
                                                                "certificate-authority-data": "%%%"}}],
                         "users": [{"name": "u", "user": {}}]})


@pytest.mark.parametrize("text", ["", "not: [yaml", "clusters: []", yaml.safe_dump({"current-context": "x"}), BAD_CA],
                         ids=["empty", "not-yaml", "no-context", "unknown-context", "bad-base64"])
def test_an_unreadable_kubeconfig_is_a_clear_error(text):
    with pytest.raises(KubeApiError, match="kubeconfig output cannot be read"):
        KubeApi.from_kubeconfig(text)
