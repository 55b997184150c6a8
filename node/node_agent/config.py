"""Read and check the node config (docs/node-config.md): every problem at once, exit 2, no traceback.

Only the keys the agent reads are checked; unknown keys are ignored (forward compatible). Defaults
are written into the dict, so the rest of the agent indexes it directly. Seconds, minutes and hours
may be fractional, so tests and rehearsals run in seconds.
"""
import json
import sys

REQUIRED = ('stack provider region paths.checkpoints paths.state paths.logs checkpoint.bucket '
            'train.command endpoints.metadata')
NUMBERS = ('agent.syncIntervalSeconds=300 agent.spotPollSeconds=0.5 agent.utilSampleSeconds=5 agent.idleMinutes=30 '
           'agent.idleUtilPercent=5 agent.maxHours=24 agent.ttlMarginMinutes=15 agent.maxGraceSeconds=120 '
           'agent.uploadAttempts=8 agent.uploadAllowanceSeconds=30 agent.retryBaseSeconds=1 agent.peerWaitMinutes=30 '
           'nodeCount=1 accelerator.count=1 train.gpusPerNode=1 train.rendezvousPort=29400 data.waitMinutes=30')
# The first choice is the default.
CHOICES = {'train.launcher': 'direct torchrun', 'checkpoint.verify.method': 'read-back etag-md5 crc64ecma content-md5',
           'accelerator.kind': 'nvidia ascend',
           'checkpoint.addressingStyle': 'virtual path', 'checkpoint.signatureVersion': 's3v4 s3',
           'train.stopSignal': 'SIGTERM SIGINT SIGHUP SIGUSR1 SIGUSR2 SIGQUIT'}
# Type-checked against the default's type (None: any value).
OTHER = {'checkpoint.prefix': '', 'paths.trainEnv': '/etc/gpu-training/train.env', 'paths.venv': '',
         'train.workdir': '/tmp', 'train.env': {}, 'agent.keep': False, 'checkpoint.endpoint': None,
         'checkpoint.region': None, 'checkpoint.verify.header': '', 'checkpoint.verify.contentMd5': False,
         'checkpoint.verify.flexibleChecksums': False, 'checkpoint.verify.sources': [],
         'identity.roleName': None, 'endpoints.cloudApi': None, 'cost': {}, 'cluster': {},
         'data.stage': False, 'paths.dataset': '/data/dataset', 'data.manifestSha256': None,
         'agent.expiresAt': None, 'train.setup': [], 'train.requirements': '', 'paths.data': '/data'}


def expiry(value):
    """agent.expiresAt (ISO 8601, UTC: the moment the cloud releases the node) as epoch seconds; None if unreadable."""
    from datetime import datetime, timezone
    try:
        moment = datetime.fromisoformat(str(value).replace('Z', '+00:00'))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def load(path):
    """The checked config dict; on any problem print them all to stderr and exit 2."""
    try:
        with open(path) as f:
            c = json.load(f)
        errs = [] if isinstance(c, dict) else [f'{path}: a JSON object is required']
    except (OSError, ValueError) as e:
        c, errs = {}, [f'{path}: cannot read the node config: {e}']
    c = c if isinstance(c, dict) else {}

    def slot(key, default, ok, allowed):
        d, (*parents, leaf) = c, key.split('.')
        for p in parents:
            if not isinstance(d.get(p), dict):
                if d.get(p) is not None:
                    errs.append(f'{p}: {d[p]!r} is not allowed: a JSON object is required')
                d[p] = {}
            d = d[p]
        if d.get(leaf) is None:
            d[leaf] = default
        if not ok(d[leaf]):
            errs.append(f'{key}: {d[leaf]!r} is not allowed: {allowed}')

    for k in REQUIRED.split():
        slot(k, '', lambda v: isinstance(v, str) and v.strip(), 'a non-empty string is required')
    for kv in NUMBERS.split():
        k, d = kv.split('=')
        slot(k, json.loads(d), lambda v: type(v) in (int, float) and v >= 0, 'a number >= 0 is required')
    for k, a in CHOICES.items():
        slot(k, a.split()[0], lambda v, a=a: v in a.split(), 'one of ' + a)
    for k, d in OTHER.items():
        slot(k, d, lambda v, d=d: d is None or type(v) is type(d), f'a {type(d).__name__} is required')
    if type(c['nodeCount']) in (int, float) and c['nodeCount'] > 1 and not c['cluster'].get('tagKey'):
        errs.append('cluster.tagKey: missing: peers are found by this tag when nodeCount > 1')
    if c['agent']['expiresAt'] is not None and expiry(c['agent']['expiresAt']) is None:
        errs.append(f"agent.expiresAt: {c['agent']['expiresAt']!r} is not allowed: an ISO 8601 UTC time"
                    " (2026-12-07T13:48:00Z) is required")
    if isinstance(c['train']['setup'], list) and not all(isinstance(x, str) and x.strip() for x in c['train']['setup']):
        errs.append(f"train.setup: {c['train']['setup']!r} is not allowed: a list of shell commands is required")
    if c['checkpoint']['verify']['method'] == 'crc64ecma' and not c['checkpoint']['verify']['header']:
        errs.append('checkpoint.verify.header: missing: the crc64ecma method reads the CRC-64 from this response header')
    if errs:
        print('node agent: bad node config\n  ' + '\n  '.join(sorted(set(errs))), file=sys.stderr)
        sys.exit(2)
    return c

