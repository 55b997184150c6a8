"""The per-cloud node runtimes against the metadata and API stubs: tokens, time formats, credentials, peers.

The runtimes are loaded from their files the way the agent loads them on a node, and use the
agent's own HTTP helper.
"""
import importlib.util
import re
from datetime import datetime, timezone

import pytest
from botocore.credentials import RefreshableCredentials

from components import providers, tags
from localcloud.standins import CloudApi, Metadata, new_instance_id

from node_agent.s3 import Metadata as Reader, http


def runtime(cloud, meta, api=None, region='cn-hangzhou'):
    spec = importlib.util.spec_from_file_location(f'rt_{cloud}', providers.node_runtime_path(cloud))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = {'region': region, 'endpoints': {'metadata': meta.url, 'cloudApi': api},
           'identity': {'roleName': meta.role}, 'cluster': {'tagKey': tags.STACK, 'tagValue': 'st'}}
    return mod.Runtime(cfg, lambda token_header=None, formats=None: Reader(meta.url, token_header, formats))


@pytest.fixture
def meta():
    made = []

    def make(cloud):
        m = Metadata(cloud)
        made.append(m)
        return m
    yield make
    for m in made:
        m.stop()


def test_tencent_termination_time_is_utc_plus_8_not_iso(meta):
    m = meta('tencentcloud')
    rt = runtime('tencentcloud', m)
    assert rt.spot_notice() is None
    # 20:30:05 UTC is 04:30:05 the next day in Beijing: the stub serves "2026-12-03 04:30:05".
    m.notice = datetime(2026, 12, 2, 20, 30, 5, tzinfo=timezone.utc)
    got = rt.spot_notice()
    assert got == m.notice and got.utcoffset().total_seconds() == 0


def test_alibaba_hardened_metadata_needs_the_token_and_recovers_from_a_revoked_one(meta):
    m = meta('alicloud')
    status, _ = http('GET', m.url + '/latest/meta-data/instance-id')
    assert status == 403, 'the stub must refuse reads without a token, as hardened mode does'
    rt = runtime('alicloud', m)
    assert rt.instance_id() == m.instance_id
    m.revoke_tokens()
    with pytest.raises(OSError, match='403'):
        rt.instance_id()
    assert rt.instance_id() == m.instance_id, 'a fresh token is fetched after a 403'
    puts = [p for method, p, h in m.log if method == 'PUT']
    assert len(puts) == 2
    m.notice = datetime(2026, 12, 2, 10, 0, 0, tzinfo=timezone.utc)
    assert rt.spot_notice() == m.notice


@pytest.mark.parametrize('cloud', providers.names())
def test_role_credentials_feed_botocore_refreshable_credentials(meta, cloud):
    m = meta(cloud)
    rt = runtime(cloud, m)
    c = RefreshableCredentials.create_from_metadata(rt.credentials(), rt.credentials, 'node-role')
    frozen = c.get_frozen_credentials()
    assert (frozen.access_key, frozen.secret_key, frozen.token) == (m.key_id, m.secret, m.token)


@pytest.mark.parametrize('cloud', providers.names())
def test_peers_come_from_the_cloud_api_filtered_by_the_stack_tag(meta, cloud):
    m = meta(cloud)
    one, two = sorted(new_instance_id(cloud) for _ in range(2))
    api = CloudApi(cloud, [(two, '10.0.0.2'), (one, '10.0.0.1')])
    try:
        assert sorted(runtime(cloud, m, api.url).peers()) == [(one, '10.0.0.1'), (two, '10.0.0.2')]
        (req,) = [r for action in api.peer_actions for r in api.calls(action)]
        text = str(req['params'])
        assert tags.STACK in text and re.search(r"[^\w-]st\b", text), req['params']
    finally:
        api.stop()
