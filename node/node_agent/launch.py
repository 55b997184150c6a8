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
starts torchrun itself under the torchrun launcher (it would start torchrun once per rank).
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


def starts_torchrun(command):
    """The word of `command` that starts torchrun (`torchrun`, `python -m torch.distributed.run|launch`), or
    None. Only a command word counts: the first of each simple command after shell operators (`a&&torchrun`),
    VAR=x assignments and wrappers (env, exec, nohup, time, nice); `python t.py --log torchrun` starts none.
    Text that does not split (an open quote) is None."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    at_command, wrapped, python, before = True, False, False, ''
    for word in words:
        if word and all(c in OPERATOR_CHARS for c in word):  # &&, ||, ;, |, &, (, ): a new simple command
            at_command, wrapped, python, before = True, False, False, ''
            continue
        if at_command:
            if os.path.basename(word) in WRAPPERS:
                wrapped = True  # the wrapper's own options (env -i, nice -n) come before the command word
                continue
            if ASSIGNMENT.match(word) or (wrapped and word.startswith('-')):
                continue
            at_command, name = False, os.path.basename(word)
            if name == 'torchrun':
                return word
            python = name.startswith('python')
        elif python:
            module = word[2:] if word.startswith('-m') and word != '-m' else word if before == '-m' else ''
            if module in TORCHRUN_MODULES:
                return f'-m {module}'
            # python's own options end at the script (or -m's module): what follows is the program's
            python = word.startswith('-') or before in ('-W', '-X')
        before = word
    return None
