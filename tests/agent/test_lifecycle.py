"""Node agent lifecycle scenarios: clean finish, preemption and resume, restart, idle, TTL, unhealthy.

Each test runs real agent processes against moto S3 and the metadata/API stubs (conftest.py).
"""
import json
import os
import signal
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from conftest import ROOT, checkpoint_ok, verify_snapshot
from localcloud import S3Proxy

from components import tags


def test_clean_finish_alicloud_releases_after_verified_upload(make_node, api_stub, s3):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.train(FT_STEPS=12)
    assert node.run() == 0, node.output()

    m = node.marker()
    assert m['state'] == 'DONE' and m['exitCode'] == 0, m
    assert m['durationSeconds'] > 0 and m['gpuHours'] > 0
    assert m['estimatedCost'] == pytest.approx(m['durationSeconds'] / 3600 * 3.0, abs=1e-4) and m['currency'] == 'CNY'
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


def test_spot_notice_preempts_and_a_fresh_node_resumes_tencent(make_node, api_stub):
    api = api_stub('tencentcloud')
    a = make_node('a', cloud='tencentcloud', api=api)
    a.train(FT_STEPS=2000, FT_STEP_S=0.01, FT_EVERY=10)
    p = a.start()
    a.until(lambda: len(list((a.tmp / 'ckpt').glob('ckpt-*.bin'))) >= 1 and a.records())
    time.sleep(1)  # a couple of periodic snapshots
    a.meta.notice = datetime.now(timezone.utc) + timedelta(seconds=60)
    assert a.wait(p) == 0, a.output()

    m = a.marker()
    assert m['state'] == 'PREEMPTED' and 'spot notice' in m['reason'], m
    term = [r for r in a.records() if 'term' in r]
    assert len(term) == 1, 'the trainer got exactly one stop signal'
    files = verify_snapshot(a, m['lastCheckpoint'])
    assert max(checkpoint_ok(b) for b in files.values()) == (term[0]['step'], True), 'final save is in the snapshot'
    assert not api.requests, 'a preempted node is not released by the agent'
    assert a.state()['phase'] == 'start', 'a restart of this node would resume'

    b = make_node('b', cloud='tencentcloud', api=api)
    b.train(FT_STEPS=term[0]['step'] + 10)
    assert b.run() == 0, b.output()
    start = b.records()[0]
    assert start['start'] == term[0]['step'], 'resumed from the preempted node\'s last save, not from zero'
    assert start['env']['RESUME_FROM'] == str(b.tmp / 'ckpt')
    assert b.marker()['state'] == 'DONE'
    calls = api.calls('TerminateInstances')
    assert len(calls) == 1 and calls[0]['params'] == {'InstanceIds': [b.id]}, api.requests
    h = calls[0]['headers']
    assert h['authorization'].startswith(f'TC3-HMAC-SHA256 Credential={b.meta.key_id}/'), h
    assert h['x-tc-token'] == b.meta.token


def test_a_huawei_spot_notice_reaches_the_trainer_with_the_grace_it_leaves(make_node, api_stub):
    """Huawei's metadata notice (/openstack/latest/spot/instance-action, a zone-less Beijing time in the
    stand-in) stops the trainer within a spot poll, with the time to the reclaim as its grace (not 1 s),
    and the final snapshot is stored before that time."""
    api = api_stub('huaweicloud')
    node = make_node(cloud='huaweicloud', api=api, maxGraceSeconds=60)
    # A checkpoint every ~1.5 s: older than a second when a periodic snapshot looks (younger files wait).
    node.train(FT_STEPS=100000, FT_STEP_S=0.01, FT_EVERY=150)
    p = node.start()
    node.until(lambda: 'snapshot' in node.output())
    posted = time.time()
    reclaim = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=20)
    node.meta.notice = reclaim
    assert node.wait(p) == 0, node.output()

    m = node.marker()
    assert m['state'] == 'PREEMPTED' and 'spot notice' in m['reason'], m
    told = datetime.fromisoformat(m['stopSignal']['at']).timestamp()
    assert told - posted <= node.cfg['agent']['spotPollSeconds'] + 1.0, (told - posted, m['stopSignal'])
    assert datetime.fromisoformat(m['stopSignal']['reclaimAt']) == reclaim
    assert 15 < m['stopSignal']['graceSeconds'] <= 20, m['stopSignal']
    assert datetime.fromisoformat(m['updatedAt']) < reclaim, 'the final marker before the reclaim'
    term = [r for r in node.records() if 'term' in r]
    files = verify_snapshot(node, m['lastCheckpoint'])
    assert max(checkpoint_ok(b) for b in files.values()) == (term[0]['step'], True), 'final save is in the snapshot'
    assert not api.release_requests(node.id), 'a preempted node is not released by the agent'


