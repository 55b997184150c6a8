"""One-pass digests and verified transfers of the Store, without an agent process (issue 27).

The digests of a file (SHA-256, MD5 of the whole or of each part, CRC-64) come from one read with MD5
on a second thread: they must equal hashlib's and fastcrc's over the file, at every size and part
boundary. Downloads are hashed while they arrive, in order (Store.stream into a HashingSink): a restore and a read-back must still
see damaged bytes. The OSS/COS stand-in computes its CRC-64 when an object is written: an object
written behind its back must still be answered with the CRC-64 of what the store holds.
An upload is confirmed by the store's answer to it (its MD5s taken from the bytes sent): a wrong
answer refuses it, and so does a file written while it uploads.
"""
import hashlib
import io
import json
import logging
import os

import pytest
from fastcrc import crc64
from localcloud.standins import ObjectStorage
from conftest import WrongAnswers
from localcloud import S3Proxy

from node_agent.integrity import THREADED, Digests, HashingSink, Integrity, with_sent_md5s
from node_agent import layout
from node_agent import store as store_module
from node_agent.store import Store

MB = 1 << 20


def reference(data, part_size):
    parts = [hashlib.md5(data[i:i + part_size]).digest() for i in range(0, len(data), part_size)]
    return hashlib.sha256(data).hexdigest(), hashlib.md5(data).digest(), parts, crc64.xz(data)


@pytest.mark.parametrize('size', [0, 1, MB - 1, MB, THREADED - 1, THREADED, THREADED + 1, 3 * MB + 5,
                                  11 * MB + 3])
@pytest.mark.parametrize('part_size', [3 * MB + 5, 2 * MB])  # a boundary inside a read block, and on one
def test_one_pass_digests_equal_hashlib_over_the_file(size, part_size, tmp_path):
    data = os.urandom(size)
    path = tmp_path / 'f'
    path.write_bytes(data)
    threshold = 3 * MB
    sha, md5, parts, crc = reference(data, part_size)
    for verify in ({'method': 'etag-md5'}, {'method': 'crc64ecma', 'contentMd5': True}, {'method': 'read-back'}):
        integrity = Integrity(verify, threshold, lambda _: part_size, logging.getLogger('test'))
        with open(path, 'rb') as f:
            d = integrity.digest(f, size)
        assert (d.size, d.sha256) == (size, sha)
        if verify['method'] == 'read-back':
            assert d.md5 is None and d.part_md5s is None and d.crc64 is None
            continue
        if size >= threshold:
            assert d.md5 is None and d.part_md5s == parts, (size, part_size)
        else:
            assert d.md5 == md5 and d.part_md5s is None
        assert d.crc64 == (crc if verify['method'] == 'crc64ecma' else None)


def test_a_ranged_download_is_hashed_and_written_in_its_order(moto_url, bucket, monkeypatch):
    """More ranges than threads (and than s3transfer's window of 10): arriving out of order, handed on in order."""
    from boto3.s3.transfer import TransferConfig
    monkeypatch.setattr(store_module, 'RANGE', MB)
    store = store_for(moto_url, bucket, {'method': 'read-back'},
                      TransferConfig(multipart_threshold=4 * MB, multipart_chunksize=4 * MB, max_concurrency=4))
    for size in (3 * MB, 12 * MB + 17, 16 * MB):
        data = os.urandom(size)
        store.s3.put_object(Bucket=bucket, Key='k', Body=data)
        out = io.BytesIO()
        sink = HashingSink(out)
        store.stream('k', size, sink)
        assert out.getvalue() == data, size
        assert sink.hexdigest() == hashlib.sha256(data).hexdigest() and sink.size == size
        assert store.read_back('k', size) == hashlib.sha256(data).hexdigest()


def store_for(url, bucket, verify, transfer=None):
    cfg = {'stack': 'digests', 'provider': 'alicloud', 'region': 'us-east-1',
           'checkpoint': {'bucket': bucket, 'prefix': 't', 'endpoint': url, 'region': 'us-east-1',
                          'addressingStyle': 'path', 'signatureVersion': 's3v4', 'verify': verify},
           'agent': {'uploadAttempts': 2, 'retryBaseSeconds': 0}}
    return Store(cfg, 'n', None, transfer)


