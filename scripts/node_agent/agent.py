"""The node agent's lifecycle: prepare, start and watch the trainer, final sync, marker, release.

Every step is recorded in <paths.state>/agent-state.json before the next one starts, so an agent
restarted by systemd continues where the last one stopped and never starts the trainer twice:
  start -> run (trainer pid + start time) -> final (outcome known) -> release -> done
A PREEMPTED run (spot notice, or the agent itself got SIGTERM) goes back to `start` after its
marker, so a node that comes back resumes from the checkpoint. The node is released only after a
verified final upload and the final marker; a failed upload leaves it running (exit 3: systemd
restarts the agent, which retries) until the cloud-side TTL. A node of a spot pool retires the pool
(`cluster.poolName`) in the release phase, just before it releases itself, so the pool does not
replace it; a PREEMPTED node never does.
"""
import fcntl
import json
import logging
import os
import shlex
import signal
import threading
import time
from contextlib import suppress
from datetime import datetime, timezone

from . import proc
from .monitor import Monitor
from .s3 import retrying, runtime
from .store import Store

L, T = logging.getLogger('agent'), logging.getLogger('trainer')
ENDED = ('PREEMPTED', 'DONE', 'FAILED', 'SYNC_FAILED')


def kernel_boot_time():
    """When this machine booted (epoch seconds, from /proc/stat), or None."""
    with suppress(OSError, ValueError):
        with open('/proc/stat') as f:
            return next(float(ln.split()[1]) for ln in f if ln.startswith('btime '))
    return None


def iso(t):
    return t and datetime.fromtimestamp(t, timezone.utc).isoformat(timespec='seconds')


