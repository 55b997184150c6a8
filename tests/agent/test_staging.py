"""Data staging by the real agent: a packed set in the bucket is staged, verified, before the trainer starts.

A packed folder (tools.datapack, as scripts/pack.py makes it) is uploaded as `pack.py --upload` does;
the agent stages it into paths.dataset and hands the trainer GPU_TRAINING_DATA. A damaged shard or a
missing manifest ends the run FAILED naming the cause, and the trainer never starts on partial data.
"""
import hashlib
import json
import threading

import pytest

from node_agent import layout
from tools.datapack import example, packer, source, upload


@pytest.fixture(scope='module')
def packed(tmp_path_factory):
    images, out = tmp_path_factory.mktemp('images'), tmp_path_factory.mktemp('packed')
    example.make_folder(images, classes=2, per_class=12, size=32)
    packer.pack(source.read(images), out, per_shard=5)
    return out


def staged_node(make_node, api, packed, s3, name='n0'):
    node = make_node(name, api=api)
    node.cfg['data'] = {'stage': True}
    node.cfg['paths']['dataset'] = str(node.tmp / 'dataset')
    upload.upload(packed, s3, node.bucket, node.key(''))
    node.train(FT_STEPS=4)
    return node


def test_the_data_set_is_staged_verified_before_the_trainer_starts(make_node, api_stub, packed, s3):
    api = api_stub('alicloud')
    node = staged_node(make_node, api, packed, s3)
    assert node.run() == 0, node.output()
    manifest = json.loads((packed / layout.DATA_MANIFEST).read_text())
    for shard in manifest['shards']:
        data = (node.tmp / 'dataset' / shard['name']).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard['sha256']
    assert json.loads((node.tmp / 'dataset' / layout.DATA_MANIFEST).read_text()) == manifest
    status = json.loads((node.tmp / 'state' / 'staging.json').read_text())
    assert status['state'] == 'staged' and status['bytes'] == manifest['bytes'] == status['totalBytes']
    assert node.records()[0]['env']['GPU_TRAINING_DATA'] == str(node.tmp / 'dataset')
    assert node.marker()['state'] == 'DONE'
    assert 'data staged: 5 shards' in node.output()


def test_a_reused_disk_stages_only_what_is_missing(make_node, api_stub, packed, s3):
    api = api_stub('alicloud')
    first = staged_node(make_node, api, packed, s3)
    assert first.run() == 0, first.output()
    second = staged_node(make_node, api, packed, s3, name='n1')
    second.cfg['paths']['dataset'] = first.cfg['paths']['dataset']  # the replacement finds the same disk
    (first.tmp / 'dataset' / 'shard-000001.tar').unlink()
    assert second.run() == 0, second.output()
    assert 'staging 1 of 5 shards' in second.output()


def test_a_damaged_shard_fails_the_run_naming_it_and_training_never_starts(make_node, api_stub, packed, s3):
    api = api_stub('alicloud')
    node = staged_node(make_node, api, packed, s3)
    key = node.key(layout.DATA + 'shard-000003.tar')
    body = s3.get_object(Bucket=node.bucket, Key=key)['Body'].read()
    s3.put_object(Bucket=node.bucket, Key=key, Body=body[:-1] + bytes([body[-1] ^ 1]))
    assert node.run(timeout=60) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and 'shard-000003.tar' in m['reason'] and 'sha256' in m['reason'], m
    assert node.records() == []  # the trainer never ran
    assert not (node.tmp / 'dataset' / 'shard-000003.tar').exists()
    assert not (node.tmp / 'dataset' / layout.DATA_MANIFEST).exists()
    assert len(api.calls('DeleteInstance')) == 1  # nothing to save: released, not left billing


def run_while_uploading_late(node, packed, s3, delay=3.0):
    """Run the node's agent while the set is uploaded `delay` seconds after it started (run.py after `up`)."""
    late = threading.Timer(delay, lambda: upload.upload(packed, s3, node.bucket, node.key('')))
    late.start()
    try:
        assert node.run(timeout=60) == 0, node.output()
    finally:
        late.cancel()


