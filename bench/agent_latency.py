"""Measure the node agent on this machine: reaction latencies and checkpoint upload throughput.

Prints medians of several runs of the real agent process against local servers on 127.0.0.1
(moto S3, the metadata and cloud API stand-ins of localcloud, the fake trainer):
  1. job exit -> release request: the trainer's last instruction to the DeleteInstance request
     (includes the final verified sync, the report with its PNG, and the marker);
  2. spot notice -> trainer signal, per cloud that posts a notice (Alibaba, Tencent, Huawei), each through
     its own runtime and metadata stand-in (the notice in the cloud's own path and format): the stub starts
     serving the notice, the trainer's SIGTERM handler runs (bounded by agent.spotPollSeconds, the default
     0.5 s), with the grace the agent gave; Baidu posts none (no figure: what it loses is the sync interval);
  3. checkpoint upload throughput: the agent's snapshot (hash, upload, the store's confirmation,
     manifest) against a plain boto3 upload_file loop over the same files, per verification method
     (docs/agent.md, "Verified uploads"): etag-md5 with Content-MD5 and read-back against moto
     directly, crc64ecma through the local OSS stand-in, which reads each object back to answer its
     CRC-64 header (so that figure includes a cost the real store does not have).
Usage: python bench/agent_latency.py [--runs N] [--mb-per-file M] [--files K] [--upload-only] [--notice]
       python bench/agent_latency.py --spot  (the poll's CPU and requests at 2, 1 and 0.5 s against an
       agent polling every 3600 s, then notice -> SIGTERM over 10, 10 and 20 notices; docs/agent.md,
       "Spot poll interval"; run with PYTHONPATH=node:.)
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone

ROOT = pathlib.Path(__file__).resolve().parent.parent
os.environ.update(AWS_ACCESS_KEY_ID='bench', AWS_SECRET_ACCESS_KEY='bench', AWS_DEFAULT_REGION='us-east-1')

import boto3

from components import providers
from localcloud import LocalS3
from localcloud.standins import CloudApi, Metadata


def node_config(tmp, meta, api, s3_url, bucket, steps, cloud='alicloud', **agent):
    return {
        'stack': 'bench', 'provider': cloud, 'region': meta.region, 'nodeCount': 1,
        'accelerator': {'kind': 'nvidia', 'count': 1},
        'paths': {'checkpoints': f'{tmp}/ckpt', 'state': f'{tmp}/state', 'logs': f'{tmp}/logs', 'trainEnv': f'{tmp}/none'},
        'checkpoint': {'bucket': bucket, 'prefix': 'bench', 'endpoint': s3_url, 'region': 'us-east-1',
                       'addressingStyle': 'path', 'signatureVersion': 's3v4',
                       'verify': {'method': 'etag-md5', 'contentMd5': True}},  # moto keeps S3's ETag (it ignores Content-MD5)
        'train': {'command': f'{sys.executable} {ROOT}/tests/agent/fake_trainer.py', 'workdir': f'{tmp}/work',
                  'env': {'FT_STEPS': str(steps), 'FT_STEP_S': '0.01', 'FT_RECORD': f'{tmp}/rec', 'FT_GPU': f'{tmp}/gpu'}},
        'agent': {'syncIntervalSeconds': 300, 'spotPollSeconds': 2, 'utilSampleSeconds': 1, 'idleMinutes': 0,
                  'bootTime': time.time(),
                  'maxGraceSeconds': 30, 'uploadAllowanceSeconds': 0, **agent},
        'endpoints': {'metadata': meta.url, 'cloudApi': api.url}, 'identity': {'roleName': meta.role},
        'cost': {'currency': 'CNY', 'effectivePerNodeHour': None},
    }


def run_agent(cfg, tmp, until=None):
    path = pathlib.Path(tmp) / 'node.json'
    path.write_text(json.dumps(cfg))
    env = {**os.environ, 'PYTHONPATH': str(ROOT / 'node'), 'FAKE_GPU_FILE': f'{tmp}/gpu',
           # On a node the runtime sits next to the agent; here it is the repository's.
           'GPU_TRAINING_RUNTIME_FILE': str(providers.node_runtime_path(cfg['provider'])),
           'PATH': f"{ROOT / 'localcloud' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.Popen([sys.executable, '-m', 'node_agent', '--config', str(path)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if until:
        until(p)
    if p.wait(120) not in (0, 3):  # 3: stopped by its own SIGTERM before a final release (poll_cost)
        raise SystemExit(f'agent failed: see {tmp}/logs/agent.log')


def records(tmp):
    p = pathlib.Path(tmp) / 'rec'
    return [json.loads(ln) for ln in p.read_text().splitlines()] if p.exists() else []


def exit_to_release(s3_url, bucket, runs):
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            meta, api = Metadata('alicloud', f'i-{uuid.uuid4().hex[:8]}'), CloudApi('alicloud')
            run_agent(node_config(tmp, meta, api, s3_url, bucket, steps=20), tmp)
            end = [r['time'] for r in records(tmp) if 'end' in r][0]
            out.append(api.calls('DeleteInstance')[0]['time'] - end)
            meta.stop()
            api.stop()
    return out


def notice_to_signal(s3_url, bucket, runs, poll, cloud='alicloud', grace=None):
    """Seconds from the notice to the trainer's SIGTERM handler, one per run; `grace` (a list) gets the
    grace each run's agent gave the trainer (the node's marker), for a notice two minutes ahead."""
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            meta, api = Metadata(cloud), CloudApi(cloud)
            t = {}

            def notice(p, meta=meta, t=t):  # bound now: the thread runs within this iteration
                while not records(tmp):
                    time.sleep(0.05)
                time.sleep(1 + poll * (len(out) * 0.618 % 1))  # spread the notices over the poll cycle
                meta.notice = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(minutes=2)
                t['notice'] = time.time()
            run_agent(node_config(tmp, meta, api, s3_url, bucket, steps=10**6, cloud=cloud, spotPollSeconds=poll,
                                  maxGraceSeconds=600), tmp, notice)
            out.append([r['term'] for r in records(tmp) if 'term' in r][0] - t['notice'])
            if grace is not None:
                grace.append(marker(s3_url, bucket, meta.instance_id)['stopSignal']['graceSeconds'])
            meta.stop()
            api.stop()
    return out


def marker(s3_url, bucket, node):
    from node_agent import layout
    key = layout.stack_root('bench', 'bench') + layout.marker(node)  # node_config's prefix and stack
    got = boto3.client('s3', endpoint_url=s3_url).get_object(Bucket=bucket, Key=key)
    return json.loads(got['Body'].read())


def per_cloud(s3_url, bucket, runs, poll=0.5):
    """notice -> SIGTERM through each cloud's own runtime and notice format, printed one line a cloud."""
    med = statistics.median
    for cloud in providers.names():
        if not providers.profile(cloud).spot.reclaim_notice:
            print(f'{cloud}: no reclaim notice reaches the node (profile.spot.reclaim_notice False): no figure; a reclaim'
                  f' loses what was saved since the last periodic sync (docs/agent.md, "Reclaim notices")', flush=True)
            continue
        grace = []
        x = notice_to_signal(s3_url, bucket, runs, poll, cloud, grace)
        print(f'{cloud}: spot notice -> trainer SIGTERM, spotPollSeconds={poll}: median {med(x):.2f} s, max {max(x):.2f} s'
              f' over {len(x)} notices (min {min(x):.2f}); grace given for a reclaim 120 s ahead: median'
              f' {med(grace):.1f} s', flush=True)