@pytest.mark.parametrize('verify', [{'method': 'read-back'}, {'method': 'etag-md5'},
                                    {'method': 'crc64ecma', 'header': 'x-oss-hash-crc64ecma'}])
def test_an_upload_damaged_on_the_way_is_refused(verify, moto_url, bucket, tmp_path):
    """No Content-MD5 here: only the store's word (ETag, CRC-64) or the read-back can tell."""
    proxy = ObjectStorage('alicloud', moto_url) if verify['method'] == 'crc64ecma' else S3Proxy(moto_url)
    try:
        from boto3.s3.transfer import TransferConfig
        store = store_for(proxy.url, bucket, verify, TransferConfig(multipart_threshold=8 * MB, multipart_chunksize=8 * MB))
        path = tmp_path / 'ckpt.bin'
        path.write_bytes(os.urandom((8 * MB) + 99))  # multipart: two parts
        proxy.match, proxy.corrupt = '/objects/', 1
        with open(path, 'rb') as f, pytest.raises(OSError, match='does not verify'):
            store.put(store.objects + 'x', f, store.integrity.digest(f, os.fstat(f.fileno()).st_size))
        assert proxy.corrupted == 1
        with open(path, 'rb') as f:  # undamaged this time: verified
            store.put(store.objects + 'x', f, store.integrity.digest(f, os.fstat(f.fileno()).st_size))
    finally:
        proxy.stop()


def test_a_download_damaged_on_the_way_back_is_seen(moto_url, bucket, tmp_path):
    proxy = S3Proxy(moto_url)
    try:
        store = store_for(proxy.url, bucket, {'method': 'read-back'})
        data = os.urandom(3 * MB)
        store.s3.put_object(Bucket=bucket, Key='k', Body=data)
        assert store.download_once('k', len(data), tmp_path / 'a') == hashlib.sha256(data).hexdigest()
        assert (tmp_path / 'a').read_bytes() == data
        proxy.match, proxy.corrupt_methods, proxy.corrupt = '/k', ('GET',), 1
        assert store.download_once('k', len(data), tmp_path / 'b') != hashlib.sha256(data).hexdigest()
        assert proxy.corrupted == 1
        proxy.corrupt = 1
        assert store.read_back('k', len(data)) != hashlib.sha256(data).hexdigest()
    finally:
        proxy.stop()


def test_the_stand_in_answers_the_crc64_of_what_the_store_holds(moto_url, s3, bucket, tmp_path):
    from boto3.s3.transfer import TransferConfig
    oss = ObjectStorage('alicloud', moto_url)
    try:
        store = store_for(oss.url, bucket, {'method': 'crc64ecma', 'header': 'x-oss-hash-crc64ecma'})
        data = os.urandom(10 * MB + 3)
        (tmp_path / 'f').write_bytes(data)

        def said(key):
            return store.s3.head_object(Bucket=bucket, Key=key)['ResponseMetadata']['HTTPHeaders'][
                'x-oss-hash-crc64ecma']
        # Multipart through the stand-in: its CRC-64 combined from the parts' equals the whole's.
        store.s3.upload_file(str(tmp_path / 'f'), bucket, 'multi',
                             Config=TransferConfig(multipart_threshold=4 * MB, multipart_chunksize=4 * MB))
        store.s3.put_object(Bucket=bucket, Key='single', Body=data[:1000])
        assert said('multi') == str(crc64.xz(data)) and said('single') == str(crc64.xz(data[:1000]))
        # Written behind the stand-in's back (damage at rest): the answer follows the bytes held.
        s3.put_object(Bucket=bucket, Key='single', Body=b'x' + data[1:1000])
        assert said('single') == str(crc64.xz(b'x' + data[1:1000]))
    finally:
        oss.stop()


@pytest.mark.parametrize('size', [MB + 7, 8 * MB + 99])  # one PutObject; a multipart upload's Complete
@pytest.mark.parametrize('verify', [{'method': 'etag-md5', 'contentMd5': True},
                                    {'method': 'crc64ecma', 'header': 'x-oss-hash-crc64ecma'}])