class Stalling(S3Proxy):
    """Holds every object upload until `release` is set: a sync stuck on a connection that went quiet."""

    def __init__(self, target):
        self.release, self.held = threading.Event(), 0
        super().__init__(target)

    def answer(self, method, path, headers, body):
        if method == 'PUT' and '/checkpoints/objects/' in path and not self.release.is_set():
            with self.lock:
                self.held += 1
            self.release.wait(60)
        return super().answer(method, path, headers, body)

    def stop(self):
        self.release.set()  # a held upload goes on, and the server can stop
        super().stop()


def test_a_spot_notice_during_a_stalled_sync_still_reaches_the_trainer(make_node, api_stub, start_proxy):
    """The poll runs beside the sync: the trainer is told while the snapshot's upload is still held."""
    s3 = start_proxy(Stalling)
    api = api_stub('alicloud')
    node = make_node(api=api, endpoint=s3.url)
    # A checkpoint every ~1.2 s: the trainer keeps two, and the agent leaves files younger than a second.
    node.train(FT_STEPS=100000, FT_STEP_S=0.02, FT_EVERY=60)
    p = node.start()
    node.until(lambda: s3.held, timeout=30)
    node.meta.notice = datetime.now(timezone.utc) + timedelta(seconds=60)
    node.until(lambda: [r for r in node.records() if 'term' in r])
    assert not s3.release.is_set(), 'every object upload is held until now: no snapshot got through'
    s3.release.set()
    assert node.wait(p, 60) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'PREEMPTED' and 'spot notice' in m['reason'], m
    assert verify_snapshot(node, m['lastCheckpoint'])


def test_trainer_ignoring_sigterm_is_killed_after_grace_and_last_periodic_checkpoint_survives(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api, maxGraceSeconds=1)
    # A checkpoint every ~1.2 s: the agent leaves files younger than a second for the next snapshot.
    node.train(FT_STEPS=100000, FT_STEP_S=0.02, FT_EVERY=60, FT_IGNORE_TERM=1)
    p = node.start()
    node.until(lambda: 'snapshot' in node.output())
    node.meta.notice = datetime.now(timezone.utc) + timedelta(seconds=30)
    assert node.wait(p) == 0, node.output()

    m = node.marker()
    assert m['state'] == 'PREEMPTED' and 'killed after the grace period' in m['reason'], m
    files = verify_snapshot(node, m['lastCheckpoint'])
    assert files and all(checkpoint_ok(b)[1] for b in files.values()), 'every file of the last snapshot is intact'
    assert not [r for r in node.records() if 'term' in r or 'end' in r], 'the trainer never saved on its own'
    assert not api.requests


def test_hung_job_is_idle_then_failed_and_released(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api, idleMinutes=0.02, idleUtilPercent=5, maxGraceSeconds=1)
    node.train(FT_STEPS=1000, FT_HANG_AT=5)
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and m['reason'].startswith('idle'), m
    assert [c['params']['InstanceId'] for c in api.calls('DeleteInstance')] == [node.id]
    assert m['utilisation']['gpuUtilMean'] < 90, 'the idle samples are in the summary'


def test_ttl_stops_gracefully_saves_and_releases(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api, maxHours=0.001, ttlMarginMinutes=0)  # 3.6 s after the first start
    node.train(FT_STEPS=100000, FT_STEP_S=0.01)
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and m['reason'].startswith('ttl'), m
    term = [r for r in node.records() if 'term' in r]
    assert term and max(checkpoint_ok(b) for b in verify_snapshot(node, m['lastCheckpoint']).values())[0] == term[0]['step']
    assert len(api.calls('DeleteInstance')) == 1


