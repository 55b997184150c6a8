"""Measure what the node agent costs in cloud-init user-data.

Since the agent is delivered through object storage (docs/node-config.md, "Agent delivery"), only
the loader set rides in user-data: node_agent/__init__.py, s3.py, loader.py and ONE provider's
node_runtime.py (as cloud_runtime.py); the boot set (with fetch.py and layout.py) comes in the boot
payload the loader fetches (docs/bootstrap.md, "The loader"). Each has a budget of 7 KB after the
renderer's treatment. The
figures come from the renderer itself (components.bootstrap.agentfiles.boot_files: docstrings
stripped by ast, comments lost in the round trip) and gzip -9; printed per registered provider, one
gzip stream (how the renderer packs user-data) and per-file gzip (worst case), plus the whole agent
for reference. tests/agent/test_budget.py asserts the boot set with the same function.
"""
import gzip
import sys

from components import providers
from components.artifacts import AGENT_SRC, BOOT_SET, LOADER_SET
from components.bootstrap.agentfiles import boot_files

BUDGET = 7 * 1024


def sizes(provider, names=BOOT_SET):
    """{'files', 'stripped', 'gzip_stream', 'gzip_per_file'} in bytes; names=None: the whole agent."""
    names = tuple(sorted(p.name for p in AGENT_SRC.glob('*.py'))) if names is None else names
    texts = [f.content.encode() for f in boot_files(provider, '/opt/gpu-training', boot_set=names)]
    return {'files': len(texts), 'stripped': sum(map(len, texts)),
            'gzip_stream': len(gzip.compress(b''.join(texts), 9, mtime=0)),
            'gzip_per_file': sum(len(gzip.compress(t, 9, mtime=0)) for t in texts)}


def main():
    worst = 0
    for p in providers.names():
        for label, names in (('loader set', LOADER_SET), ('boot set', BOOT_SET), ('whole agent', None)):
            s = sizes(p, names)
            if names:
                worst = max(worst, s['gzip_stream'])
            print(f"{p:13s} {label:11s} {s['files']:2d} files: stripped {s['stripped']:6d} B, gzip -9 one stream "
                  f"{s['gzip_stream']:5d} B, per file {s['gzip_per_file']:5d} B, base64 of the stream "
                  f"{(s['gzip_stream'] + 2) // 3 * 4:5d} B")
    print(f'loader or boot set worst case {worst} B = {100 * worst / BUDGET:.0f}% of the {BUDGET} B budget')
    return 0 if worst <= BUDGET else 1


if __name__ == '__main__':
    sys.exit(main())
