"""Alibaba Cloud side of the node agent in an ACK pod (the Kubernetes path): the pod's credentials and the
node's spot notice.

Everything else a pod runtime does is Kubernetes' own (node/node_agent/pod.py, PodRuntime: the pod's name
and IP, the Job's peers, the exit codes, nothing to release). What is Alibaba's:
- credentials: RRSA. ack-pod-identity-webhook injects ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN
  and ALIBABA_CLOUD_OIDC_TOKEN_FILE, and STS AssumeRoleWithOIDC trades the ServiceAccount's token for the pod
  role's STS credentials (an anonymous call: no key is sent; STS API reference "AssumeRoleWithOIDC", ACK doc
  "Use RRSA to authorize different pods to access different cloud services"). Without those variables, the
  node's role through the metadata service;
- reclaim: the node's own spot notice (instance/spot/termination-time, with the hardened service's token),
  read through the node's metadata service as the node-role fallback below reads it, gives the trainer the
  notice's grace as on a VM; where the pod cannot reach that service (a network policy) the poll stops after
  NOTICE_MISSES failures, said once, and the drain's SIGTERM (the kubelet's eviction) is what stops the agent.

The boot-set ConfigMap carries it as node_agent/cloud_runtime.py, beside node_agent/pod.py.
"""
import json
import logging
import os
import time
import urllib.parse
import urllib.request

from node_agent.pod import PodRuntime

STS_ENDPOINT = 'https://sts.aliyuncs.com'
STS_VERSION = '2015-04-01'
NOTICE_MISSES = 3  # failed reads of the node's spot notice before the pod stops asking
NOTICE_PATH = 'instance/spot/termination-time'  # ECS doc "Instance metadata" (node_runtime.py)
log = logging.getLogger('agent')


class Runtime(PodRuntime):
    """One pod of the training Job on ACK."""

    def __init__(self, cfg, metadata):
        super().__init__(cfg, metadata)
        self._notice_reader, self._misses = None, 0

    def credentials(self):
        """STS credentials of the pod's role (RRSA), else of the node's role (metadata service)."""
        role, provider = os.environ.get('ALIBABA_CLOUD_ROLE_ARN'), os.environ.get('ALIBABA_CLOUD_OIDC_PROVIDER_ARN')
        token_file = os.environ.get('ALIBABA_CLOUD_OIDC_TOKEN_FILE')
        if role and provider and token_file:
            with open(token_file) as f:  # the kubelet rotates the projected token: read it every time
                token = f.read().strip()
            form = urllib.parse.urlencode({
                'Action': 'AssumeRoleWithOIDC', 'Version': STS_VERSION, 'Format': 'JSON', 'RoleArn': role,
                'OIDCProviderArn': provider, 'OIDCToken': token, 'DurationSeconds': '3600',
                'RoleSessionName': f"gpu-training-{self.instance_id()}"[:64],
                'Timestamp': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}).encode()
            endpoint = (self.cfg.get('endpoints') or {}).get('sts') or os.environ.get('GPU_TRAINING_STS_ENDPOINT') \
                or STS_ENDPOINT
            request = urllib.request.Request(endpoint.rstrip('/') + '/', data=form, method='POST',
                                             headers={'Content-Type': 'application/x-www-form-urlencoded'})
            with urllib.request.urlopen(request, timeout=10) as r:
                c = json.loads(r.read().decode())['Credentials']
        else:
            read = self.metadata('X-aliyun-ecs-metadata-token')
            c = json.loads(read('ram/security-credentials/' + self.cfg['identity']['roleName']))
            if c.get('Code', 'Success') != 'Success':
                raise OSError(f"role credentials: {c.get('Code')}")
        return {'access_key': c['AccessKeyId'], 'secret_key': c['AccessKeySecret'],
                'token': c['SecurityToken'], 'expiry_time': c['Expiration']}

    def spot_notice(self):
        """The node's termination time (aware UTC) read from the pod, or None (none posted, or unreachable)."""
        from datetime import datetime, timezone
        if self._misses >= NOTICE_MISSES:
            return None
        try:
            if self._notice_reader is None:
                self._notice_reader = self.metadata('X-aliyun-ecs-metadata-token')
            t = self._notice_reader(NOTICE_PATH)
        except OSError as e:
            self._misses += 1
            if self._misses == NOTICE_MISSES:
                log.warning("the node's spot notice is not readable from this pod (%s): not asked again; a drain's"
                            " SIGTERM still stops the trainer with its grace", e)
            return None
        self._misses = 0
        return datetime.fromisoformat(t.replace('Z', '+00:00')).astimezone(timezone.utc) if t else None