def test_a_wrong_checksum_in_the_stores_answer_to_an_upload_is_refused(verify, size, moto_url, bucket, tmp_path):
    """The upload's own answer is the store's word (no HEAD after it): a wrong one refuses the upload,
    even though a HEAD would vouch for the bytes, until the store answers the right one."""
    from boto3.s3.transfer import TransferConfig
    liar = WrongAnswers(moto_url, crc64_header=verify.get('header'))
    try:
        store = store_for(liar.url, bucket, verify, TransferConfig(multipart_threshold=8 * MB, multipart_chunksize=8 * MB))
        path = tmp_path / 'ckpt.bin'
        path.write_bytes(os.urandom(size))
        with open(path, 'rb') as f:
            digests = store.integrity.digest(f, size)
            key = store.objects + digests.sha256
            with pytest.raises(OSError, match='answered .* to the upload, not'):
                store.put(key, f, digests)
            assert store.check(key, digests) is None, 'the stand-in holds the right bytes and says so on HEAD'
            with pytest.raises(OSError, match='answered .* to the upload, not'):
                store.put(key, f, digests)  # uploaded again, not taken on that HEAD's word
            liar.lying = False
            store.put(key, f, digests)
        assert (key, digests.sha256) in store.verified
    finally:
        liar.stop()


@pytest.mark.parametrize('verify', [{'method': 'etag-md5', 'contentMd5': True}, {'method': 'content-md5'}])
def test_a_file_written_in_place_while_it_uploads_is_refused_and_hashed_again(verify, moto_url, s3, bucket,
                                                                               tmp_path):
    """The upload's MD5s are those of the bytes sent, its key the sha256 of an earlier pass: a file
    written in between must not be stored under the old key as if verified (content-md5: the store
    accepted those bytes against their own MD5, which says nothing of the key)."""
    store = store_for(moto_url, bucket, verify)
    path = tmp_path / 'ckpt.bin'
    path.write_bytes(os.urandom(MB))
    os.utime(path, (1e9, 1e9))  # not "just written"

    def trainer_writes(**_):
        with open(path, 'r+b') as f:
            f.write(b'a newer step')
    event = 'before-parameter-build.s3.PutObject'
    store.s3.meta.events.register_first(event, trainer_writes)
    with pytest.raises(OSError, match='changed while it was uploaded'):
        store.put_file(str(path), final=True)
    store.s3.meta.events.unregister(event, trainer_writes)
    _, digests = store.put_file(str(path), final=True)
    data = path.read_bytes()
    assert digests.sha256 == hashlib.sha256(data).hexdigest() and digests.md5 == hashlib.md5(data).digest()
    stored = s3.get_object(Bucket=bucket, Key=store.objects + digests.sha256)['Body'].read()
    assert stored == data


def test_an_object_already_stored_is_confirmed_by_the_md5s_of_a_pass_over_the_file(moto_url, s3, bucket, tmp_path):
    """A new process (no upload of its own to take MD5s from) finds the content stored: its ETag is
    compared with the file's MD5s, and a stored object with other bytes is uploaded again."""
    verify = {'method': 'etag-md5', 'contentMd5': True}
    path = tmp_path / 'ckpt.bin'
    path.write_bytes(os.urandom(MB + 1))
    os.utime(path, (1e9, 1e9))
    _, first = store_for(moto_url, bucket, verify).put_file(str(path), final=True)
    again = store_for(moto_url, bucket, verify)
    key = again.objects + first.sha256
    s3.put_object(Bucket=bucket, Key=key, Body=b'x' + path.read_bytes()[1:])  # damage at rest, same size
    _, digests = again.put_file(str(path), final=True)
    assert s3.get_object(Bucket=bucket, Key=key)['Body'].read() == path.read_bytes(), 'not uploaded again'
    assert digests.md5 == first.md5 == hashlib.md5(path.read_bytes()).digest()
    third = store_for(moto_url, bucket, verify)
    third.s3.meta.events.register('before-parameter-build.s3.PutObject', lambda **_: pytest.fail('uploaded again'))
    assert third.put_file(str(path), final=True)[1].md5 == first.md5


