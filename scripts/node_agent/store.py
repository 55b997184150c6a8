"""Checkpoint snapshots in S3-compatible object storage: verified uploads, manifests, restore.

Layout under <prefix>/<stack>/ (docs/node-config.md, "Object storage layout"):
  checkpoints/objects/<sha256>        file contents, keyed by their own hash, written once
  checkpoints/manifests/<id>.json     one snapshot: {relative path: {sha256, size}}, written last
A snapshot exists only once its manifest does, and a manifest is written only after every object
it names was verified (size, and our sha256 in the object metadata, read back by HEAD). A newer
snapshot only ever adds objects, so it can never damage an older complete one, and unchanged files
are uploaded once. Ids start with the UTC time, so the newest manifest is the last key.
"""
import hashlib
import json
from contextlib import suppress
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from .s3 import client, retrying, root

L = logging.getLogger('agent')
# Trainers write atomically (temp file + rename): these names are work in progress.
TEMP = ('.tmp', '.part', '.partial', '.swp', '~', '.lock')


def sha256(f):
    h = hashlib.sha256()
    for b in iter(lambda: f.read(1 << 20), b''):
        h.update(b)
    return h.hexdigest()


def inside(base, rel):
    """base/rel, or None when rel would escape base (a damaged or hostile manifest)."""
    p = os.path.realpath(os.path.join(base, rel))
    return p if p.startswith(os.path.realpath(base) + os.sep) else None


