"""Measure what the node agent costs in cloud-init user-data (the 16 KB limit of Tencent and AWS).

The bootstrap renderer strips docstrings and comments (ast.unparse) and gzips what it embeds. The
agent's budget is 7 KB for every scripts/node_agent/*.py plus ONE provider node_runtime.py, measured
here both ways a renderer may pack them: one gzip -9 stream over all files (tar-like), and the sum
of per-file gzip -9 sizes (worst case). Prints the figures per provider; tests/agent/test_budget.py
asserts them.
"""
import ast
import gzip
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
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


def sizes(provider):
    """{'files': n, 'stripped': bytes, 'gzip_stream': bytes, 'gzip_per_file': bytes} for one provider."""
    files = sorted((ROOT / 'scripts' / 'node_agent').glob('*.py'))
    files.append(ROOT / 'components' / 'providers' / provider / 'node_runtime.py')
    texts = [strip(f.read_text()).encode() for f in files]
    return {'files': len(files), 'stripped': sum(map(len, texts)),
            'gzip_stream': len(gzip.compress(b''.join(texts), 9, mtime=0)),
            'gzip_per_file': sum(len(gzip.compress(t, 9, mtime=0)) for t in texts)}


def main():
    worst = 0
    for p in ('alicloud', 'tencentcloud', 'aws'):
        s = sizes(p)
        worst = max(worst, s['gzip_per_file'])
        print(f"{p:13s} {s['files']} files, stripped {s['stripped']} B, gzip -9 one stream {s['gzip_stream']} B, "
              f"per file {s['gzip_per_file']} B (budget {BUDGET} B)")
    print(f'worst case {worst} B = {100 * worst / BUDGET:.0f}% of the budget; base64 adds a third: {worst * 4 // 3} B')
    return 0 if worst <= BUDGET else 1


if __name__ == '__main__':
    sys.exit(main())
