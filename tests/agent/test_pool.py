"""Spot pools: a node that releases itself first retires its pool, so the pool does not replace it.

The bug these pin down (issues 2, 4, 6): a node of a spot pool (Alibaba auto provisioning group of type
maintain, Tencent auto scaling group) released itself after a clean finish; the pool saw the missing
capacity and launched a replacement, which trained again, released itself, and so on until the
cloud-side TTL. Real agent processes against the API stubs (conftest.py), as in test_lifecycle.py.
"""
import json
from datetime import datetime, timedelta, timezone

import pytest
from test_runtimes import runtime

from components import providers
from localcloud.standins import CloudApi, Metadata

POOL = 'gpu-training-agent-test'
# The clouds whose spot nodes a pool keeps (profile.spot.pool); the others have nothing to retire.
POOL_CLOUDS = [name for name in providers.names() if providers.profile(name).spot.pool]
RETIRE = {'alicloud': ('DescribeAutoProvisioningGroups', 'DeleteAutoProvisioningGroup', 'DeleteInstance'),
          'tencentcloud': ('DescribeAutoScalingGroups', 'DisableAutoScalingGroup', 'TerminateInstances'),
          'huaweicloud': ('ListScalingGroups', 'ScalingGroupAction', 'DeleteServers')}
# The request field naming the pool in the retire call, and an untouched pool's state in each stand-in.
POOL_PARAM = {'alicloud': 'AutoProvisioningGroupId', 'tencentcloud': 'AutoScalingGroupId', 'huaweicloud': 'group'}
UNTOUCHED = {'alicloud': {'status': 'active'}, 'tencentcloud': {'enabled': 'ENABLED'},
             'huaweicloud': {'status': 'INSERVICE'}}


def spot_node(make_node, api, cloud, **agent):
    node = make_node(cloud=cloud, api=api, **agent)
    node.cfg['billing'] = 'spot'
    node.cfg['cluster']['poolName'] = POOL
    return node


def signed_by(node, request, cloud):
    """Whether the request carries the node role's temporary key id and security token."""
    if cloud == 'tencentcloud':
        h = request['headers']
        return h['authorization'].startswith(f'TC3-HMAC-SHA256 Credential={node.meta.key_id}/') \
            and '/as/tc3_request' in h['authorization'] and h['x-tc-token'] == node.meta.token
    text = json.dumps(request)
    return node.meta.key_id in text and node.meta.token in text


@pytest.mark.parametrize('cloud', POOL_CLOUDS)
def test_spot_finish_retires_the_pool_before_the_release(make_node, api_stub, cloud):
    api = api_stub(cloud)
    mine, other = api.add_pool(POOL), api.add_pool(POOL + '-2')  # a name that merely starts the same
    node = spot_node(make_node, api, cloud)
    node.train(FT_STEPS=8)
    assert node.run() == 0, node.output()

    describe, retire, release = RETIRE[cloud]
    # Only the pool and release calls (a Huawei node also polls its own status: its reclaim signal).
    assert [r['action'] for r in api.requests if r['action'] in RETIRE[cloud]] == [describe, retire, release], \
        api.requests
    (stop,) = api.calls(retire)
    assert stop['params'][POOL_PARAM[cloud]] == mine
    if cloud == 'alicloud':
        # Deleted, but its instances kept: another node of the pool may still be uploading.
        assert stop['params']['TerminateInstances'].lower() == 'false'
    assert signed_by(node, stop, cloud), 'not signed with the node role credentials'
    assert stop['time'] <= api.calls(release)[0]['time']
    assert {k: v for k, v in api.pools[other].items() if k != 'terminateInstances'} == \
        {'name': POOL + '-2', **UNTOUCHED[cloud]}
    assert api.pools[other].get('terminateInstances') is None
    m = node.marker()
    assert m['state'] == 'DONE' and m['pool']['retired'] is True and mine in m['pool']['detail'], m
    assert node.state()['phase'] == 'done' and node.state()['pool']['retired'] is True


