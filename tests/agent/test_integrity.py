"""Node agent under content faults: bytes damaged on the way to the store or back, a damaged snapshot.

The rules under test (issue 12): an upload counts as verified only when the store confirms the bytes
it holds (each store's declared method: CRC-64 header, ETag with Content-MD5, or a read-back), so no
node is released before that; a snapshot whose stored content is wrong is quarantined and the newest
one that verifies is restored, while bytes damaged in transit stop the node instead.
"""
import hashlib
import json

import pytest
from conftest import WrongAnswers, checkpoint_ok, verify_snapshot
from fastcrc import crc64
from localcloud.standins import ObjectStorage
from localcloud import S3Proxy

from components.providers.alicloud.profile import OSS_VERIFICATION
from components.providers.baiducloud.profile import BOS_VERIFICATION
from components.providers.huaweicloud.profile import OBS_VERIFICATION
from components.providers.tencentcloud.profile import COS_VERIFICATION

from tools.runlib.bucket import StackBucket

OBJECTS = '/checkpoints/objects/'


@pytest.fixture
def store(moto_url):
    made = []

    def make(cloud=None):
        # No cloud: S3 itself (moto) behind a damaging proxy; a cloud: its store's stand-in.
        s = S3Proxy(moto_url) if cloud is None else ObjectStorage(cloud, moto_url)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


# Each supported store's declared method, as the node config carries it (moto stands for S3 itself).
STORES = {
    'oss': ('alicloud', OSS_VERIFICATION.node_config()),
    'cos': ('tencentcloud', COS_VERIFICATION.node_config()),
    'obs': ('huaweicloud', OBS_VERIFICATION.node_config()),
    'bos': ('baiducloud', BOS_VERIFICATION.node_config()),
    's3-etag': (None, {'method': 'etag-md5', 'contentMd5': True}),
    's3-etag-no-md5': (None, {'method': 'etag-md5', 'contentMd5': False}),
    'read-back': (None, {'method': 'read-back'}),
}


@pytest.mark.parametrize('name', STORES)
def test_bytes_damaged_on_the_way_to_the_store_are_caught_and_uploaded_again(name, make_node, api_stub, store):
    """Same size, same sha256 metadata: only the store's word on the bytes (or a read-back) can tell."""
    cloud, verify = STORES[name]
    s3 = store(cloud)
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=s3.url, syncIntervalSeconds=0, uploadAttempts=4)
    node.cfg['checkpoint']['verify'] = verify
    node.train(FT_STEPS=10)
    s3.match, s3.corrupt = OBJECTS, 2  # the first two object uploads arrive with a flipped byte
    assert node.run() == 0, node.output()
    assert s3.corrupted == 2
    m = node.marker()
    assert m['state'] == 'DONE', m
    files = verify_snapshot(node, m['lastCheckpoint'])
    assert files == {f.name: f.read_bytes() for f in (node.tmp / 'ckpt').iterdir()}, 'the stored bytes are the files'
    assert len(api.calls('DeleteInstance')) == 1
    manifest = node.manifest(m['lastCheckpoint'])
    if verify['method'] == 'crc64ecma':
        # The manifest records what the store vouched for: the CRC-64/XZ of each file.
        assert all(v['crc64ecma'] == str(crc64.xz(files[rel])) for rel, v in manifest['files'].items()), manifest
    if verify['method'] == 'etag-md5':
        assert all(v['etag-md5'] == hashlib.md5(files[rel]).hexdigest() for rel, v in manifest['files'].items())


@pytest.mark.parametrize('name', ['oss', 's3-etag', 'obs', 'read-back'])
def test_uploads_damaged_for_good_keep_the_node_and_say_sync_failed(name, make_node, api_stub, store):
    cloud, verify = STORES[name]
    s3 = store(cloud)
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=s3.url, syncIntervalSeconds=0)
    node.cfg['checkpoint']['verify'] = verify
    node.train(FT_STEPS=10)
    s3.match, s3.corrupting = OBJECTS, True
    assert node.run() == 3, node.output()
    m = node.marker()
    assert m['state'] == 'SYNC_FAILED' and ('does not verify' in m['reason'] or 'BadDigest' in m['reason']), m
    assert not api.requests, 'released a node whose checkpoint the store never confirmed'
    # The damage stops; systemd restarts the agent, which finishes the job.
    s3.corrupting = False
    assert node.run() == 0, node.output()
    assert max(checkpoint_ok(x) for x in verify_snapshot(node, node.marker()['lastCheckpoint']).values()) == (10, True)
    assert len(api.calls('DeleteInstance')) == 1


