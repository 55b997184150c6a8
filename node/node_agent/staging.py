"""Stage the stack's packed data set from the bucket onto this node's disk before the trainer starts.

<prefix>/<stack>/data/manifest.json names every shard with its sha256 and size (docs/data.md).
Shards download in parallel, each streamed into a `.part` file while its sha256 is computed, and
take their name only once size and hash match the manifest. Verified shards are recorded in
`<dir>/.staged.json` with their size, mtime and the boot id: a rerun in the same boot skips them
unread; after a reboot, or on a replacement node's reused disk, each recorded shard is hashed
again from the local disk (a power loss can keep a name without its bytes, since shards are not
flushed one by one) and only a changed one is fetched again. The local manifest.json is written
last, when the set is complete. Progress goes to
the journal and to <paths.state>/staging.json. Any failure names the shard and the error and
raises StagingError: the trainer never starts on partial data.
"""
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import suppress

from botocore.exceptions import BotoCoreError, ClientError

from . import layout

log = logging.getLogger('agent')
RECORD = '.staged.json'
PARTS = '.part'
NOT_FOUND = ('404', 'NoSuchKey', 'NotFound')
# A connection dropped mid-stream is botocore's error, not an OSError: both are retried per shard.
TRANSIENT = (OSError, ClientError, BotoCoreError)
CHUNK = 1 << 20
THREADS = 8


class StagingError(Exception):
    """The data set could not be staged completely: the message names the shard and the cause."""


def boot_id():
    """This boot's id (Linux), or None: a record made in another boot is verified again."""
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            return f.read().strip() or None
    except OSError:
        return None


def _write_json(path, value):
    with open(path + '.tmp', 'w') as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + '.tmp', path)


