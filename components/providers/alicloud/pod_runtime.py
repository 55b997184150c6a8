"""Alibaba Cloud side of the node agent in an ACK pod (the Kubernetes path): the pod runtime.

The same contract as node_runtime.py (components/providers/contract.py, NodeRuntime), seen from a pod
of the training Job (components/kubernetes/manifests.py) instead of an ECS instance:
- identity: the pod's stable name `<job>-<index>` (an Indexed Job recreates an evicted pod under the
  same index), its IP from the downward API, the region from the node config;
- credentials: RRSA. ack-pod-identity-webhook injects ALIBABA_CLOUD_ROLE_ARN,
  ALIBABA_CLOUD_OIDC_PROVIDER_ARN and ALIBABA_CLOUD_OIDC_TOKEN_FILE, and STS AssumeRoleWithOIDC trades
  the ServiceAccount's token for the pod role's STS credentials (an anonymous call: no key is sent;
  STS API reference "AssumeRoleWithOIDC", ACK doc "Use RRSA to authorize different pods to access
  different cloud services"). Without those variables, the node's role through the metadata service;
- reclaim: the node's own spot notice (instance/spot/termination-time, with the hardened service's token),
  read through the node's metadata service as the node-role fallback below reads it, gives the trainer the
  notice's grace as on a VM; where the pod cannot reach that service (a network policy) the poll stops after
  NOTICE_MISSES failures, said once, and the drain's SIGTERM (the kubelet's eviction) is what stops the agent;
- peers: the Job's N pod names, resolvable through the headless Service; pod 0 hosts the rendezvous;
- release and pool: nothing. The Job ends when its pods do; the cluster autoscaler removes idle GPU
  nodes, and scripts/run.py destroys the stack once the markers say the data is safe.
- exit_code(outcome): how the pod ends, read by the Job's podFailurePolicy (manifests.EXIT_*).

Self-contained like node_runtime.py: the ConfigMap of the boot set carries it as node_agent/cloud_runtime.py.
"""
import json
import logging
import os
import socket
import time
import urllib.parse
import urllib.request

STS_ENDPOINT = 'https://sts.aliyuncs.com'
STS_VERSION = '2015-04-01'
NOTICE_MISSES = 3  # failed reads of the node's spot notice before the pod stops asking
NOTICE_PATH = 'instance/spot/termination-time'  # ECS doc "Instance metadata" (node_runtime.py)
log = logging.getLogger('agent')
# The Job's podFailurePolicy (components/kubernetes/manifests.py): 75 recreate, 76 fail the Job.
EXIT_CODES = {'DONE': 0, 'PREEMPTED': 75, 'FAILED': 76}


class Runtime:
    """One pod of the training Job."""

    def __init__(self, cfg, metadata):
        self.cfg, self.metadata = cfg, metadata
        self.k8s = cfg['cluster']['kubernetes']
        self.index = int(os.environ.get('JOB_COMPLETION_INDEX', '0'))  # set by Kubernetes for Indexed Jobs
        self._notice_reader, self._misses = None, 0

    def _name(self, index):
        return f"{self.k8s['job']}-{index}"

    def instance_id(self):
        return self._name(self.index)

    def placement(self):
        return self.cfg['region'], os.environ.get('NODE_NAME') or 'unknown-node'

    def private_ip(self):
        return os.environ.get('POD_IP') or socket.gethostbyname(socket.gethostname())

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

    def release(self):
        return None  # the pod exits; the Job completes and the autoscaler removes the idle node

    def retire_pool(self):
        return 'a pod has no pool to retire: the GPU node pool scales to zero when idle'

    def peers(self):
        """(pod name, DNS name) of every pod of the Job; the same list on every pod."""
        host = self.k8s['peerHost']
        return [(self._name(i), host.format(job=self.k8s['job'], index=i, service=self.k8s['service']))
                for i in range(int(self.cfg['nodeCount']))]

    def exit_code(self, outcome):
        return EXIT_CODES.get(outcome, 1)