def test_a_store_that_answers_uploads_with_a_wrong_checksum_is_never_trusted(make_node, api_stub, moto_url):
    """The OSS stand-in holds the right bytes and says so on HEAD, but answers each upload with a wrong
    CRC-64: no upload counts as verified, so nothing is released until its answers are right."""
    liar = WrongAnswers(moto_url, crc64_header=OSS_VERIFICATION.header)
    try:
        api = api_stub('alicloud')
        node = make_node(api=api, endpoint=liar.url, syncIntervalSeconds=0)
        node.cfg['checkpoint']['verify'] = OSS_VERIFICATION.node_config()
        node.train(FT_STEPS=10)
        liar.match = OBJECTS
        assert node.run() == 3, node.output()
        m = node.marker()
        assert m['state'] == 'SYNC_FAILED' and 'to the upload, not' in m['reason'], m
        assert not api.requests, 'released a node whose checkpoint the store never answered for rightly'
        liar.lying = False
        assert node.run() == 0, node.output()
        assert max(checkpoint_ok(x) for x in verify_snapshot(node, node.marker()['lastCheckpoint']).values()) == (10, True)
        assert len(api.calls('DeleteInstance')) == 1
    finally:
        liar.stop()


def test_multipart_uploads_are_confirmed_part_by_part_and_whole(make_node, api_stub, store):
    """A checkpoint over the 64 MiB multipart threshold: Content-MD5 on each part, S3's composite ETag after."""
    s3 = store()
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=s3.url, syncIntervalSeconds=0)
    node.train(FT_STEPS=2, FT_EVERY=2, FT_BLOB=(64 << 20) + 4321)
    s3.match, s3.corrupt = OBJECTS, 1  # one part arrives damaged: the store refuses it (BadDigest)
    assert node.run(timeout=120) == 0, node.output()
    m = node.marker()
    files = verify_snapshot(node, m['lastCheckpoint'])
    (entry,) = node.manifest(m['lastCheckpoint'])['files'].values()
    assert entry['etag-md5'].endswith('-2') and s3.corrupted == 1, entry
    assert len(files) == 1 and len(api.calls('DeleteInstance')) == 1


def test_a_content_md5_store_confirms_each_request_and_nothing_is_read_back(make_node, api_stub, store):
    """OBS (SSE-KMS: ETags that are no MD5) and BOS check each request's Content-MD5 and refuse other bytes:
    a damaged part is refused on arrival and sent again, and the checkpoint counts as verified with no
    object read back and no ETag compared (the stand-in's ETags would contradict every upload)."""
    s3 = store('huaweicloud')
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=s3.url, syncIntervalSeconds=0)
    node.cfg['checkpoint']['verify'] = OBS_VERIFICATION.node_config()
    node.train(FT_STEPS=2, FT_EVERY=2, FT_BLOB=(64 << 20) + 4321)
    s3.match, s3.corrupt = OBJECTS, 1  # one part arrives damaged: the store refuses it (BadDigest)
    assert node.run(timeout=120) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'DONE' and s3.corrupted == 1, m
    read = [(method, path) for method, path in s3.requests if method == 'GET' and OBJECTS in path]
    assert read == [], f'uploads were read back: {read[:3]}'
    parts = [path for method, path in s3.requests if method == 'PUT' and OBJECTS in path and 'partNumber=' in path]
    # Two parts, then both again: the refused part fails the upload (botocore does not retry BadDigest) and
    # the agent sends the file again; the other part may be cut off on the way or not (3 or 4 PUTs).
    assert len(parts) >= 3 and {p.split('partNumber=')[1].split('&')[0] for p in parts} == {'1', '2'}, parts
    files = verify_snapshot(node, m['lastCheckpoint'])
    assert files == {f.name: f.read_bytes() for f in (node.tmp / 'ckpt').iterdir()}, 'the stored bytes are the files'
    (entry,) = node.manifest(m['lastCheckpoint'])['files'].values()
    assert set(entry) == {'sha256', 'size'}, entry  # no store digest to record: the ETag is not one
    assert len(api.calls('DeleteInstance')) == 1


def newest_two_snapshots(node, s3):
    keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket=node.bucket, Prefix=node.key('checkpoints/manifests/'))
                  ['Contents'])
    return [k.rsplit('/', 1)[1].removesuffix('.json') for k in keys[-2:]]


