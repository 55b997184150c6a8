"""Baidu AI Cloud side of the node agent: metadata, role credentials, bid reclaim notice, peers, self-release.

Self-contained on purpose: the bootstrap copies this one file next to the agent on the node as
`node_agent/cloud_runtime.py`, so it imports only the standard library (and bce-python-sdk inside
the methods that call the BCC API).

What exists on Baidu, as far as the sources read say (docs/baiducloud.md):
- The metadata service: http://169.254.169.254/1.0/meta-data/ with `instance-shortid` and
  `local-ipv4` [unverified: not found in the documents searched; the paths follow Baidu's BCC
  metadata page as commonly quoted]. The agent's own reader reads /latest/meta-data/, so this runtime
  reads the service itself (same rules: a value of the wrong format is no answer).
- Role credentials: http://169.254.169.254/latest/meta-data/sts-credential, the path BCC documents for
  an instance's IAM role (BCC "Set IAM Role", https://intl.cloud.baidu.com/en/doc/BCC/s/jm4bbrdmn-intl-en:
  `curl 169.254.169.254/latest/meta-data/sts-credential`). The page shows no answer: its fields are read
  as Baidu STS names them (accessKeyId, secretAccessKey, sessionToken, expiration: bce-sdk-go
  doc/STS.md, GetSessionToken) [unverified for the metadata document].
- Bid reclaim notice: none is documented for the VM. spot_notice() always answers None; a reclaimed
  bid node stops without warning, and what the agent uploaded last is the resume point.
- Self-release: the BCC POST release with the related resources (POST /v2/instance/<id>,
  bce-python-sdk 0.9.79 bcc_client.release_instance_with_related_resources, API page "Release Postpay
  Instances", https://intl.cloud.baidu.com/en/doc/BCC/s/nk0m0kvzd-intl-en), signed with the role's
  credentials: relatedReleaseFlag frees the CDS data disk and the public IP with the instance. The
  DELETE release (release_instance) detaches the disk and keeps it, and the EIP, billing.
- Peers: BCC ListInstances filtered by the stack tag (GET /v2/instance?tags=<key>:<value>).
- No pool: BCC has no group of bid instances, so there is nothing to retire.
"""
import json
import re
import urllib.error
import urllib.request

PREFIX = '/1.0/meta-data/'
CREDENTIALS_PATH = '/latest/meta-data/sts-credential'  # BCC "Set IAM Role" (module docstring)
FORMATS = {
    'instance-shortid': (r'i-[0-9A-Za-z]{8}', 'BCC instance ids: i- and 8 letters or digits (i-jL2s2hBI, SDK docs)'),
    'local-ipv4': (r'([0-9]{1,3}\.){3}[0-9]{1,3}', 'an IPv4 address'),
    'region': (r'[a-z]{2,4}', 'BCE region names: bj, gz, su, bd, fwh, hkg (BOS doc "服务域名")'),
    'azone': (r'[a-z]{2,}(-[a-z0-9]+){1,3}', 'BCC zone names, e.g. cn-bj-a (BCC API zoneName)'),
}


class Runtime:
    """One BCC instance seen from inside (no session-token mode is documented for its metadata service)."""

    def __init__(self, cfg, metadata):
        # `metadata` (the agent's reader of /latest/meta-data/) is not used: Baidu's prefix differs.
        self.cfg = cfg
        self.root = cfg['endpoints']['metadata'].rstrip('/')
        self.base = self.root + PREFIX

    def _read(self, path, url=None):
        try:
            with urllib.request.urlopen(url or self.base + path, timeout=5) as answer:
                value = answer.read().decode().strip()
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise OSError(f'metadata {path}: HTTP {error.code}') from None
        rule = FORMATS.get(path)
        if rule and not re.fullmatch(rule[0], value):
            raise OSError(f'{path}: {value[:60]!r} is not a {path} ({rule[0]}, {rule[1]}): not trusted')
        return value

    def instance_id(self):
        return self._read('instance-shortid')

    def placement(self):
        """(region, zone) of this instance."""
        return self._read('region'), self._read('azone')

    def private_ip(self):
        return self._read('local-ipv4')

    def credentials(self):
        """The node role's temporary credentials, in the form botocore's refreshable credentials take."""
        c = json.loads(self._read('sts-credential', self.root + CREDENTIALS_PATH) or '{}')
        if not c.get('accessKeyId'):
            raise OSError(f'role credentials: none at {CREDENTIALS_PATH} of the metadata service (is the role'
                          f" {self.cfg['identity']['roleName']} bound to the instance?)")
        return {'access_key': c['accessKeyId'], 'secret_key': c['secretAccessKey'], 'token': c['sessionToken'],
                'expiry_time': c['expiration']}

    def spot_notice(self):
        """None: Baidu documents no reclaim notice that reaches a bid instance (module docstring)."""
        return None

    def client(self):
        from baidubce.auth.bce_credentials import BceCredentials
        from baidubce.bce_client_configuration import BceClientConfiguration
        from baidubce.services.bcc.bcc_client import BccClient
        c = self.credentials()
        endpoint = self.cfg['endpoints'].get('cloudApi') or f"https://bcc.{self.cfg['region']}.baidubce.com"
        bcc = BccClient(BceClientConfiguration(
            credentials=BceCredentials(c['access_key'], c['secret_key']), security_token=c['token'],
            endpoint=endpoint))
        # The role's credentials are STS ones: every request needs x-bce-security-token, which
        # bce-python-sdk 0.9.79's BccClient does not send by itself (only its BOS/CFC/BTS clients do).
        original = bcc._send_request

        def send(http_method, path, body=None, headers=None, *args, **kwargs):
            headers = dict(headers or {})
            headers[b'x-bce-security-token'] = c['token'].encode()
            return original(http_method, path, body, headers, *args, **kwargs)
        bcc._send_request = send
        return bcc

    def release(self):
        """This instance, its data disk, their snapshots and its public IP, nothing to the recycle bin; the
        role may release only the stack's own instances. bcc_recycle_flag is passed because the SDK sends
        cdsAttributeActive only with it (bcc_client.py:4837)."""
        self.client().release_instance_with_related_resources(
            self.instance_id(), related_release_flag=True, delete_cds_snapshot_flag=True, bcc_recycle_flag=False,
            cds_attribute_active=False)

    def peers(self):
        """(instance id, private IP) of every running instance carrying this stack's tag."""
        k = self.cfg['cluster']
        out, marker = [], None
        while True:
            got = self.client().list_instances(marker=marker, max_keys=1000, status='Running',
                                               tags=f"{k['tagKey']}:{k['tagValue']}")
            for i in getattr(got, 'instances', None) or []:
                rule = FORMATS['instance-shortid']
                if re.fullmatch(rule[0], i.id) and re.fullmatch(FORMATS['local-ipv4'][0], i.internal_ip):
                    out.append((i.id, i.internal_ip))
            if not getattr(got, 'is_truncated', False):
                return out
            marker = got.next_marker

    def retire_pool(self):
        return 'no pool: BCC bid instances are not kept by a group on Baidu, nothing to retire'
