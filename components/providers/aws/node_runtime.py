"""AWS side of the node agent: IMDSv2 metadata, role credentials, spot instance-action, peers, self-release.

Self-contained on purpose: the bootstrap copies this one file next to the agent on the node as
`node_agent/cloud_runtime.py`, so it imports nothing from `components` or `node_agent`. The agent
passes its metadata reader in (`metadata(token_header)(path)`). Facts: ../../../../shared/REFERENCE.md.
"""
import json
import os
import shlex
import subprocess
from datetime import datetime, timezone


_META = 'https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-categories.html'
# The format of each identity value the node acts on (metadata path or API field: regex, source): the
# metadata reader takes any other answer (an HTML error page, an empty body) for no answer.
FORMATS = {
    'instance-id': (r'i-[0-9a-f]{8}([0-9a-f]{9})?',
                    'https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html (8 or 17 characters)'),
    'placement/region': (r'[a-z]{2}(-[a-z]+)+-[0-9]', _META + ' (us-east-1)'),
    'placement/availability-zone': (r'[a-z]{2}(-[a-z]+)+-[0-9]([a-z]|-[a-z0-9-]+)', _META + ' (us-east-1a)'),
    'local-ipv4': (r'([0-9]{1,3}\.){3}[0-9]{1,3}', _META),
}


class Runtime:
    """One EC2 instance seen from inside, through IMDSv2 (session token required)."""

    def __init__(self, cfg, metadata):
        # metadata(token_header, formats) -> read(path): the agent's reader (node_agent/s3.py Metadata); IMDSv2: 401 without the token.
        self.cfg, self.meta = cfg, metadata('X-aws-ec2-metadata-token', FORMATS)

    def instance_id(self):
        return self.meta('instance-id')

    def placement(self):
        """(region, zone) of this instance."""
        return self.meta('placement/region'), self.meta('placement/availability-zone')

    def private_ip(self):
        return self.meta('local-ipv4')

    def credentials(self):
        """The instance profile's credentials, in the form botocore's refreshable credentials take."""
        c = json.loads(self.meta('iam/security-credentials/' + self.cfg['identity']['roleName']))
        if c.get('Code', 'Success') != 'Success':
            raise OSError(f"role credentials: {c.get('Code')}")
        return {'access_key': c['AccessKeyId'], 'secret_key': c['SecretAccessKey'],
                'token': c['Token'], 'expiry_time': c['Expiration']}

    def spot_notice(self):
        """Time of a scheduled spot stop/terminate (instance-action JSON), or None."""
        a = self.meta('spot/instance-action')
        if not a:
            return None
        return datetime.fromisoformat(json.loads(a)['time'].replace('Z', '+00:00')).astimezone(timezone.utc)

    def release(self):
        """Power off: the launch template sets instance_initiated_shutdown_behavior=terminate."""
        # The override lets tests and rehearsals record the request instead of halting the host.
        subprocess.run(shlex.split(os.environ.get('GPU_TRAINING_SHUTDOWN_CMD', 'shutdown -h now')), check=True)

    def retire_pool(self):
        """Not applicable yet: AWS is not a registered provider, so no AWS stack has a spot pool (an Auto
        Scaling group) and node configs carry no `cluster.poolName` for one. See docs/agent.md."""
        return 'not applicable: no AWS spot pool exists yet'

    def peers(self):
        """(instance id, private IP) of every running instance carrying this stack's tag."""
        import boto3
        c, k = self.credentials(), self.cfg['cluster']
        ec2 = boto3.client('ec2', region_name=self.cfg['region'], endpoint_url=self.cfg['endpoints'].get('cloudApi'),
                           aws_access_key_id=c['access_key'], aws_secret_access_key=c['secret_key'],
                           aws_session_token=c['token'])
        pages = ec2.get_paginator('describe_instances').paginate(Filters=[
            {'Name': 'tag:' + k['tagKey'], 'Values': [k['tagValue']]},
            {'Name': 'instance-state-name', 'Values': ['running']}])
        return [(self.meta.check('instance-id', i['InstanceId']), self.meta.check('local-ipv4', i['PrivateIpAddress']))
                for p in pages for r in p['Reservations'] for i in r['Instances']]
