"""node_agent.fetch: the bootstrap's download of the rest of the agent, verified against node.json.

Runs the real `python -m node_agent.fetch` with only the boot set on its path, against moto and a
metadata stub (the node role's credentials).
"""
import hashlib
import json
import shutil
import subprocess
import sys
import uuid

from conftest import ROOT

from components import providers
from components.artifacts import BOOT_SET as BOOT
from localcloud.standins import Metadata
from node_agent.fetch import digest


def setup(tmp_path, s3, bucket, moto_url, tamper=False):
    boot = tmp_path / 'boot' / 'node_agent'
    boot.mkdir(parents=True)
    for n in BOOT:
        shutil.copy(ROOT / 'node' / 'node_agent' / n, boot / n)
    shutil.copy(providers.node_runtime_path('alicloud'), boot / 'cloud_runtime.py')
    prefix, files = f'gpu-training/st-{uuid.uuid4().hex[:6]}/agent/', {}
    for src in sorted((ROOT / 'node' / 'node_agent').glob('*.py')):
        if src.name not in BOOT:
            rel = f'node_agent/{src.name}'
            data = src.read_bytes()
            files[rel] = hashlib.sha256(data).hexdigest()
            s3.put_object(Bucket=bucket, Key=prefix + rel, Body=data + (b'#' if tamper and src.name == 'agent.py' else b''))
    meta = Metadata('alicloud', 'i-fetch')
    cfg = {'stack': 'st', 'provider': 'alicloud', 'region': 'us-east-1', 'paths': {'agent': str(tmp_path / 'boot')},
           'checkpoint': {'bucket': bucket, 'prefix': 'gpu-training', 'endpoint': moto_url, 'region': 'us-east-1',
                          'addressingStyle': 'path', 'signatureVersion': 's3'},
           'agent': {'uploadAttempts': 2, 'retryBaseSeconds': 0.05},
           'endpoints': {'metadata': meta.url}, 'identity': {'roleName': meta.role},
           'artifacts': {'agent': {'prefix': prefix, 'files': sorted(files), 'sha256': digest(files)}}}
    (tmp_path / 'node.json').write_text(json.dumps(cfg))
    return meta, files


def fetch(tmp_path):
    return subprocess.run([sys.executable, '-m', 'node_agent.fetch', '--config', str(tmp_path / 'node.json')],
                          cwd=tmp_path, env={'PYTHONPATH': str(tmp_path / 'boot'), 'PATH': '/usr/bin:/bin'},
                          capture_output=True, text=True, timeout=60)


def test_fetch_downloads_and_verifies_every_listed_file(tmp_path, s3, bucket, moto_url):
    meta, files = setup(tmp_path, s3, bucket, moto_url)
    r = fetch(tmp_path)
    meta.stop()
    assert r.returncode == 0, r.stderr
    for rel, sha in files.items():
        assert hashlib.sha256((tmp_path / 'boot' / rel).read_bytes()).hexdigest() == sha
    # The fetched package is complete: the agent imports and answers --help.
    h = subprocess.run([sys.executable, '-m', 'node_agent', '--help'], env={'PYTHONPATH': str(tmp_path / 'boot')},
                       capture_output=True, text=True, timeout=30)
    assert h.returncode == 0 and '--config' in h.stdout, h.stderr


def test_fetch_refuses_a_tampered_file_and_leaves_no_module_behind(tmp_path, s3, bucket, moto_url):
    meta, _ = setup(tmp_path, s3, bucket, moto_url, tamper=True)
    r = fetch(tmp_path)
    meta.stop()
    assert r.returncode == 1 and 'sha256 does not match' in r.stderr, r.stderr
    written = {p.name for p in (tmp_path / 'boot' / 'node_agent').iterdir()}
    assert written <= set(BOOT) | {'cloud_runtime.py', '__pycache__'}, 'nothing fetched is written unless all verify'


def test_fetch_bad_config_exits_2(tmp_path):
    (tmp_path / 'boot' / 'node_agent').mkdir(parents=True)
    for n in BOOT:
        shutil.copy(ROOT / 'node' / 'node_agent' / n, tmp_path / 'boot' / 'node_agent' / n)
    (tmp_path / 'node.json').write_text(json.dumps({'artifacts': {'agent': {'prefix': 'p/', 'files': ['../x.py'], 'sha256': 'ab' * 32}}}))
    r = fetch(tmp_path)
    assert r.returncode == 2 and 'artifacts.agent' in r.stderr and 'Traceback' not in r.stderr, r.stderr
