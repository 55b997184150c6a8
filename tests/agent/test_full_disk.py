"""Node agent with its state and log directories on a disk that fills up (issue 12).

A trainer that finished while the disk was full could not record its exit status: the agent took it
for "vanished" and relaunched it from the last checkpoint once space returned, and the marker showed
the relaunch's exit code (a failed run masked). The disk here is a real filesystem, a small tmpfs
mounted for the test (root only: skipped elsewhere, with the reason), filled with a file until ENOSPC.
"""
import errno
import json
import subprocess

import pytest


@pytest.fixture
def tiny_disk(tmp_path):
    mount = tmp_path / 'var'
    mount.mkdir()
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', str(mount)], capture_output=True)
    if done.returncode:
        pytest.skip(f'cannot mount a tmpfs here (root is needed): {done.stderr.decode().strip()}')
    yield mount
    subprocess.run(['umount', '-l', str(mount)], check=False)


def fill(disk):
    """Write a file until the disk refuses more: what a runaway log does to a root disk."""
    with open(disk / 'filler', 'wb', buffering=0) as f:
        try:
            while True:
                f.write(b'x' * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    with pytest.raises(OSError):
        (disk / 'probe').write_bytes(b'x' * 8192)


@pytest.mark.parametrize('exit_code', [0, 3])
def test_a_trainer_ending_on_a_full_disk_keeps_its_exit_status_and_is_not_relaunched(exit_code, tiny_disk,
                                                                                     make_node, api_stub):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['paths'].update(state=str(tiny_disk / 'state'), logs=str(tiny_disk / 'logs'))
    hold = node.tmp / 'hold'
    node.train(FT_STEPS=10, FT_HOLD=hold, FT_EXIT=exit_code)
    p = node.start()
    node.until(lambda: any('end' in r for r in node.records()))  # trained; waits to exit
    fill(tiny_disk)
    hold.touch()
    if node.wait(p, 60) != 0:
        # The agent gave up for a restart: space comes back and systemd starts it again.
        (tiny_disk / 'filler').unlink()
        assert node.run() == 0, node.output()
    starts = [r for r in node.records() if 'start' in r]
    assert len(starts) == 1, f'the finished trainer was relaunched: {starts}\n{node.output()}'
    m = node.marker()
    assert (m['state'], m['exitCode'], m['relaunches']) == ('DONE' if exit_code == 0 else 'FAILED', exit_code, []), m
    assert len(api.calls('DeleteInstance')) == 1
    assert json.loads((tiny_disk / 'state' / 'agent-state.json').read_text())['exitCode'] == exit_code
    assert 'gave up the' in node.output(), 'the reserve was what let the state be recorded'