def agent_cpu(pid):
    """CPU seconds (user + system) the process itself has used so far (/proc/<pid>/stat)."""
    fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def poll_cost(s3_url, bucket, polls, seconds):
    """{poll: (agent CPU seconds over `seconds`, spot-notice requests in that time)}: agents with each
    poll interval side by side, a trainer that runs on, no syncs or GPU samples in the window (300 s,
    3600 s), so the difference between two intervals is the poll's own cost."""
    import threading
    out, threads = {}, []

    def one(poll):
        with tempfile.TemporaryDirectory() as tmp:
            meta, api = Metadata('alicloud', f'i-{uuid.uuid4().hex[:8]}'), CloudApi('alicloud')

            def watch(p):
                while not records(tmp):
                    time.sleep(0.05)
                time.sleep(3)  # past the start (restore, first samples)
                c0, n0 = agent_cpu(p.pid), sum('spot' in x[1] for x in meta.log)
                time.sleep(seconds)
                out[poll] = agent_cpu(p.pid) - c0, sum('spot' in x[1] for x in meta.log) - n0
                p.terminate()  # the agent's own SIGTERM path: it stops the trainer and exits
            cfg = node_config(tmp, meta, api, s3_url, bucket, steps=10**7, spotPollSeconds=poll,
                              utilSampleSeconds=3600)
            cfg['train']['env']['FT_EVERY'] = str(10**9)  # one checkpoint at the start, no files piling up
            run_agent(cfg, tmp, watch)
            meta.stop()
            api.stop()
    for poll in polls:
        threads.append(threading.Thread(target=one, args=(poll,)))
        threads[-1].start()
    for t in threads:
        t.join()
    return out


