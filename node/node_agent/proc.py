"""The trainer process: start it so that it outlives an agent restart, find it again, signal it.

The trainer runs in its own session (process group id = its wrapper's pid) under a small sh
wrapper that writes the exit status to a file, so a restarted agent that re-attaches to a trainer
it did not start still learns how it ended. Both shells trap the stop signals with a no-op: the
trap waits until the foreground command ends (POSIX), and a trapped (not ignored) signal is reset
to its default in the trainer, which therefore sees SIGTERM normally. The inner shell keeps an
`exit` in the user's command from skipping the status file. Output goes to a file, never a pipe:
a pipe would break (SIGPIPE) when the agent restarts.

The status file is written before the trainer starts, with a placeholder as long as any status, and
the wrapper overwrites those bytes in place (`1<>`: no truncation, no new blocks), so a disk that
filled up during the run cannot lose how the trainer ended. Reading it tells three cases apart: a
status (it ended), the placeholder (the wrapper was killed before it could write: a reboot, or
systemd killing the unit's cgroup), nothing (the file is gone: the status is lost).
"""
import os
import subprocess

WRAP = ('trap : TERM INT HUP; sh -c \'trap : TERM INT HUP; eval "$1"\' sh "$1"; '
        'printf "%-15s\\n" $? 1<>"$2"')
PLACEHOLDER = b'running' + b' ' * 8 + b'\n'  # as long as the wrapper's record: 15 characters and a newline


def stat(pid):
    """/proc/<pid>/stat fields after the command name: [state, ppid, pgrp, ...], or None."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid, started):
    """Still running (not a zombie) and still the process we started (pids get reused)."""
    s = stat(pid)
    return bool(s) and s[0] != 'Z' and s[19] == started


def group_alive(pgid):
    """Any live process left in the trainer's group (torchrun workers, DataLoader workers)."""
    return any((s := p.isdigit() and stat(p)) and s[2] == str(pgid) and s[0] != 'Z' for p in os.listdir('/proc'))


def spawn(command, workdir, env, log, exit_file):
    """Start the trainer; (pid, start time) of its wrapper, which leads the process group."""
    with open(exit_file + '.tmp', 'wb') as f:
        f.write(PLACEHOLDER)
        f.flush()
        os.fsync(f.fileno())  # the blocks the wrapper overwrites are allocated now, while there is space
    os.replace(exit_file + '.tmp', exit_file)
    with open(log, 'ab') as out:
        p = subprocess.Popen(['sh', '-c', WRAP, 'sh', command, exit_file], cwd=workdir, env=env, stdout=out,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return p.pid, stat(p.pid)[19]


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def exit_code(exit_file):
    """(status, why none): the trainer's exit status as its shell saw it (128+N: killed by signal N),
    or None and why it is unknown."""
    try:
        with open(exit_file, 'rb') as f:
            raw = f.read()
    except OSError as e:
        return None, f'its exit status file is unreadable ({e.strerror}): the status is lost'
    if raw == PLACEHOLDER:
        return None, 'its wrapper was killed before the trainer ended or could record how (reboot, or the unit killed)'
    try:
        return int(raw), None
    except ValueError:
        return None, f'its exit status file holds {raw[:40]!r}: the status is lost'


class Tail:
    """Follow the trainer's log file and hand each complete line to a callback."""

    def __init__(self, path, from_end):
        open(path, 'ab').close()
        self.path, self.rest, self.pos = path, b'', os.path.getsize(path) if from_end else 0

    def pump(self, emit):
        with open(self.path, 'rb') as f:
            f.seek(self.pos)
            data = f.read(1 << 20)  # a chatty trainer is followed in bounded steps
        self.pos += len(data)
        *lines, self.rest = (self.rest + data).split(b'\n')
        for ln in lines:
            emit(ln.decode(errors='replace'))
        return len(data)
