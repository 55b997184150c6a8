"""The stack's layout in its bucket: the one copy, for the program, the agent, run.py and the rehearsal.

    <prefix>/<stack>/boot/<sha256>.json                the boot payload (fetched by the loader in user-data)
    <prefix>/<stack>/agent/<file>                      the node agent (fetched by the bootstrap)
    <prefix>/<stack>/code/<file>                       the user's training code
    <prefix>/<stack>/checkpoints/objects/<sha256>      checkpoint file contents, keyed by their hash
    <prefix>/<stack>/checkpoints/manifests/<id>.json   one snapshot (written last)
    <prefix>/<stack>/checkpoints/quarantine/<id>.json  a snapshot found damaged
    <prefix>/<stack>/markers/<node>.json               each node's state
    <prefix>/<stack>/report/<node>/<file>              each node's utilisation report
    <prefix>/<stack>/logs/<node>/<log>.<nnnn>          each node's trainer.log and agent.log, in segments
    <prefix>/<stack>/data/manifest.json                the packed data set (scripts/pack.py), written last
    <prefix>/<stack>/data/<shard>.tar                  its shards (docs/data.md)
    <prefix>/<stack>/setup/<key>/                      wheels of the user's setup, manifest.json last (setup.py)

Part of the boot set (it rides in user-data with s3.py): standard library only, no imports.
Paths below are relative to the stack root unless they say otherwise.
"""
BOOT = 'boot/'
AGENT = 'agent/'
CODE = 'code/'
OBJECTS = 'checkpoints/objects/'
MANIFESTS = 'checkpoints/manifests/'
QUARANTINE = 'checkpoints/quarantine/'
MARKERS = 'markers/'
REPORT = 'report/'
LOGS = 'logs/'
DATA = 'data/'
# The packed data set's table of contents (docs/data.md): a data set exists once this object does.
DATA_MANIFEST = 'manifest.json'
DATA_FORMAT = 'gpu-training-shards/1'
SETUP = 'setup/'
SETUP_MANIFEST = 'manifest.json'


def stack_root(prefix, stack):
    """'<prefix>/<stack>/' (no leading slash; an empty prefix gives '<stack>/')."""
    return '/'.join(filter(None, ((prefix or '').strip('/'), stack))) + '/'


def marker(node):
    return f'{MARKERS}{node}.json'


def manifest(snapshot):
    return f'{MANIFESTS}{snapshot}.json'


def quarantine(snapshot):
    return f'{QUARANTINE}{snapshot}.json'


def report(node, name=''):
    return f'{REPORT}{node}/{name}'


def log(node, name=''):
    return f'{LOGS}{node}/{name}'


def setup(key):
    return f'{SETUP}{key}/'
