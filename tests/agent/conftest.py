"""Fixtures for the node agent scenarios: moto S3, metadata and cloud API stubs, simulated nodes.

Every scenario runs the real agent (`python -m node_agent`) as a subprocess against servers on
127.0.0.1, with the fake trainer (fake_trainer.py) and the fake nvidia-smi (bin/) on its PATH.
Intervals are fractions of a second so the whole file stays well under two minutes.
"""
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import time
import uuid

import boto3
import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

from components import providers, tags
from localcloud.standins import CloudApi, Metadata, new_instance_id
from localcloud import BIN, LocalS3, S3Proxy

# The test process talks to moto directly with dummy credentials; the agents never see them.
FAKE_AWS = {'AWS_ACCESS_KEY_ID': 'test', 'AWS_SECRET_ACCESS_KEY': 'test', 'AWS_DEFAULT_REGION': 'us-east-1'}


@pytest.fixture(scope='session')
def moto_url():
    os.environ.update(FAKE_AWS)
    server = LocalS3()
    yield server.url
    server.stop()


@pytest.fixture
def s3(moto_url):
    return boto3.client('s3', endpoint_url=moto_url, region_name='us-east-1',
                        aws_access_key_id='test', aws_secret_access_key='test')


@pytest.fixture
def bucket(s3):
    name = f'ckpt-{uuid.uuid4().hex[:12]}'
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def start_proxy(moto_url):
    """start_proxy(cls=S3Proxy, **kw): a proxy in front of the S3 server (S3Proxy, or a subclass that misbehaves
    on purpose), stopped after the test."""
    started = []

    def start(cls=S3Proxy, **kw):
        started.append(cls(moto_url, **kw))
        return started[-1]

    yield start
    for p in started:
        p.stop()


@pytest.fixture
def proxy(start_proxy):
    return start_proxy()


class WrongAnswers(S3Proxy):
    """A store that holds the bytes it was sent but, while `lying`, answers the request that completes an
    object (PutObject, CompleteMultipartUpload) with another checksum: a wrong ETag and, with
    `crc64_header`, a wrong CRC-64. HEAD and GET still tell the truth. Only paths holding `match`."""

    lying = True

    def answer(self, method, path, headers, body):
        status, data, keep = super().answer(method, path, headers, body)
        completes = (method == 'PUT' and '?' not in path) or (method == 'POST' and 'uploadId=' in path)
        if self.lying and completes and status == 200 and self.match in path:
            for name in keep:
                if name.lower() == 'etag':
                    keep[name] = '"' + '0' * 32 + '"'
                elif self.crc64_header and name.lower() == self.crc64_header:
                    keep[name] = str(int(keep[name]) ^ 1)
            data = re.sub(rb'(<ETag>[^0-9a-f<]*)[0-9a-f]{32}', rb'\g<1>' + b'0' * 32, data)  # a Complete's ETag
        return status, data, keep


