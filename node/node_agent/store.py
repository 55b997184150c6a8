"""Checkpoint snapshots in S3-compatible object storage: content-verified uploads, manifests, restore.

Layout under <prefix>/<stack>/ (docs/node-config.md, "Object storage layout"):
  checkpoints/objects/<sha256>          file contents, keyed by their own hash
  checkpoints/manifests/<id>.json       one snapshot: {relative path: {sha256, size, <method>: value}}, written last
  checkpoints/quarantine/<id>.json      a snapshot found damaged: why, by which node, when
A snapshot exists only once its manifest does, and a manifest is written only after the store
confirmed the content of every object it names (integrity.py: the store's CRC-64 or ETag, or a
read-back), recording what the store said. A newer snapshot only ever adds objects, so it can never
damage an older complete one, and unchanged files are uploaded once; an object found to hold other
bytes is uploaded again. Ids start with the UTC time, so the newest manifest is the last key.

Restore takes the newest snapshot that verifies. One whose content is wrong at the store (the
store's digest differs from the manifest's, an object is missing, or every download gives the same
wrong bytes) is quarantined, so the next node skips it at once and `run.py` shows it; an
unreachable store, or downloads that keep arriving damaged while the store vouches for its copy,
stop the node instead (never train from an older state than the one it could reach).
"""
import base64
import io
import json
import logging
import os
import shutil
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from s3transfer.utils import ChunksizeAdjuster

from . import layout
from .integrity import Digests, HashingSink, Integrity, body_md5, with_sent_md5s
from .s3 import client, retrying, root

log = logging.getLogger('agent')
# Trainers write atomically (temp file + rename): these names are work in progress.
TEMP = ('.tmp', '.part', '.partial', '.swp', '~', '.lock')
STAGING = '.restore'  # a dot name: never part of a snapshot
PART_SIZE = 64 << 20
RANGE = 8 << 20  # one ranged GET of a download: threads x RANGE bytes in memory per file at most
TRANSFER = TransferConfig(multipart_threshold=PART_SIZE, multipart_chunksize=PART_SIZE, max_concurrency=8)


class Damaged(Exception):
    """A snapshot whose stored content is not what its manifest says."""


def inside(base, rel):
    """base/rel, or None when rel would escape base (a damaged or hostile manifest)."""
    p = os.path.realpath(os.path.join(base, rel))
    return p if p.startswith(os.path.realpath(base) + os.sep) else None


def file_signature(f):
    """(inode, size, mtime ns, ctime ns) of an open file: what says it was not written since. The ctime
    too: a write changes it, and so does setting the mtime back (os.utime, rsync -t), which no program can
    undo."""
    st = os.fstat(f.fileno())
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def missing(error):
    return isinstance(error, ClientError) and error.response['Error']['Code'] in ('404', 'NoSuchKey', 'NotFound')


