"""The user's packages on the node: train.requirements and train.setup, once per node, before training.

After the bootstrap installed the framework and the agent fetched the training code, the agent installs
what the stack names (docs/training-contract.md, "Your packages"), in this order:
  1. the pip requirements file (train.requirements, a path in the code folder), into the node's venv;
  2. each train.setup command, through `sh -c` in the code folder, stopping at the first that fails.
Both run with the trainer's environment (the venv first on PATH), stdin closed, and every line of their
output goes to the agent's log (agent.log, shipped to the bucket). The framework stays as the bootstrap
installed it: its installed versions are pip constraints (PIP_CONSTRAINT), so a requirement that wants
another torch fails the setup instead of replacing the accelerator build.

Once per node: a record of what was installed (a digest of the commands, the requirements file, the
framework and the Python) is kept in <paths.state>/setup.json, so a restarted agent, a relaunch or a node
that comes back after a preemption does not install again.

The cache, for the next node: the node that installs from the package index builds a wheel of every
distribution the setup added (`pip freeze` before and after, `pip wheel --no-deps`) and puts them under
setup/<digest>/ in the stack's bucket, a manifest listing each wheel's sha256 last. A replacement node
(same stack, same setup, same image) downloads and verifies them onto its data disk and installs with
the index turned off (PIP_NO_INDEX, PIP_FIND_LINKS: the setup commands' own `pip install`s too). Should
that install fail (a setup command that reaches past pip), the setup runs again from the index, with a
warning. pip's own cache (PIP_CACHE_DIR) is on the data disk as well.

While it installs, the node's marker says RUNNING with `setup: {running, since}`, so `status` shows the
node installing rather than silent.

A command that fails, or a setup still running at the node's deadline, raises SetupFailed: the agent
writes a FAILED marker naming the command and releases the node; nothing trains on a half-installed node.
"""
import collections
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from datetime import datetime, timezone

from . import layout

log = logging.getLogger('agent.setup')
# The distributions the bootstrap installs as the framework (node/bootstrap/bootstrap.sh.j2, s_framework).
FRAMEWORK = ('torch', 'torch-npu', 'torch_npu', 'paddlepaddle-gpu', 'paddlepaddle')
# What the setup depends on besides its own text: the venv's Python, its platform, the framework's versions.
PROBE = ('import importlib.metadata as m, json, platform, sys, sysconfig\n'
         'def v(n):\n'
         '    try:\n        return m.version(n)\n'
         '    except m.PackageNotFoundError:\n        return None\n'
         'print(json.dumps({"python": ".".join(map(str, sys.version_info[:2])), "platform": sysconfig.get_platform(),'
         ' "machine": platform.machine(), "pins": {n: v(n) for n in ' + repr(FRAMEWORK) + ' if v(n)}}))\n')
TAIL_LINES = 5  # the last lines of a failed command's output (its error lines, if any) in the marker's reason


class SetupFailed(Exception):
    """A step of the setup failed; the message names it and ends with its last output."""


class SetupStopped(Exception):
    """The agent was asked to stop (SIGTERM) while the setup ran."""


def wanted(train):
    """True when the stack names anything to install."""
    return bool(train.get('setup') or train.get('requirements'))


