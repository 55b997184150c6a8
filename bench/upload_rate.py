"""Checkpoint upload and restore: the agent's verified Store against plain boto3, per verification kind.

The servers run in their own process on 127.0.0.1 (so their CPU is not the client's GIL): moto's S3
(localcloud.LocalS3) and, in front of it, the OSS stand-in for crc64ecma (localcloud.standins.ObjectStorage:
the CRC-64 header OSS and COS answer) and the OBS one for content-md5 (it checks each request's Content-MD5,
as OBS and BOS do, and answers ETags that are no MD5); plain boto3 runs against the same server. One checkpoint of representative sizes (default one 128 MiB
file, two of 24 MiB, four of 2 MiB: random bytes, in the page cache for both sides; --big-mb 256 for
a larger one, at about twice the run time) is written once. About 3 minutes on 2 quiet cores; 7 rounds took 33 minutes at load 15-27.
Each round then, for each kind, interleaved (the order of the two sides flips every round):
  - upload: boto3 `upload_file` of every file, one after another, with boto3's default transfer
    settings, against Store.snapshot() of the folder (the sha256 pass, the HEAD asking whether it is
    stored, the MD5s on the upload's threads, the store's answer to the upload, the manifest) under a
    fresh stack prefix, so nothing is deduplicated;
  - restore: boto3 `download_file` of the same objects against Store.restore() into a fresh folder
    (HEAD of each object against the manifest, download, the sha256 check, the move into place).
Both sides use the same client settings (node_agent.s3.client: the store's checksum settings).
Prints each side's median MiB/s over the rounds, the ratio ours / plain of the medians and the median
of each round's own ratio (the goal: >= 0.9), and the CPU seconds of each side in the client and in the
servers' process, with the median of each round's CPU ratio (both processes, plain / ours). On two
cores shared by client, servers and other jobs the wall time follows the CPU, so each upload line has
a ceiling: plain's CPU over plain's CPU plus the hashing the kind adds (one core's MiB/s of sha256,
MD5 and CRC-64, measured at the start); for read-back also plain upload / (plain upload + plain
download), since every byte crosses twice.
Loopback is not a cloud's network and moto is a Python server: the ratio is what carries over.

Run: .venv/bin/python bench/upload_rate.py [--rounds 5] [--big-mb 256] [--kinds etag-md5,crc64ecma,content-md5,read-back]
     .venv/bin/python bench/upload_rate.py --sweep --kinds etag-md5 --rounds 3 (how the part size and
     concurrency were chosen)
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / 'node')]
os.environ.update(AWS_ACCESS_KEY_ID='local', AWS_SECRET_ACCESS_KEY='local', AWS_DEFAULT_REGION='us-east-1')

KINDS = {'etag-md5': {'method': 'etag-md5', 'contentMd5': True},
         'crc64ecma': {'method': 'crc64ecma', 'header': 'x-oss-hash-crc64ecma'},
         'content-md5': {'method': 'content-md5'},
         'read-back': {'method': 'read-back'}}
# The server each kind runs against (plain boto3 too): moto itself, or a cloud's stand-in in front of it
# (the OSS one answers the CRC-64; the OBS one checks each request's Content-MD5 and answers other ETags).
SERVER_OF = {'crc64ecma': 'oss', 'content-md5': 'obs'}

SERVE = """
import sys, time
sys.path[:0] = [%r]
from localcloud.standins import ObjectStorage
from localcloud import LocalS3
s3 = LocalS3()
oss = ObjectStorage('alicloud', s3.url)
obs = ObjectStorage('huaweicloud', s3.url)
print(s3.url, oss.url, obs.url, flush=True)
sys.stdin.read()
"""


def servers():
    global SERVER_PID
    p = subprocess.Popen([sys.executable, '-c', SERVE % str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    SERVER_PID = p.pid
    s3_url, oss_url, obs_url = p.stdout.readline().split()
    return p, {'s3': s3_url, 'oss': oss_url, 'obs': obs_url}


def config(kind, url, bucket, stack):
    return {'stack': stack, 'provider': 'alicloud', 'region': 'us-east-1',
            'checkpoint': {'bucket': bucket, 'prefix': 'bench', 'endpoint': url, 'region': 'us-east-1',
                           'addressingStyle': 'path', 'signatureVersion': 's3v4', 'verify': KINDS[kind]},
            'agent': {'uploadAttempts': 3, 'retryBaseSeconds': 1}}


CPU = {}  # id(list of wall times) -> [(client CPU seconds, server CPU seconds)] of the same runs
SERVER_PID = None  # the servers' process, whose CPU time /proc gives


def server_cpu():
    """CPU seconds (user + system) the servers' process has used so far; 0 where /proc does not say."""
    try:
        fields = pathlib.Path(f'/proc/{SERVER_PID}/stat').read_text().rsplit(')', 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')  # utime, stime (fields 14, 15)


def hash_rates(path):
    """MiB per CPU second of one thread for each hash the agent computes, over one file's bytes (median of 3)."""
    import hashlib

    from fastcrc import crc64
    data = pathlib.Path(path).read_bytes()
    fns = {'sha256': lambda: hashlib.sha256(data).digest(), 'md5': lambda: hashlib.md5(data).digest(),
           'crc64': lambda: crc64.xz(data)}
    def cpu_seconds(f):  # this thread's CPU time, not the wall: other jobs on the machine do not count
        t = time.thread_time()
        f()
        return time.thread_time() - t
    return {name: len(data) / (1 << 20) / statistics.median(cpu_seconds(f) for _ in range(3)) for name, f in fns.items()}


# The hashes each kind adds to a plain upload, on the client (the sha256 names the object, every kind) and on
# the servers of this bench (the OBS stand-in checks each Content-MD5: a real store does that on its own CPUs).
ADDED = {'etag-md5': (('sha256', 'md5'), ()), 'crc64ecma': (('sha256', 'crc64'), ()),
         'content-md5': (('sha256', 'md5'), ('md5',)), 'read-back': (('sha256', 'sha256'), ())}


def timed(f, *args, cpu=None):
    """Wall seconds of f(*args); its CPU seconds in this process (all threads: the client side) and in the
    servers' process are appended to `cpu` when given."""
    t, c, s = time.perf_counter(), time.process_time(), server_cpu()
    f(*args)
    if cpu is not None:
        cpu.append((time.process_time() - c, server_cpu() - s))
    return time.perf_counter() - t


def empty(s3, bucket):
    for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket):
        keys = [{'Key': o['Key']} for o in page.get('Contents', [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={'Objects': keys})


def sides(s3, cfg, plain_key, files, src, out):
    """The four timed steps of one kind in one round: plain and ours, upload and restore."""
    from node_agent.store import Store
    bucket = cfg['checkpoint']['bucket']
    store = Store(cfg, 'bench', None)

    def plain_up():
        for f in files:
            s3.upload_file(str(f), bucket, plain_key + f.name)

    def ours_up():
        assert store.snapshot(str(src)), 'no snapshot'

    def plain_down():
        for f in files:
            s3.download_file(bucket, plain_key + f.name, str(out / f.name))

    def ours_down():
        assert Store(cfg, 'bench-restore', None).restore(str(out)), 'nothing restored'
    return plain_up, ours_up, plain_down, ours_down


def sweep(cfg_of, src, total, rounds):
    """Our snapshot and restore of the same checkpoint at each part size and concurrency: the median seconds."""
    from boto3.s3.transfer import TransferConfig

    from node_agent.s3 import client
    from node_agent.store import Store
    med = statistics.median
    for mb in (8, 16, 32, 64):
        for threads in (4, 8, 16):
            transfer = TransferConfig(multipart_threshold=mb << 20, multipart_chunksize=mb << 20,
                                      max_concurrency=threads)
            up, down = [], []
            for r in range(rounds):
                cfg = cfg_of(f'sweep-{mb}-{threads}-{r}')
                up.append(timed(Store(cfg, 'bench', None, transfer).snapshot, str(src)))
                out = pathlib.Path(src.parent, 'out')
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                down.append(timed(Store(cfg, 'bench-restore', None, transfer).restore, str(out)))
                shutil.rmtree(out)
                empty(client(cfg), cfg['checkpoint']['bucket'])
            print(f'part size {mb:2} MiB, concurrency {threads:2}: snapshot median {total / med(up):5.0f} MiB/s, '
                  f'restore median {total / med(down):5.0f} MiB/s', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--big-mb', type=int, default=128)
    ap.add_argument('--mid', default='2x24', help='COUNTxMiB of the middle-sized files')
    ap.add_argument('--small', default='4x2', help='COUNTxMiB of the small files')
    ap.add_argument('--kinds', default=','.join(KINDS))
    ap.add_argument('--sweep', action='store_true',
                    help='instead: our snapshot and restore (first kind) at part sizes 8-64 MiB and concurrency 4-16')
    a = ap.parse_args()
    kinds = a.kinds.split(',')
    from node_agent.s3 import client
    from node_agent.store import PART_SIZE, TRANSFER
    proc, urls = servers()

    def url_of(kind):
        return urls[SERVER_OF.get(kind, 's3')]
    bucket = 'bench-' + uuid.uuid4().hex[:8]
    work = tempfile.mkdtemp(prefix='upload-rate-')
    try:
        src = pathlib.Path(work, 'ckpt')
        src.mkdir()
        sizes = [a.big_mb] + [int(m) for n, m in [a.mid.split('x')] for _ in range(int(n))] + \
                [int(m) for n, m in [a.small.split('x')] for _ in range(int(n))]
        for i, mb in enumerate(sizes):
            (src / f'shard-{i}.bin').write_bytes(os.urandom(mb << 20))
            os.utime(src / f'shard-{i}.bin', (time.time() - 10,) * 2)  # not "just written"
        total = sum(sizes)
        files = sorted(src.iterdir())
        print(f'conditions: {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), load average '
              f'{os.getloadavg()[0]:.1f} at start, Python {platform.python_version()}, servers on 127.0.0.1 in '
              f'their own process (moto S3; the OSS stand-in for crc64ecma, the OBS one for content-md5); checkpoint {len(sizes)} files, '
              f'{total} MiB ({"+".join(map(str, sizes))}); {a.rounds} rounds; ours: part size {PART_SIZE >> 20} MiB, '
              f'concurrency {TRANSFER.max_concurrency}; plain: boto3 defaults, one file after another', flush=True)
        rates = hash_rates(files[0])
        print('one core hashes ' + ', '.join(f'{n} at {r:.0f} MiB/s' for n, r in rates.items()), flush=True)
        if a.sweep:
            client(config(kinds[0], urls['s3'], bucket, 'x')).create_bucket(Bucket=bucket)
            return sweep(lambda stack: config(kinds[0], url_of(kinds[0]), bucket, stack), src, total, a.rounds)
        results = {k: {'up': ([], []), 'down': ([], [])} for k in kinds}
        out = pathlib.Path(work, 'out')
        for r in range(a.rounds):
            for kind in kinds:
                cfg = config(kind, url_of(kind), bucket, f'{kind}-{r}')
                s3 = client(cfg)
                if r == 0 and kind == kinds[0]:
                    s3.create_bucket(Bucket=bucket)
                plain_up, ours_up, plain_down, ours_down = sides(s3, cfg, f'plain/{kind}/{r}/', files, src, out)
                up, down = results[kind]['up'], results[kind]['down']
                both = [(plain_up, up[0], plain_down, down[0]), (ours_up, up[1], ours_down, down[1])]
                for put, put_times, get, get_times in (both if r % 2 == 0 else both[::-1]):
                    put_times.append(timed(put, cpu=CPU.setdefault(id(put_times), [])))
                    shutil.rmtree(out, ignore_errors=True)
                    out.mkdir()
                    get_times.append(timed(get, cpu=CPU.setdefault(id(get_times), [])))
                    assert len(list(out.iterdir())) == len(files), 'a file was not brought back'
                    shutil.rmtree(out)
                empty(s3, bucket)
            print(f'round {r + 1}/{a.rounds} done, load average {os.getloadavg()[0]:.1f}', flush=True)
        med = statistics.median
        for kind in kinds:
            for way, name in (('up', 'upload'), ('down', 'restore')):
                plain_s, ours_s = results[kind][way]
                plain, ours = total / med(plain_s), total / med(ours_s)
                # Each round's two sides ran back to back: their ratio shares the machine's load of the moment.
                paired = med(p / o for p, o in zip(plain_s, ours_s))
                (cp, sp), (co, so) = ([med(c[i] for c in CPU[id(x)]) for i in (0, 1)] for x in (plain_s, ours_s))
                # Both processes' CPU, plain over ours, per round: on two busy cores CPU is what the wall time
                # follows, and it varies less from round to round than the wall time does.
                cpu_ratio = med((a[0] + a[1]) / (b[0] + b[1]) for a, b in zip(CPU[id(plain_s)], CPU[id(ours_s)]))
                print(f'{name:7} {kind:11}: plain boto3 median {plain:5.0f} MiB/s, ours {ours:5.0f} MiB/s, ratio of '
                      f'medians {ours / plain:.2f}, median of per-round ratios {paired:.2f}; CPU median client plain '
                      f'{cp:.2f} s, ours {co:.2f} s, server plain {sp:.2f} s, ours {so:.2f} s, median of per-round CPU '
                      f'ratios {cpu_ratio:.2f} (wall s plain {json.dumps([round(x, 2) for x in plain_s])}, '
                      f'ours {json.dumps([round(x, 2) for x in ours_s])})')
                if way == 'up':
                    # Where CPU is the limit (two cores for client and servers, shared with other jobs), the
                    # ratio cannot exceed plain's CPU over plain's CPU plus the hashing this kind adds.
                    added = [sum(total / rates[h] for h in side) for side in ADDED[kind]]
                    print(f'{"":20} hashing added: client {added[0]:.2f} s, servers {added[1]:.2f} s of CPU; ceiling '
                          f'where CPU is the limit: {(cp + sp) / (cp + sp + sum(added)):.2f}')
            if kind == 'read-back':
                # Every byte crosses twice: at best as long as a plain upload and a plain download of it.
                ups, downs = results[kind]['up'][0], results[kind]['down'][0]
                print(f'read-back bound: plain upload / (plain upload + plain download), median of per-round '
                      f'values {med(u / (u + d) for u, d in zip(ups, downs)):.2f}')
        print(f'load average at the end {os.getloadavg()[0]:.1f}')
    finally:
        proc.stdin.close()
        proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
