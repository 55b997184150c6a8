"""What "verified" means for one stored object: our digests of the file, and the store's own word.

Each store declares in the node config how it confirms the content it received (`checkpoint.verify`,
written from the provider profile, which records the sources; docs/agent.md, "Verified uploads"):
  crc64ecma  the store's CRC-64/XZ (ECMA-182) of the whole stored object, in a response header
             (`verify.header`: OSS x-oss-hash-crc64ecma, COS x-cos-hash-crc64ecma), for single-part and
             multipart uploads alike;
  etag-md5   the ETag: the MD5 of a single-part upload; for a multipart upload the MD5 of the parts'
             MD5s followed by "-<number of parts>" (S3 and the S3-compatible servers that copy it);
  content-md5  the store checks the Content-MD5 of every request that carries bytes and refuses other
             bytes (BadDigest), but its ETag is not an MD5 (OBS with SSE-KMS): an upload is verified
             when every request that made the object was accepted with the MD5 of the bytes it sent,
             those requests cover the whole file (a PUT, or parts 1..N whose sizes add up to it), and
             the request completing the object (PutObject, CompleteMultipartUpload, which names each
             part by the ETag the store gave it) succeeded;
  read-back  the store offers nothing we can check: the object is read back and hashed.
`verify.contentMd5`: send Content-MD5 with each request that carries bytes, so the store refuses
damaged bytes at once (InvalidDigest / BadDigest) instead of storing them (always, with content-md5).
An upload's MD5s (Content-MD5, the expected ETag) are those of the bytes as each request sends them
(`body_md5`), computed on the upload's own threads, so they cost no pass of their own before it; the
SHA-256 (the object's key) comes from the pass before, and the Store checks that the file did not
change in between (store.py). Where no upload happens (the object is already stored), the MD5s come
from a pass over the file (`digest(..., md5s=True)`).
A store that gives no answer for one object (the header missing) is checked by read-back for it:
an upload never counts as verified on our own say-so.
"""
from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from queue import Queue

METHODS = ('read-back', 'etag-md5', 'crc64ecma', 'content-md5')
BLOCK = 1 << 20
THREADED = 4 << 20  # from this size on, MD5 runs on threads of its own beside SHA-256
MD5_THREADS = 2  # lanes for the parts of a multipart file: the machines here have two cores or more


def crc64_function():
    """fastcrc's CRC-64/XZ (the ECMA-182 polynomial as OSS and COS compute it), or None when absent."""
    try:
        from fastcrc import crc64
    except ImportError:
        return None
    return crc64.xz


class HashingSink:
    """A write-only stream that hashes (sha256) what it is given, in order, and optionally writes it on.

    Not seekable on purpose: s3transfer's download_fileobj then hands over the ranges it fetched in
    parallel in their order (its non-seekable output manager), so a download is hashed while it
    arrives, in one pass, instead of written and read again.
    """

    def __init__(self, out=None):
        self.out, self.sha, self.size = out, hashlib.sha256(), 0

    def seekable(self):
        return False

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        if self.out is not None:
            self.out.write(data)
        return len(data)

    def hexdigest(self):
        return self.sha.hexdigest()


class Md5Lane:
    """MD5s of numbered parts fed block by block, on a thread of its own (or inline for a small file)."""

    def __init__(self, threaded):
        self.md5s, self.queue = {}, Queue(maxsize=8) if threaded else None  # at most 8 MiB ahead of the hash
        if threaded:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

    def md5(self, n):
        return self.md5s.setdefault(n, hashlib.md5())

    def run(self):
        for n, block in iter(self.queue.get, None):
            self.md5(n).update(block)

    def put(self, n, block):
        if self.queue is None:
            self.md5(n).update(block)
        else:
            self.queue.put((n, block))

    def close(self):
        """Wait until every block handed over is hashed."""
        if self.queue is not None:
            self.queue.put(None)
            self.thread.join()


@dataclass
class Digests:
    """One file's size and digests: SHA-256 and CRC-64 from one read; the MD5s from the same read
    (digest(md5s=True)) or from the requests of its upload (with_sent_md5s)."""
    size: int
    sha256: str
    md5: bytes | None = None          # whole file: a single-part upload's ETag
    part_md5s: list | None = None     # each part of a multipart upload
    crc64: int | None = None


