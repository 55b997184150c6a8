"""What "verified" means for one stored object: our digests of the file, and the store's own word.

Each store declares in the node config how it confirms the content it received (`checkpoint.verify`,
written from the provider profile, which records the sources; docs/agent.md, "Verified uploads"):
  crc64ecma  the store's CRC-64/XZ (ECMA-182) of the whole stored object, in a response header
             (`verify.header`: OSS x-oss-hash-crc64ecma, COS x-cos-hash-crc64ecma), for single-part and
             multipart uploads alike;
  etag-md5   the ETag: the MD5 of a single-part upload; for a multipart upload the MD5 of the parts'
             MD5s followed by "-<number of parts>" (S3 and the S3-compatible servers that copy it);
  read-back  the store offers nothing we can check: the object is read back and hashed.
`verify.contentMd5`: send Content-MD5 with each request that carries bytes, so the store refuses
damaged bytes at once (InvalidDigest / BadDigest) instead of storing them.
A store that gives no answer for one object (the header missing) is checked by read-back for it:
an upload never counts as verified on our own say-so.
"""
from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

METHODS = ('read-back', 'etag-md5', 'crc64ecma')
BLOCK = 1 << 20


def crc64_function():
    """fastcrc's CRC-64/XZ (the ECMA-182 polynomial as OSS and COS compute it), or None when absent."""
    try:
        from fastcrc import crc64
    except ImportError:
        return None
    return crc64.xz


def sha256_of(f):
    """sha256 hex of a binary stream read to its end."""
    h = hashlib.sha256()
    for block in iter(lambda: f.read(BLOCK), b''):
        h.update(block)
    return h.hexdigest()


@dataclass
class Digests:
    """One file's size and digests, computed in a single read."""
    size: int
    sha256: str
    md5: bytes | None = None          # whole file: a single-part upload's ETag and Content-MD5
    part_md5s: list | None = None     # each part of a multipart upload
    crc64: int | None = None

    def content_md5(self, part=None):
        """The Content-MD5 header of the whole file (part None) or of one part (numbered from 1)."""
        raw = self.md5 if part is None else self.part_md5s[part - 1]
        return base64.b64encode(raw).decode()


class Integrity:
    """The declared method of one store, applied to our digests and to its answers."""

    def __init__(self, verify, multipart_threshold, part_size_of, log):
        self.method = verify.get('method') or 'read-back'
        self.header = (verify.get('header') or '').lower()
        self.content_md5 = bool(verify.get('contentMd5'))
        self.threshold, self.part_size_of = multipart_threshold, part_size_of
        self.crc64 = crc64_function() if self.method == 'crc64ecma' else None
        if self.method == 'crc64ecma' and not self.crc64:
            log.warning('fastcrc is not installed: uploads are verified by reading them back (slower)')
            self.method = 'read-back'

    def digest(self, f, size):
        """Digests of an open binary file from its current position, everything this method needs."""
        sha = hashlib.sha256()
        md5 = part = None
        parts = []
        multipart = size >= self.threshold
        if self.method == 'etag-md5' or self.content_md5:
            if multipart:
                part_size = left = self.part_size_of(size)
                part = hashlib.md5()
            else:
                md5 = hashlib.md5()
        crc = 0 if self.crc64 else None
        for block in iter(lambda: f.read(BLOCK), b''):
            sha.update(block)
            if md5:
                md5.update(block)
            if crc is not None:
                crc = self.crc64(block, crc)
            while part and block:
                # A block may straddle a part boundary: split it.
                head, block = block[:left], block[left:]
                part.update(head)
                left -= len(head)
                if not left:
                    parts.append(part.digest())
                    part, left = hashlib.md5(), part_size
        if part and left != part_size:
            parts.append(part.digest())
        return Digests(size, sha.hexdigest(), md5 and md5.digest(), parts if multipart and part else None, crc)

    def expected(self, d):
        """What the store should say about an object with these digests; None for read-back."""
        if self.method == 'crc64ecma':
            return str(d.crc64)
        if self.method == 'etag-md5':
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