class Stager:
    def __init__(self, store, dest, status_file, attempts=3, wait_s=0.0, poll_s=15.0, expect=None):
        self.store, self.dest, self.status_file, self.attempts = store, dest, status_file, attempts
        # scripts/run.py uploads data.localDir before `pulumi up`, or right after it when the bucket is the
        # stack's own, so a booting node may look before the manifest is there: it waits this long for it.
        # expect: the sha256 of the manifest this stack was planned with (node.json data.manifestSha256):
        # an earlier run's manifest still in the bucket is waited past, never staged.
        self.wait_s, self.poll_s, self.expect = wait_s, poll_s, expect
        self.key = store.root + layout.DATA
        self.lock, self.done_bytes, self.done_shards = threading.Lock(), 0, 0
        self.records, self.last_log = {}, 0.0
        self.record_lock, self.boot = threading.Lock(), boot_id()

    def read_manifest(self):
        """The manifest's bytes, or None while there is none (storage errors are retried, then raised)."""
        try:
            return self.store.s3.get_object(Bucket=self.store.bucket, Key=self.key + layout.DATA_MANIFEST)['Body'].read()
        except ClientError as e:
            if e.response['Error']['Code'] in NOT_FOUND:
                return None
            raise

    def manifest(self):
        url = f's3://{self.store.bucket}/{self.key}{layout.DATA_MANIFEST}'
        until = time.time() + self.wait_s
        while True:
            try:
                body = self.store.retry(self.read_manifest)()
            except (ClientError, BotoCoreError) as e:
                raise StagingError(f'{url}: {e}') from None
            got = body is not None and hashlib.sha256(body).hexdigest()
            if body is not None and (not self.expect or got == self.expect):
                break
            why = ('no manifest there yet' if body is None else f'the manifest there (sha256 {got[:12]}...) is '
                   f'not the one this stack was planned with ({self.expect[:12]}...): an earlier data set')
            if time.time() >= until:
                raise StagingError(f'no data set at {url} after waiting {self.wait_s / 60:g} min ({why}): upload it '
                                   'first (scripts/pack.py --upload STACK, or scripts/run.py, which uploads '
                                   'data.localDir)')
            log.info('waiting for the data set at %s (%.0f s left): %s', url, until - time.time(), why)
            time.sleep(min(self.poll_s, max(0.0, until - time.time())))
        try:
            m = json.loads(body)
            shards = [(str(s['name']), str(s['sha256']), int(s['size'])) for s in m['shards']]
        except (ValueError, KeyError, TypeError) as e:
            raise StagingError(f'{url} is not a data set manifest: {e!r}') from None
        if m.get('format') != layout.DATA_FORMAT:
            raise StagingError(f"{url}: format {m.get('format')!r}, this agent reads {layout.DATA_FORMAT!r}")
        if any(os.path.basename(n) != n or n.startswith('.') for n, _, _ in shards):
            raise StagingError(f'{url}: a shard name is a path; refused')
        return body, shards

    def status(self, state, total, started, **extra):
        _write_json(self.status_file, {'state': state, 'shards': self.done_shards, 'bytes': self.done_bytes,
                                       'totalBytes': total, 'seconds': round(time.time() - started, 1),
                                       'dest': self.dest, **extra})

    def run(self):
        """Stage every shard; the summary {'shards', 'bytes', 'downloaded', 'seconds', 'dest'}."""
        started = time.time()
        body, shards = self.manifest()
        os.makedirs(os.path.join(self.dest, PARTS), exist_ok=True)
        try:
            with open(os.path.join(self.dest, RECORD)) as f:
                self.records = json.load(f)
        except (OSError, ValueError):
            self.records = {}
        todo = self.unverified(shards, started)
        total, need = sum(s[2] for s in shards), sum(s[2] for s in todo)
        self.done_shards, self.done_bytes = len(shards) - len(todo), total - need
        free = shutil.disk_usage(self.dest).free
        if need > free:
            raise StagingError(f'data: {need / 1e9:.1f} GB of shards to stage into {self.dest}, {free / 1e9:.1f} GB '
                               'free: raise dataDiskGb')
        log.info('staging %d of %d shards (%.1f of %.1f GB) into %s', len(todo), len(shards), need / 1e9,
                 total / 1e9, self.dest)
        self.status('staging', total, started)
        try:
            with ThreadPoolExecutor(THREADS) as pool:
                jobs = [pool.submit(self.fetch, *s, total=total, started=started) for s in todo]
                done, _ = wait(jobs, return_when=FIRST_EXCEPTION)
                failed = [j.exception() for j in done if j.exception() is not None]
                if failed:  # the set cannot be complete: the queued shards are not worth their download
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise failed[0]
        except StagingError as e:
            self.save_record()  # keep what was verified, so a rerun skips it
            self.status('failed', total, started, error=str(e))
            raise
        self.save_record()
        with open(os.path.join(self.dest, layout.DATA_MANIFEST), 'wb') as f:
            f.write(body)
        shutil.rmtree(os.path.join(self.dest, PARTS), ignore_errors=True)
        seconds = time.time() - started
        self.status('staged', total, started, downloaded=need)
        log.info('data staged: %d shards, %.2f GB (%.2f GB downloaded) in %.1f s', len(shards), total / 1e9,
                 need / 1e9, seconds)
        return {'shards': len(shards), 'bytes': total, 'downloaded': need, 'seconds': round(seconds, 1),
                'dest': self.dest}

    def unverified(self, shards, started):
        """The shards still to fetch. Recorded in an earlier boot, a shard is hashed again, in parallel."""
        again = sum(1 for name, _, _ in shards if (self.records.get(name) or [None] * 4)[3:] != [self.boot])
        if again and self.records:
            log.info('verifying the shards recorded before this boot: hashing up to %d on the local disk', again)
            self.status('verifying', sum(s[2] for s in shards), started)
        with ThreadPoolExecutor(THREADS) as pool:
            fine = list(pool.map(lambda s: self.staged(*s), shards))
        return [s for s, ok in zip(shards, fine, strict=True) if not ok]

    def staged(self, name, sha, size):
        """True when a previous run verified this shard and the file is unchanged since.

        Shards are not flushed to the disk one by one (that cost a third of the throughput,
        bench/staging_rate.py): within the boot that verified them the page cache holds their bytes,
        so the record is trusted; after a reboot (a power loss may have kept the name but not the
        bytes) the file is hashed again, which reads the local disk instead of the network.
        """
        path, rec = os.path.join(self.dest, name), self.records.get(name)
        try:
            st = os.stat(path)
        except OSError:
            return False
        if not rec or rec[:3] != [sha, size, st.st_mtime_ns] or st.st_size != size:
            return False
        if self.boot is not None and rec[3:] == [self.boot]:
            return True
        h = hashlib.sha256()
        with open(path, 'rb') as f:
            for chunk in iter(lambda: f.read(CHUNK), b''):
                h.update(chunk)
        if h.hexdigest() != sha:
            log.warning('data shard %s: changed on the disk since it was verified: fetching it again', name)
            return False
        with self.lock:
            self.records[name] = [sha, size, st.st_mtime_ns, self.boot]
        return True

    def fetch(self, name, sha, size, total, started):
        """Download one shard, verified on the way; a damaged copy is fetched again, then refused."""
        part, dst, got = os.path.join(self.dest, PARTS, name), os.path.join(self.dest, name), None
        for attempt in range(1, self.attempts + 1):
            try:
                digest, length = self.download(name, part)
            except TRANSIENT as e:
                got = f'{type(e).__name__}: {e}'
                log.warning('data shard %s: try %d: %s', name, attempt, got)
                continue
            if length == size and digest == sha:
                os.replace(part, dst)
                with self.lock:
                    self.records[name] = [sha, size, os.stat(dst).st_mtime_ns, self.boot]
                    self.done_shards += 1
                    self.done_bytes += size
                    progress = time.time() - self.last_log >= 2 or self.done_bytes == total
                    if progress:
                        self.last_log = time.time()
                if progress:
                    # The record at most every 2 s, outside the lock: written with an fsync per shard under
                    # it, it serialised the threads (bench/staging_rate.py). A shard verified but not yet
                    # recorded when the node stops is only fetched again: nothing unverified is ever trusted.
                    self.save_record(total, started)
                return
            got = f'{length} bytes with sha256 {digest}, the manifest says {size} bytes with sha256 {sha}'
            log.warning('data shard %s: try %d: %s', name, attempt, got)
        with suppress(OSError):
            os.unlink(part)
        raise StagingError(f'data shard {name}: not staged after {self.attempts} tries: {got}')

    def save_record(self, total=None, started=None):
        """Write the record of the verified shards, and the progress when given the totals.

        One writer at a time (the files are replaced through one temporary name each); each record
        holds every shard verified so far.
        """
        with self.record_lock:
            with self.lock:
                records, done, shards = dict(self.records), self.done_bytes, self.done_shards
            _write_json(os.path.join(self.dest, RECORD), records)
            if total is not None:
                rate = done / max(1e-6, time.time() - started) / 1e6
                log.info('staging: %.2f of %.2f GB, %d shards done, %.0f MB/s', done / 1e9, total / 1e9, shards,
                         rate)
                self.status('staging', total, started)

    def download(self, name, part):
        """(sha256, bytes) of the object as written to `part`: hashed while it streams to the disk."""
        response = self.store.retry(self.store.s3.get_object)(Bucket=self.store.bucket, Key=self.key + name)
        h, length = hashlib.sha256(), 0
        with open(part, 'wb') as f:
            for chunk in response['Body'].iter_chunks(CHUNK):
                h.update(chunk)
                f.write(chunk)
                length += len(chunk)
        return h.hexdigest(), length
