"""The trainer process: start it so that it outlives an agent restart, find it again, signal it.

The trainer runs in its own session (process group id = its wrapper's pid) under a small sh
wrapper that writes the exit status to a file, so a restarted agent that re-attaches to a trainer
it did not start still learns how it ended. Both shells trap the stop signals with a no-op: the
trap waits until the foreground command ends (POSIX), and a trapped (not ignored) signal is reset
to its default in the trainer, which therefore sees SIGTERM normally. The inner shell keeps an
`exit` in the user's command from skipping the status file. Output goes to a file, never a pipe:
a pipe would break (SIGPIPE) when the agent restarts.
"""
import os
import subprocess

WRAP = 'trap : TERM INT HUP; sh -c \'trap : TERM INT HUP; eval "$1"\' sh "$1"; echo $? > "$2"'


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
    if os.path.exists(exit_file):
        os.unlink(exit_file)
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
    """The trainer's exit status as its shell saw it (128+N: killed by signal N); None if unknown."""
    try:
        with open(exit_file) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


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
