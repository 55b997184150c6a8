"""Alibaba Cloud side of the node agent: metadata, role credentials, spot notice, peers, pool retire, self-release.

Self-contained on purpose: the bootstrap copies this one file next to the agent on the node as
`node_agent/cloud_runtime.py`, so it imports nothing from `components` or `node_agent`. The agent
passes its metadata reader in (`metadata(token_header)(path)`); the ECS SDK is imported only when the
cloud API is called. Facts: ECS doc "Instance metadata" (_META below) and the DeleteInstance API
(https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstance).
"""
import json
from datetime import datetime, timezone
from urllib.parse import urlsplit


_META = 'https://www.alibabacloud.com/help/en/ecs/user-guide/instance-metadata-items'
# The format of each identity value the node acts on (metadata path or API field: regex, source): the
# metadata reader takes any other answer (an HTML error page, an empty body) for no answer. The id
# lengths are not documented: the examples have 20 characters after the prefix, older ids fewer.
FORMATS = {
    'instance-id': (r'i-[0-9a-z]{8,32}', _META + ' (i-bp13znx0m0me8cquu****)'),
    'region-id': (r'[a-z]{2,}(-[a-z0-9]+){1,4}', _META + ' (cn-hangzhou)'),
    'zone-id': (r'[a-z]{2,}(-[a-z0-9]+){1,5}', _META + ' (cn-hangzhou-i)'),
    'private-ipv4': (r'([0-9]{1,3}\.){3}[0-9]{1,3}', _META),
    'pool-id': (r'apg-[0-9a-z]{8,32}', 'https://www.alibabacloud.com/help/en/ecs/developer-reference/'
                                       'api-ecs-2014-05-26-describeautoprovisioninggroups (apg-sn54avj8htgvtyh8****)'),
}


class Runtime:
    """One ECS instance seen from inside, through the hardened (token) metadata service."""

    def __init__(self, cfg, metadata):
        # metadata(token_header, formats) -> read(path): the agent's reader (node_agent/s3.py Metadata); hardened mode: 403 without the token.
        self.cfg, self.meta = cfg, metadata('X-aliyun-ecs-metadata-token', FORMATS)

    def instance_id(self):
        return self.meta('instance-id')

    def placement(self):
        """(region, zone) of this instance."""
        return self.meta('region-id'), self.meta('zone-id')

    def private_ip(self):
        return self.meta('private-ipv4')

    def credentials(self):
        """The node role's STS credentials, in the form botocore's refreshable credentials take."""
        c = json.loads(self.meta('ram/security-credentials/' + self.cfg['identity']['roleName']))
        if c.get('Code', 'Success') != 'Success':
            raise OSError(f"role credentials: {c.get('Code')}")
        return {'access_key': c['AccessKeyId'], 'secret_key': c['AccessKeySecret'],
                'token': c['SecurityToken'], 'expiry_time': c['Expiration']}

    def spot_notice(self):
        """Termination time of a reclaimed spot instance (UTC, ISO with Z), or None."""
        t = self.meta('instance/spot/termination-time')
        return datetime.fromisoformat(t.replace('Z', '+00:00')).astimezone(timezone.utc) if t else None

    def client(self):
        from alibabacloud_ecs20140526.client import Client
        from alibabacloud_tea_openapi.models import Config
        c, api = self.credentials(), self.cfg['endpoints'].get('cloudApi')
        u = urlsplit(api) if api else None
        # endpoint None lets the SDK resolve the region's public ECS endpoint.
        return Client(Config(access_key_id=c['access_key'], access_key_secret=c['secret_key'],
                             security_token=c['token'], region_id=self.cfg['region'],
                             endpoint=u and u.netloc, protocol=u and u.scheme))

    def release(self):
        """DeleteInstance(Force=True): the node role may release only its own stack's instances."""
        from alibabacloud_ecs20140526.models import DeleteInstanceRequest
        self.client().delete_instance(DeleteInstanceRequest(instance_id=self.instance_id(), force=True))

    def retire_pool(self):
        """Stop this stack's spot pool (found by `cluster.poolName`) from replacing nodes; what was done.

        DeleteAutoProvisioningGroup with TerminateInstances=false: the group is gone, its instances keep
        running (each one still has the launch template's auto_release_time). ModifyAutoProvisioningGroup
        cannot do it: TotalTargetCapacity must be a positive integer. A group that is already deleted, or
        being deleted, counts as retired, so a second call changes nothing. Sources: docs/agent.md.
        """
        from alibabacloud_ecs20140526.models import DeleteAutoProvisioningGroupRequest as Delete
        from alibabacloud_ecs20140526.models import DescribeAutoProvisioningGroupsRequest as Describe
        name, region, api = self.cfg['cluster']['poolName'], self.cfg['region'], self.client()
        got = api.describe_auto_provisioning_groups(Describe(
            region_id=region, auto_provisioning_group_name=name, page_size=100)).body.to_map()
        # Exact name match: the name filter's matching rule is not documented.
        live = [self.meta.check('pool-id', g['AutoProvisioningGroupId'])
                for g in got.get('AutoProvisioningGroups', {}).get('AutoProvisioningGroup', []) if g.get('AutoProvisioningGroupName') == name and g.get('Status') not in ('deleted', 'deleted-running')]
        for pool in live:
            api.delete_auto_provisioning_group(Delete(region_id=region, auto_provisioning_group_id=pool,
                                                      terminate_instances=False))
        return f"deleted {', '.join(live)}, instances kept" if live else f'no live pool named {name}: already retired'

    def peers(self):
        """(instance id, private IP) of every running instance carrying this stack's tag."""
        from alibabacloud_ecs20140526.models import DescribeInstancesRequest as R
        from alibabacloud_ecs20140526.models import DescribeInstancesRequestTag as T
        k, out, page = self.cfg['cluster'], [], 1
        while True:
            b = self.client().describe_instances(R(
                region_id=self.cfg['region'], status='Running', page_size=100, page_number=page,
                tag=[T(key=k['tagKey'], value=k['tagValue'])])).body.to_map()
            got = b.get('Instances', {}).get('Instance', [])
            out += [(self.meta.check('instance-id', i['InstanceId']),
                     self.meta.check('private-ipv4', i['VpcAttributes']['PrivateIpAddress']['IpAddress'][0]))
                    for i in got]
            if len(got) < 100:
                return out
            page += 1