class Agent:
    def __init__(self, cfg):
        self.c, self.A, P = cfg, cfg['agent'], cfg['paths']
        for d in (P['state'], P['logs'], P['checkpoints']):
            os.makedirs(d, exist_ok=True)
        self.sf, self.exitf, self.csv = (os.path.join(P['state'], n)
                                         for n in ('agent-state.json', 'trainer.exit', 'utilisation.csv'))
        # One agent per node: a second one (a human's manual run) must not start a second trainer.
        self.lock = open(os.path.join(P['state'], 'agent.lock'), 'w')
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(f"node agent: another agent is running on {P['state']}; not starting a second one")
        self.log, self.st, self.spawned, self.asked = os.path.join(P['logs'], 'trainer.log'), {}, False, None
        if os.path.exists(self.sf):
            with open(self.sf) as f:
                self.st = json.load(f)
        self.retry, self.rt = retrying(cfg), runtime(cfg)
        self.node = self.retry(self.rt.instance_id)()
        self.store = Store(cfg, self.node, cfg['identity']['roleName'] and self.retry(self.rt.credentials))
        self.mon = Monitor(cfg, self.csv)
        # systemd stop / shutdown: stop the trainer gracefully, save, do not release (see watch).
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, lambda n, _: setattr(self, 'asked', signal.Signals(n).name))

    def save(self, **kw):
        self.st.update(kw)
        with open(self.sf + '.tmp', 'w') as f:
            json.dump(self.st, f)
            f.flush()
            os.fsync(f.fileno())  # the phase must survive a power cut, or a restart could start a second trainer
        os.replace(self.sf + '.tmp', self.sf)

    def end(self, state, reason, release=True, **kw):
        self.save(phase='final', state=state, reason=reason, release=release, endedAt=time.time(), **kw)

    def run(self):
        """The whole lifecycle; the exit status (0 finished, 3 data or marker not saved, 4 release failed)."""
        st, bad = self.st, os.path.join(self.c['paths']['state'], 'UNHEALTHY')
        if not st:
            # The TTL counts from the node's start (the cloud's counts from `pulumi up`), not from
            # the agent's: a bare-image bootstrap can take 15 minutes before the agent runs.
            self.save(phase='start', boot=self.A['bootTime'] or kernel_boot_time() or time.time())
        L.info('node %s, stack %s, phase %s', self.node, self.c['stack'], st['phase'])
        if st['phase'] == 'done':
            L.info('finished earlier (%s): nothing to do', st.get('state'))
            return 0
        while st['phase'] in ('start', 'run'):
            if st['phase'] == 'start' and os.path.exists(bad):
                with open(bad) as f:
                    # Humans must look at a node whose accelerators do not match: no training, no release.
                    self.end('FAILED', 'unhealthy: ' + (f.read().strip() or 'see bootstrap-status.json'), False)
            elif st['phase'] == 'start':
                self.start()
            else:
                self.watch()
        return self.finish()

    def start(self):
        c, P, Tr, st = self.c, self.c['paths'], self.c['train'], self.st
        ck, n, port = P['checkpoints'], int(c['nodeCount']), str(int(Tr['rendezvousPort']))
        os.makedirs(Tr['workdir'], exist_ok=True)
        self.store.fetch_code(Tr['workdir'])
        got = self.store.restore(ck)
        rank, master = 0, '127.0.0.1'
        until = time.time() + self.A['peerWaitMinutes'] * 60
        while n > 1:
            try:
                # A reclaimed peer may still be listed for a while: its PREEMPTED marker rules it out.
                gone = {i for i, m in self.store.markers().items() if m.get('state') in ENDED and i != self.node}
                peers = sorted(p for p in self.rt.peers() if p[0] not in gone)
            except Exception as e:
                L.warning('peer lookup failed: %s', e)
                peers = []
            ids = [p[0] for p in peers]
            if len(ids) >= n and self.node in ids:
                rank, master = ids.index(self.node), peers[0][1]
                break
            if time.time() > until:
                return self.end('FAILED', f'peers: {len(ids)} of {n} nodes found within peerWaitMinutes')
            L.info('waiting for peers: %d of %d', len(ids), n)
            time.sleep(5)
        env = {**os.environ, **self.env_file(), **{k: str(v) for k, v in Tr['env'].items()}, 'CKPT_DIR': ck,
               'RESUME_FROM': ck if got or any(os.scandir(ck)) else '', 'NODE_RANK': str(rank),
               'MASTER_ADDR': master, 'MASTER_PORT': port}
        if P['venv']:
            env['PATH'] = os.path.join(P['venv'], 'bin') + os.pathsep + env.get('PATH', '')
        cmd = Tr['command']
        if Tr['launcher'] == 'torchrun':
            t = shlex.split(cmd)
            # torchrun takes the script itself; a command that is not python runs with --no-python.
            t = t[1:] if os.path.basename(t[0]).startswith('python') else ['--no-python', *t]
            cmd = shlex.join(['torchrun', '--nnodes', str(n), '--node_rank', str(rank), '--nproc_per_node',
                              str(int(Tr['gpusPerNode'])), '--master_addr', master, '--master_port', port, *t])
        else:
            env.update(RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK='0')
        pid, t0 = proc.spawn(cmd, Tr['workdir'], env, self.log, self.exitf)
        self.spawned = True
        self.save(phase='run', pid=pid, pstart=t0, spawnedAt=time.time(), startedAt=st.get('startedAt') or time.time(),
                  lastCheckpoint=got,
                  stop=None, state=None, exitCode=None, reason=None, endedAt=None)
        L.info('trainer pid %d started, rank %d of %d, RESUME_FROM=%r: %s', pid, rank, n, env['RESUME_FROM'], cmd)
        try:
            self.marker('RUNNING')
        except Exception as e:
            L.warning('no RUNNING marker: %s', e)

    def env_file(self):
        """KEY=VALUE lines of the bootstrap's train.env (DataLoader workers, AMP, NCCL hints)."""
        try:
            with open(self.c['paths']['trainEnv']) as f:
                kv = [ln.strip().removeprefix('export ').split('=', 1)
                      for ln in f if '=' in ln and ln.strip()[0] != '#']
        except OSError:
            return {}
        return {k.strip(): v.strip().strip('"\'') for k, v in kv}

    def watch(self):
        """Follow the trainer until its process group is gone; stop it on notice, idle, TTL or SIGTERM."""
        A, st = self.A, self.st
        pid, t0, grace = st['pid'], st['pstart'], A['maxGraceSeconds']
        if not self.spawned:
            L.info('re-attaching to the running trainer, pid %d', pid)
        tail, halt, self.low = proc.Tail(self.log, not self.spawned), threading.Event(), None
        # Sampling and uploads run beside the loop, so a slow nvidia-smi or upload never delays the spot poll.
        for secs, fn in ((A['syncIntervalSeconds'], self.sync), (A['utilSampleSeconds'], self.sample)):
            threading.Thread(target=self.every, args=(secs, fn, halt), daemon=True).start()
        # Import the plotting library now, not between the job's end and the release (about 0.6 s).
        threading.Thread(target=self.mon.warm, daemon=True).start()
        ttl = A['maxHours'] and st['boot'] + A['maxHours'] * 3600 - A['ttlMarginMinutes'] * 60
        spot = 0
        # The leader's /proc entry is cheap to check; the whole group is scanned only once it is gone.
        while proc.alive(pid, t0) or proc.group_alive(pid):
            tail.pump(T.info)
            now, s, why = time.time(), st.get('stop'), None
            if s:
                if now > s['kill'] and not s.get('killed'):
                    L.warning('grace period over: SIGKILL to the trainer process group')
                    proc.signal_group(pid, signal.SIGKILL)
                    self.save(stop={**s, 'killed': True})
            elif not proc.alive(pid, t0):
                # It ended by itself: leftovers of its group (workers) get the grace period, then SIGKILL.
                self.save(stop={'kill': now + grace})
            elif self.asked:
                why = 'PREEMPTED', f'agent got {self.asked}: node stopping', grace
            elif now >= spot:
                spot = now + A['spotPollSeconds']
                try:
                    t = self.rt.spot_notice()
                except Exception as e:
                    L.warning('spot notice check failed: %s', e)
                    t = None
                if t:
                    left = t.timestamp() - now - A['uploadAllowanceSeconds']
                    why = 'PREEMPTED', f'spot notice: terminated at {t.isoformat()}', max(1, min(grace, left))
            if not (s or why) and self.low and A['idleMinutes'] and now - self.low >= A['idleMinutes'] * 60:
                why = 'FAILED', f"idle: utilisation under {A['idleUtilPercent']}% for {A['idleMinutes']} min", grace
            if not (s or why) and ttl and now >= ttl:
                why = 'FAILED', f"ttl: maxHours {A['maxHours']} less {A['ttlMarginMinutes']} min reached", grace
            if why:
                L.warning('%s: %s to the trainer, grace %.1f s', why[1], self.c['train']['stopSignal'], why[2])
                proc.signal_group(pid, getattr(signal, self.c['train']['stopSignal']))
                self.save(stop={'state': why[0], 'reason': why[1], 'kill': now + why[2]})
            time.sleep(0.2)
        while tail.pump(T.info):
            pass
        halt.set()
        code, s = proc.exit_code(self.exitf), st.get('stop') or {}
        if code is None and not s.get('state') and st.get('relaunches', 0) < 3:
            # Killed together with its wrapper (reboot, or systemd killing the unit's cgroup): not the
            # trainer's own failure. Start it again from the last checkpoint, a bounded number of times.
            L.warning('trainer vanished without an exit status: relaunching it from the last checkpoint')
            return self.save(phase='start', stop=None, relaunches=st.get('relaunches', 0) + 1)
        if code and not s.get('state') and int(self.c['nodeCount']) > 1:
            peer = self.peer_stopped(st.get('spawnedAt') or 0)
            if peer:
                # torchrun ends every rank when one node goes: wait for the cluster to re-form and
                # resume with it, instead of failing (and releasing) a healthy node.
                L.warning('peer %s was stopped: saving, then waiting for the cluster to re-form', peer)
                self.sync()
                return self.save(phase='start', stop=None)
        state = s.get('state') or ('DONE' if code == 0 else 'FAILED')
        reason = s.get('reason') or (code != 0 and f'trainer exit code {code}' or None)
        if s.get('killed'):
            reason = f"{reason or 'leftover processes'}; killed after the grace period"
        L.info('trainer ended: exit code %s, %s%s', code, state, f' ({reason})' if reason else '')
        self.end(state, reason, state != 'PREEMPTED', exitCode=code)

    def peer_stopped(self, since):
        """The id of a peer that was preempted after `since`; polled while its agent may still be uploading."""
        until = time.time() + self.A['maxGraceSeconds'] + 60
        while True:
            try:
                for node, m in self.store.markers().items():
                    at = m.get('updatedAt')
                    if node != self.node and m.get('state') == 'PREEMPTED' and at and \
                            datetime.fromisoformat(at).timestamp() >= since - 1:
                        return node
            except Exception as e:
                L.warning('peer markers unreadable: %s', e)
            if time.time() > until:
                return None
            time.sleep(1)

    def every(self, secs, fn, halt):
        """Run fn every secs seconds until halted (0: never)."""
        while secs and not halt.wait(secs):
            try:
                fn()
            except Exception as e:
                L.error('%s failed: %s', fn.__name__, e)

    def sync(self):
        self.st['lastCheckpoint'] = self.store.snapshot(self.c['paths']['checkpoints']) or self.st['lastCheckpoint']

    def sample(self):
        u = self.mon.sample(L)
        self.low = None if u is None or u >= self.A['idleUtilPercent'] else self.low or time.time()

    def finish(self):
        st, keep = self.st, self.A['keep']
        if st['phase'] == 'final':
            try:
                ck = self.store.snapshot(self.c['paths']['checkpoints'], True)
                self.save(lastCheckpoint=ck or st.get('lastCheckpoint'))
                try:
                    self.report()
                except Exception as e:
                    L.warning('utilisation report incomplete: %s', e)
                self.marker(st['state'])
            except Exception as e:
                L.error('final upload or marker failed after retries: %s. NOT releasing this node', e)
                with suppress(Exception):
                    self.marker('SYNC_FAILED', reason=f"{e}; the run was {st['state']}: {st['reason']}")
                return 3
            if st['state'] == 'PREEMPTED':
                # The cloud reclaims a preempted node; should it come back, the agent resumes.
                self.save(phase='start', stop=None)
                return 0
            self.save(phase='release')
        if st['release'] and not keep:
            if self.c['cluster'].get('poolName') and not (st.get('pool') or {}).get('retired'):
                self.retire()
            elif self.c.get('billing') == 'spot' and not self.c['cluster'].get('poolName'):
                L.warning('spot node without cluster.poolName: no pool to retire')
            L.info('releasing this node')
            try:
                self.retry(self.rt.release)()
            except Exception as e:
                L.error('release failed: %s (the cloud-side TTL remains the backstop)', e)
                return 4
        else:
            L.info('not releasing this node: %s', 'agent.keep' if keep else st['reason'])
        self.save(phase='done')
        return 0

    def retire(self):
        """Stop this stack's spot pool from replacing nodes, before this node releases itself.

        A pool that keeps its capacity would replace the released node, and the replacement would train,
        release itself and be replaced again until the cloud-side TTL. A retire that still fails after the
        retries is logged, recorded in the state and the marker, and does not keep this node: a kept node
        costs money for certain, a replacement at worst until the TTL (docs/agent.md, "Spot pools").
        """
        name = self.c['cluster']['poolName']
        try:
            pool = {'name': name, 'retired': True, 'detail': self.retry(self.rt.retire_pool)()}
            L.info('spot pool %s retired: %s', name, pool['detail'])
        except Exception as e:
            pool = {'name': name, 'retired': False, 'error': f'{type(e).__name__}: {e}'[:500]}
            L.error('spot pool %s NOT retired after %d tries (%s): releasing this node anyway; the pool may start '
                    'a replacement, which the cloud-side TTL bounds', name, self.A['uploadAttempts'], pool['error'])
        self.save(pool={**pool, 'at': iso(time.time())})
        try:
            self.marker(self.st['state'], pool=self.st['pool'])
        except Exception as e:  # the final marker is already stored; this only adds the pool outcome
            L.warning('marker not updated with the pool outcome: %s', e)

    def report(self):
        d = self.c['paths']['state'] + '/report'
        os.makedirs(d, exist_ok=True)
        L.info('utilisation: %s', json.dumps(self.mon.report(d)))
        for p in (self.csv, d + '/utilisation.png', d + '/summary.json'):
            if os.path.exists(p):
                with open(p, 'rb') as f:
                    self.store.put_data(f'report/{self.node}/{os.path.basename(p)}', f.read())

    def marker(self, state, **kw):
        st, c = self.st, self.c
        t0, t1, rate = st.get('startedAt'), st.get('endedAt'), c['cost'].get('effectivePerNodeHour')
        h = ((t1 or time.time()) - t0) / 3600 if t0 else 0
        try:
            util = self.mon.summary()[0]
        except Exception as e:  # the report is diagnostics: it must never keep a marker from being written
            util = {'error': repr(e)}
        self.store.put_data(f'markers/{self.node}.json', json.dumps({
            'state': state, 'node': self.node, 'stack': c['stack'], 'exitCode': st.get('exitCode'),
            'reason': st.get('reason'), 'startedAt': iso(t0), 'endedAt': iso(t1), 'durationSeconds': round(h * 3600, 1),
            'gpuHours': round(h * c['accelerator']['count'], 4),
            'estimatedCost': None if rate is None else round(h * rate, 4),
            'currency': c['cost'].get('currency'), 'utilisation': util,
            'lastCheckpoint': st.get('lastCheckpoint'), 'updatedAt': iso(time.time()), **kw}, indent=1).encode())
        L.info('marker %s', state)