def test_ttl_counts_from_the_machine_boot_not_the_agent_start(make_node, api_stub):
    """Regression: the TTL clock started when the agent first ran, so a slow bootstrap pushed the
    graceful stop past the cloud-side release. Without bootTime the kernel's boot time is used."""
    with open('/proc/uptime') as f:
        uptime = float(f.read().split()[0])
    api = api_stub('alicloud')
    # The machine has been up longer than maxHours (less the margin): the stop is due at once.
    node = make_node(api=api, bootTime=None, maxHours=max(uptime - 120, 1) / 3600, ttlMarginMinutes=1)
    node.train(FT_STEPS=100000, FT_STEP_S=0.01)
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and m['reason'].startswith('ttl'), m
    assert m['durationSeconds'] < 60


def test_agent_restart_reattaches_and_never_starts_the_trainer_twice(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.train(FT_STEPS=50, FT_STEP_S=0.05)
    first = node.start()
    node.until(lambda: node.records() and node.state().get('phase') == 'run')
    second = node.start()  # a second agent on the same node (a manual run) must not start a trainer
    assert node.wait(second) == 1 and 'another agent is running' in node.output()
    os.kill(first.pid, signal.SIGKILL)  # a crash: systemd would restart it
    first.wait()
    assert node.run() == 0, node.output()
    starts = [r for r in node.records() if 'start' in r]
    assert len(starts) == 1, starts
    m = node.marker()
    assert m['state'] == 'DONE' and m['exitCode'] == 0, m
    assert 're-attaching' in node.output()
    assert len(api.calls('DeleteInstance')) == 1
    # A third start after the end does nothing.
    assert node.run() == 0 and len(api.calls('DeleteInstance')) == 1 and len(node.records()) == 2


def test_agent_sigterm_stops_trainer_saves_and_a_restart_resumes(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.train(FT_STEPS=200, FT_STEP_S=0.02)
    p = node.start()
    node.until(lambda: node.records())
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)  # systemctl stop, or the OS shutting down
    assert node.wait(p) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'PREEMPTED' and 'SIGTERM' in m['reason'] and not api.requests, m
    saved = [r for r in node.records() if 'term' in r][0]['step']
    assert node.run() == 0, node.output()
    assert node.records()[-2]['start'] == saved and node.marker()['state'] == 'DONE'
    assert len(api.calls('DeleteInstance')) == 1


def test_unhealthy_node_trains_nothing_and_is_not_released(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api)
    (node.tmp / 'state').mkdir(parents=True)
    (node.tmp / 'state' / 'UNHEALTHY').write_text('accelerators: 7 found, 8 expected\n')
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and '7 found, 8 expected' in m['reason'], m
    assert not node.records() and not api.requests


def test_multinode_runs_torchrun_with_the_rank_of_this_node_among_sorted_peers(make_node, api_stub):
    # Ids in Alibaba's format (the agent trusts no other), sorted as a, b, c.
    a, b, c = (f'i-bp{letter * 18}' for letter in 'abc')
    api = api_stub('alicloud', [(c, '10.0.0.3'), (a, '10.0.0.1'), (b, '10.0.0.2')])
    node = make_node(api=api, instance_id=b)
    node.cfg['nodeCount'] = 3
    node.cfg['train'].update(launcher='torchrun', gpusPerNode=2, rendezvousPort=29555)
    node.train(FT_STEPS=5)
    log = node.tmp / 'torchrun.log'
    assert node.run(env={'FAKE_TORCHRUN_LOG': str(log)}) == 0, node.output()
    args = log.read_text().split()
    assert args[:10] == ['--nnodes', '3', '--node_rank', '1', '--nproc_per_node', '2', '--master_addr', '10.0.0.1',
                         '--master_port', '29555'], args
    # Each rank runs the whole command through a shell (node_agent/launch.py; tests/agent/test_shell_command.py).
    assert args[10:13] == ['--no-python', '/bin/sh', '-c'] and args[-1].endswith('fake_trainer.py'), args
    env = node.records()[0]['env']
    assert (env['NODE_RANK'], env['MASTER_ADDR'], env['MASTER_PORT']) == ('1', '10.0.0.1', '29555')
    listed = [c['params'] for c in api.calls('DescribeInstances')]
    assert listed and all(tags.STACK in p.values() and 'agent-test' in p.values() for p in listed), listed


def test_trainer_killed_with_the_agent_is_relaunched_from_its_checkpoint_not_failed(make_node, api_stub):
    """A reboot, or systemd killing the unit's whole cgroup, takes the trainer and its wrapper down."""
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.train(FT_STEPS=60, FT_STEP_S=0.03)
    first = node.start()
    node.until(lambda: list((node.tmp / 'ckpt').glob('ckpt-*.bin')))
    os.kill(first.pid, signal.SIGKILL)
    os.killpg(node.state()['pid'], signal.SIGKILL)
    first.wait()
    assert node.run() == 0, node.output()
    starts = [r['start'] for r in node.records() if 'start' in r]
    assert len(starts) == 2 and starts[1] > 0, f'relaunched once, from a checkpoint: {starts}'
    m = node.marker()
    assert m['state'] == 'DONE' and len(api.calls('DeleteInstance')) == 1
    # The relaunch is said in the marker, with the reason: it must never pass for the first run.
    (relaunch,) = m['relaunches']
    assert 'without an exit status' in relaunch['reason'] and 'wrapper was killed' in relaunch['reason'], relaunch


def test_report_on_ascend_without_matplotlib_names_the_bottleneck_and_skips_the_png(make_node, api_stub, s3):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['accelerator'].update(kind='ascend', count=2)
    node.train(FT_STEPS=40, FT_STEP_S=0.03, FT_UTIL=30)
    hide = node.tmp / 'hide'
    (hide / 'matplotlib').mkdir(parents=True)
    (hide / 'matplotlib' / '__init__.py').write_text("raise ImportError('matplotlib is not installed (test shim)')\n")
    assert node.run(env={'PYTHONPATH': f"{ROOT / 'node'}{os.pathsep}{hide}"}) == 0, node.output()

    summary = json.loads(s3.get_object(Bucket=node.bucket, Key=node.key(f'report/{node.id}/summary.json'))['Body'].read())
    assert 'matplotlib' in summary['plot']
    keys = [o['Key'] for o in s3.list_objects_v2(Bucket=node.bucket, Prefix=node.key('report/'))['Contents']]
    assert not [k for k in keys if k.endswith('.png')], keys
    csv = s3.get_object(Bucket=node.bucket, Key=node.key(f'report/{node.id}/utilisation.csv'))['Body'].read().decode()
    rows = [ln.split(',') for ln in csv.splitlines()[1:]]
    assert {r[1] for r in rows} == {'0', '1'} and {float(r[2]) for r in rows} == {30.0}, 'both NPUs, read via npu-smi'
    # The diagnosis follows the documented rule applied to the measured means.
    cpu, io = summary['cpuBusyMean'], summary['iowaitMean']
    want = 'storage' if io >= 10 else 'cpu' if cpu >= 70 else 'other'
    assert summary['gpuUtilMean'] == 30.0 and summary['bottleneck']['kind'] == want, summary
    assert 'under 70%' in summary['bottleneck']['advice']
    assert node.marker()['utilisation'] == {k: v for k, v in summary.items() if k != 'plot'}


def test_ttl_is_the_stacks_expiry_not_a_count_from_this_nodes_boot(make_node, api_stub):
    """The node config's expiresAt is when the cloud releases the node (the stack's recorded creation time +
    maxHours): a node that booted later (a spot replacement, one added by `nodes`) still stops before it, with
    its final checkpoint, although maxHours counted from its own boot would be hours away."""
    from datetime import datetime, timedelta, timezone

    api = api_stub('alicloud')
    expires = (datetime.now(timezone.utc) + timedelta(seconds=70)).strftime('%Y-%m-%dT%H:%M:%SZ')
    node = make_node(api=api, maxHours=24, expiresAt=expires, ttlMarginMinutes=1)  # due about 10 s in
    node.train(FT_STEPS=100000, FT_STEP_S=0.01)
    assert node.run(timeout=90) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and m['reason'] == f'ttl: expiresAt {expires} less 1 min reached', m
    assert m['durationSeconds'] < 60 and len(api.calls('DeleteInstance')) == 1


def test_a_node_config_with_an_unreadable_expiry_is_refused(make_node):
    node = make_node(expiresAt='tomorrow')
    assert node.run() == 2
    assert "agent.expiresAt: 'tomorrow' is not allowed" in node.output(), node.output()
