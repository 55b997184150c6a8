"""The HTTP server under the cloud API stand-ins of the tests (price APIs, region APIs): a real server on
127.0.0.1 that records each request (method, path, lowercased headers, body) and answers through `respond`."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RecordingStandIn:
    """Subclasses answer in `respond(method, path, headers, body) -> (status, content type, bytes)`."""

    def __init__(self):
        self.requests: list[dict] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.do_POST()

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                headers = {k.lower(): v for k, v in self.headers.items()}
                stand_in.requests.append({"method": self.command, "path": self.path, "headers": headers, "body": body})
                status, content_type, data = stand_in.respond(self.command, self.path, headers, body)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def respond(self, method: str, path: str, headers: dict, body: str) -> tuple[int, str, bytes]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
