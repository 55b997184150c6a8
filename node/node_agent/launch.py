"""How torchrun and the user's shell command meet: the command is each rank's program, run by `/bin/sh -c`.

`train.command` is shell text (`cd src && WANDB_MODE=offline python train.py | tee log`). Under
`train.launcher: torchrun` torchrun starts one program per GPU; that program is `/bin/sh -c COMMAND`,
given with `--no-python`, so every rank runs the whole command through a shell, exactly as the direct
launcher runs it once. torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, ... in the environment each rank's
shell passes on to the command (torch/distributed/run.py at 2.13: with --no-python the program is
`training_script` and its arguments unchanged, no `python -u` and no `--local-rank` added, since
torchrun has no --use-env; each worker is started in a session of its own, and stopping it kills
that session's whole group: torch/distributed/elastic/multiprocessing/subprocess_handler).

torchrun waits for each rank's program, the shell, and no longer (multiprocessing/api.py `_close`). A
shell dies at SIGTERM at once, so a trainer behind a pipe (`python train.py | tee log`) went on saving
outside anything torchrun or the agent follows, and the node's final snapshot was taken without its save.
So the rank's shell traps the stop signals: a trap set on a signal runs only once the foreground command
has ended (POSIX "trap"), so the shell waits for the trainer's save, then exits 128+N without starting
the command's next part; the trainer, whose signals a trap does not change, sees the signal as sent.

Used by the agent (agent.py) and by the platforms' job command (components/platforms/training_contract.py),
so a VM, a pod and a platform job run the same per-rank program; the validator refuses a command that
starts torchrun itself under the torchrun launcher (it would start torchrun once per rank), and finds the
script a command starts with the same words (simple_commands, python_program).
Standard library only (it rides with the agent).
"""
import os
import re
import shlex

SHELL = '/bin/sh'
# Before the command in each rank's shell: wait for the command to end on a stop, then end as the signal would.
STOP_TRAPS = "trap 'exit 143' TERM; trap 'exit 130' INT; trap 'exit 129' HUP; "
# torchrun gave its python `-u`; the command's own python keeps its output in step with the log this way.
ENV = {'PYTHONUNBUFFERED': '1'}
TORCHRUN_MODULES = ('torch.distributed.run', 'torch.distributed.launch')
# What shlex's punctuation_chars gives as operator tokens, and the words that run the command after them.
OPERATOR_CHARS = set('();<>|&')
WRAPPERS = {'env', 'exec', 'nohup', 'time', 'nice', 'command'}
ASSIGNMENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*=')


def per_rank(command):
    """The words after torchrun's own options: every rank runs `command` through the shell."""
    return ['--no-python', SHELL, '-c', STOP_TRAPS + command]


def simple_commands(command):
    """The simple commands of `command` (split at shell operators: &&, ||, ;, |, &, parentheses), each as its
    words from the command word on: the VAR=x assignments and wrappers (env, exec, nohup, time, nice, with the
    wrapper's own -options) before it are left out, and a simple command of assignments alone is none.
    None when the text does not split (an open quote)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    commands, current, wrapped = [], [], False
    for word in words + [';']:
        if word and all(c in OPERATOR_CHARS for c in word):  # a new simple command
            if current:
                commands.append(current)
            current, wrapped = [], False
        elif current:
            current.append(word)
        elif os.path.basename(word) in WRAPPERS:
            wrapped = True
        elif not (ASSIGNMENT.match(word) or (wrapped and word.startswith('-'))):
            current.append(word)
    return commands


def python_program(words):
    """What `python [options] ...` (words from the command word on) runs: ('-m', module), ('-c', None) or
    ('script', path), or None (no program: python reading its standard input). Python's own options end at
    the script, or at -m's module or -c's code; -W and -X take the next word."""
    rest = iter(words[1:])
    for word in rest:
        if word.startswith('-m'):
            return '-m', word[2:] or next(rest, '')
        if word.startswith('-c'):
            return '-c', None
        if word in ('-W', '-X'):
            next(rest, None)
        elif word == '-' or not word.startswith('-'):
            return ('script', word) if word != '-' else None
    return None


def starts_torchrun(command):
    """The word of `command` that starts torchrun (`torchrun`, `python -m torch.distributed.run|launch`), or
    None. Only a command word counts (simple_commands): `a&&torchrun` and `env X=1 torchrun` start it,
    `python t.py --log torchrun` starts none. Text that does not split (an open quote) is None."""
    for words in simple_commands(command) or []:
        if os.path.basename(words[0]) == 'torchrun':
            return words[0]
        if os.path.basename(words[0]).startswith('python'):
            program = python_program(words)
            if program and program[0] == '-m' and program[1] in TORCHRUN_MODULES:
                return f'-m {program[1]}'
    return None
