"""Huawei Cloud side of the node agent: metadata, agency credentials, spot notice, peers, pool retire, release.

Self-contained (shipped as node_agent/cloud_runtime.py): stdlib, plus the Huawei SDKs inside the methods
that call the API. Facts and sources: docs/huaweicloud.md, "Spot" and "Nodes".

The spot notice (docs/huaweicloud.md, "Reclaim notice"): GET /openstack/latest/spot/instance-action
"查询竞价实例关机提示 ... 如果您的竞价实例即将被中断，该接口会返回预计关机的时间", answer example
{"action":"terminate","timestamp":"2023-06-01 09:15:00"} (huaweicloudDocs/ecs@bd661adb
cn.zh-cn/用户指南/元数据获取.md, "Instance Action"); the platform notifies "约5分钟" before it reclaims
(购买竞价计费型实例.md, "配置中断回收提醒", 方式一 "通过元数据spot"). The timestamp's zone is not documented:
it is read both as UTC+8 and as UTC, and the earlier reading still in the future is taken (notice_time),
so a wrong guess can only make the agent stop early, never late. What the path answers when no reclaim
is scheduled is not documented either: a 404, or any answer that is not such a JSON object, is no notice.
The ECS API's own status of this server (ShowServer: deleting, stopped) stays as the fallback, at most
every SPOT_API_SECONDS.

Metadata token: where an ECS requires one (hardened "V2" metadata, ECS user guide ecs_03_2167 "Configuring
Instance Metadata Options": PUT http://169.254.169.254/meta-data/latest/api/token with
X-Metadata-Token-Ttl-Seconds, then X-Metadata-Token on each read; available in LA-Sao Paulo1), a read
the service refuses (401/403) fetches a token and is retried with it; without the requirement, reads go
tokenless as the metadata doc shows them.
"""
import json
import logging
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

SPOT_API_SECONDS = 5  # the ECS API is asked at most this often (the metadata path at every spot poll)
RECLAIMED_STATES = {'DELETED', 'SHUTOFF', 'ERROR'}
RECLAIMED_TASKS = {'deleting', 'powering-off'}
SPOT_PATH = '/openstack/latest/spot/instance-action'
TOKEN_PATH = '/meta-data/latest/api/token'  # ecs_03_2167 (not /latest/api/token as on Alibaba or AWS)
TOKEN_TTL = 21600  # seconds; the doc allows 1 to 360 minutes and suggests 21600
# The two readings of a zone-less notice timestamp: Beijing time (the cloud's home zone) and UTC.
READINGS = (timezone(timedelta(hours=8)), timezone.utc)

log = logging.getLogger('agent')
# The metadata service is link-local: never through a proxy from the environment.
_open = urllib.request.build_opener(urllib.request.ProxyHandler({})).open

