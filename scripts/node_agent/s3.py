"""Load the cloud runtime (one file per provider), give it a metadata HTTP helper; retry policy.

On a node the bootstrap copies `components/providers/<provider>/node_runtime.py` next to this
package as `cloud_runtime.py`; in the repository the file is found in place. The environment
variable GPU_TRAINING_RUNTIME_FILE overrides both (rehearsals, tests).
"""
import importlib.util
import logging
import os
import sys
import urllib.error
import urllib.request

from tenacity import retry, stop_after_attempt, wait_exponential

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


def retrying(cfg):
    """Decorator: agent.uploadAttempts tries, exponential backoff from agent.retryBaseSeconds (max 30 s)."""
    a = cfg['agent']
    return retry(stop=stop_after_attempt(a['uploadAttempts']), wait=wait_exponential(a['retryBaseSeconds'], max=30),
                 reraise=True, before_sleep=lambda s: L.warning('try %d failed: %s', s.attempt_number, s.outcome.exception()))


def runtime(cfg):
    """The provider's Runtime(cfg, http)."""
    here = os.path.dirname(os.path.abspath(__file__))
    p = os.environ.get('GPU_TRAINING_RUNTIME_FILE') or here + '/cloud_runtime.py'
    if not os.path.exists(p) and p.endswith('/cloud_runtime.py'):
        p = f"{here}/../../components/providers/{cfg['provider']}/node_runtime.py"
    if not os.path.exists(p):
        print(f"node agent: provider: {cfg['provider']!r} is not allowed: no node runtime at {p}", file=sys.stderr)
        sys.exit(2)
    spec = importlib.util.spec_from_file_location('cloud_runtime', p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.Runtime(cfg, http)
