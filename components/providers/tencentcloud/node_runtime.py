"""Tencent Cloud side of the node agent: metadata, CAM role credentials, spot notice, peers, pool retire, self-release.

Self-contained on purpose: the bootstrap copies this one file next to the agent on the node as
`node_agent/cloud_runtime.py`, so it imports nothing from `components` or `node_agent`. The agent
passes its metadata reader in (`metadata(token_header)(path)`); tencentcloud-sdk-python is imported only
when the cloud API is called. Facts: CVM docs 213/4934 (instance metadata) and 213/32487.
"""
import json
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

# The spot termination time is local Beijing time, "2018-08-18 12:05:33", not ISO 8601.
CST = timezone(timedelta(hours=8))


_META = 'https://www.tencentcloud.com/document/product/213/4934'
# The format of each identity value the node acts on (metadata path or API field: regex, source): the
# metadata reader takes any other answer (an HTML error page, an empty body) for no answer.
FORMATS = {
    'instance-id': (r'ins-[0-9a-z]{8}', 'https://www.tencentcloud.com/document/product/213/33258 (ins-xxxxxxxx)'),
    'placement/region': (r'[a-z]{2,}(-[a-z0-9]+){1,4}', _META + ' (ap-guangzhou)'),
    'placement/zone': (r'[a-z]{2,}(-[a-z0-9]+){1,5}', _META + ' (ap-guangzhou-3)'),
    'local-ipv4': (r'([0-9]{1,3}\.){3}[0-9]{1,3}', _META),
    'pool-id': (r'asg-[0-9a-z]{8}', 'https://www.tencentcloud.com/document/api/377/20438 (asg-nkdwoui0)'),
}


class Runtime:
    """One CVM instance seen from inside (the metadata service has no session token)."""

    def __init__(self, cfg, metadata):
        # metadata(token_header, formats) -> read(path): the agent's reader (node_agent/s3.py Metadata); Tencent's metadata service has no session token.
        self.cfg, self.meta = cfg, metadata(None, FORMATS)

    def instance_id(self):
        return self.meta('instance-id')

    def placement(self):
        """(region, zone) of this instance."""
        return self.meta('placement/region'), self.meta('placement/zone')

    def private_ip(self):
        return self.meta('local-ipv4')

    def credentials(self):
        """The node role's temporary credentials, in the form botocore's refreshable credentials take."""
        c = json.loads(self.meta('cam/security-credentials/' + self.cfg['identity']['roleName']))
        if c.get('Code', 'Success') != 'Success':
            raise OSError(f"role credentials: {c.get('Code')}")
        return {'access_key': c['TmpSecretId'], 'secret_key': c['TmpSecretKey'], 'token': c['Token'],
                'expiry_time': datetime.fromtimestamp(int(c['ExpiredTime']), timezone.utc).isoformat()}

    def spot_notice(self):
        """Termination time of a reclaimed spot instance as an aware UTC datetime, or None."""
        t = self.meta('spot/termination-time')
        if not t:
            return None
        return datetime.strptime(t, '%Y-%m-%d %H:%M:%S').replace(tzinfo=CST).astimezone(timezone.utc)

    def call(self, action, params, service='cvm', version='2017-03-12'):
        """One API 3.0 action of any product (CommonClient: only tencentcloud-sdk-python-common is needed)."""
        from tencentcloud.common.common_client import CommonClient
        from tencentcloud.common.credential import Credential
        from tencentcloud.common.profile.client_profile import ClientProfile
        from tencentcloud.common.profile.http_profile import HttpProfile
        c, api = self.credentials(), self.cfg['endpoints'].get('cloudApi')
        u = urlsplit(api) if api else None
        # endpoint None lets the SDK use <service>.tencentcloudapi.com.
        hp = HttpProfile(endpoint=u and u.netloc, protocol=u and u.scheme)
        cl = CommonClient(service, version, Credential(c['access_key'], c['secret_key'], c['token']),
                          self.cfg['region'], ClientProfile(httpProfile=hp))
        return cl.call_json(action, params)['Response']

    def release(self):
        """TerminateInstances on this instance: the CAM role allows it for this stack only."""
        self.call('TerminateInstances', {'InstanceIds': [self.instance_id()]})

    def retire_pool(self):
        """Stop this stack's spot pool (the scaling group named `cluster.poolName`) from replacing nodes.

        DisableAutoScalingGroup: a disabled group runs no desired-capacity scaling, no unhealthy-instance
        replacement, no alarm policy and no scheduled action, and leaves its instances alone (AS doc
        377/31010). A disabled group counts as retired, so a second call changes nothing. Returns what
        was done. Sources: docs/agent.md.
        """
        name = self.cfg['cluster']['poolName']
        got = self.call('DescribeAutoScalingGroups', {'Filters': [{'Name': 'auto-scaling-group-name', 'Values': [name]}],
                                                      'Limit': 100}, 'as', '2018-04-19')
        live = [self.meta.check('pool-id', g['AutoScalingGroupId']) for g in got.get('AutoScalingGroupSet') or []
                if g.get('AutoScalingGroupName') == name and g.get('EnabledStatus') != 'DISABLED']
        for group in live:
            self.call('DisableAutoScalingGroup', {'AutoScalingGroupId': group}, 'as', '2018-04-19')
        return f"disabled {', '.join(live)}" if live else f'no enabled pool named {name}: already retired'

    def peers(self):
        """(instance id, private IP) of every running instance carrying this stack's tag."""
        k, out = self.cfg['cluster'], []
        while True:
            r = self.call('DescribeInstances', {'Offset': len(out), 'Limit': 100, 'Filters': [
                {'Name': 'tag:' + k['tagKey'], 'Values': [k['tagValue']]},
                {'Name': 'instance-state', 'Values': ['RUNNING']}]})
            got = r.get('InstanceSet') or []
            out += [(self.meta.check('instance-id', i['InstanceId']),
                     self.meta.check('local-ipv4', i['PrivateIpAddresses'][0])) for i in got]
            if len(got) < 100:
                return out
