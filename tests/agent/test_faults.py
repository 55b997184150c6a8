"""Node agent under faults: object storage failing for a while or for good, metadata errors, bad config.

The rule under test: nothing is lost, and no node is released before a verified upload.
"""
import json
import subprocess
import sys

from conftest import ROOT, checkpoint_ok, verify_snapshot


def training_behind(proxy, make_node, api_stub, steps, **agent):
    """(api, node, process): a node whose S3 requests go through `proxy`, its trainer started for `steps` steps
    and already writing, so that what the proxy does next happens mid-run."""
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=proxy.url, **agent)
    node.train(FT_STEPS=steps, FT_STEP_S=0.02)
    p = node.start()
    node.until(node.records)
    return api, node, p


def test_s3_failing_for_a_while_is_retried_and_the_run_completes(make_node, api_stub, proxy):
    api, node, p = training_behind(proxy, make_node, api_stub, 40, uploadAttempts=5)
    proxy.match, proxy.fail = '/checkpoints/', 6  # the next six checkpoint requests get 503 SlowDown
    assert node.wait(p) == 0, node.output()
    assert proxy.failed == 6
    m = node.marker()
    assert m['state'] == 'DONE', m
    files = verify_snapshot(node, m['lastCheckpoint'])
    assert files == {f.name: f.read_bytes() for f in (node.tmp / 'ckpt').iterdir()}
    assert len(api.calls('DeleteInstance')) == 1


def test_s3_failing_for_good_writes_sync_failed_and_never_releases(make_node, api_stub, proxy):
    api, node, p = training_behind(proxy, make_node, api_stub, 30, syncIntervalSeconds=0)
    proxy.match, proxy.down = '/checkpoints/', True  # markers still get through, checkpoints never
    assert node.wait(p) == 3, node.output()
    m = node.marker()
    assert m['state'] == 'SYNC_FAILED' and 'DONE' in m['reason'], m
    assert not api.requests, 'released a node whose checkpoint is not stored'
    assert node.state()['phase'] == 'final'
    assert (node.tmp / 'ckpt').exists() and list((node.tmp / 'ckpt').iterdir()), 'local data kept'

    # The store comes back; systemd restarts the agent: it finishes the job it could not.
    proxy.down = False
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'DONE' and m['exitCode'] == 0, m
    assert checkpoint_ok(max(verify_snapshot(node, m['lastCheckpoint']).values())) == (30, True)
    assert len(api.calls('DeleteInstance')) == 1
    assert len([r for r in node.records() if 'start' in r]) == 1, 'the trainer ran once'


def test_metadata_errors_are_retried_and_spot_poll_failures_do_not_stop_the_agent(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api, uploadAttempts=4)
    node.meta.fail = 2           # the first two metadata requests fail (token, instance id)
    node.meta.fail_spot = True   # and every spot notice check fails
    node.train(FT_STEPS=40, FT_STEP_S=0.02)
    assert node.run() == 0, node.output()
    assert node.marker()['state'] == 'DONE'
    assert 'spot notice check failed' in node.output()
    assert [c['params']['InstanceId'] for c in api.calls('DeleteInstance')] == [node.id]


def test_release_failure_keeps_the_marker_and_a_restart_retries_the_release(make_node, api_stub):
    api = api_stub('alicloud')
    api.fail = 99
    node = make_node(api=api)
    node.train(FT_STEPS=5)
    assert node.run() == 4, node.output()
    assert node.marker()['state'] == 'DONE' and node.state()['phase'] == 'release'
    api.fail = 0
    assert node.run() == 0, node.output()
    assert len(api.calls('DeleteInstance')) == 3 + 1  # three failed tries, then one that worked
    assert len(node.records()) == 2, 'the trainer ran once'


def test_store_unreachable_at_start_does_not_start_training(make_node, api_stub, proxy):
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=proxy.url)
    proxy.down = True
    assert node.run() == 1, node.output()
    assert not node.records() and not api.requests
    assert 'Traceback' not in node.output()


def run_config(tmp_path, cfg):
    path = tmp_path / 'node.json'
    path.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return subprocess.run([sys.executable, '-m', 'node_agent', '--config', str(path)], capture_output=True,
                          text=True, env={'PYTHONPATH': str(ROOT / 'node'), 'PATH': '/usr/bin:/bin'}, timeout=30)


