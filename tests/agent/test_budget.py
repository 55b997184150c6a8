"""The boot set (what of the agent rides in user-data) must stay within 7 KB gzip -9, one runtime included.

Measured by bench/agent_size.py the way the bootstrap renderer embeds files: docstrings and
comments stripped with ast, then gzip. The rest of the agent is fetched from object storage
(docs/node-config.md, "Agent delivery"); the boot set must not import it.
"""
import ast
import importlib.util

import pytest
from conftest import ROOT

spec = importlib.util.spec_from_file_location('agent_size', ROOT / 'bench' / 'agent_size.py')
size = importlib.util.module_from_spec(spec)
spec.loader.exec_module(size)


@pytest.mark.parametrize('provider', ['alicloud', 'tencentcloud', 'aws'])
def test_boot_set_plus_runtime_fits_7_kb_gzipped(provider):
    s = size.sizes(provider)
    assert s['gzip_stream'] <= size.BUDGET, s


def test_boot_set_imports_nothing_outside_itself():
    """fetch.py runs before the rest of the package exists on the node."""
    allowed = {'s3', 'fetch', 'cloud_runtime'}
    for name in size.BOOT_SET:
        tree = ast.parse((size.AGENT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module in allowed, f'{name} imports .{node.module}, which is not in the boot set'
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, 'level', 0):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert all(m.split('.')[0] in {'argparse', 'hashlib', 'json', 'os', 're', 'sys', 'time', 'importlib',
                                               'logging', 'urllib', 'boto3', 'botocore', 'tenacity'} for m in mods), mods


def test_stripping_keeps_the_code_runnable():
    out = size.strip((ROOT / 'node' / 'node_agent' / 'store.py').read_text())
    assert '"""' not in out
    compile(out, 'store.py', 'exec')
