"""The node agent must fit the user-data budget: 7 KB gzip -9 for the stripped agent plus one runtime.

Measured by bench/agent_size.py, the same way the bootstrap renderer embeds the files (docstrings
and comments stripped with ast, one gzip stream). A regression here means the agent no longer
rides in user-data and must be fetched as a bundle instead.
"""
import importlib.util

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location('agent_size', ROOT / 'bench' / 'agent_size.py')
size = importlib.util.module_from_spec(spec)
spec.loader.exec_module(size)


@pytest.mark.parametrize('provider', ['alicloud', 'tencentcloud', 'aws'])
def test_agent_plus_runtime_fits_7_kb_gzipped(provider):
    s = size.sizes(provider)
    assert s['gzip_stream'] <= size.BUDGET, s


def test_stripping_keeps_the_code_runnable():
    src = (ROOT / 'scripts' / 'node_agent' / 'store.py').read_text()
    out = size.strip(src)
    assert '"""' not in out and '#' not in out.replace("'#'", '')
    compile(out, 'store.py', 'exec')
