"""Measure what the node agent costs in cloud-init user-data (16 KB encoded on Tencent and AWS).

Since the agent is delivered through object storage (docs/node-config.md, "Agent delivery"), only
the boot set rides in user-data: node_agent/__init__.py, s3.py, fetch.py and ONE provider's
node_runtime.py (as cloud_runtime.py). Its budget is 7 KB after the renderer's treatment:
docstrings and comments stripped (ast.unparse) and gzip -9. Printed per provider, one gzip stream
(how the renderer packs user-data) and per-file gzip (worst case), plus the whole agent for
reference; tests/agent/test_budget.py asserts the boot set.
"""
import ast
import gzip
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
AGENT = ROOT / 'node' / 'node_agent'
BOOT_SET = ('__init__.py', 's3.py', 'fetch.py')
BUDGET = 7 * 1024


def strip(source):
    """Source without docstrings and comments, as the renderer embeds it."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree) + '\n'


def sizes(provider, names=BOOT_SET):
    """{'files', 'stripped', 'gzip_stream', 'gzip_per_file'} in bytes; names=None: the whole agent."""
    files = sorted(AGENT.glob('*.py')) if names is None else [AGENT / n for n in names]
    files.append(ROOT / 'components' / 'providers' / provider / 'node_runtime.py')
    texts = [strip(f.read_text()).encode() for f in files]
    return {'files': len(files), 'stripped': sum(map(len, texts)),
            'gzip_stream': len(gzip.compress(b''.join(texts), 9, mtime=0)),
            'gzip_per_file': sum(len(gzip.compress(t, 9, mtime=0)) for t in texts)}


def main():
    worst = 0
    for p in ('alicloud', 'tencentcloud', 'aws'):
        for label, names in (('boot set', BOOT_SET), ('whole agent', None)):
            s = sizes(p, names)
            if names:
                worst = max(worst, s['gzip_stream'])
            print(f"{p:13s} {label:11s} {s['files']:2d} files: stripped {s['stripped']:6d} B, gzip -9 one stream "
                  f"{s['gzip_stream']:5d} B, per file {s['gzip_per_file']:5d} B, base64 of the stream "
                  f"{(s['gzip_stream'] + 2) // 3 * 4:5d} B")
    print(f'boot set worst case {worst} B = {100 * worst / BUDGET:.0f}% of the {BUDGET} B budget')
    return 0 if worst <= BUDGET else 1


if __name__ == '__main__':
    sys.exit(main())
