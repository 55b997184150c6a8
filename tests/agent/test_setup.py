"""The user's packages (train.requirements, train.setup) on a node: installed by the real agent before training.

Each test runs the agent as a process against moto S3 and a package index on 127.0.0.1 (localcloud.pyindex),
into a node venv layered on this environment (localcloud.nodevenv): what is installed lands there, never here.
"""
import json
import os
import sys
from contextlib import suppress
from datetime import datetime, timedelta, timezone

import pytest
from conftest import HERE, ROOT

from localcloud import nodevenv
from localcloud.pyindex import PackageIndex, make_wheel

TRAINER = f'python -c "import gtdemo, gtextra, gtdep" && python {HERE / "fake_trainer.py"}'


@pytest.fixture
def index(tmp_path):
    folder = tmp_path / 'index'
    make_wheel(folder, 'gtdemo', '1.0', requires=('gtdep==1.0',))
    make_wheel(folder, 'gtdep', '1.0')
    make_wheel(folder, 'gtextra', '2.0')
    served = PackageIndex(folder)
    yield served
    served.stop()


def node_with_setup(make_node, api, name, setup, requirements='gtdemo==1.0\n', command=TRAINER, **kw):
    node = make_node(name, api=api, **kw)
    node.cfg['paths']['venv'] = str(nodevenv.layered(node.tmp / 'venv'))
    node.cfg['train'].update(command=command, setup=setup)
    if requirements is not None:
        node.cfg['train']['requirements'] = 'requirements.txt'
        node.s3.put_object(Bucket=node.bucket, Key=node.key('code/requirements.txt'), Body=requirements.encode())
    return node


def pip_env(index):
    return {'PIP_INDEX_URL': index.index_url, 'PIP_CONFIG_FILE': os.devnull, 'PIP_RETRIES': '0'}


@pytest.mark.slow  # two nodes, seven pip runs: about 40 s on an idle 2-core machine
def test_setup_installs_before_training_and_a_replacement_installs_from_the_cache(make_node, api_stub, index, s3):
    api = api_stub('alicloud')
    a = node_with_setup(make_node, api, 'a', ['pip install gtextra', 'echo "installed by setup" > setup-ran.txt'])
    a.train(FT_STEPS=6)
    assert a.run(timeout=120, env=pip_env(index)) == 0, a.output()
    m = a.marker()
    assert m['state'] == 'DONE', (m, a.output())
    assert m['setup']['source'] == 'index' and m['setup']['seconds'] > 0 and m['setup']['commands'] == 2, m
    assert m['setup']['requirements'] == 'requirements.txt' and m['setup']['wheels'] == 3, m
    assert any('/simple/gtdemo' in r for r in index.requests), index.requests
    # Installed into the node's venv (not this environment), the commands ran in the code folder, and the
    # output is in the agent's log, which is shipped.
    assert list((a.tmp / 'venv').glob('lib/python*/site-packages/gtextra.py'))
    assert (a.tmp / 'work' / 'setup-ran.txt').read_text() == 'installed by setup\n'
    log = (a.tmp / 'logs' / 'agent.log').read_text()
    assert 'setup: train.setup[0] (pip install gtextra)' in log and 'Successfully installed gtextra-2.0' in log, log
    assert log.index('setup: done') < log.index('trainer pid'), 'the setup ends before the trainer starts'
    wheels = s3.list_objects_v2(Bucket=a.bucket, Prefix=a.key('setup/'))['Contents']
    assert sum(o['Key'].endswith('.whl') for o in wheels) == 3 and any(o['Key'].endswith('/manifest.json')
                                                                      for o in wheels)

    # A replacement node (new venv, new disk) of the same stack: from the bucket's wheels, the index never asked.
    index.requests.clear()
    b = node_with_setup(make_node, api, 'b', ['pip install gtextra', 'echo "installed by setup" > setup-ran.txt'])
    b.train(FT_STEPS=6)
    assert b.run(timeout=120, env=pip_env(index)) == 0, b.output()
    m = b.marker()
    assert m['state'] == 'DONE' and m['setup']['source'] == 'cache' and m['setup']['wheels'] == 3, (m, b.output())
    assert index.requests == [], 'the replacement reached the package index'
    assert list((b.tmp / 'venv').glob('lib/python*/site-packages/gtdemo.py'))