def test_bad_config_exits_2_naming_every_key_without_a_traceback(tmp_path):
    r = run_config(tmp_path, {'stack': 's', 'provider': 'alicloud', 'region': 'r',
                              'paths': {'checkpoints': '/c', 'state': '/s', 'logs': '/l'},
                              'checkpoint': {'bucket': 'b', 'prefix': 'p', 'addressingStyle': 'sideways',
                                             'verify': {'method': 'md5sum'}},
                              'train': {'command': 'x', 'launcher': 'mpirun', 'stopSignal': 'SIGFOO'},
                              'agent': {'idleMinutes': -1, 'syncIntervalSeconds': 'often', 'keep': 'yes'},
                              'endpoints': 'http://x', 'nodeCount': 2})
    assert r.returncode == 2 and 'Traceback' not in r.stderr, r.stderr
    for text in ("checkpoint.addressingStyle: 'sideways' is not allowed: one of virtual path",
                 "train.launcher: 'mpirun'", 'train.stopSignal', "agent.idleMinutes: -1", 'agent.syncIntervalSeconds',
                 "agent.keep: 'yes' is not allowed: a bool",
                 "checkpoint.verify.method: 'md5sum' is not allowed: one of read-back etag-md5 crc64ecma", 'endpoints:', 'endpoints.metadata', 'cluster.tagKey'):
        assert text in r.stderr, (text, r.stderr)


def test_unreadable_config_and_unknown_provider_exit_2(tmp_path):
    r = run_config(tmp_path, '{not json')
    assert r.returncode == 2 and 'cannot read the node config' in r.stderr and 'Traceback' not in r.stderr
    good = {'stack': 's', 'provider': 'nocloud', 'region': 'r', 'paths': {'checkpoints': str(tmp_path / 'c'),
            'state': str(tmp_path / 's'), 'logs': str(tmp_path / 'l')}, 'checkpoint': {'bucket': 'b', 'prefix': 'p'},
            'train': {'command': 'true'}, 'endpoints': {'metadata': 'http://127.0.0.1:9'}}
    r = run_config(tmp_path, good)
    assert r.returncode == 2 and "provider: 'nocloud'" in r.stderr and 'Traceback' not in r.stderr, r.stderr


def test_restore_skips_newer_damaged_or_incomplete_snapshots_for_the_newest_complete_one(make_node, api_stub, s3):
    api = api_stub('alicloud')
    a = make_node('a', api=api)
    a.train(FT_STEPS=10)
    assert a.run() == 0, a.output()
    good = a.marker()['lastCheckpoint']
    # Newer manifests: one names an object that is not there, one is not JSON at all.
    late = '29991231T000000.000000000Z'
    s3.put_object(Bucket=a.bucket, Key=a.key(f'checkpoints/manifests/{late}-x.json'),
                  Body=json.dumps({'id': f'{late}-x', 'files': {'ckpt-99999.bin': {'sha256': 'f' * 64, 'size': 5}}}))
    s3.put_object(Bucket=a.bucket, Key=a.key(f'checkpoints/manifests/{late}-y.json'), Body=b'{not json')
    b = make_node('b', api=api)
    b.train(FT_STEPS=15)
    assert b.run() == 0, b.output()
    assert b.records()[0]['start'] == 10, 'resumed from the newest complete snapshot'
    assert f'restored snapshot {good}' in b.output()
    assert 'is damaged' in b.output() and 'is incomplete' in b.output()


def test_utilisation_csv_left_empty_by_a_killed_agent_does_not_block_the_marker(make_node, api_stub):
    """Regression: an agent killed between creating utilisation.csv and writing its header left an empty
    file; the next agent appended rows without a header and the summary failed with KeyError 'gpu',
    which failed the final marker and so kept the node from being released."""
    api = api_stub('alicloud')
    node = make_node(api=api)
    (node.tmp / 'state').mkdir(parents=True)
    (node.tmp / 'state' / 'utilisation.csv').write_text('')
    node.train(FT_STEPS=20, FT_STEP_S=0.03)
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'DONE' and m['utilisation']['samples'] > 0, m
    assert len(api.calls('DeleteInstance')) == 1