class Node:
    """One simulated GPU node: its metadata stub, directories, node config and agent processes."""

    def __init__(self, tmp, cloud, bucket, s3_endpoint, s3, api=None, instance_id=None, **agent):
        self.tmp, self.cloud, self.bucket, self.s3, self.api = tmp, cloud, bucket, s3, api
        tmp.mkdir(parents=True, exist_ok=True)
        self.id = instance_id or new_instance_id(cloud)
        self.meta = Metadata(cloud, self.id)
        self.gpu, self.record, self.trainer_env = tmp / 'gpu', tmp / 'trainer.jsonl', {}
        self.cfg = {
            'version': 1, 'project': 'gpu-training', 'stack': 'agent-test', 'provider': cloud,
            'region': 'cn-hangzhou', 'zone': 'cn-hangzhou-i', 'billing': 'spot', 'nodeCount': 1,
            'accelerator': {'kind': 'nvidia', 'model': 'T4', 'count': 1, 'memoryGb': 16},
            'paths': {'data': str(tmp), 'checkpoints': str(tmp / 'ckpt'), 'state': str(tmp / 'state'),
                      'logs': str(tmp / 'logs'), 'venv': '', 'agent': str(ROOT / 'node'),
                      'trainEnv': str(tmp / 'train.env')},
            'checkpoint': {'bucket': bucket, 'prefix': 'gpu-training', 'endpoint': s3_endpoint,
                           'region': 'us-east-1', 'addressingStyle': 'path', 'signatureVersion': 's3v4',
                           # moto keeps S3's ETag; it ignores Content-MD5 (a localcloud.S3Proxy in front of it checks it).
                           'verify': {'method': 'etag-md5', 'contentMd5': True}},
            'train': {'command': f'{sys.executable} {HERE / "fake_trainer.py"}',
                      'env': {'FT_RECORD': str(self.record), 'FT_GPU': str(self.gpu), 'EXTRA': '1'},
                      'workdir': str(tmp / 'work'), 'launcher': 'direct', 'gpusPerNode': 1,
                      'stopSignal': 'SIGTERM', 'rendezvousPort': 29400},
            'agent': {'syncIntervalSeconds': 0.5, 'spotPollSeconds': 0.2, 'utilSampleSeconds': 0.2,
                      'idleMinutes': 0, 'idleUtilPercent': 5, 'maxHours': 1, 'ttlMarginMinutes': 0,
                      'bootTime': time.time(),  # this simulated node boots now (not the test machine)
                      'maxGraceSeconds': 5, 'keep': False, 'uploadAttempts': 3, 'retryBaseSeconds': 0.05,
                      'uploadAllowanceSeconds': 0, **agent},
            'endpoints': {'metadata': self.meta.url, 'cloudApi': api and api.url},
            'cost': {'currency': 'CNY', 'onDemandPerNodeHour': 10.0, 'effectivePerNodeHour': 3.0},
            'identity': {'roleName': 'node-role'},
            'cluster': {'tagKey': tags.STACK, 'tagValue': 'agent-test'},
        }
        (tmp / 'train.env').write_text('# written by the bootstrap\nFROM_TRAIN_ENV=4\nexport OMP_NUM_THREADS="2"\n')
        self.procs = []

    def train(self, **env):
        """Set fake trainer knobs (FT_*) in train.env of the config."""
        self.cfg['train']['env'].update({k: str(v) for k, v in env.items()})

    def start(self, env=None):
        path = self.tmp / 'node.json'
        path.write_text(json.dumps(self.cfg, indent=1))
        e = {k: v for k, v in os.environ.items() if not k.startswith('AWS_')}
        e.update({'PYTHONPATH': str(ROOT / 'node'), 'PATH': os.pathsep.join((str(HERE / 'bin'), str(BIN), e['PATH'])),
                  'FAKE_GPU_FILE': str(self.gpu),
                  # On a node the bootstrap puts the runtime next to the agent; here it is the repository's.
                  'GPU_TRAINING_RUNTIME_FILE': str(providers.node_runtime_path(self.cfg['provider'])),
                  **(env or {})})
        out = open(self.tmp / f'agent-{len(self.procs)}.out', 'wb')
        p = subprocess.Popen([sys.executable, '-m', 'node_agent', '--config', str(path)], env=e, stdout=out,
                             stderr=subprocess.STDOUT, cwd=self.tmp)
        self.procs.append(p)
        return p

    def run(self, timeout=30, env=None):
        """Start an agent and wait for it; its exit status."""
        return self.wait(self.start(env), timeout)

    def wait(self, p, timeout=30):
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError(f'agent still running after {timeout} s:\n{self.output()}') from None

    def output(self):
        return '\n'.join(p.read_text(errors='replace') for p in sorted(self.tmp.glob('agent-*.out')))

    def state(self):
        return json.loads((self.tmp / 'state' / 'agent-state.json').read_text())

    def records(self):
        return [json.loads(ln) for ln in self.record.read_text().splitlines()] if self.record.exists() else []

    def until(self, what, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            v = what()
            if v:
                return v
            time.sleep(0.05)
        raise AssertionError(f'timed out waiting for {what}:\n{self.output()}')

    def key(self, rel):
        return f"gpu-training/{self.cfg['stack']}/{rel}"

    def marker(self):
        o = self.s3.get_object(Bucket=self.bucket, Key=self.key(f'markers/{self.id}.json'))
        return json.loads(o['Body'].read())

    def manifest(self, sid):
        o = self.s3.get_object(Bucket=self.bucket, Key=self.key(f'checkpoints/manifests/{sid}.json'))
        return json.loads(o['Body'].read())

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.meta.stop()


def verify_snapshot(node, sid):
    """Every file of snapshot `sid` is in the bucket with the content the manifest names; its files."""
    files = node.manifest(sid)['files']
    assert files, f'snapshot {sid} is empty'
    out = {}
    for rel, v in files.items():
        body = node.s3.get_object(Bucket=node.bucket, Key=node.key('checkpoints/objects/' + v['sha256']))['Body'].read()
        assert len(body) == v['size'] and hashlib.sha256(body).hexdigest() == v['sha256'], rel
        out[rel] = body
    return out


def checkpoint_ok(body):
    """The fake trainer's checkpoint format: (step, payload matches its header hash)."""
    head, payload = body.split(b'\n', 1)
    h = json.loads(head)
    return h['step'], hashlib.sha256(payload).hexdigest() == h['sha256']


@pytest.fixture
def make_node(tmp_path, bucket, s3, moto_url):
    nodes = []

    def make(name='n0', cloud='alicloud', endpoint=None, **kw):
        n = Node(tmp_path / name, cloud, bucket, endpoint or moto_url, s3, **kw)
        nodes.append(n)
        return n
    yield make
    for n in nodes:
        n.stop()


@pytest.fixture
def api_stub():
    stubs = []

    def make(cloud, instances=()):
        s = CloudApi(cloud, instances)
        stubs.append(s)
        return s
    yield make
    for s in stubs:
        s.stop()
