"""Huawei Cloud side of the node agent: metadata, agency credentials, reclaim detection, peers, pool retire, release.

Self-contained (shipped as node_agent/cloud_runtime.py): stdlib, plus the Huawei SDKs inside the methods
that call the API. Facts, sources and the reclaim gap (no in-VM spot notice): docs/huaweicloud.md, "Nodes".
"""
import json
import time
import urllib.request
from datetime import datetime, timezone

SPOT_API_SECONDS = 5  # the ECS API is asked at most this often (the agent asks every 2 s)
RECLAIMED_STATES = {'DELETED', 'SHUTOFF', 'ERROR'}
RECLAIMED_TASKS = {'deleting', 'powering-off'}

_META = 'https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0166.html'
# The format of each identity value the node acts on (metadata path or API field: regex, source): the
# metadata reader takes any other answer (an HTML error page, an empty body) for no answer.
FORMATS = {
    'uuid': (r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', _META + ' (meta_data.json uuid: the ECS id)'),
    'project_id': (r'[0-9a-f]{32}', _META + ' (meta_data.json project_id)'),
    'local-ipv4': (r'([0-9]{1,3}\.){3}[0-9]{1,3}', _META),
    'pool-id': (r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', 'AS API: scaling_group_id is a UUID'),
}


class Runtime:
    """One ECS seen from inside (the metadata service has no session token)."""

    def __init__(self, cfg, metadata):
        self.cfg, self.meta = cfg, metadata(None, FORMATS)
        self._document = None
        self._spot = (0.0, None)  # (when the API was last asked, the notice it gave)

    # ---------------------------------------------------------------- metadata
    def _openstack(self, name):
        """An OpenStack-style metadata document (/openstack/latest/<name>) as JSON; OSError if unreadable."""
        url = self.cfg['endpoints']['metadata'].rstrip('/') + '/openstack/latest/' + name
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read().decode())
        except (OSError, ValueError) as e:
            raise OSError(f'metadata {name}: {e}') from None

    def document(self):
        if self._document is None:
            d = self._openstack('meta_data.json')
            self._document = {'uuid': self.meta.check('uuid', d.get('uuid')),
                              'project_id': self.meta.check('project_id', d.get('project_id')),
                              'availability_zone': d.get('availability_zone')}
        return self._document

    def instance_id(self):
        return self.document()['uuid']

    def placement(self):
        """(region, zone) of this ECS."""
        return self.cfg['region'], self.document()['availability_zone']

    def project_id(self):
        return self.document()['project_id']

    def private_ip(self):
        return self.meta('local-ipv4')

    def credentials(self):
        """The agency's temporary credentials, in the form botocore's refreshable credentials take."""
        c = self._openstack('securitykey').get('credential') or {}
        if not all(c.get(k) for k in ('access', 'secret', 'securitytoken', 'expires_at')):
            raise OSError('securitykey: no agency credentials (is the agency attached, with op_svc_ecs?)')
        return {'access_key': c['access'], 'secret_key': c['secret'], 'token': c['securitytoken'],
                'expiry_time': c['expires_at']}

    # ---------------------------------------------------------------- the cloud API
    def _endpoint(self, service):
        return self.cfg['endpoints'].get('cloudApi') or f"https://{service}.{self.cfg['region']}.myhuaweicloud.com"

    def _client(self, service):
        from huaweicloudsdkcore.auth.credentials import BasicCredentials
        c = self.credentials()
        credentials = BasicCredentials(c['access_key'], c['secret_key'], self.project_id()).with_security_token(c['token'])
        if service == 'as':
            from huaweicloudsdkas.v1 import AsClient as Client
        else:
            from huaweicloudsdkecs.v2 import EcsClient as Client
        return Client.new_builder().with_credentials(credentials).with_endpoints([self._endpoint(service)]).build()

    def release(self):
        """Delete this ECS with its EIP and disks; only our own id is sent (the agency cannot be tag-scoped)."""
        from huaweicloudsdkecs.v2 import DeleteServersRequest, DeleteServersRequestBody, ServerId
        body = DeleteServersRequestBody(servers=[ServerId(id=self.instance_id())], delete_publicip=True,
                                        delete_volume=True)
        self._client('ecs').delete_servers(DeleteServersRequest(body=body))

    def spot_notice(self):
        """Now, when the cloud is deleting or stopping this ECS unasked (a spot reclaim, auto_terminate_time); else None."""
        asked, notice = self._spot
        if notice or time.time() - asked < SPOT_API_SECONDS:
            return notice
        from huaweicloudsdkecs.v2 import ShowServerRequest
        server = self._client('ecs').show_server(ShowServerRequest(server_id=self.instance_id())).server
        reclaimed = (server.status or '').upper() in RECLAIMED_STATES or \
            (server.os_ext_st_stask_state or '').lower() in RECLAIMED_TASKS
        self._spot = (time.time(), datetime.now(timezone.utc) if reclaimed else None)
        return self._spot[1]

    def retire_pool(self):
        """Pause this stack's AS group (`cluster.poolName`): it starts no replacement. Idempotent; says what it did."""
        from huaweicloudsdkas.v1 import (ListScalingGroupsRequest, PauseScalingGroupOption,
                                         PauseScalingGroupRequest)
        name = self.cfg['cluster']['poolName']
        client = self._client('as')
        groups = client.list_scaling_groups(ListScalingGroupsRequest(scaling_group_name=name)).scaling_groups or []
        live = [self.meta.check('pool-id', g.scaling_group_id) for g in groups
                if g.scaling_group_name == name and g.scaling_group_status != 'PAUSED']
        for group in live:
            client.pause_scaling_group(PauseScalingGroupRequest(
                scaling_group_id=group, body=PauseScalingGroupOption(action='pause')))
        return f"paused {', '.join(live)}" if live else f'no active pool named {name}: already retired'

    def peers(self):
        """(instance id, private IP) of every running ECS carrying this stack's tag."""
        from huaweicloudsdkecs.v2 import ListServersDetailsRequest
        k, out, client = self.cfg['cluster'], [], self._client('ecs')
        while True:
            r = client.list_servers_details(ListServersDetailsRequest(
                tags=f"{k['tagKey']}={k['tagValue']}", status='ACTIVE', limit=100, offset=len(out) // 100 + 1))
            got = r.servers or []
            for s in got:
                fixed = [a.addr for nets in (s.addresses or {}).values() for a in nets
                         if getattr(a, 'os_ext_ip_stype', 'fixed') == 'fixed' and a.version == '4']
                out.append((self.meta.check('uuid', s.id), self.meta.check('local-ipv4', fixed[0])))
            if len(got) < 100:
                return out
