"""Ship the node's logs (the trainer's and the agent's) to object storage, so a node that is gone still has them.

Each log goes up in fixed-size segments, logs/<node>/<file>.<nnnn> under the stack root (layout.py):
segment n holds bytes [n*SEGMENT_BYTES, (n+1)*SEGMENT_BYTES) of the file. A full segment never changes
again and is uploaded once; only the open (last) segment is sent again when it grew, so a periodic
ship costs at most one small PUT per log however long the run. Reading the segments in order gives
the file back (`gpu-training logs` does that; a line cut at a boundary joins up again).

At most MAX_SEGMENTS segments of a file are kept in the bucket: past that the first segment (the
start-up) and the newest ones are shipped, and the ones between are skipped (the node's disk keeps the
whole file). Shipping is best effort and bounded: a few tries within SHIP_DEADLINE_S, then a warning;
it never raises and never holds up a release for longer than that (agent.py calls it before every
release, on every failure and with the periodic sync).
"""
import logging
import os
import threading
import time

from . import layout

log = logging.getLogger('agent')
SEGMENT_BYTES = 1 << 20
MAX_SEGMENTS = 32
SHIP_DEADLINE_S = 20.0
SHIP_TRIES = 3
LOG_FILES = ('trainer.log', 'agent.log')


def segment_key(node, name, index):
    return layout.log(node, f'{name}.{index:04d}')


def wanted(count):
    """The segment numbers of a file of `count` segments that are shipped (the first and the newest)."""
    if count <= MAX_SEGMENTS:
        return list(range(count))
    return [0, *range(count - MAX_SEGMENTS + 1, count)]


class LogShipper:
    def __init__(self, store, node, folder, names=LOG_FILES):
        self.store, self.node, self.folder, self.names = store, node, folder, names
        self.sent = {}  # (file name, segment) -> bytes shipped
        self.lock = threading.Lock()  # the periodic ship and a final one may overlap

    def ship(self, why='periodic'):
        """Upload what is new in every log; True when everything went up. Never raises."""
        with self.lock:
            deadline, ok = time.monotonic() + SHIP_DEADLINE_S, True
            for name in self.names:
                try:
                    ok &= self.ship_file(name, deadline)
                except Exception as e:  # diagnostics: a failure is a warning, never a stop
                    log.warning('log %s not shipped (%s): %s', name, why, e)
                    ok = False
            return ok

    def ship_file(self, name, deadline):
        path = os.path.join(self.folder, name)
        try:
            size = os.path.getsize(path)
        except OSError:
            return True  # not written (yet): nothing to ship
        count = (size + SEGMENT_BYTES - 1) // SEGMENT_BYTES
        for index in wanted(count):
            length = min(SEGMENT_BYTES, size - index * SEGMENT_BYTES)
            if self.sent.get((name, index)) == length:
                continue
            with open(path, 'rb') as f:
                f.seek(index * SEGMENT_BYTES)
                body = f.read(length)
            self.put(segment_key(self.node, name, index), body, deadline)
            self.sent[(name, index)] = len(body)
        return True

    def put(self, rel, body, deadline):
        """One PUT, tried SHIP_TRIES times within the deadline (the checkpoint retries are far longer)."""
        for attempt in range(1, SHIP_TRIES + 1):
            try:
                self.store.s3.put_object(Bucket=self.store.bucket, Key=self.store.root + rel, Body=body,
                                         ContentType='text/plain; charset=utf-8')
                return
            except Exception:
                if attempt == SHIP_TRIES or time.monotonic() + 2 ** attempt * 0.25 > deadline:
                    raise
                time.sleep(2 ** attempt * 0.25)
