"""Node agent against a metadata service that answers, but not with an identity (issue 12).

An instance id answered with an HTML error page (HTTP 200) or an empty body used to become the node's
id: the node trained, wrote markers under that name and asked the cloud to release the garbage id.
Each value is now checked against the cloud's declared format (node_runtime.FORMATS, with sources)
and a bad one counts as no answer: retried, then the agent exits for a restart without training.
"""
import pytest

HTML = (200, b'<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>')
ANSWERS = {'html': HTML, 'empty': (200, b''), 'not-found': (404, b'Not Found')}


@pytest.mark.parametrize('cloud', ['alicloud', 'tencentcloud'])
@pytest.mark.parametrize('answer', ANSWERS)
def test_an_instance_id_that_is_not_one_is_never_used(cloud, answer, make_node, api_stub, s3):
    api = api_stub(cloud)
    node = make_node(cloud=cloud, api=api)
    node.meta.garbage['instance-id'] = [ANSWERS[answer]] * 50  # every read, for good
    node.train(FT_STEPS=5)
    assert node.run() == 1, node.output()
    assert 'is not a instance-id' in node.output() and 'Traceback' not in node.output()
    assert not node.records(), 'trained under an id the metadata service did not give'
    assert not api.requests, 'asked the cloud to release a garbage id'
    assert not s3.list_objects_v2(Bucket=node.bucket).get('Contents'), 'wrote markers under a garbage name'


@pytest.mark.parametrize('cloud', ['alicloud', 'tencentcloud'])
def test_a_bad_answer_for_a_while_is_retried_and_the_real_id_used(cloud, make_node, api_stub):
    api = api_stub(cloud)
    node = make_node(cloud=cloud, api=api, uploadAttempts=4)
    node.meta.garbage['instance-id'] = [HTML, (200, b'')]
    zone = 'placement/zone' if cloud == 'tencentcloud' else 'zone-id'
    node.meta.garbage[zone] = [HTML]
    node.train(FT_STEPS=5)
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['node'] == node.id and m['zone'] == node.meta.zone and m['state'] == 'DONE', m
    release = 'DeleteInstance' if cloud == 'alicloud' else 'TerminateInstances'
    assert str(node.id) in str(api.calls(release)[0]['params']), api.requests


def test_a_pool_id_that_is_not_one_is_not_acted_on(make_node, api_stub):
    """The pool's id comes from the cloud API: a malformed one is not deleted; the node still releases."""
    api = api_stub('alicloud')
    api.pools['<html>oops</html>'] = {'name': 'gpu-training-agent-test', 'status': 'active', 'terminateInstances': None}
    node = make_node(api=api)
    node.cfg['cluster']['poolName'] = 'gpu-training-agent-test'
    node.train(FT_STEPS=5)
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['pool']['retired'] is False and 'is not a pool-id' in m['pool']['error'], m
    assert not api.calls('DeleteAutoProvisioningGroup') and len(api.calls('DeleteInstance')) == 1
