"""The agent ships the trainer's and its own log to logs/<node>/ (node_agent/logship.py): with the periodic
sync, before the final marker, and always before the release request, so a released node keeps its log."""
import time

from localcloud import S3Proxy

from node_agent import logship


def shipped(node, name):
    """The log as the bucket holds it: its segments, in order, joined."""
    prefix = node.key(f'logs/{node.id}/{name}.')
    keys = sorted(o['Key'] for o in node.s3.list_objects_v2(Bucket=node.bucket, Prefix=prefix).get('Contents', []))
    return b''.join(node.s3.get_object(Bucket=node.bucket, Key=k)['Body'].read() for k in keys).decode()


class RecordingS3(S3Proxy):
    """The S3 server, with the time of every request that reaches it (to order them against the release)."""

    def __init__(self, target):
        self.seen = []
        super().__init__(target)

    def answer(self, method, path, headers, body):
        self.seen.append((time.time(), method, path))
        return super().answer(method, path, headers, body)


def test_a_crashed_trainer_leaves_its_traceback_in_the_bucket_before_the_release(make_node, api_stub, start_proxy):
    proxy = start_proxy(RecordingS3)
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=proxy.url)
    node.cfg['train']['command'] = ('python3 -c "import sys; print(\'step 1\'); '
                                    'sys.exit(\'boom: CUDA out of memory\')"')
    assert node.run() == 0, node.output()
    assert node.marker()['state'] == 'FAILED'
    trainer = shipped(node, 'trainer.log')
    assert 'boom: CUDA out of memory' in trainer and 'step 1' in trainer
    agent = shipped(node, 'agent.log')
    # The last ship is the one right before the release request: the bucket's agent.log says so.
    assert 'marker FAILED' in agent and 'releasing this node' in agent, agent
    release = api.calls('DeleteInstance')
    assert len(release) == 1
    log_puts = [t for t, method, path in proxy.seen if method == 'PUT' and f'/logs/{node.id}/agent.log' in path]
    assert log_puts and min(log_puts) < release[0]['time']
    assert max(log_puts) < release[0]['time'], 'a log upload came only after the release request'


def test_a_store_refusing_the_logs_does_not_keep_the_node(make_node, api_stub, proxy):
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=proxy.url)
    node.train(FT_STEPS=6)
    proxy.match, proxy.down = '/logs/', True  # every log upload gets 503; checkpoints pass
    started = time.time()
    assert node.run() == 0, node.output()
    assert node.marker()['state'] == 'DONE'
    assert len(api.calls('DeleteInstance')) == 1, 'the release must not wait on the logs'
    assert 'not shipped' in node.output()
    assert time.time() - started < 60


def test_the_periodic_sync_ships_the_log_of_a_running_trainer(make_node, api_stub):
    node = make_node(api=api_stub('alicloud'))
    node.train(FT_STEPS=400, FT_STEP_S=0.05)
    p = node.start()
    try:
        text = node.until(lambda: 'started' in (t := shipped(node, 'agent.log')) and t, timeout=20)
        assert node.id in text
        assert p.poll() is None, 'the log must be readable while the node is still training'
    finally:
        p.kill()
        p.wait()


def test_segments_keep_the_start_and_the_newest_and_join_back(tmp_path):
    class Store:
        bucket, root = 'b', 'r/'

        def __init__(self):
            self.objects = {}
            self.s3 = self

        def put_object(self, Bucket, Key, Body, ContentType):
            self.objects[Key] = Body

    store = Store()
    (tmp_path / 'trainer.log').write_bytes(b'a' * logship.SEGMENT_BYTES + b'tail\n')
    shipper = logship.LogShipper(store, 'n1', str(tmp_path))
    assert shipper.ship()
    assert sorted(store.objects) == ['r/logs/n1/trainer.log.0000', 'r/logs/n1/trainer.log.0001']
    assert store.objects['r/logs/n1/trainer.log.0001'] == b'tail\n'
    store.objects.clear()
    with open(tmp_path / 'trainer.log', 'ab') as f:
        f.write(b'more\n')
    shipper.ship()
    assert list(store.objects) == ['r/logs/n1/trainer.log.0001'], 'a full segment is uploaded once'
    assert logship.wanted(logship.MAX_SEGMENTS + 5) == [0, *range(6, logship.MAX_SEGMENTS + 5)]
