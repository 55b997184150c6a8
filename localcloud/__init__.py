"""Local stand-ins for a cloud, all on 127.0.0.1: used by the tests and by `make rehearse`.

- Stub: a threaded HTTP server on a free port; subclasses implement answer().
- MetadataStub / ApiStub: what every cloud's instance metadata service and API stand-in share
  (request log, injected faults, a switchable spot notice, temporary role credentials). The cloud
  specifics are each cloud's subclasses (`Metadata`, `CloudApi` in localcloud/standins/<cloud>.py,
  registered there by the cloud's name). These neutral servers are the floor below components/ and
  import nothing from it; localcloud/standins/ stands above components/, whose profiles it reads, and
  components/ imports nothing from localcloud/.
- S3Proxy: sits in front of the S3 server and answers 503 for the next N requests, or for good; flips
  one byte of the payload in transit (same size, headers untouched); and, as a store that vouches
  for content with a CRC-64 header (OSS, COS), answers that header for the object it holds.
- LocalS3: the moto S3 server.
- BIN: fake accelerator tools (nvidia-smi, npu-smi) to put first on PATH.
- clouddisk (its own module, not imported here): a loop device whose reads are throttled to a cloud
  data disk's IOPS and MB/s, for bench/data_read.py.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

BIN = Path(__file__).resolve().parent / "bin"


class Stub:
    """A threaded HTTP server on 127.0.0.1:<free port>; subclasses implement answer()."""

    def __init__(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, data, headers = stub.answer(self.command, self.path, dict(self.headers), body)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do

            def log_message(self, *args):
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, method, path, headers, body):
        raise NotImplementedError

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class MetadataStub(Stub):
    """One node's instance metadata service. Set `notice` (aware datetime) to post a spot notice,
    `fail` to answer 500 to the next N requests, `fail_spot` to fail only the spot path, and
    `garbage[path] = [(status, body), ...]` to answer the next reads of one path with those (an HTML
    error page with 200, an empty body), one per read.

    A cloud's stand-in declares: `token_header` (session-token mode, None without one) and the
    status it denies a tokenless read with, `spot_path` and `spot_body(notice)`, `values()`, and
    `new_instance_id()` (an id in the cloud's format).
    """

    PREFIX = "/latest/meta-data/"
    token_header: str | None = None
    denied_status = 403
    spot_path = ""

    region, zone = "cn-hangzhou", "cn-hangzhou-i"

    def __init__(self, instance_id=None, ip="10.0.0.5", role="node-role"):
        self.instance_id, self.ip, self.role = instance_id or self.new_instance_id(), ip, role
        self.garbage: dict[str, list[tuple[int, bytes]]] = {}
        self.notice = None
        self.fail = 0
        self.fail_spot = False
        self.tokens, self.log = set(), []
        self.secret = f"secret-{uuid.uuid4().hex[:8]}"
        self.key_id = f"STS.{instance_id}"
        self.token = f"sts-token-{uuid.uuid4().hex[:8]}"
        super().__init__()

    @staticmethod
    def new_instance_id() -> str:
        raise NotImplementedError

    def revoke_tokens(self):
        self.tokens.clear()

    def expiry(self) -> datetime:
        return datetime.now(timezone.utc) + timedelta(hours=6)

    def answer(self, method, path, headers, body):
        with self.lock:
            self.log.append((method, path, headers))
            if self.fail > 0:
                self.fail -= 1
                return 500, b"injected fault", {}
        headers = {k.lower(): v for k, v in headers.items()}
        if self.token_header:
            if method == "PUT" and path == "/latest/api/token":
                if not headers.get(self.token_header + "-ttl-seconds"):
                    return 400, b"missing ttl", {}
                token = uuid.uuid4().hex
                self.tokens.add(token)
                return 200, token.encode(), {}
            if headers.get(self.token_header) not in self.tokens:
                return self.denied_status, b"token required", {}
        if not path.startswith(self.PREFIX):
            return 404, b"", {}
        key = path[len(self.PREFIX):]
        with self.lock:
            if self.garbage.get(key):
                return (*self.garbage[key].pop(0), {})
        if key == self.spot_path:
            if self.fail_spot:
                return 500, b"injected spot fault", {}
            if self.notice is None:
                return 404, b"Not Found", {}
            return 200, self.spot_body(self.notice), {}
        values = self.values()
        if key in values:
            return 200, values[key].encode(), {}
        return 404, b"Not Found", {}

    def spot_body(self, notice: datetime) -> bytes:
        raise NotImplementedError

    def values(self) -> dict[str, str]:
        """Metadata path (below /latest/meta-data/) -> answer."""
        raise NotImplementedError


class ApiStub(Stub):
    """Records each signed API request ({action, params, headers, method, time}); `fail` answers 503
    to the next N; `instances` ((id, private ip), ...) answers the peer lookup. A cloud's stand-in
    declares `release_actions`: the API actions that release (delete) an instance."""
    release_actions: tuple[str, ...] = ()
    peer_actions: tuple[str, ...] = ("DescribeInstances",)  # the API action(s) node_runtime.peers calls

    def __init__(self, instances=()):
        self.instances, self.requests, self.fail = list(instances), [], 0
        super().__init__()

    def calls(self, action):
        return [r for r in self.requests if r["action"] == action]

    def release_requests(self, instance_id: str) -> list[dict]:
        """The requests that asked to release `instance_id` (the rehearsal counts one per finished node)."""
        return [r for r in self.requests if r["action"] in self.release_actions
                and instance_id in json.dumps(r["params"])]

    def answer(self, method, path, headers, body):
        lowered = {k.lower(): v for k, v in headers.items()}
        action, params = self.parse(method, path, lowered, body)
        with self.lock:
            self.requests.append({"action": action, "params": params, "headers": lowered, "method": method,
                                  "time": time.time()})
            if self.fail > 0:
                self.fail -= 1
                return 503, b'{"message": "injected fault"}', {"Content-Type": "application/json"}
        return 200, json.dumps(self.respond(action, params)).encode(), {"Content-Type": "application/json"}

    def parse(self, method, path, headers, body):
        raise NotImplementedError

    def respond(self, action, params) -> dict:
        raise NotImplementedError


def flip(data: bytes) -> bytes:
    """The same bytes with one bit of the middle byte flipped: same size, different content."""
    if not data:
        return data
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1:]


def digest_matches(headers, body: bytes) -> bool:
    """Whether a request's body has the MD5 its Content-MD5 header names (True without the header)."""
    named = next((v for k, v in headers.items() if k.lower() == "content-md5"), None)
    return named is None or base64.b64encode(hashlib.md5(body).digest()).decode() == named.strip()


XML_ETAG = re.compile(rb"<ETag>(.*?)</ETag>")


def bare_etag(etag: str) -> str:
    """An ETag without its quotes, as a header ("...") or an XML element (&quot;...&quot;) carries it."""
    return etag.strip().replace("&quot;", "").strip('"')


def with_xml_etags(data: bytes, change) -> bytes:
    """An XML body with each <ETag> element's text replaced by change(text) (a CompleteMultipartUpload's
    parts, its answer)."""
    return XML_ETAG.sub(lambda m: b"<ETag>" + change(m.group(1).decode()).encode() + b"</ETag>", data)


def opaque_etag(etag: str) -> str:
    """Another 32-hex ETag for the same one: what a store whose ETag is not the content's MD5 might answer."""
    value = hashlib.md5(b"sse-kms:" + bare_etag(etag).encode()).hexdigest()
    return f'"{value}"' if etag.strip().startswith(("\"", "&quot;")) else value


class S3Proxy(Stub):
    """Forwards to `target`. Where `match` is in the path: the next `fail` requests (or all while `down`)
    get 503; the next `corrupt` requests of a method in `corrupt_methods` (or all while `corrupting`) get
    one byte flipped, in the request body of a PUT (on its way to the store) or the response body of a
    GET (on its way back). `crc64_header` (e.g. "x-oss-hash-crc64ecma"): answer HEAD and GET of an
    object with the CRC-64/XZ of the bytes the store holds, as OSS and COS do: computed when the
    object is written through the proxy (a multipart one from its parts' CRCs), so a HEAD costs what
    it costs at the real store; an object written behind its back is read in full to answer.

    Like every store this project uses (moto does not), a PUT or UploadPart whose body differs from its
    Content-MD5 is refused with 400 BadDigest and nothing is stored: S3 (PutObject, UploadPart:
    https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html), OBS ("Uploading Objects - PUT",
    https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0080.html; "Uploading Parts", obs_04_0099),
    BOS (PutObject https://cloud.baidu.com/doc/BOS/s/Ikc5nv3wc-en, UploadPart /doc/BOS/s/3kc5v4qs0-en),
    OSS and COS alike. `md5_etags` False: the ETags of objects and of parts are not their MD5 (OBS with
    SSE-KMS: "Server-Side Encryption Overview", https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0105.html),
    so a client that compared them would refuse every upload; the store still knows its own ETags in
    conditions and in the parts a CompleteMultipartUpload names."""

    def __init__(self, target, crc64_header: str | None = None, md5_etags: bool = True):
        self.target, self.fail, self.down, self.match, self.failed = target, 0, False, "", 0
        self.md5_etags = md5_etags
        self.missing_as_403 = False  # answer a missing key 403, as S3 does to a role without s3:ListBucket
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in arrival order
        self.etags: dict[str, str] = {}  # an ETag answered (md5_etags False) -> moto's own
        self.corrupt, self.corrupting, self.corrupted, self.corrupt_methods = 0, False, 0, ("PUT",)
        self.crc64_header = crc64_header
        # Like OSS and COS, the CRC-64 is computed once, over the bytes as they are written, not on
        # every HEAD: {object path: (the store's ETag, crc)}, {(path, upload id, part): (crc, length)}.
        # An ETag that is not the cached one (an object written behind the proxy's back) is read in full.
        self.crcs, self.part_crcs = {}, {}
        super().__init__()

    def written(self, method, path, headers, body, response, data):
        """Remember the CRC-64 of what the store now holds after a PUT, an UploadPart or a
        CompleteMultipartUpload that succeeded (body: the bytes as forwarded, after any damage), and
        return it: OSS and COS answer it on those requests too, not only on HEAD and GET."""
        from urllib.parse import parse_qs

        from fastcrc import crc64

        lower = {k.lower(): v for k, v in headers.items()}
        if response.status != 200 or "x-amz-copy-source" in lower or "aws-chunked" in lower.get("content-encoding", ""):
            return None
        where, query = urlsplit(path).path, parse_qs(urlsplit(path).query)
        upload, part = (query.get("uploadId") or [None])[0], (query.get("partNumber") or [None])[0]
        if method == "PUT" and upload and part:
            self.part_crcs[where, upload, int(part)] = crc64.xz(body), len(body)
            return self.part_crcs[where, upload, int(part)][0]
        elif method == "PUT" and not query and response.getheader("ETag"):
            self.crcs[where] = response.getheader("ETag"), crc64.xz(body)
            return self.crcs[where][1]
        elif method == "POST" and upload:
            numbers = [int(n) for n in re.findall(rb"<PartNumber>\s*(\d+)\s*</PartNumber>", body)]
            etag = XML_ETAG.search(data)
            if not etag or not all((where, upload, n) in self.part_crcs for n in numbers):
                return None
            crc = 0
            for n in numbers:
                # CRC-64/XZ of A+B from the parts' own: crc(A+B) = xz(0^len B, crc A) ^ xz(0^len B) ^ crc B.
                part_crc, length = self.part_crcs.pop((where, upload, n))
                zeros = bytes(length)
                crc = crc64.xz(zeros, crc) ^ crc64.xz(zeros) ^ part_crc
            self.crcs[where] = etag.group(1).decode().replace("&quot;", '"'), crc
            return crc
        return None

    def forward(self, method, path, headers, body):
        target = urlsplit(self.target)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        connection.request(method, path, body=body,
                           headers={k: v for k, v in headers.items() if k.lower() != "expect"})
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response, data

    def answer(self, method, path, headers, body):
        with self.lock:
            self.requests.append((method, path))
            hit = self.match in path and (self.down or self.fail > 0)
            if hit:
                self.fail -= not self.down
                self.failed += 1
            damage = (self.match in path and method in self.corrupt_methods and not hit
                      and (self.corrupting or self.corrupt > 0) and (method != "PUT" or body))
            if damage:
                self.corrupt -= not self.corrupting
                self.corrupted += 1
        if hit:
            return 503, (b'<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>injected</Message>'
                         b"</Error>"), {"Content-Type": "application/xml"}
        if damage and method == "PUT":
            body = flip(body)
        if method == "PUT" and not digest_matches(headers, body):
            return 400, (b'<?xml version="1.0"?><Error><Code>BadDigest</Code><Message>The Content-MD5 you '
                         b"specified did not match what we received.</Message></Error>"),\
                {"Content-Type": "application/xml"}
        response, data = self.forward(method, path, *self.as_moto_sees_it(method, path, headers, body))
        if self.missing_as_403 and method in ("GET", "HEAD") and response.status == 404:
            # A role without the list right is told 403 for a missing key ("If you don't have the s3:ListBucket
            # permission, Amazon S3 returns an HTTP status code 403", https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html).
            return 403, (b'<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message>'
                         b"</Error>"), {"Content-Type": "application/xml"}
        drop = ("transfer-encoding", "connection") + (() if method == "HEAD" else ("content-length",))
        keep = {k.title() if k.lower() == "content-length" else k: v for k, v in response.getheaders()
                if k.lower() not in drop}
        is_object = "?" not in path and path.count("/") >= 2 and not path.endswith("/")
        if self.crc64_header and method in ("PUT", "POST"):
            crc = self.written(method, path, headers, body, response, data)
            if crc is not None:
                keep[self.crc64_header] = str(crc)
        if self.crc64_header and method in ("HEAD", "GET") and response.status == 200 and is_object:
            from fastcrc import crc64

            etag, crc = self.crcs.get(urlsplit(path).path, (None, None))
            if etag is None or etag != response.getheader("ETag"):
                ranged = any(k.lower() == "range" for k in headers)
                whole = {k: v for k, v in headers.items() if k.lower() != "range"}
                held = data if method == "GET" and not ranged else self.forward("GET", path, whole, b"")[1]
                crc = crc64.xz(held)
            keep[self.crc64_header] = str(crc)
        if damage and method == "GET":
            data = flip(data)
        if not self.md5_etags and ("?" not in path or (method == "POST" and "uploadId=" in path)
                                   or (method == "PUT" and "partNumber=" in path)):
            keep = {k: self.opaque(v) if k.lower() == "etag" else v for k, v in keep.items()}
            data = with_xml_etags(data, self.opaque) if method == "POST" else data
        return response.status, data, keep

    def opaque(self, etag: str) -> str:
        """The ETag this store answers for moto's `etag`, remembered so that conditions naming it match."""
        answered = opaque_etag(etag)
        with self.lock:
            self.etags[bare_etag(answered)] = bare_etag(etag)
        return answered

    def as_moto_sees_it(self, method, path, headers, body):
        """(headers, body) with the ETags this store answered put back as moto's: in If-Match and
        If-None-Match (a list, or `*`), and in the parts a CompleteMultipartUpload names."""
        if self.md5_etags:
            return headers, body

        def moto_etag(value: str) -> str:
            bare = bare_etag(value)
            return value.strip() if bare == "*" else f'"{self.etags.get(bare, bare)}"'
        with self.lock:
            headers = {k: (", ".join(moto_etag(v) for v in value.split(","))
                           if k.lower() in ("if-match", "if-none-match") else value) for k, value in headers.items()}
            if method == "POST" and "uploadId=" in path and body:
                body = with_xml_etags(body, moto_etag)
        return headers, body


class LocalS3:
    """The moto S3 server on 127.0.0.1 with throwaway credentials (never a real account's).

    S3 only: moto's own server (ThreadedMotoServer) guesses each request's service from its
    Authorization header read as a SigV4 scope, and misreads a SigV2 signature that holds four "/"
    as one (a 500 now and then for Alibaba's SigV2 nodes; tests/localcloud/test_local_s3.py). Every request
    here goes to moto's S3 backend instead.
    """

    CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}

    def __init__(self):
        import logging

        from moto.moto_server.werkzeug_app import (DomainDispatcherApplication, MotoRequestHandler,
                                                   create_backend_app)
        from werkzeug.serving import make_server

        class S3Only(DomainDispatcherApplication):
            def infer_service_region_host(self, environ, path):  # the backend module's name
                return "s3"

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.server = make_server("127.0.0.1", 0, S3Only(create_backend_app), threaded=True,
                                  request_handler=MotoRequestHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="local-s3", daemon=True)
        self.thread.start()
        host, port = self.server.server_address[:2]
        self.url = f"http://{host}:{port}"

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1", **self.CREDENTIALS)

    def stop(self):
        self.server.shutdown()
        self.thread.join(timeout=10)
        self.server.server_close()  # the listening socket, or each test leaves one open