def test_a_capped_huawei_spot_node_without_a_pool_releases_only_itself(make_node, api_stub):
    """Huawei with spotMaxPricePerHour: single capped spot ECSs, node.json names no pool; the agent
    touches no AS group and deletes its own ECS, as an on-demand node does."""
    api = api_stub('huaweicloud')
    api.add_pool(POOL)
    node = make_node(cloud='huaweicloud', api=api)
    node.cfg['billing'] = 'spot'
    node.cfg['cluster']['poolName'] = None
    node.train(FT_STEPS=5)
    assert node.run() == 0, node.output()
    actions = [r['action'] for r in api.requests]
    assert 'ListScalingGroups' not in actions and 'ScalingGroupAction' not in actions, actions
    assert actions.count('DeleteServers') == 1 and 'pool' not in node.marker()
    assert api.pools[next(iter(api.pools))]['status'] == 'INSERVICE'


def test_on_demand_finish_leaves_pools_alone(make_node, api_stub):
    api = api_stub('alicloud')
    api.add_pool(POOL)
    node = make_node(api=api)
    node.cfg['billing'] = 'on-demand'  # the node config has no cluster.poolName then
    node.train(FT_STEPS=5)
    assert node.run() == 0, node.output()
    assert [r['action'] for r in api.requests] == ['DeleteInstance'], api.requests
    assert 'pool' not in node.marker()


def test_preempted_spot_node_neither_retires_the_pool_nor_releases(make_node, api_stub):
    """The pool must replace a reclaimed node: that is what it is for."""
    api = api_stub('tencentcloud')
    group = api.add_pool(POOL)
    node = spot_node(make_node, api, 'tencentcloud')
    node.train(FT_STEPS=2000, FT_STEP_S=0.01, FT_EVERY=10)
    p = node.start()
    node.until(lambda: node.records())
    node.meta.notice = datetime.now(timezone.utc) + timedelta(seconds=60)
    assert node.wait(p) == 0, node.output()
    assert node.marker()['state'] == 'PREEMPTED'
    assert not api.requests and api.pools[group]['enabled'] == 'ENABLED'


def test_retire_failing_after_the_retries_still_releases_and_says_so_in_the_marker(make_node, api_stub):
    api = api_stub('alicloud')
    pool = api.add_pool(POOL)
    node = spot_node(make_node, api, 'alicloud', uploadAttempts=3)
    api.fail = 3  # every try of the retire (one Describe each) gets 503; the release after it works
    node.train(FT_STEPS=5)
    assert node.run() == 0, node.output()
    assert [r['action'] for r in api.requests] == ['DescribeAutoProvisioningGroups'] * 3 + ['DeleteInstance']
    assert api.pools[pool]['status'] == 'active'
    m = node.marker()
    assert m['state'] == 'DONE' and m['pool']['retired'] is False and m['pool']['error'], m
    assert 'NOT retired' in (node.tmp / 'logs' / 'agent.log').read_text()


def test_a_restart_after_a_failed_release_does_not_retire_again(make_node, api_stub):
    api = api_stub('tencentcloud')
    group = api.add_pool(POOL)
    node = spot_node(make_node, api, 'tencentcloud', uploadAttempts=2)
    api.errors['TerminateInstances'] = 'UnauthorizedOperation'
    node.train(FT_STEPS=5)
    assert node.run() == 4, node.output()
    assert api.pools[group]['enabled'] == 'DISABLED' and node.state()['phase'] == 'release'
    del api.errors['TerminateInstances']
    assert node.run() == 0, node.output()  # what systemd's restart does
    assert [r['action'] for r in api.requests] == ['DescribeAutoScalingGroups', 'DisableAutoScalingGroup',
                                                   'TerminateInstances', 'TerminateInstances',
                                                   'TerminateInstances'], api.requests


@pytest.mark.parametrize('cloud', POOL_CLOUDS)
def test_runtime_retire_is_idempotent_and_touches_only_the_named_pool(cloud):
    meta, api = Metadata(cloud), CloudApi(cloud)
    try:
        mine, other = api.add_pool(POOL), api.add_pool('x-' + POOL)
        rt = runtime(cloud, meta, api.url)
        rt.cfg['cluster']['poolName'] = POOL
        assert mine in rt.retire_pool()
        assert 'already retired' in rt.retire_pool()
        retire = RETIRE[cloud][1]
        assert len(api.calls(retire)) == 1 and len(api.calls(RETIRE[cloud][0])) == 2
        state = {k: v for k, v in api.pools[other].items() if k != 'terminateInstances'}
        assert state == {'name': 'x-' + POOL, **UNTOUCHED[cloud]}
    finally:
        meta.stop()
        api.stop()