class Store:
    def __init__(self, cfg, node, credentials):
        self.bucket, self.node, self.lock = cfg['checkpoint']['bucket'], node, threading.Lock()
        self.root, self.s3, self.retry = root(cfg), client(cfg, credentials), retrying(cfg)
        self.objects = self.root + 'checkpoints/objects/'
        self.tc = TransferConfig(multipart_threshold=16 << 20, multipart_chunksize=16 << 20, max_concurrency=8)
        self.hashes, self.verified, self.last = {}, set(), (None, None)
        # Contents this node restored rather than produced: a snapshot of only these would be a newer
        # manifest with older content (a multi-node peer whose rank writes no checkpoints).
        self.restored = set()

    def verify(self, key, size, sha):
        """True when the object exists with this size and sha256; False when it is absent."""
        try:
            h = self.s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if e.response['Error']['Code'] in ('404', 'NoSuchKey', 'NotFound'):
                return False
            raise
        return h['ContentLength'] == size and h['Metadata'].get('sha256') == sha

    def put(self, key, src, size, sha):
        """Upload bytes or an open file unless the object already holds this content; then verify it."""
        if (key, sha) in self.verified or self.verify(key, size, sha):
            return self.verified.add((key, sha))
        if isinstance(src, bytes):
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=src, Metadata={'sha256': sha})
        else:
            # Through /proc/self/fd: the inode we hashed, even if the trainer renamed a new file over the name.
            self.s3.upload_file(f'/proc/self/fd/{src.fileno()}', self.bucket, key, Config=self.tc,
                                ExtraArgs={'Metadata': {'sha256': sha}})
        if not self.verify(key, size, sha):
            raise OSError(f'{key}: the uploaded object does not verify')
        self.verified.add((key, sha))

    def put_data(self, rel, body):
        self.retry(self.put)(self.root + rel, body, len(body), hashlib.sha256(body).hexdigest())

    def put_file(self, path, final):
        """(path, sha256, size) of one file, uploaded and verified; None when it is gone or too fresh."""
        try:
            f = open(path, 'rb')
        except FileNotFoundError:
            return None  # renamed away between listing and opening
        with f:
            st = os.fstat(f.fileno())
            # Touched within the last second: may still be written in place (final: the trainer is gone).
            if not final and time.time() - st.st_mtime < 1:
                return None
            sig = st.st_ino, st.st_size, st.st_mtime_ns
            if self.hashes.get(path, (0,))[0] != sig:
                self.hashes[path] = sig, sha256(f)
            sha = self.hashes[path][1]
            self.put(self.objects + sha, f, st.st_size, sha)
            return path, sha, st.st_size

    def snapshot(self, ckpt_dir, final=False):
        """Upload new/changed files, then write a manifest; the newest complete snapshot id (or None)."""
        with self.lock:
            # Regular files only: opening a FIFO or socket someone left there would block forever.
            paths = [p for r, _, names in os.walk(ckpt_dir) for n in names
                     if not (n.startswith('.') or n.endswith(TEMP)) and os.path.isfile(p := os.path.join(r, n))]
            # One open file per worker: a checkpoint of thousands of files stays within the fd limit.
            with ThreadPoolExecutor(4) as ex:
                done = [x for x in ex.map(lambda p: self.retry(self.put_file)(p, final), paths) if x]
            files = {os.path.relpath(p, ckpt_dir): {'sha256': s, 'size': z} for p, s, z in done}
            if not files or files == self.last[1] or all(v['sha256'] in self.restored for v in files.values()):
                return self.last[0]
            t = time.time_ns()
            sid = time.strftime('%Y%m%dT%H%M%S', time.gmtime(t // 10**9)) + f'.{t % 10**9:09d}Z-{self.node}'
            manifest = {'id': sid, 'node': self.node, 'files': files}
            self.put_data(f'checkpoints/manifests/{sid}.json', json.dumps(manifest).encode())
            self.last = sid, files
            L.info('snapshot %s complete: %d files, %d bytes', sid, len(files), sum(v['size'] for v in files.values()))
            return sid

    def markers(self):
        """{node id: marker} of every node of this stack."""
        found = {}
        for key in self.retry(self.keys)('markers/'):
            with suppress(ValueError, KeyError):
                body = self.retry(self.s3.get_object)(Bucket=self.bucket, Key=key)['Body'].read()
                found[key.rsplit('/', 1)[-1].removesuffix('.json')] = json.loads(body)
        return found

    def keys(self, rel):
        pages = self.s3.get_paginator('list_objects_v2').paginate(Bucket=self.bucket, Prefix=self.root + rel)
        return [o['Key'] for p in pages for o in p.get('Contents', [])]

    def fetch_code(self, workdir):
        """Copy <prefix>/<stack>/code/ (the user's training code, when uploaded) into the workdir."""
        for k in self.retry(self.keys)('code/'):
            dst = inside(workdir, k[len(self.root) + 5:])
            if dst and not k.endswith('/'):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                self.retry(self.s3.download_file)(self.bucket, k, dst)

    def restore(self, ckpt_dir):
        """Download the newest snapshot whose objects all verify; its id, or None when there is none.

        A snapshot with missing objects makes way for an older one; a storage or disk error (after
        the retries) raises instead, so a node never trains from an older state than it could reach.
        """
        for key in reversed(self.retry(self.keys)('checkpoints/manifests/')):
            try:
                m = json.loads(self.retry(self.s3.get_object)(Bucket=self.bucket, Key=key)['Body'].read())
                sid, files = m['id'], dict(m['files'])
            except (ValueError, KeyError, TypeError) as e:
                L.warning('snapshot %s is damaged (%s): trying an older one', key, e)
                continue
            if self.retry(self.fetch)(ckpt_dir, files):
                L.info('restored snapshot %s: %d files', sid, len(files))
                self.last = sid, None
                self.restored |= {v['sha256'] for v in files.values()}
                return sid
            L.warning('snapshot %s is incomplete: trying an older one', key)

    def fetch(self, ckpt_dir, files):
        if not files or not all(self.verify(self.objects + v['sha256'], v['size'], v['sha256'])
                                for v in files.values()):
            return False
        for rel, v in files.items():
            dst = inside(ckpt_dir, rel)
            # Never overwrite a local file: it is as new as the store's copy, or newer.
            if not dst or os.path.exists(dst):
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            self.s3.download_file(self.bucket, self.objects + v['sha256'], dst + '.tmp', Config=self.tc)
            with open(dst + '.tmp', 'rb') as f:
                if sha256(f) != v['sha256']:
                    raise OSError(f'{rel}: the downloaded file does not match its sha256')
            os.replace(dst + '.tmp', dst)
        return True
