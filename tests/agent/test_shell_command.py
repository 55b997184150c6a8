"""train.command is shell text on every launcher, and a command that exits 0 without training is no DONE (issue 33).

The real agent as a process against local servers (conftest.py); under `launcher: torchrun` the real torchrun
of the test environment (not the fake one in bin/), so what is checked is what torchrun does with the
command: each rank runs it through /bin/sh -c (node_agent/launch.py).
"""
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from localcloud import BIN

VENV_BIN = Path(sys.executable).parent

RANK_TRAINER = Path(__file__).resolve().parents[1] / 'rank_trainer.py'


def real_torchrun():
    if not (VENV_BIN / 'torchrun').exists():
        pytest.skip('no torchrun beside the test interpreter (torch not installed)')
    pytest.importorskip('torch')
    # The real torchrun and python first: the fake torchrun of tests/agent/bin only echoes and execs.
    return {'PATH': os.pathsep.join((str(VENV_BIN), str(BIN), os.environ['PATH']))}


def shell_node(make_node, api, command, ranks):
    node = make_node(api=api)
    records = node.tmp / 'records'
    records.mkdir()
    src = Path(node.cfg['train']['workdir']) / 'src'
    src.mkdir(parents=True)
    shutil.copy(RANK_TRAINER, src / 'train.py')
    node.cfg['train'].update(command=command, launcher='torchrun', gpusPerNode=ranks)
    node.cfg['train']['env'] = {'RECORD_DIR': str(records)}
    return node, records, src


@pytest.mark.parametrize('command', [
    'cd src && WANDB_MODE=offline python train.py --epochs 1 | tee -a out-$RANK.log',
    'true && python src/train.py --epochs 1',
])
def test_torchrun_runs_the_whole_command_through_a_shell_on_every_rank(make_node, api_stub, command, free_port):
    api = api_stub('alicloud')
    node, records, src = shell_node(make_node, api, command, ranks=2)
    node.cfg['train']['rendezvousPort'] = free_port
    assert node.run(timeout=90, env=real_torchrun()) == 0, node.output()
    seen = {p.name: json.loads(p.read_text()) for p in records.glob('rank-*.json')}
    assert sorted(seen) == ['rank-0.json', 'rank-1.json'], (seen, node.output())
    for rank, rec in enumerate(seen[f'rank-{r}.json'] for r in range(2)):
        assert (rec['RANK'], rec['WORLD_SIZE'], rec['LOCAL_RANK']) == (str(rank), '2', str(rank)), rec
        assert rec['argv'] == ['--epochs', '1'] and rec['PYTHONUNBUFFERED'] == '1', rec
        if command.startswith('cd src'):
            assert rec['cwd'] == str(src) and rec['WANDB_MODE'] == 'offline', rec
            # The pipe ran per rank, in the folder the command went to.
            assert (src / f'out-{rank}.log').read_text() == f'step 1 on rank {rank}\n'
    m = node.marker()
    assert m['state'] == 'DONE' and m['lastCheckpoint'], m
    assert len(api.calls('DeleteInstance')) == 1


def test_the_direct_launcher_runs_the_same_command_through_a_shell_once(make_node, api_stub):
    """A 1-GPU stack (launcher direct) runs the same shell text once, as rank 0 of 1."""
    api = api_stub('alicloud')
    node, records, src = shell_node(make_node, api, 'cd src && WANDB_MODE=offline python train.py --epochs 1'
                                    ' | tee -a out-$RANK.log', ranks=1)
    node.cfg['train']['launcher'] = 'direct'
    assert node.run(timeout=60) == 0, node.output()
    (record,) = [json.loads(p.read_text()) for p in records.glob('rank-*.json')]
    assert (record['RANK'], record['WORLD_SIZE'], record['WANDB_MODE']) == ('0', '1', 'offline'), record
    assert record['cwd'] == str(src) and (src / 'out-0.log').read_text() == 'step 1 on rank 0\n'
    assert node.marker()['state'] == 'DONE', node.output()


def test_a_stop_waits_for_each_rank_to_save_even_behind_a_pipe(make_node, api_stub, s3, free_port):
    """torchrun waits for each rank's program, the shell, and stops it by signalling the rank's group: a shell
    that died at the signal while its trainer went on saving (`python train.py | tee log`) let torchrun and the
    agent end before the save, and the final snapshot missed it. The rank's shell waits for its command."""
    api = api_stub('alicloud')
    node, records, src = shell_node(make_node, api, 'python src/train.py | tee -a trainer-$RANK.log', ranks=2)
    node.cfg['train']['rendezvousPort'] = free_port
    node.cfg['train']['env']['SAVE_ON_STOP_SECONDS'] = '8'  # longer than torchrun takes to end
    node.cfg['agent']['maxGraceSeconds'] = 60
    p = node.start(env=real_torchrun())
    node.until(lambda: len(list(records.glob('rank-*.json'))) == 2, timeout=60)
    p.send_signal(signal.SIGTERM)  # systemctl stop, or the OS shutting down: the agent stops the trainer
    assert node.wait(p, timeout=60) == 0, node.output()
    m = node.marker()
    assert m['state'] == 'PREEMPTED', m
    saved = node.manifest(m['lastCheckpoint'])['files']
    assert sorted(saved) == ['ckpt-1.pt', 'ckpt-final.pt'], (saved, node.output())


def test_a_command_that_exits_0_without_training_is_failed_and_still_released(make_node, api_stub, s3):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['train']['command'] = 'echo nothing to train here'
    assert node.run() == 0, node.output()
    m = node.marker()
    assert m['state'] == 'FAILED' and m['exitCode'] == 0, m
    assert m['reason'].startswith('finished without training') and 'CKPT_DIR' in m['reason'], m
    assert len(api.calls('DeleteInstance')) == 1, 'nothing bills: the node is released all the same'
    shipped = s3.list_objects_v2(Bucket=node.bucket, Prefix=node.key(f'logs/{node.id}/trainer.log'))['Contents']
    body = b''.join(s3.get_object(Bucket=node.bucket, Key=o['Key'])['Body'].read() for o in shipped)
    assert b'nothing to train here' in body, 'the trainer\'s output is kept in the bucket'


def test_a_step_in_the_stats_file_counts_as_training_without_a_checkpoint(make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['train']['command'] = """echo '{"step": 3}' > "$GPU_TRAINING_STATS_FILE" """
    assert node.run() == 0, node.output()
    assert node.marker()['state'] == 'DONE', node.output()


def test_only_node_rank_0_is_judged_a_rank_that_saves_nothing_is_done(make_node, api_stub):
    """On several nodes only rank 0 writes checkpoints (the contract, §2): another rank ends with none."""
    a, b = (f'i-bp{letter * 18}' for letter in 'ab')
    api = api_stub('alicloud', [(a, '10.0.0.1'), (b, '10.0.0.2')])
    node = make_node(api=api, instance_id=b)
    node.cfg['nodeCount'] = 2
    node.cfg['train']['command'] = 'echo rank $RANK saves nothing'
    assert node.run() == 0, node.output()
    assert node.marker()['state'] == 'DONE', node.output()


@pytest.fixture
def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]

