"""The two Kubernetes API calls run.py makes on a Kubernetes stack: list the Job's pods, delete the Job.

Authenticated from the stack's `kubeconfig` output (its current context: the server, its CA, and a
bearer token or a client certificate, as kubeconfigs carry them). Only the standard library: a client
certificate is written to a private temporary folder for the TLS handshake (ssl loads it from files)
and removed at once. Everything else about the cluster stays Pulumi's (the program's Provider).
"""
from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Optional

import yaml


class KubeApiError(Exception):
    """The API server refused or could not be reached; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class KubeApi:
    server: str
    ca_pem: Optional[str] = None
    token: Optional[str] = None
    client_cert_pem: Optional[str] = None
    client_key_pem: Optional[str] = None
    timeout_s: float = 20.0

    @classmethod
    def from_kubeconfig(cls, text: str) -> "KubeApi":
        try:
            config = yaml.safe_load(text) or {}
            context_name = config.get("current-context") or config["contexts"][0]["name"]
            context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
            cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
            user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
            return cls(server=cluster["server"].rstrip("/"), ca_pem=_data(cluster, "certificate-authority"),
                       token=user.get("token"), client_cert_pem=_data(user, "client-certificate"),
                       client_key_pem=_data(user, "client-key"))
        except (yaml.YAMLError, KeyError, IndexError, StopIteration, TypeError, AttributeError, ValueError) as exc:
            raise KubeApiError(f"the kubeconfig output cannot be read ({type(exc).__name__}: {exc})") from None

    def pods(self, namespace: str, selector: str) -> list[dict]:
        query = urllib.parse.urlencode({"labelSelector": selector})
        return self._call("GET", f"/api/v1/namespaces/{namespace}/pods?{query}").get("items") or []

    def delete_job(self, namespace: str, name: str) -> None:
        """Delete the Job and, in the background, its pods (so their nodes become idle)."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        self._call("DELETE", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}", body)

    def _call(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        with tempfile.TemporaryDirectory(prefix="gpu-training-kube-") as folder:
            try:
                context = self._tls(folder) if self.server.startswith("https://") else None
                with urllib.request.urlopen(request, timeout=self.timeout_s, context=context) as answer:
                    return json.loads(answer.read() or b"{}")
            except urllib.error.HTTPError as exc:
                raise KubeApiError(f"{method} {path}: HTTP {exc.code} {_status_message(exc)}", exc.code) from None
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise KubeApiError(f"{method} {path}: {exc}") from None

    def _tls(self, folder: str) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca_pem) if self.ca_pem else ssl.create_default_context()
        if self.client_cert_pem and self.client_key_pem:
            cert, key = os.path.join(folder, "client.crt"), os.path.join(folder, "client.key")
            for path, content in ((cert, self.client_cert_pem), (key, self.client_key_pem)):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                    f.write(content)
            context.load_cert_chain(cert, key)
        return context


def _data(entry: dict, key: str) -> Optional[str]:
    """A kubeconfig's `<key>-data` field: base64 of a PEM (binascii.Error is a ValueError)."""
    value = entry.get(f"{key}-data")
    return base64.b64decode(value, validate=True).decode() if value else None


def _status_message(error: urllib.error.HTTPError) -> str:
    """The API server's Status message (its `reason` and `message`), else the HTTP reason."""
    try:
        status = json.loads(error.read() or b"{}")
        return f"{status.get('reason') or error.reason}: {status.get('message') or ''}".rstrip(": ")
    except ValueError:
        return str(error.reason)
