"""A Python package index on 127.0.0.1, and the small wheels it serves: for the tests of the user's setup.

PackageIndex answers PEP 503's simple repository API (https://peps.python.org/pep-0503/): /simple/ lists
the projects, /simple/<normalized name>/ links each file with its #sha256= fragment, /files/<file> serves
it. Every request is recorded (`requests`), so a test can tell whether pip reached the index at all.
make_wheel writes a pure-Python wheel by hand (PEP 427: a zip with the module, METADATA, WHEEL and RECORD),
so no build backend and no network are needed.
"""
from __future__ import annotations

import base64
import hashlib
import html
import re
import zipfile
from pathlib import Path

from localcloud import Stub


def normalized(name: str) -> str:
    """PEP 503's normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def make_wheel(folder: Path, name: str, version: str, code: str = "", requires: tuple[str, ...] = ()) -> Path:
    """A py3-none-any wheel of one module `name` (dashes as underscores) holding `code`."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    metadata = "Metadata-Version: 2.1\n" f"Name: {name}\n" f"Version: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    files = {f"{module}.py": code or f"VERSION = {version!r}\n", f"{dist_info}/METADATA": metadata,
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: localcloud.pyindex\nRoot-Is-Purelib: true\n"
                                   "Tag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{dist_info}/RECORD"] = "\n".join(record + [f"{dist_info}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


class PackageIndex(Stub):
    """A simple repository serving the wheels in `folder`; `url` + '/simple' is pip's --index-url."""

    def __init__(self, folder: Path):
        self.folder, self.requests = Path(folder), []
        super().__init__()

    @property
    def index_url(self) -> str:
        return self.url + "/simple"

    def answer(self, method, path, headers, body):
        with self.lock:
            self.requests.append(path)
        wheels = sorted(self.folder.glob("*.whl"))
        page = lambda links: ("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>").encode()  # noqa: E731
        if path.rstrip("/") == "/simple":
            names = sorted({normalized(w.name.split("-")[0]) for w in wheels})
            return 200, page(f'<a href="/simple/{n}/">{n}</a>' for n in names), {"Content-Type": "text/html"}
        found = re.fullmatch(r"/simple/([^/]+)/?", path)
        if found:
            mine = [w for w in wheels if normalized(w.name.split("-")[0]) == normalized(found.group(1))]
            if not mine:
                return 404, b"not found", {}
            links = (f'<a href="/files/{html.escape(w.name)}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
                     f"{html.escape(w.name)}</a>" for w in mine)
            return 200, page(links), {"Content-Type": "text/html"}
        found = re.fullmatch(r"/files/([^/]+\.whl)", path)
        if found and (self.folder / found.group(1)).is_file():
            return 200, (self.folder / found.group(1)).read_bytes(), {"Content-Type": "application/octet-stream"}
        return 404, b"not found", {}