_META = 'https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0166.html'
# The format of each identity value the node acts on (metadata path or API field: regex, source): the
# metadata reader takes any other answer (an HTML error page, an empty body) for no answer.
FORMATS = {
    'uuid': (r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', _META + ' (meta_data.json uuid: the ECS id)'),
    'project_id': (r'[0-9a-f]{32}', _META + ' (meta_data.json project_id)'),
    'local-ipv4': (r'([0-9]{1,3}\.){3}[0-9]{1,3}', _META),
    'pool-id': (r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', 'AS API: scaling_group_id is a UUID'),
}


def notice_time(body, now):
    """The reclaim moment a spot/instance-action answer names (aware UTC), or None when it names none.

    A timestamp with its own zone is taken as written. A zone-less one ("2023-06-01 09:15:00", the doc's
    example) is read as UTC+8 and as UTC; the earliest reading after `now` is the notice (the true one
    is about 5 minutes ahead, the other 8 hours away), and when neither is after `now` the reclaim is
    taken as due now. An action with a timestamp that does not parse is due now as well."""
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    if not (isinstance(answer, dict) and isinstance(answer.get('action'), str) and answer['action'].strip()):
        return None
    stamp = str(answer.get('timestamp') or '').strip().replace('T', ' ').replace('Z', '+00:00')
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        log.warning('spot notice %r: timestamp not understood, the reclaim is taken as due now', body[:200])
        return now
    readings = [moment] if moment.tzinfo else [moment.replace(tzinfo=zone) for zone in READINGS]
    ahead = [r.astimezone(timezone.utc) for r in readings if r > now]
    return min(ahead) if ahead else now


class Runtime:
    """One ECS seen from inside: its metadata service (a token only where the ECS requires one) and API."""

    def __init__(self, cfg, metadata):
        # metadata(...) is the agent's reader: used here for its format checks; the reads are this file's own
        # (Huawei's paths and token differ from the /latest/meta-data/ reader's).
        self.cfg, self.meta = cfg, metadata(None, FORMATS)
        self.base = cfg['endpoints']['metadata'].rstrip('/')
        self._document = None
        self._token = (None, 0.0)  # (the metadata token, when to fetch a new one)
        self._spot = (0.0, None)  # (when the API was last asked, the notice it gave)
        self._odd = None  # the last spot answer that was no notice (logged once)

    # ---------------------------------------------------------------- metadata
    def _read(self, path):
        """(status, text) of one metadata path; a refused read (401/403) is retried once with a fresh token."""
        for attempt in (0, 1):
            token, until = self._token
            headers = {'X-Metadata-Token': token} if token and time.time() < until else {}
            try:
                with _open(urllib.request.Request(self.base + path, headers=headers), timeout=3) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                if e.code not in (401, 403) or attempt:
                    return e.code, e.read().decode(errors='replace')
            except OSError as e:
                raise OSError(f'metadata {path}: {e}') from None
            self._token = (self._new_token(), time.time() + TOKEN_TTL - 600)

    def _new_token(self):
        request = urllib.request.Request(self.base + TOKEN_PATH, method='PUT',
                                         headers={'X-Metadata-Token-Ttl-Seconds': str(TOKEN_TTL)})
        try:
            with _open(request, timeout=3) as r:
                return r.read().decode().strip()
        except (OSError, urllib.error.HTTPError) as e:
            raise OSError(f'metadata token ({TOKEN_PATH}): {e}') from None

    def _openstack(self, name):
        """An OpenStack-style metadata document (/openstack/latest/<name>) as JSON; OSError if unreadable."""
        status, text = self._read('/openstack/latest/' + name)
        try:
            if status != 200:
                raise OSError(f'HTTP {status}')
            return json.loads(text)
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
        status, text = self._read('/latest/meta-data/local-ipv4')
        return self.meta.check('local-ipv4', text.strip() if status == 200 else None)

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
        """When the cloud reclaims this ECS (aware UTC), or None: the metadata notice at every call; the ECS
        API (this server deleting or stopping unasked) at most every SPOT_API_SECONDS, for a reclaim that
        posts no notice. An unreadable metadata path is raised after the API had its turn."""
        failed = None
        try:
            notice = self._metadata_notice()
            if notice:
                return notice
        except OSError as e:
            failed = e
        notice = self._api_notice()
        if notice is None and failed:
            raise failed
        return notice

    def _metadata_notice(self):
        status, text = self._read(SPOT_PATH)
        if status == 404:
            return None
        if status != 200:
            raise OSError(f'metadata {SPOT_PATH}: HTTP {status}')
        notice = notice_time(text, datetime.now(timezone.utc))
        if notice is None and text != self._odd:
            self._odd = text
            log.warning('%s answered %r: not a spot notice ({"action": ..., "timestamp": ...}); ignored',
                        SPOT_PATH, text[:200])
        return notice

    def _api_notice(self):
        """Now, when the ECS API shows this server deleting or stopping (a reclaim, auto_terminate_time)."""
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