class Store:
    def __init__(self, cfg, node, credentials, transfer=None):
        self.bucket, self.node, self.lock = cfg['checkpoint']['bucket'], node, threading.Lock()
        self.root, self.s3, self.retry = root(cfg), client(cfg, credentials), retrying(cfg)
        self.attempts = cfg['agent']['uploadAttempts']
        self.objects = self.root + layout.OBJECTS
        self.transfer = transfer or TRANSFER  # another one: bench/upload_rate.py --sweep
        part = self.transfer.multipart_chunksize
        # The part size s3transfer will use for a file of this size: the multipart ETag depends on it.
        adjuster = ChunksizeAdjuster()
        self.integrity = Integrity(cfg['checkpoint']['verify'], self.transfer.multipart_threshold,
                                   lambda size: adjuster.adjust_chunksize(part, size), log)
        # verified: (key, sha256) -> the Digests the store confirmed (their MD5s too, for another file
        # with the same content, whose own pass left them out).
        self.hashes, self.verified, self.last = {}, {}, (None, None)
        # Contents this node restored rather than produced, {sha256: the restored manifest's record}: a
        # snapshot of only these would be a newer manifest with older content (a multi-node peer whose rank
        # writes no checkpoints); a later manifest keeps the store's digest the record holds (entry()).
        self.restored = {}
        # One upload of an object key at a time (put()): two files of one content share a key, and the MD5s
        # sent and the store's answer are kept by key, so they must belong to one upload.
        self.key_locks, self.key_locks_lock = {}, threading.Lock()
        # object key -> {part number (0: a single PUT): (MD5, size) of the bytes that request sent}, for the upload
        # under way of that key (so also: which keys are being uploaded now).
        self.sent = {}
        if self.integrity.needs_md5:
            for operation in ('PutObject', 'UploadPart'):
                self.s3.meta.events.register(f'before-parameter-build.s3.{operation}', self.md5_of_request)
        # object key -> the store's answer to the request that completed the object (PutObject or
        # CompleteMultipartUpload): s3transfer sends those requests and keeps their answers to itself.
        self.answers, self.refused = {}, set()  # refused: keys whose upload did not verify (put())
        for operation in ('PutObject', 'CompleteMultipartUpload'):
            self.s3.meta.events.register(f'before-parameter-build.s3.{operation}', self.note_key)
            self.s3.meta.events.register(f'after-call.s3.{operation}', self.keep_answer)

    def md5_of_request(self, params, **_):
        """The MD5 of the bytes this request sends (a PUT or one part; s3transfer sends them), on the
        sending thread while the other parts travel: kept for the expected ETag and, with contentMd5,
        sent as Content-MD5 so the store refuses any other bytes."""
        sent = self.sent.get(params.get('Key'))
        if sent is None or 'Body' not in params:
            return
        md5, size = body_md5(params['Body'])
        sent[params.get('PartNumber') or 0] = md5, size
        if self.integrity.content_md5:
            params['ContentMD5'] = base64.b64encode(md5).decode()

    @staticmethod
    def note_key(params, context, **_):
        """Remember the request's object key in its context: the answer's event does not carry the parameters."""
        context['object_key'] = params.get('Key')

    def keep_answer(self, parsed, context, **_):
        """Keep a successful answer that completed one of our uploads, for confirm()."""
        key = context.get('object_key')
        if key in self.sent and parsed.get('ResponseMetadata', {}).get('HTTPStatusCode', 500) < 300:
            self.answers[key] = parsed

    def stream(self, key, size, sink):
        """Hand the object's bytes to sink.write in their order, in one pass: a small object in one GET,
        a large one in RANGE-sized ranged GETs on the transfer's threads, hashed as each next range
        arrives while the later ones download, at most as many ranges ahead as there are threads (the
        memory bound). Not s3transfer's download_fileobj to a stream: with s3transfer 0.19.3 it hung
        here on a 128 MiB object in 8 MiB ranges (bench/upload_rate.py --sweep; the thread scheduling
        the remaining ranges waited in its in-memory window semaphore for good).
        `size`: the size the store reported; ranges past the end of a shorter object fail the download."""
        if size < self.transfer.multipart_threshold:
            for chunk in self.s3.get_object(Bucket=self.bucket, Key=key)['Body'].iter_chunks(1 << 20):
                sink.write(chunk)
            return

        def get(start):
            r = f'bytes={start}-{min(start + RANGE, size) - 1}'
            return self.s3.get_object(Bucket=self.bucket, Key=key, Range=r)['Body'].read()
        threads, ahead = self.transfer.max_concurrency, deque()
        with ThreadPoolExecutor(threads) as pool:
            for start in range(0, size, RANGE):
                ahead.append(pool.submit(get, start))
                if len(ahead) >= threads:
                    sink.write(ahead.popleft().result())
            while ahead:
                sink.write(ahead.popleft().result())

    def read_back(self, key, size):
        """sha256 of the object as the store serves it (one pass, parallel ranges)."""
        sink = HashingSink()
        self.stream(key, size, sink)
        return sink.hexdigest()

    def check(self, key, digests, src=None):
        """None when the object at `key` holds exactly these bytes by the store's word (or a read-back);
        'absent'; or what differs. src: the bytes or open file, to take the MD5s from when the digests
        lack them (the ETag of an object already stored)."""
        try:
            head = self.s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if missing(e):
                return 'absent'
            raise
        if head['ContentLength'] != digests.size:
            return f"the store holds {head['ContentLength']} bytes, not {digests.size}"
        if self.integrity.method == 'etag-md5' and digests.md5 is None and digests.part_md5s is None and src is not None:
            self.add_md5s(src, digests)
        want, said = self.integrity.expected(digests), self.integrity.stored(head)
        if want is not None and said is not None and self.integrity.comparable(want, said):
            return None if said == want else f'the store reports {self.integrity.method} {said}, not {want}'
        sha = self.read_back(key, head['ContentLength'])
        return None if sha == digests.sha256 else f'read back with sha256 {sha}, not {digests.sha256}'

    def confirm(self, key, digests, answer):
        """None when the store's answer to the upload (PutObject or CompleteMultipartUpload: the ETag, or
        the CRC-64 header OSS and COS send on both, docs/agent.md) vouches for exactly these bytes; what
        differs when it vouches for others. Without a comparable answer: the HEAD (and read-back) of check()."""
        want = self.integrity.expected(digests)
        said = self.integrity.stored(answer) if answer else None
        if want is None or said is None or not self.integrity.comparable(want, said):
            return self.check(key, digests)
        return None if said == want else f'the store answered {self.integrity.method} {said} to the upload, not {want}'

    def add_md5s(self, src, digests):
        """Fill the MD5s the digests lack by a pass over src; OSError when it no longer has their sha256."""
        f = io.BytesIO(src) if isinstance(src, bytes) else src
        f.seek(0)
        full = self.integrity.digest(f, digests.size)
        if full.sha256 != digests.sha256:
            raise OSError(f'the file changed since it was hashed (sha256 {full.sha256}, not {digests.sha256})')
        digests.md5, digests.part_md5s = full.md5, full.part_md5s

    def put(self, key, src, digests, signature=None, new=False):
        """Upload bytes or an open file unless the object already holds this content; then have the store confirm it.
        One put of a key at a time: a second file of the same content waits, then finds it verified.
        new: the key cannot exist yet (a manifest's id is unique), so no HEAD asks whether it does."""
        with self.key_locks_lock:  # not self.lock: snapshot() holds that while its threads put
            key_lock = self.key_locks.setdefault(key, threading.Lock())
        with key_lock:
            self.put_alone(key, src, digests, signature, new)

    def put_alone(self, key, src, digests, signature=None, new=False):
        """put() with no other put of `key` under way.

        An object whose upload the store's answer contradicted is uploaded again, never taken on a later
        HEAD's word: a store whose answers disagree about the same bytes is trusted by neither.
        signature: the file's (inode, size, mtime) when it was hashed: the MD5s of the upload are taken
        from the bytes sent, so a file that changed since then is refused (it is hashed again)."""
        known = self.verified.get((key, digests.sha256))
        if known is not None:
            if digests.md5 is None and digests.part_md5s is None:
                digests.md5, digests.part_md5s = known.md5, known.part_md5s
            return
        if not new and key not in self.refused and self.check(key, digests, src) is None:
            self.verified[key, digests.sha256] = digests
            return
        self.sent[key] = {}
        self.answers.pop(key, None)  # an earlier try's answer says nothing about this one
        if isinstance(src, bytes):
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=src, Metadata={'sha256': digests.sha256})
        else:
            # Through /proc/self/fd: the inode we hashed, even if the trainer renamed a new file over the name.
            src.seek(0)
            self.s3.upload_file(f'/proc/self/fd/{src.fileno()}', self.bucket, key, Config=self.transfer,
                                ExtraArgs={'Metadata': {'sha256': digests.sha256}})
        sent, answer = self.sent.pop(key), self.answers.pop(key, None)
        if signature is not None and file_signature(src) != signature:
            raise OSError(f'{key}: the file changed while it was uploaded: hashing it again')
        whole = self.integrity.needs_md5 and with_sent_md5s(digests, sent)
        if self.integrity.needs_md5 and not whole:
            digests.md5 = digests.part_md5s = None  # nothing to expect of the ETag: confirm() reads it back
        if self.integrity.method == 'content-md5' and whole and answer is not None:
            # The store accepted each request's bytes against the MD5 of what it sent (or refused it:
            # BadDigest, raised above), they were the whole file, and the request completing the object
            # succeeded: the store's word, with no ETag to compare (integrity.py).
            problem = None
        else:
            problem = self.confirm(key, digests, answer)
        if problem:
            self.refused.add(key)
            raise OSError(f'{key}: the uploaded object does not verify: {problem}')
        self.verified[key, digests.sha256] = digests

    def put_data(self, rel, body, new=False):
        self.retry(self.put)(self.root + rel, body, self.integrity.digest(io.BytesIO(body), len(body), md5s=False),
                             new=new)

    def put_file(self, path, final):
        """(path, Digests) of one file, uploaded and verified; None when it is gone or too fresh."""
        try:
            f = open(path, 'rb')
        except FileNotFoundError:
            return None  # renamed away between listing and opening
        with f:
            signature = file_signature(f)
            # Touched within the last second: may still be written in place (final: the trainer is gone).
            if not final and time.time() - signature[2] / 1e9 < 1:
                return None
            if self.hashes.get(path, (0,))[0] != signature:
                self.hashes[path] = signature, self.integrity.digest(f, signature[1], md5s=False)
            digests = self.hashes[path][1]
            self.put(self.objects + digests.sha256, f, digests, signature)
            return path, digests

    def entry(self, digests):
        """A manifest's record of one file: what restore checks the store against (for restored content
        whose digests lack the MD5s, the store's digest its manifest recorded)."""
        out = {'sha256': digests.sha256, 'size': digests.size}
        said = self.integrity.expected(digests)
        if said is None:
            said = self.restored.get(digests.sha256, {}).get(self.integrity.method)
        if said is not None:
            out[self.integrity.method] = said
        return out

    def snapshot(self, ckpt_dir, final=False):
        """Upload new/changed files, then write a manifest; the newest complete snapshot id (or None)."""
        with self.lock:
            # Regular files only: opening a FIFO or socket someone left there would block forever.
            paths = [p for r, dirs, names in os.walk(ckpt_dir) for n in names
                     if not (n.startswith('.') or n.endswith(TEMP)) and os.path.isfile(p := os.path.join(r, n))
                     and STAGING not in os.path.relpath(r, ckpt_dir).split(os.sep)]
            # One open file per worker: a checkpoint of thousands of files stays within the fd limit.
            with ThreadPoolExecutor(4) as pool:
                done = [x for x in pool.map(lambda p: self.retry(self.put_file)(p, final), paths) if x]
            files = {os.path.relpath(p, ckpt_dir): self.entry(d) for p, d in done}
            if not files or files == self.last[1] or all(v['sha256'] in self.restored for v in files.values()):
                return self.last[0]
            t = time.time_ns()
            sid = time.strftime('%Y%m%dT%H%M%S', time.gmtime(t // 10**9)) + f'.{t % 10**9:09d}Z-{self.node}'
            manifest = {'id': sid, 'node': self.node, 'verify': self.integrity.method, 'files': files}
            # Its id (UTC time to the nanosecond, and the node) is new: no HEAD asks whether it is stored.
            self.put_data(layout.manifest(sid), json.dumps(manifest).encode(), new=True)
            self.last = sid, files
            log.info('snapshot %s complete: %d files, %d bytes', sid, len(files),
                     sum(v['size'] for v in files.values()))
            return sid

    def markers(self):
        """{node id: marker} of every node of this stack."""
        found = {}
        for key in self.retry(self.keys)(layout.MARKERS):
            with suppress(ValueError, KeyError):
                body = self.retry(self.s3.get_object)(Bucket=self.bucket, Key=key)['Body'].read()
                found[key.rsplit('/', 1)[-1].removesuffix('.json')] = json.loads(body)
        return found

    def keys(self, rel):
        pages = self.s3.get_paginator('list_objects_v2').paginate(Bucket=self.bucket, Prefix=self.root + rel)
        return [o['Key'] for p in pages for o in p.get('Contents', [])]

    def fetch_code(self, workdir):
        """Copy <prefix>/<stack>/code/ (the user's training code, when uploaded) into the workdir."""
        for k in self.retry(self.keys)(layout.CODE):
            dst = inside(workdir, k[len(self.root + layout.CODE):])
            if dst and not k.endswith('/'):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                self.retry(self.s3.download_file)(self.bucket, k, dst)

    def quarantined(self):
        """Ids of the snapshots some node found damaged."""
        return {k.rsplit('/', 1)[-1].removesuffix('.json') for k in self.retry(self.keys)(layout.QUARANTINE)}

    def quarantine(self, sid, reason):
        log.error('snapshot %s is damaged (%s): quarantined; trying an older one', sid, reason)
        self.put_data(layout.quarantine(sid), json.dumps({
            'snapshot': sid, 'reason': reason, 'node': self.node,
            'at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, indent=1).encode())

    def restore(self, ckpt_dir):
        """Download the newest snapshot that verifies; its id, or None when there is none.

        Damaged snapshots (unreadable manifest, missing object, content the store or every download
        says is wrong) are quarantined and skipped; a storage or disk error (after the retries) raises
        instead, so a node never trains from an older state than it could reach.
        """
        skip = self.quarantined()
        for key in reversed(self.retry(self.keys)(layout.MANIFESTS)):
            sid = key.rsplit('/', 1)[-1].removesuffix('.json')
            if sid in skip:
                log.warning('snapshot %s is quarantined (checkpoints/quarantine/%s.json): skipping it', sid, sid)
                continue
            try:
                try:
                    m = json.loads(self.retry(self.s3.get_object)(Bucket=self.bucket, Key=key)['Body'].read())
                    files = {str(rel): dict(v, size=int(v['size']), sha256=str(v['sha256']))
                             for rel, v in dict(m['files']).items()}
                except (ValueError, KeyError, TypeError, AttributeError) as e:
                    raise Damaged(f'the manifest is unreadable: {e!r}') from e
                if not files:
                    raise Damaged('the manifest names no files')
                self.fetch(ckpt_dir, files)
            except Damaged as e:
                self.quarantine(sid, str(e))
                continue
            log.info('restored snapshot %s: %d files', sid, len(files))
            self.last = sid, None
            self.restored.update((v['sha256'], v) for v in files.values())
            return sid

    def fetch(self, ckpt_dir, files):
        """Bring every file of one snapshot into ckpt_dir, or none of them (raise Damaged or OSError)."""
        # As many files at once as a snapshot uploads: small files are request-bound, not byte-bound.
        with ThreadPoolExecutor(4) as pool:
            for v, said in zip(files.values(), pool.map(lambda item: self.vouch(*item), files.items())):
                v['vouched'] = said
        staging = os.path.join(ckpt_dir, STAGING)
        shutil.rmtree(staging, ignore_errors=True)
        try:
            todo, jobs = {}, []
            for rel, v in files.items():
                dst = inside(ckpt_dir, rel)
                # Never overwrite a local file: it is as new as the store's copy, or newer.
                if not dst or os.path.exists(dst):
                    continue
                tmp = os.path.join(staging, os.path.relpath(dst, ckpt_dir))
                os.makedirs(os.path.dirname(tmp), exist_ok=True)
                jobs.append((rel, v, tmp))
                todo[tmp] = dst
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda job: self.download(*job), jobs))  # list(): the first failure raises here
            # Every file verified: only now does any of them take its place.
            for tmp, dst in todo.items():
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.replace(tmp, dst)
            # The store holds exactly these bytes: each download hashed to its key. The next snapshot
            # finds them verified instead of asking the store again (a read-back, without a digest the
            # store keeps of the whole object).
            for _, v, _ in jobs:
                self.verified[self.objects + v['sha256'], v['sha256']] = Digests(v['size'], v['sha256'])
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def vouch(self, rel, v):
        """Check one object by HEAD: True when the store's digest equals the manifest's, False when the
        manifest or the store has none to compare; Damaged when it is missing or differs."""
        key = self.objects + v['sha256']
        try:
            head = self.retry(self.s3.head_object)(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if missing(e):
                raise Damaged(f'{rel}: object {key} is missing (the snapshot is incomplete)') from e
            raise
        if head['ContentLength'] != v['size']:
            raise Damaged(f"{rel}: the store holds {head['ContentLength']} bytes, the manifest says {v['size']}")
        recorded, said = v.get(self.integrity.method), self.integrity.stored(head)
        if recorded is None or said is None or not self.integrity.comparable(recorded, said):
            return False
        if said != recorded:
            raise Damaged(f'{rel}: the store reports {self.integrity.method} {said}, the manifest {recorded}')
        return True

    def download_once(self, key, size, dst):
        """sha256 of the object as written to dst: hashed while it arrives (one pass, no second read)."""
        with open(dst, 'wb') as f:
            sink = HashingSink(f)
            self.stream(key, size, sink)
        return sink.hexdigest()

    def download(self, rel, v, dst):
        """Download one object to dst and check its sha256; a mismatch is retried, then judged."""
        key, wrong = self.objects + v['sha256'], []
        for _ in range(self.attempts):
            got = self.retry(self.download_once)(key, v['size'], dst)
            if got == v['sha256']:
                return
            log.warning('%s: downloaded sha256 %s, not %s: trying again', rel, got, v['sha256'])
            wrong.append(got)
        if v['vouched'] or len(set(wrong)) > 1:
            # The store vouches for its copy, or the damage changes from try to try: the bytes get
            # damaged on the way, which an older snapshot would not escape.
            raise OSError(f'{rel}: every download was damaged in transit ({len(wrong)} tries)')
        raise Damaged(f'{rel}: the stored object has sha256 {wrong[0]}, the manifest says {v["sha256"]}')
