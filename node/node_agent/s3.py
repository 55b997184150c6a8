"""Connections of a node: the metadata reader, the cloud runtime, the S3 client, the retry policy.

Part of the boot set (docs/node-config.md, "Agent delivery"): this file rides in user-data with
__init__.py, fetch.py, layout.py and cloud_runtime.py, so at import time it needs only the standard library;
boto3 and tenacity are imported where they are used. The cloud runtime is the provider's
`components/providers/<provider>/node_runtime.py`, copied next to this package as
`cloud_runtime.py` on a node (the bootstrap writes it there); the environment variable
GPU_TRAINING_RUNTIME_FILE names another file (the tests run the agent from the repository).
"""
import importlib.util
import logging
import os
import re
import sys
import time
import urllib.error
import urllib.request

L = logging.getLogger('agent')
# The metadata service is link-local: never send it through a proxy from the environment.
_open = urllib.request.build_opener(urllib.request.ProxyHandler({})).open


def http(method, url, headers=None):
    """(status, text); an HTTP error status is an answer, a connection problem raises OSError."""
    try:
        with _open(urllib.request.Request(url, method=method, headers=headers or {}), timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors='replace')


class Metadata:
    """Reads the instance metadata service under <base>/latest/meta-data/, for every cloud's runtime.

    token_header: the session-token header of a cloud that wants one (PUT /latest/api/token with
    `<token_header>-ttl-seconds`, then the token on every read: Alibaba's hardened mode, IMDSv2);
    None for a service without tokens. A 401/403 drops the token so the next read fetches a new one.
    formats: {path or name: (regex, source)}, the cloud's declared format of each identity value; a
    value that does not match (an HTML error page, an empty body, a 404) is no answer: OSError.
    """

    TTL = 21600

    def __init__(self, base, token_header=None, formats=None):
        self.base, self.header, self.token, self.until = base.rstrip('/'), token_header, None, 0
        self.formats = formats or {}

    def check(self, name, value):
        """value, when it has the declared format of `name`; OSError when it does not."""
        f = self.formats.get(name)
        if f and not (isinstance(value, str) and re.fullmatch(f[0], value)):
            raise OSError(f'{name}: {str(value)[:60]!r} is not a {name} ({f[0]}, {f[1]}): not trusted')
        return value

    def __call__(self, path):
        """The stripped value of one path; None when the service says 404 (e.g. no spot notice)."""
        headers = {}
        if self.header:
            if time.time() > self.until:
                st, tok = http('PUT', self.base + '/latest/api/token', {self.header + '-ttl-seconds': str(self.TTL)})
                if st != 200:
                    raise OSError(f'metadata token: HTTP {st}')
                self.token, self.until = tok.strip(), time.time() + self.TTL - 600
            headers[self.header] = self.token
        st, body = http('GET', f'{self.base}/latest/meta-data/{path}', headers)
        if st in (401, 403):
            self.until = 0  # token expired or revoked: fetch a new one next time
        if st not in (200, 404):
            raise OSError(f'metadata {path}: HTTP {st}')
        return self.check(path, body.strip() if st == 200 else None)


def runtime(cfg):
    """The provider's Runtime(cfg, metadata); exit 2 when the provider has none."""
    here = os.path.dirname(os.path.abspath(__file__))
    p = os.environ.get('GPU_TRAINING_RUNTIME_FILE') or here + '/cloud_runtime.py'
    if not os.path.exists(p):
        print(f"node agent: provider: {cfg['provider']!r} is not allowed: no node runtime at {p}", file=sys.stderr)
        sys.exit(2)
    spec = importlib.util.spec_from_file_location('cloud_runtime', p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.Runtime(cfg, lambda token_header=None, formats=None: Metadata(cfg['endpoints']['metadata'], token_header,
                                                                           formats))


def client(cfg, credentials=None):
    """boto3 S3 client for checkpoint.*: endpoint, addressing style, signature, the store's checksum support.

    credentials: a callable returning botocore's credential dict (the node role, refreshed before
    it expires); None uses boto3's default chain.
    """
    import boto3
    from botocore.config import Config
    k = cfg['checkpoint']
    session = boto3.Session()
    if credentials:
        from botocore.credentials import RefreshableCredentials
        session._session._credentials = RefreshableCredentials.create_from_metadata(
            credentials(), credentials, 'node-role')
    extra = {}
    if not (k.get('verify') or {}).get('flexibleChecksums'):
        # Declared by the store (checkpoint.verify): OSS and COS reject the CRC32 botocore >= 1.36 sends by default.
        extra = {'request_checksum_calculation': 'when_required', 'response_checksum_validation': 'when_required'}
    return session.client('s3', endpoint_url=k.get('endpoint'), region_name=k.get('region') or cfg['region'],
                          config=Config(signature_version=k.get('signatureVersion') or 's3v4', connect_timeout=5,
                                        read_timeout=60, retries={'mode': 'standard', 'total_max_attempts': 2},
                                        max_pool_connections=32,
                                        s3={'addressing_style': k.get('addressingStyle') or 'virtual'}, **extra))


def root(cfg):
    """<prefix>/<stack>/: where this stack's objects live."""
    from . import layout  # here, not at the top: the runtime loader above must work with s3.py alone
    return layout.stack_root(cfg['checkpoint']['prefix'], cfg['stack'])


def retrying(cfg):
    """Decorator: agent.uploadAttempts tries, exponential backoff from agent.retryBaseSeconds (max 30 s)."""
    from tenacity import retry, stop_after_attempt, wait_exponential
    a = cfg['agent']
    return retry(stop=stop_after_attempt(a['uploadAttempts']), wait=wait_exponential(a['retryBaseSeconds'], max=30),
                 reraise=True,
                 before_sleep=lambda s: L.warning('try %d failed: %s', s.attempt_number, s.outcome.exception()))