def test_a_failing_setup_writes_a_failed_marker_releases_the_node_and_nothing_trains(make_node, api_stub, index):
    api = api_stub('alicloud')
    node = node_with_setup(make_node, api, 'n', ['touch first.txt; until [ -e go ]; do sleep 0.05; done',
                                                 'echo "no such tool" >&2; exit 7', 'touch never.txt'],
                           requirements=None)
    p = node.start(env=pip_env(index))

    def installing():
        with suppress(Exception):
            return node.marker()['setup'].get('running') and node.marker()
    # While it installs, the marker says so (status: "installing since ..."), not silence.
    m = node.until(installing, timeout=90)
    assert m['state'] == 'RUNNING' and m['setup']['since'], m
    (node.tmp / 'work' / 'go').touch()
    assert node.wait(p, 120) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED', m
    assert m['reason'].startswith('setup failed: train.setup[1]') and 'exited 7' in m['reason'], m
    assert 'no such tool' in m['reason'] and m['setup']['failed'], m
    assert not node.records(), 'the trainer started on a half-installed node'
    assert (node.tmp / 'work' / 'first.txt').exists(), 'the commands before it ran'
    assert not (node.tmp / 'work' / 'never.txt').exists(), 'a command after the failed one ran'
    assert [c['params']['InstanceId'] for c in api.calls('DeleteInstance')] == [node.id], 'not released'
    log = (node.tmp / 'logs' / 'agent.log').read_text()
    assert 'setup failed: train.setup[1]' in log and 'Not starting the trainer; releasing this node' in log, log


def test_a_requirement_that_would_replace_the_framework_fails_the_setup(make_node, api_stub, index):
    """The bootstrap's framework is a constraint: a requirements file that pins another torch fails, by name."""
    import torch

    api = api_stub('alicloud')
    make_wheel(index.folder, 'torch', '0.0.1')
    node = node_with_setup(make_node, api, 'n', [], requirements='torch==0.0.1\n')
    assert node.run(timeout=120, env=pip_env(index)) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and 'train.requirements (requirements.txt) exited' in m['reason'], m
    assert 'Cannot install torch==0.0.1' in m['reason'], m
    log = (node.tmp / 'logs' / 'agent.log').read_text()
    assert f'torch=={torch.__version__}' in log.split('framework kept at')[1].split('\n')[0], log
    assert not node.records() and not list((node.tmp / 'venv').glob('lib/python*/site-packages/torch'))


def test_the_setup_runs_once_per_node_a_preempted_node_that_comes_back_does_not_install_again(
        make_node, api_stub, index):
    api = api_stub('tencentcloud')
    node = node_with_setup(make_node, api, 'n', ['echo once >> "$COUNTER"'], requirements=None, cloud='tencentcloud',
                           command=f'python {HERE / "fake_trainer.py"}')
    node.train(FT_STEPS=400, FT_STEP_S=0.02, FT_EVERY=10, COUNTER=node.tmp / 'setup-runs')
    p = node.start(env=pip_env(index))
    node.until(lambda: node.records())
    node.meta.notice = datetime.now(timezone.utc) + timedelta(seconds=60)
    assert node.wait(p, 60) == 0, node.output()
    first = node.marker()
    assert first['state'] == 'PREEMPTED' and first['setup']['commands'] == 1, first
    node.meta.notice = None
    node.cfg['train']['env']['FT_STEPS'] = '20'
    assert node.run(timeout=120, env=pip_env(index)) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'DONE' and m['setup'] == first['setup'], m
    assert (node.tmp / 'setup-runs').read_text() == 'once\n'
    assert 'installed earlier on this node' in (node.tmp / 'logs' / 'agent.log').read_text()


def test_the_node_config_refuses_a_setup_that_is_not_a_list_of_commands(tmp_path):
    import subprocess

    cfg = {'stack': 's', 'provider': 'alicloud', 'region': 'r', 'checkpoint': {'bucket': 'b'},
           'paths': {'checkpoints': '/c', 'state': '/s', 'logs': '/l'}, 'endpoints': {'metadata': 'http://m'},
           'train': {'command': 'python t.py', 'setup': ['pip install x', 3]}}
    (tmp_path / 'node.json').write_text(json.dumps(cfg))
    out = subprocess.run([sys.executable, '-m', 'node_agent', '--config', str(tmp_path / 'node.json')],
                         capture_output=True, text=True, env={**os.environ, 'PYTHONPATH': str(ROOT / 'node')})
    assert out.returncode == 2 and "train.setup: ['pip install x', 3] is not allowed" in out.stderr, out.stderr
    assert 'Traceback' not in out.stderr
