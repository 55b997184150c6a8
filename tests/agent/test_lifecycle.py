"""Node agent lifecycle scenarios: clean finish, preemption and resume, restart, idle, TTL, unhealthy.

Each test runs real agent processes against moto S3 and the metadata/API stubs (conftest.py).
"""
import json
import os
import signal
import time
from datetime import datetime, timedelta, timezone

from conftest import checkpoint_ok, verify_snapshot


def test_clean_finish_alicloud_releases_after_verified_upload(make_node, api_stub, s3):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.train(FT_STEPS=12)
    assert node.run() == 0, node.output()

    m = node.marker()
    assert m['state'] == 'DONE' and m['exitCode'] == 0, m
    assert m['durationSeconds'] > 0 and m['gpuHours'] > 0
    assert m['estimatedCost'] == round(m['durationSeconds'] / 3600 * 3.0, 4) and m['currency'] == 'CNY'
    assert m['utilisation']['samples'] > 0 and m['utilisation']['gpuUtilMean'] is not None
    # The final snapshot holds exactly the trainer's files, byte for byte.
    files = verify_snapshot(node, m['lastCheckpoint'])
    local = {p.name: p.read_bytes() for p in (node.tmp / 'ckpt').iterdir()}
    assert files == local and checkpoint_ok(files[max(files)]) == (12, True)
    # Released exactly once, through DeleteInstance on this instance with the role's STS credentials.
    calls = api.calls('DeleteInstance')
    assert len(calls) == 1 and calls[0]['params']['InstanceId'] == node.id, api.requests
    assert calls[0]['params'].get('Force', '').lower() == 'true'
    assert node.meta.key_id in json.dumps(calls[0]), 'not signed with the node role credentials'
    assert node.meta.token in json.dumps(calls[0]), 'the STS security token was not sent'
    # The trainer contract: env in.
    env = node.records()[0]['env']
    assert env['CKPT_DIR'] == str(node.tmp / 'ckpt') and env['RESUME_FROM'] == ''
    assert (env['RANK'], env['WORLD_SIZE'], env['LOCAL_RANK'], env['NODE_RANK']) == ('0', '1', '0', '0')
    assert env['FROM_TRAIN_ENV'] == '4' and env['EXTRA'] == '1'
    # Report next to the markers; logs with the trainer's output.
    for n in ('utilisation.csv', 'utilisation.png', 'summary.json'):
        s3.head_object(Bucket=node.bucket, Key=node.key(f'report/{node.id}/{n}'))
    log = (node.tmp / 'logs' / 'agent.log').read_text()
    assert 'finished' in log and 'marker DONE' in log
    assert node.state()['phase'] == 'done'
