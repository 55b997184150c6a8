"""What the node agent's periodic sync costs, to choose how often a node that no reclaim notice warns syncs.

The periodic sync (agent.py `sync`: Store.snapshot of CKPT_DIR, then LogShipper.ship of the logs) runs every
agent.syncIntervalSeconds. Where no notice reaches the node (Baidu bid instances), the last sync is all a
reclaim leaves, so the interval is the work at risk beyond the trainer's own checkpoint interval
(components/reclaim.py). A shorter interval costs what a sync costs when nothing changed (the walk, the
cached digests, the log segments that grew), paid every interval; a checkpoint the trainer writes is uploaded
once whatever the interval. This measures both against a local moto S3 on 127.0.0.1 with the agent's own Store
and LogShipper:
  1. an unchanged sync of a checkpoint folder (files x MiB) with logs growing by --log-kb per sync: median
     wall and CPU seconds, and the requests it sends;
  2. the first upload of that checkpoint (what one new checkpoint costs, once);
and prints, for intervals of 30, 60, 120 and 300 s, the CPU seconds and requests an hour of idle syncs costs.
Usage: PYTHONPATH=node:. python bench/sync_cost.py [--files K] [--mb-per-file M] [--syncs N] [--log-kb L]
"""
import argparse
import os
import statistics
import tempfile
import time
import uuid

os.environ.update(AWS_ACCESS_KEY_ID='bench', AWS_SECRET_ACCESS_KEY='bench', AWS_DEFAULT_REGION='us-east-1')

from localcloud import LocalS3  # noqa: E402
from node_agent.logship import LogShipper  # noqa: E402
from node_agent.store import Store  # noqa: E402


def config(s3_url, bucket):
    return {'stack': 'sync-bench', 'provider': 'baiducloud', 'region': 'us-east-1',
            'checkpoint': {'bucket': bucket, 'prefix': 'bench', 'endpoint': s3_url, 'region': 'us-east-1',
                           'addressingStyle': 'path', 'signatureVersion': 's3v4',
                           'verify': {'method': 'content-md5', 'contentMd5': True}},
            'agent': {'uploadAttempts': 3, 'retryBaseSeconds': 1}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--files', type=int, default=4)
    ap.add_argument('--mb-per-file', type=int, default=64)
    ap.add_argument('--syncs', type=int, default=20)
    ap.add_argument('--log-kb', type=int, default=4, help='log lines added between two syncs (KiB)')
    a = ap.parse_args()
    server = LocalS3()
    s3_url = server.url
    bucket = 'sync-bench-' + uuid.uuid4().hex[:8]
    server.client().create_bucket(Bucket=bucket)
    store = Store(config(s3_url, bucket), 'bench-node', None)
    requests = []
    store.s3.meta.events.register('before-send.s3', lambda request, **_: requests.append(request.method))
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, logs = os.path.join(tmp, 'ckpt'), os.path.join(tmp, 'logs')
        os.makedirs(ckpt)
        os.makedirs(logs)
        for i in range(a.files):
            with open(os.path.join(ckpt, f'shard-{i}.pt'), 'wb') as f:
                f.write(os.urandom(a.mb_per_file << 20))
        old = time.time() - 10  # older than the snapshot's one-second settling rule
        for i in range(a.files):
            os.utime(os.path.join(ckpt, f'shard-{i}.pt'), (old, old))
        shipper = LogShipper(store, 'bench-node', logs)

        def grow_logs():
            for name in ('trainer.log', 'agent.log'):
                with open(os.path.join(logs, name), 'a') as f:
                    f.write('x' * (a.log_kb << 10) + '\n')

        grow_logs()
        t, c = time.perf_counter(), time.process_time()
        store.snapshot(ckpt)
        shipper.ship()
        first_wall, first_cpu = time.perf_counter() - t, time.process_time() - c
        walls, cpus, counts = [], [], []
        for _ in range(a.syncs):
            grow_logs()
            del requests[:]
            t, c = time.perf_counter(), time.process_time()
            store.snapshot(ckpt)
            shipper.ship()
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            counts.append(len(requests))
    server.stop()
    size = a.files * a.mb_per_file
    print(f'first sync of a {a.files} x {a.mb_per_file} MiB checkpoint (hash, upload, Content-MD5 verified, manifest)'
          f' plus the logs: {first_wall:.2f} s wall, {first_cpu:.2f} s CPU ({size / first_wall:.0f} MiB/s): paid once per'
          f' checkpoint the trainer writes, whatever the sync interval')
    print(f'unchanged sync (the same {size} MiB checkpoint, logs {a.log_kb} KiB longer): median {med(walls) * 1000:.0f} ms'
          f' wall (max {max(walls) * 1000:.0f}), {med(cpus) * 1000:.0f} ms CPU, {med(counts):.0f} requests, over {a.syncs}'
          ' syncs')
    for interval in (30, 60, 120, 300):
        per_hour = 3600 / interval
        print(f'  every {interval:>3} s: {med(cpus) * per_hour:.1f} CPU s and {med(counts) * per_hour:.0f} requests an hour'
              f' ({med(cpus) / interval * 100:.3f} % of a core); an unannounced reclaim loses up to {interval} s beyond'
              ' the trainer\'s own checkpoint interval')


if __name__ == '__main__':
    main()