def test_two_files_of_one_content_uploading_at_once_never_verify_other_bytes(moto_url, s3, bucket, tmp_path):
    """step100.pt and latest.pt hold the same bytes, so one object key; latest.pt is written in place while
    it uploads. The MD5s of the bytes sent and the store's answer belong to one upload: the other file's
    upload must never be confirmed by them (an object verified under its sha256 holding other bytes is a
    checkpoint lost at restore). The client's event hooks order the requests: latest.pt finds the key
    absent, step100.pt uploads, latest.pt uploads, then step100.pt's upload is confirmed. Where the store
    keeps one upload of a key at a time, the waits below time out and the uploads run one after the other."""
    import threading
    store = store_for(moto_url, bucket, {'method': 'etag-md5', 'contentMd5': True})
    old, new = os.urandom(MB), os.urandom(MB)
    step, latest = tmp_path / 'step100.pt', tmp_path / 'latest.pt'
    for path in (step, latest):
        path.write_bytes(old)
        os.utime(path, (1e9, 1e9))
    names = ('latest_checked', 'latest_goes', 'step_sent', 'step_goes', 'latest_sent', 'latest_ends')
    events = {name: threading.Event() for name in names}
    done, sender_of = set(), {}

    def first(tag):
        fresh = tag not in done
        done.add(tag)
        return fresh

    def sender(params):
        body = params['Body']
        while not hasattr(body, 'name'):
            body = body._fileobj
        return 'latest' if os.readlink(body.name) == str(latest) else 'step'

    def after_head(**_):
        if threading.current_thread().name == 'latest' and first('head'):
            events['latest_checked'].set()
            events['latest_goes'].wait(3)

    def before_put(params, context, **_):
        sender_of[id(context)] = who = sender(params)
        if who == 'latest' and first('write'):
            with open(latest, 'r+b') as f:  # the trainer saves latest.pt again, in place, same size
                f.write(new)

    def after_put(context, **_):
        who = sender_of.get(id(context))
        if first(f'{who}-put'):
            events[f'{who}_sent'].set()
            events['step_goes' if who == 'step' else 'latest_ends'].wait(3)
    store.s3.meta.events.register('after-call.s3.HeadObject', after_head)
    store.s3.meta.events.register_first('before-parameter-build.s3.PutObject', before_put)
    store.s3.meta.events.register('after-call.s3.PutObject', after_put)
    results = {}

    def upload(name, path):
        try:
            results[name] = store.retry(store.put_file)(str(path), True)
        except Exception as error:  # the assertions below say what it was
            results[name] = error
    threads = {name: threading.Thread(target=upload, args=(name, path), name=name)
               for name, path in (('latest', latest), ('step', step))}
    threads['latest'].start()
    events['latest_checked'].wait(5)
    threads['step'].start()
    events['step_sent'].wait(3)
    events['latest_goes'].set()
    events['latest_sent'].wait(3)
    events['step_goes'].set()
    threads['step'].join(30)
    events['latest_ends'].set()
    threads['latest'].join(30)
    assert not isinstance(results['step'], Exception), results['step']
    assert not isinstance(results['latest'], Exception), results['latest']
    assert results['step'][1].sha256 == hashlib.sha256(old).hexdigest()
    assert results['latest'][1].sha256 == hashlib.sha256(new).hexdigest()
    for key, sha in store.verified:
        held = s3.get_object(Bucket=bucket, Key=key)['Body'].read()
        assert hashlib.sha256(held).hexdigest() == sha, f'{key} verified as {sha} but holds other bytes'


def test_sent_md5s_that_are_not_the_whole_file_expect_nothing_of_the_store():
    """A content-md5 upload counts as the store's word only when the requests it accepted were the whole
    file: one PUT of its size, or parts 1..N whose sizes add up to it."""
    md5 = hashlib.md5(b'x').digest()

    def whole(size, sent):
        return with_sent_md5s(Digests(size, 'sha'), sent)
    assert whole(10, {0: (md5, 10)}) and whole(10, {1: (md5, 6), 2: (md5, 4)}) and whole(0, {0: (md5, 0)})
    assert not whole(10, {0: (md5, 9)})  # a short read sent fewer bytes, each accepted against its own MD5
    assert not whole(10, {1: (md5, 4), 2: (md5, 4)})
    assert not whole(10, {2: (md5, 6), 3: (md5, 4)}) and not whole(10, {})


