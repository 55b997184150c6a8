"""The boot set (what of the agent rides in user-data) must stay within 7 KB gzip -9, one runtime included.

Measured with the renderer's own function (components.bootstrap.agentfiles.boot_files: what
user-data embeds) and gzip, as bench/agent_size.py prints it. The rest of the agent is fetched
from object storage (docs/node-config.md, "Agent delivery"); the boot set must not import it.
"""
import ast
import gzip

import pytest

from components import providers
from components.artifacts import AGENT_SRC, BOOT_SET, LOADER_SET
from components.bootstrap.agentfiles import RUNTIME_NAME, boot_files, strip_python

BUDGET = 7 * 1024


@pytest.mark.parametrize('provider', providers.names())
def test_boot_set_plus_runtime_fits_7_kb_gzipped(provider):
    files = boot_files(provider, '/opt/gpu-training')
    assert sorted(f.path.rsplit('/', 1)[1] for f in files) == sorted((*BOOT_SET, RUNTIME_NAME))
    stream = len(gzip.compress(b''.join(f.content.encode() for f in files), 9, mtime=0))
    assert stream <= BUDGET, (provider, stream)


@pytest.mark.parametrize('provider', providers.names())
def test_the_loader_set_plus_runtime_fits_7_kb_gzipped(provider):
    """What rides in user-data itself (docs/bootstrap.md, "The loader")."""
    files = boot_files(provider, '/opt/gpu-training', boot_set=LOADER_SET)
    assert sorted(f.path.rsplit('/', 1)[1] for f in files) == sorted((*LOADER_SET, RUNTIME_NAME))
    stream = len(gzip.compress(b''.join(f.content.encode() for f in files), 9, mtime=0))
    assert stream <= BUDGET, (provider, stream)


def test_the_loader_imports_the_standard_library_and_its_set_only():
    """It runs with the image's python3 before the bootstrap made the venv (no boto3 there)."""
    stdlib = {'argparse', 'base64', 'hashlib', 'hmac', 'json', 'os', 'sys', 'time', 'urllib', 'datetime', 'email'}
    tree = ast.parse((AGENT_SRC / 'loader.py').read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(a.name.split('.')[0] in stdlib for a in node.names), ast.dump(node)
        if isinstance(node, ast.ImportFrom):
            assert node.module.split('.')[0] in stdlib or node.module == 'node_agent.s3', node.module


def test_boot_set_imports_nothing_outside_itself():
    """fetch.py runs before the rest of the package exists on the node."""
    allowed = {'s3', 'fetch', 'cloud_runtime', 'layout'}
    for name in BOOT_SET:
        tree = ast.parse((AGENT_SRC / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                modules = [node.module] if node.module else [a.name for a in node.names]  # from . import x
                assert set(modules) <= allowed, f'{name} imports .{modules}, which is not in the boot set'
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, 'level', 0):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert all(m.split('.')[0] in {'argparse', 'hashlib', 'json', 'os', 're', 'sys', 'time', 'importlib',
                                               'logging', 'urllib', 'boto3', 'botocore', 'tenacity'} for m in mods), mods


def test_stripping_keeps_the_code_runnable():
    out = strip_python((AGENT_SRC / 'store.py').read_text())
    assert '"""' not in out
    compile(out, 'store.py', 'exec')