def test_a_node_waits_for_a_data_set_uploaded_after_it_booted(make_node, api_stub, packed, s3):
    """run.py uploads data.localDir after `pulumi up`: a node that boots first waits for the manifest."""
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['data'] = {'stage': True, 'waitMinutes': 0.5}
    node.cfg['paths']['dataset'] = str(node.tmp / 'dataset')
    node.train(FT_STEPS=4)
    run_while_uploading_late(node, packed, s3)
    assert 'waiting for the data set at s3://' in node.output()
    assert node.marker()['state'] == 'DONE' and len(node.records()) > 0


@pytest.mark.parametrize('wait', [0, 0.05])
def test_no_manifest_in_the_bucket_is_a_clear_failure_after_the_wait(make_node, api_stub, s3, wait):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['data'] = {'stage': True, 'waitMinutes': wait}
    node.cfg['paths']['dataset'] = str(node.tmp / 'dataset')
    assert node.run(timeout=60) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and 'no data set at s3://' in m['reason'] and 'pack.py --upload' in m['reason']
    assert f'after waiting {wait:g} min' in m['reason'], m
    assert node.records() == [] and len(api.calls('DeleteInstance')) == 1



def test_after_a_reboot_recorded_shards_are_hashed_again_and_a_changed_one_fetched(make_node, api_stub, packed, s3):
    """Shards are not flushed one by one: a record from another boot is checked against the disk."""
    import os

    api = api_stub('alicloud')
    first = staged_node(make_node, api, packed, s3)
    assert first.run() == 0, first.output()
    dataset = first.tmp / 'dataset'
    record_path = dataset / '.staged.json'
    record = json.loads(record_path.read_text())
    assert {len(r) for r in record.values()} == {4}, 'sha256, size, mtime and the boot id'
    record_path.write_text(json.dumps({k: v[:3] + ['an-earlier-boot'] for k, v in record.items()}))
    # A power loss kept the name, size and mtime but not the bytes of one shard.
    shard = dataset / 'shard-000002.tar'
    st = shard.stat()
    body = bytearray(shard.read_bytes())
    body[100] ^= 1
    shard.write_bytes(bytes(body))
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = staged_node(make_node, api, packed, s3, name='n1')
    second.cfg['paths']['dataset'] = str(dataset)
    assert second.run() == 0, second.output()
    assert 'shard-000002.tar: changed on the disk since it was verified' in second.output()
    assert 'staging 1 of 5 shards' in second.output()
    manifest = json.loads((packed / layout.DATA_MANIFEST).read_text())
    want = next(s['sha256'] for s in manifest['shards'] if s['name'] == 'shard-000002.tar')
    assert hashlib.sha256(shard.read_bytes()).hexdigest() == want


def test_an_earlier_data_set_in_the_bucket_is_waited_past_never_staged(make_node, api_stub, packed, s3, tmp_path):
    """A rerun with a changed set: nodes boot while the bucket still holds the last run's manifest."""
    from tools.datapack import example, packer, source

    api = api_stub('alicloud')
    old = tmp_path / 'old'
    example.make_folder(tmp_path / 'old-images', classes=2, per_class=6, size=16)
    packer.pack(source.read(tmp_path / 'old-images'), old, per_shard=4)
    node = make_node(api=api)
    upload.upload(old, s3, node.bucket, node.key(''))
    expected = hashlib.sha256((packed / layout.DATA_MANIFEST).read_bytes()).hexdigest()
    node.cfg['data'] = {'stage': True, 'waitMinutes': 0.5, 'manifestSha256': expected}
    node.cfg['paths']['dataset'] = str(node.tmp / 'dataset')
    node.train(FT_STEPS=4)
    run_while_uploading_late(node, packed, s3)
    assert 'is not the one this stack was planned with' in node.output()
    staged = (node.tmp / 'dataset' / layout.DATA_MANIFEST).read_bytes()
    assert hashlib.sha256(staged).hexdigest() == expected and node.marker()['state'] == 'DONE'