@pytest.mark.parametrize('verify', [{'method': 'content-md5'}, {'method': 'read-back'}, {'method': 'etag-md5'}])
def test_a_restored_checkpoint_is_not_read_back_by_the_next_snapshot(verify, moto_url, bucket, tmp_path):
    """A replacement node restores the newest snapshot (each download hashed to its key), then snapshots
    the same files with the next one: the store holds exactly those bytes, so nothing is asked of it
    again, not even by a store whose word is a read-back; and the new manifest keeps what the restored
    one recorded of the store's digest."""
    # OBS's stand-in checks Content-MD5 and answers ETags that are no MD5s: an etag-md5 store is S3's.
    obs = S3Proxy(moto_url) if verify['method'] == 'etag-md5' else ObjectStorage('huaweicloud', moto_url)
    try:
        first = store_for(obs.url, bucket, verify)
        src = tmp_path / 'a'
        src.mkdir()
        for name in ('model.pt', 'optim.pt'):
            (src / name).write_bytes(os.urandom(MB + 7))
            os.utime(src / name, (1e9, 1e9))
        assert first.snapshot(str(src))
        second = store_for(obs.url, bucket, verify)
        second.node = 'replacement'
        dst = tmp_path / 'b'
        dst.mkdir()
        sid = second.restore(str(dst))
        assert sid and sorted(p.name for p in dst.iterdir()) == ['model.pt', 'optim.pt']
        (dst / 'new.pt').write_bytes(os.urandom(MB))
        os.utime(dst / 'new.pt', (1e9, 1e9))
        before = len(obs.requests)
        assert second.snapshot(str(dst), final=True) != sid  # final: the restored files were just written
        after = [(m, p) for m, p in obs.requests[before:] if second.objects in p]
        restored_keys = {second.objects + hashlib.sha256((src / n).read_bytes()).hexdigest()
                         for n in ('model.pt', 'optim.pt')}
        asked = [(m, p) for m, p in after if any(p.endswith(k) for k in restored_keys)]
        assert asked == [], f'restored objects were asked for again: {asked}'
        s3 = obs_client(obs)
        manifest, old = (json.loads(s3.get_object(Bucket=bucket, Key=second.root + layout.manifest(i))['Body'].read())
                         for i in (second.last[0], sid))
        for name in ('model.pt', 'optim.pt'):
            assert manifest['files'].get(name) == old['files'][name], (name, manifest, old)
    finally:
        obs.stop()


def obs_client(proxy):
    import boto3
    return boto3.client('s3', endpoint_url=proxy.url, region_name='us-east-1', aws_access_key_id='local',
                        aws_secret_access_key='local')


def test_a_manifest_is_written_without_asking_whether_it_is_stored_and_still_verified(moto_url, bucket, tmp_path):
    """A manifest's id is new (UTC time to the nanosecond, and the node): no HEAD precedes its PUT, while each
    object is still asked for (unchanged content is uploaded once); the store's answer to the manifest's PUT
    still has to vouch for it, and a wrong one fails the snapshot."""
    liar = WrongAnswers(moto_url)
    liar.lying = False
    try:
        store = store_for(liar.url, bucket, {'method': 'etag-md5', 'contentMd5': True})
        src = tmp_path / 'ckpt'
        src.mkdir()
        (src / 'model.pt').write_bytes(os.urandom(MB))
        os.utime(src / 'model.pt', (1e9, 1e9))
        sid = store.snapshot(str(src))
        manifests = [(m, p) for m, p in liar.requests if '/manifests/' in p]
        objects = [m for m, p in liar.requests if '/objects/' in p]
        assert manifests == [('PUT', f'/{bucket}/{store.root}{layout.manifest(sid)}')], manifests
        assert objects == ['HEAD', 'PUT'], objects
        liar.lying, liar.match = True, '/manifests/'
        (src / 'optim.pt').write_bytes(os.urandom(MB))
        os.utime(src / 'optim.pt', (1e9, 1e9))
        with pytest.raises(OSError, match='answered etag-md5 .* to the upload, not'):
            store.snapshot(str(src))
        assert store.last[0] == sid
    finally:
        liar.stop()