class Integrity:
    """The declared method of one store, applied to our digests and to its answers."""

    def __init__(self, verify, multipart_threshold, part_size_of, log):
        self.method = verify.get('method') or 'read-back'
        self.header = (verify.get('header') or '').lower()
        self.content_md5 = bool(verify.get('contentMd5')) or self.method == 'content-md5'
        self.threshold, self.part_size_of = multipart_threshold, part_size_of
        self.crc64 = crc64_function() if self.method == 'crc64ecma' else None
        if self.method == 'crc64ecma' and not self.crc64:
            log.warning('fastcrc is not installed: uploads are verified by reading them back (slower)')
            self.method = 'read-back'

    @property
    def needs_md5(self):
        """Whether this method compares or sends MD5s (the ETag, Content-MD5)."""
        return self.method == 'etag-md5' or self.content_md5

    def digest(self, f, size, md5s=True):
        """Digests of an open binary file from its current position, everything this method needs
        (md5s False: all but the MD5s, which an upload then takes from the bytes it sends).

        One read of the file: each block goes to SHA-256 (and CRC-64) here and, when MD5s are needed,
        the same block objects go to MD5 threads (hashlib releases the GIL), so every digest describes
        the same bytes. MD5 is the slowest hash here (about 2.5x SHA-256 on CPUs with SHA extensions),
        and the parts of a multipart upload are independent: they alternate between MD5_THREADS
        threads, so on two cores the pass costs about half the sum of the hashes, not the sum
        (bench/upload_rate.py).
        """
        sha = hashlib.sha256()
        crc = 0 if self.crc64 else None
        part_size = self.part_size_of(size) if size >= self.threshold else None
        need_md5 = md5s and self.needs_md5
        lanes = [Md5Lane(threaded=size >= THREADED) for _ in range(MD5_THREADS if part_size else 1)] if need_md5 \
            else []
        offset = 0
        try:
            for block in iter(lambda: f.read(BLOCK), b''):
                sha.update(block)
                if crc is not None:
                    crc = self.crc64(block, crc)
                while lanes and block:
                    # Part n goes to lane n % lanes; a block may straddle a part boundary: split it.
                    n = offset // part_size if part_size else 0
                    head, block = (block[:part_size - offset % part_size], block[part_size - offset % part_size:]) \
                        if part_size else (block, b'')
                    lanes[n % len(lanes)].put(n, head)
                    offset += len(head)
        finally:
            for lane in lanes:
                lane.close()
        whole = parts = None
        if lanes and part_size:
            parts = [lanes[n % len(lanes)].md5(n).digest() for n in range(-(-offset // part_size))]
        elif lanes:
            whole = lanes[0].md5(0).digest()
        return Digests(size, sha.hexdigest(), whole, parts, crc)

    def expected(self, d):
        """What the store should say about an object with these digests; None for read-back."""
        if self.method == 'crc64ecma':
            return str(d.crc64)
        if self.method == 'etag-md5':
            if d.part_md5s is None and d.md5 is None:
                return None  # no MD5s (an upload that sent no whole object): nothing to expect
            if d.part_md5s is None:
                return d.md5.hex()
            return f"{hashlib.md5(b''.join(d.part_md5s)).hexdigest()}-{len(d.part_md5s)}"
        return None

    def stored(self, response):
        """What the store says about an object (from a HEAD, GET or PUT response); None when it says nothing."""
        if self.method == 'crc64ecma':
            return response['ResponseMetadata']['HTTPHeaders'].get(self.header)
        if self.method == 'etag-md5':
            return (response.get('ETag') or '').strip('"').lower() or None
        return None

    def comparable(self, want, said):
        """Whether the store's answer is of the kind we computed: a store may form multipart ETags its
        own way, and then only a read-back can tell."""
        if self.method != 'etag-md5':
            return True
        return bool(re.fullmatch(r'[0-9a-f]{32}(-[0-9]+)?', said)) and want.partition('-')[2] == said.partition('-')[2]


def body_md5(body):
    """(MD5 digest, size) of one request's body: bytes, or a file-like part (s3transfer's ReadFileChunk)
    read from where it stands and put back there, as botocore does for its own Content-MD5."""
    md5 = hashlib.md5()
    if isinstance(body, (bytes, bytearray)):
        md5.update(body)
        return md5.digest(), len(body)
    start, size = body.tell(), 0
    for block in iter(lambda: body.read(BLOCK), b''):
        md5.update(block)  # hashlib releases the GIL: the other parts' threads keep sending meanwhile
        size += len(block)
    body.seek(start)
    return md5.digest(), size


def with_sent_md5s(digests, sent):
    """Fill digests.md5 (one PUT: part 0) or digests.part_md5s (parts 1..N) from {part: (MD5, size) of the
    bytes sent}; False when what was sent is not the whole object (a part missing, or sizes that do not
    add up to the file's), so nothing can be expected of the store."""
    if sum(size for _, size in sent.values()) != digests.size:
        return False
    if list(sent) == [0]:
        digests.md5, digests.part_md5s = sent[0][0], None
        return True
    numbers = sorted(sent)
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        return False
    digests.md5, digests.part_md5s = None, [sent[n][0] for n in numbers]
    return True