class Setup:
    """One node's setup: `run()` installs (or finds it installed) and returns the record for the marker."""

    def __init__(self, cfg, store, env, deadline=None, stopping=lambda: None, announce=lambda: None):
        paths, train = cfg['paths'], cfg['train']
        # announce(): called once an install really starts (not when this node installed earlier).
        self.store, self.deadline, self.stopping, self.announce = store, deadline, stopping, announce
        self.commands, self.requirements = list(train.get('setup') or []), train.get('requirements') or ''
        self.workdir = train['workdir']
        self.python = os.path.join(paths['venv'], 'bin', 'python') if paths['venv'] else sys.executable
        self.record_file = os.path.join(paths['state'], 'setup.json')
        self.constraints = os.path.join(paths['state'], 'setup-constraints.txt')
        cache = os.path.join(paths['data'], 'setup-cache')
        self.env = {**env, 'PIP_CACHE_DIR': os.path.join(cache, 'pip'), 'PIP_DISABLE_PIP_VERSION_CHECK': '1',
                    'PIP_NO_INPUT': '1'}
        self.wheels_root = os.path.join(cache, 'wheels')

    # ------------------------------------------------------------------ the whole setup
    def run(self):
        """{'seconds', 'source' (index | cache), 'commands', 'requirements', 'at', ...}; raises SetupFailed."""
        probe = json.loads(self.capture([self.python, '-c', PROBE], 'the Python of the venv'))
        key = self.key(probe)
        done = self.done(key)
        if done:
            log.info('setup: installed earlier on this node (%s, %.1f s from the %s): not installing again',
                     done['at'], done['seconds'], done['source'])
            return done
        self.announce()
        pins = ''.join(f'{name}=={version}\n' for name, version in sorted(probe['pins'].items()))
        with open(self.constraints, 'w') as f:
            f.write(pins)
        if pins:
            self.env['PIP_CONSTRAINT'] = self.constraints
        log.info('setup: %s%s%s (framework kept at %s)', f'requirements {self.requirements}' if self.requirements
                 else '', ', ' if self.requirements and self.commands else '',
                 f'{len(self.commands)} command(s)' if self.commands else '',
                 ', '.join(pins.split()) or 'no framework installed')
        began, source, extra = time.monotonic(), 'index', {}
        wheels = self.cached(key)
        if wheels:
            try:
                self.install({'PIP_NO_INDEX': '1', 'PIP_FIND_LINKS': wheels})
                source, extra = 'cache', {'wheels': len(os.listdir(wheels)) - 1}
            except SetupFailed as e:
                log.warning('setup: installing from the cached wheels failed (%s): installing from the index', e)
        if source == 'index':
            before = self.freeze()
            self.install({})
            extra = self.publish(key, before)
        record = {'seconds': round(time.monotonic() - began, 1), 'source': source, 'commands': len(self.commands),
                  'requirements': self.requirements or None, 'key': key[:16],
                  'at': datetime.now(timezone.utc).isoformat(timespec='seconds'), **extra}
        with open(self.record_file + '.tmp', 'w') as f:
            json.dump({'key': key, 'record': record}, f)
        os.replace(self.record_file + '.tmp', self.record_file)
        log.info('setup: done in %.1f s from the %s', record['seconds'], source)
        return record

    def key(self, probe):
        """What makes two nodes' setups the same: the commands, the requirements' bytes, framework and Python."""
        body = b''
        if self.requirements:
            try:
                with open(os.path.join(self.workdir, self.requirements), 'rb') as f:
                    body = f.read()
            except OSError as e:
                raise SetupFailed(f'train.requirements {self.requirements!r} is not in the code folder '
                                  f'({e.strerror}): was train.codeDir uploaded?') from None
        h = hashlib.sha256(json.dumps({'setup': self.commands, 'requirements': self.requirements, **probe},
                                      sort_keys=True).encode())
        h.update(body)
        return h.hexdigest()

    def done(self, key):
        with suppress(OSError, ValueError, KeyError, TypeError):
            with open(self.record_file) as f:
                kept = json.load(f)
            if kept['key'] == key:
                return kept['record']
        return None

    def install(self, cache_env):
        """The requirements file, then each command; SetupFailed names the first step that fails."""
        env = {**self.env, **cache_env}
        if self.requirements:
            self.step([self.python, '-m', 'pip', 'install', '-r', self.requirements], env,
                      f'train.requirements ({self.requirements})')
        for i, command in enumerate(self.commands):
            self.step(['sh', '-c', command], env, f'train.setup[{i}] ({command})')

    # ------------------------------------------------------------------ processes
    def step(self, argv, env, what):
        log.info('setup: %s', what)
        began, last, errors = time.monotonic(), collections.deque(maxlen=TAIL_LINES), collections.deque(maxlen=3)
        p = subprocess.Popen(argv, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)

        def pump():
            for raw in p.stdout:
                line = raw.decode(errors='replace').rstrip()
                if line:
                    last.append(line)
                    if line.lstrip().lower().startswith(('error', 'fatal', 'e: ')):
                        errors.append(line.strip())
                    log.info('| %s', line)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        why = None
        while p.poll() is None and not why:
            time.sleep(0.1)
            if self.deadline and time.time() >= self.deadline:
                why = SetupFailed(f'{what} still running at the node\'s deadline (agent.maxHours/expiresAt)')
            elif self.stopping():
                why = SetupStopped(f'{what} stopped: the agent got {self.stopping()}')
        if why:
            with suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        reader.join(5)
        if why:
            raise why
        if p.returncode:
            tail = ' / '.join(errors or last) or 'no output'  # pip's and apt's own error lines first
            raise SetupFailed(f'{what} exited {p.returncode} after {time.monotonic() - began:.1f} s: {tail}')
        log.info('setup: %s: done in %.1f s', what, time.monotonic() - began)

    def capture(self, argv, what):
        try:
            out = subprocess.run(argv, cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                                 capture_output=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SetupFailed(f'{what}: {e}') from None
        if out.returncode:
            raise SetupFailed(f'{what} exited {out.returncode}: {out.stderr.decode(errors="replace")[-300:]}')
        return out.stdout.decode()

    def freeze(self):
        """The venv's distributions as `pip freeze --all` writes them (name==version, name @ url)."""
        return set(self.capture([self.python, '-m', 'pip', 'freeze', '--all'], 'pip freeze').splitlines())

    # ------------------------------------------------------------------ the cache
    def prefix(self, key):
        return self.store.root + layout.setup(key[:32])

    def cached(self, key):
        """A folder of verified wheels for this setup (the data disk's, else fetched from the bucket), or None."""
        folder = os.path.join(self.wheels_root, key[:32])
        if os.path.exists(os.path.join(folder, layout.SETUP_MANIFEST)):
            return folder
        try:
            body = self.store.s3.get_object(Bucket=self.store.bucket, Key=self.prefix(key) + layout.SETUP_MANIFEST)
            wheels = json.loads(body['Body'].read())['wheels']
        except Exception as e:
            if 'NoSuchKey' not in repr(e) and '404' not in repr(e):
                log.warning('setup: no cached wheels (%s): installing from the index', e)
            return None
        os.makedirs(folder, exist_ok=True)
        try:
            for name, v in wheels.items():
                dst = os.path.join(folder, os.path.basename(name))
                self.store.retry(self.store.s3.download_file)(self.store.bucket,
                                                              self.prefix(key) + f"{v['sha256'][:16]}/{name}", dst)
                if sha256_of(dst) != v['sha256']:
                    raise OSError(f'{name}: sha256 differs from the manifest')
        except Exception as e:
            log.warning('setup: cached wheels unusable (%s): installing from the index', e)
            return None
        with open(os.path.join(folder, layout.SETUP_MANIFEST), 'w') as f:
            json.dump({'wheels': wheels}, f)
        log.info('setup: %d cached wheels fetched and verified', len(wheels))
        return folder

    def publish(self, key, before):
        """Wheels of what the setup added, into the bucket for the next node; never fails the setup."""
        added = sorted(ln for ln in self.freeze() - before if ln and not ln.startswith(('-e', '#')))
        if not added:
            return {'wheels': 0}
        folder = os.path.join(self.wheels_root, key[:32] + '.build')
        try:
            self.capture([self.python, '-m', 'pip', 'wheel', '--no-deps', '-w', folder, *added], 'pip wheel')
            wheels = {}
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                wheels[name] = {'sha256': sha256_of(path), 'size': os.path.getsize(path)}
                self.store.retry(self.store.s3.upload_file)(path, self.store.bucket,
                                                            self.prefix(key) + f"{wheels[name]['sha256'][:16]}/{name}")
            # The manifest last: a node that finds it finds every wheel it lists.
            self.store.put_data(layout.setup(key[:32]) + layout.SETUP_MANIFEST,
                                json.dumps({'wheels': wheels, 'added': added}, indent=1).encode())
            log.info('setup: %d wheels cached in the bucket for the next node', len(wheels))
            return {'wheels': len(wheels)}
        except Exception as e:
            log.warning('setup: wheels not cached for the next node (%s); it installs from the index', e)
            return {'wheels': 0}


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()