METHODS = {'etag-md5': {'method': 'etag-md5', 'contentMd5': True}, 'read-back': {'method': 'read-back'},
           'crc64ecma (OSS stand-in)': {'method': 'crc64ecma', 'header': 'x-oss-hash-crc64ecma'}}


def upload_throughput(s3_url, bucket, runs, files, mb, verify):
    from node_agent.store import Store
    from localcloud.standins import ObjectStorage
    s3 = boto3.client('s3', endpoint_url=s3_url)
    proxy = ObjectStorage('alicloud', s3_url) if verify['method'] == 'crc64ecma' else None
    total = files * mb * 2**20
    agent, plain = [], []
    for r in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(files):
                with open(f'{tmp}/shard-{i}.bin', 'wb') as f:
                    f.write(os.urandom(mb * 2**20))  # fresh content each run: nothing to deduplicate
            old = time.time() - 10
            for i in range(files):
                os.utime(f'{tmp}/shard-{i}.bin', (old, old))
            t = time.perf_counter()
            for i in range(files):
                s3.upload_file(f'{tmp}/shard-{i}.bin', bucket, f'plain/{r}/shard-{i}.bin')
            plain.append(total / (time.perf_counter() - t) / 2**20)
            cfg = {'stack': f'bench-{r}', 'provider': 'alicloud', 'region': 'us-east-1',
                   'checkpoint': {'bucket': bucket, 'prefix': 'up', 'endpoint': proxy.url if proxy else s3_url,
                                  'region': 'us-east-1', 'addressingStyle': 'path', 'signatureVersion': 's3v4',
                                  'verify': verify},
                   'agent': {'uploadAttempts': 3, 'retryBaseSeconds': 1}}
            store = Store(cfg, 'bench', None)
            t = time.perf_counter()
            store.snapshot(tmp)
            agent.append(total / (time.perf_counter() - t) / 2**20)
    if proxy:
        proxy.stop()
    return agent, plain


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--files', type=int, default=4)
    ap.add_argument('--mb-per-file', type=int, default=48)
    ap.add_argument('--upload-only', action='store_true', help='only the upload throughput figures')
    ap.add_argument('--notice', action='store_true',
                    help='only notice -> SIGTERM per cloud (each cloud\'s runtime and notice format), --runs each')
    ap.add_argument('--spot', action='store_true',
                    help='only the spot poll: its CPU and request cost per interval, notice -> SIGTERM over 10-20 notices')
    a = ap.parse_args()
    server = LocalS3()
    s3_url = server.url
    bucket = 'bench-' + uuid.uuid4().hex[:8]
    server.client().create_bucket(Bucket=bucket)
    med = statistics.median

    if a.spot:
        seconds = 60
        cost = poll_cost(s3_url, bucket, (3600, 2, 1, 0.5), seconds)
        base = cost[3600][0]
        for poll in (2, 1, 0.5):
            cpu, n = cost[poll]
            print(f'spot poll every {poll} s: agent CPU {cpu:.2f} s in {seconds} s (the same agent polling every '
                  f'3600 s: {base:.2f} s), so the poll costs {(cpu - base) / seconds * 3600:.1f} CPU s per hour; '
                  f'{n} notice requests in {seconds} s (the loop ticks every 0.2 s), {n / seconds * 86400:.0f} '
                  f'per 24 h')
        for poll, runs in ((2, 10), (1, 10), (0.5, 20)):
            x = notice_to_signal(s3_url, bucket, runs, poll)
            print(f'spot notice -> trainer SIGTERM, spotPollSeconds={poll}: median {med(x):.2f} s, max {max(x):.2f} s '
                  f'over {len(x)} notices (min {min(x):.2f})', flush=True)
        server.stop()
        return
    if a.notice:
        per_cloud(s3_url, bucket, a.runs)
        server.stop()
        return
    if not a.upload_only:
        x = exit_to_release(s3_url, bucket, a.runs)
        print(f'job exit -> release request: median {med(x):.2f} s over {len(x)} runs (min {min(x):.2f}, '
              f'max {max(x):.2f})')
        per_cloud(s3_url, bucket, a.runs)
    for name, verify in METHODS.items():
        ag, pl = upload_throughput(s3_url, bucket, max(3, a.runs // 2), a.files, a.mb_per_file, verify)
        print(f'checkpoint upload, {a.files} x {a.mb_per_file} MiB to local moto, verify {name}: agent snapshot '
              f'(digests + upload + the store\'s confirmation + manifest) median {med(ag):.0f} MiB/s, plain boto3 '
              f'upload_file median {med(pl):.0f} MiB/s, ratio {med(ag) / med(pl):.2f}')
    server.stop()


if __name__ == '__main__':
    main()