def damage_newest(node, s3):
    """Flip one byte of an object only the newest snapshot has: size and sha256 metadata stay as they were."""
    older, newest = newest_two_snapshots(node, s3)
    old_shas = {v['sha256'] for v in node.manifest(older)['files'].values()}
    rel, v = next((r, v) for r, v in sorted(node.manifest(newest)['files'].items()) if v['sha256'] not in old_shas)
    key = node.key('checkpoints/objects/' + v['sha256'])
    body = bytearray(s3.get_object(Bucket=node.bucket, Key=key)['Body'].read())
    body[len(body) // 2] ^= 1
    s3.put_object(Bucket=node.bucket, Key=key, Body=bytes(body), Metadata={'sha256': v['sha256']})
    return older, newest


# OSS by default; the other two stores in the full run (each is a two-node drill of about 11 s).
@pytest.mark.parametrize('name', [pytest.param('s3-etag', marks=pytest.mark.slow), 'oss',
                                  pytest.param('read-back', marks=pytest.mark.slow)])
def test_a_damaged_newest_snapshot_is_quarantined_and_the_newest_good_one_restored(name, make_node, api_stub, store,
                                                                                   s3):
    cloud, verify = STORES[name]
    proxy = store(cloud)
    api = api_stub('alicloud')
    # Two runs: an older complete snapshot (steps 5, 10), then a newer one (steps 15, 20).
    for name_, steps in (('a0', 10), ('a', 20)):
        a = make_node(name_, api=api, endpoint=proxy.url, syncIntervalSeconds=0)
        a.cfg['checkpoint']['verify'] = verify
        a.train(FT_STEPS=steps)
        assert a.run() == 0, a.output()
    older, newest = damage_newest(a, s3)
    good = verify_snapshot(a, older)

    # Every replacement used to fail its restore and exit (exit 1, systemd restarts, the same again).
    b = make_node('b', api=api, endpoint=proxy.url)
    b.cfg['checkpoint']['verify'] = verify
    b.train(FT_STEPS=40, FT_STEP_S=0.02)
    assert b.run() == 0, b.output()
    assert b.records()[0]['start'] == max(checkpoint_ok(x)[0] for x in good.values()), 'resumed from the older one'
    assert f'restored snapshot {older}' in b.output()
    note = json.loads(s3.get_object(Bucket=a.bucket, Key=a.key(f'checkpoints/quarantine/{newest}.json'))['Body'].read())
    assert note['snapshot'] == newest and note['node'] == b.id and note['reason'], note
    assert b.marker()['state'] == 'DONE'

    # The next node skips it at once: no download of the damaged object again. (B's own snapshots are
    # removed so that the quarantined one is the newest again.)
    for key in s3.list_objects_v2(Bucket=a.bucket, Prefix=a.key('checkpoints/manifests/'))['Contents']:
        if key['Key'].endswith(f'-{b.id}.json'):
            s3.delete_object(Bucket=a.bucket, Key=key['Key'])
    c = make_node('c', api=api, endpoint=proxy.url)
    c.cfg['checkpoint']['verify'] = verify
    c.train(FT_STEPS=40, FT_STEP_S=0.02)
    assert c.run() == 0, c.output()
    assert f'snapshot {newest} is quarantined' in c.output() and 'downloaded sha256' not in c.output()
    assert f'restored snapshot {older}' in c.output()
    # A user sees it: run.py's bucket view lists the quarantined snapshot and why.
    view = StackBucket({'bucket': a.bucket, 'prefix': 'gpu-training', 'endpoint': proxy.url, 'region': 'us-east-1',
                        'addressingStyle': 'path'}, a.cfg['stack'])
    (shown,) = view.quarantined()
    assert shown['snapshot'] == newest and shown['reason'] == note['reason']


def test_bytes_damaged_on_the_way_back_stop_the_node_instead_of_quarantining(make_node, api_stub, store, s3):
    """The store vouches for its copy (its ETag equals the manifest's): an older snapshot would not help."""
    proxy = store()
    api = api_stub('alicloud')
    a = make_node('a', api=api, endpoint=proxy.url)
    a.train(FT_STEPS=10)
    assert a.run() == 0, a.output()
    b = make_node('b', api=api, endpoint=proxy.url, uploadAttempts=2)
    proxy.match, proxy.corrupting, proxy.corrupt_methods = OBJECTS, True, ('GET',)
    assert b.run() == 1, b.output()
    assert 'damaged in transit' in b.output() and not b.records(), 'no training from an older state'
    assert not s3.list_objects_v2(Bucket=a.bucket, Prefix=a.key('checkpoints/quarantine/')).get('Contents')
    assert len(api.calls('DeleteInstance')) == 1, 'only the first node released itself'
    # Damage for a while only: the download is tried again and the restore succeeds.
    proxy.corrupting, proxy.corrupt = False, 1
    b.train(FT_STEPS=15)
    assert b.run() == 0, b.output()
    assert b.records()[0]['start'] == 10 and proxy.corrupted > 1


@pytest.mark.parametrize('stack, header', [('entry-t4', 'x-oss-hash-crc64ecma'), ('tc-entry-t4', 'x-cos-hash-crc64ecma')])
def test_each_clouds_node_config_carries_its_stores_declared_verification(stack, header):
    """The node agent reads how to verify from the node config; the profile declares it, with sources."""
    from tools.stackfiles import node_config_for_stack
    verify = node_config_for_stack(stack)['checkpoint']['verify']
    assert (verify['method'], verify['header'], verify['flexibleChecksums']) == ('crc64ecma', header, False), verify
    assert verify['sources'] and all(s.startswith('https://') for s in verify['sources'])
    assert 'fastcrc' in node_config_for_stack(stack)['bootstrap']['nodeRequirements'], 'the CRC-64 is computed on the node'
