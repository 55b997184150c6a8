"""The node agent's lifecycle: prepare, start and watch the trainer, final sync, marker, release.

Preparing is: the training code, the newest verified checkpoint, and (data.stage) the packed data
set staged onto the node's disk (staging.py); a data set that cannot be staged completely ends the
run FAILED before the trainer starts.

Every step is recorded in <paths.state>/agent-state.json before the next one starts, so an agent
restarted by systemd continues where the last one stopped and never starts the trainer twice:
  start -> run (trainer pid + start time) -> final (outcome known) -> release -> done
A trainer that ended without a status the agent can read (killed with its wrapper, or the status
lost) is relaunched from the last checkpoint at most three times, and each relaunch is listed with
its reason in the marker (`relaunches`). The state file and the trainer's exit status survive a full
root disk: the status file is allocated before the trainer starts (proc.py), and the agent keeps a
reserve file (RESERVE_BYTES) that it gives up the first time a state write finds the disk full.
A PREEMPTED run (spot notice, or the agent itself got SIGTERM) goes back to `start` after its
marker, so a node that comes back resumes from the checkpoint. The trainer's and the agent's logs are
shipped to logs/<node>/ with every periodic sync, before the final marker, on a failed upload and
right before the release request (logship.py: bounded, never raising), so `gpu-training logs` reads
them after the node is gone. The node is released only after a
verified final upload and the final marker; a failed upload leaves it running (exit 3: systemd
restarts the agent, which retries) until the cloud-side TTL. A node of a spot pool retires the pool
(`cluster.poolName`) in the release phase, just before it releases itself, so the pool does not
replace it; a PREEMPTED node never does.
"""
import errno
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

from . import launch, layout, proc, setup
from .config import expiry
from .logship import LogShipper
from .monitor import Monitor
from .s3 import retrying, runtime
from .staging import Stager, StagingError
from .store import Store

log, trainer_log = logging.getLogger('agent'), logging.getLogger('trainer')
ENDED = ('PREEMPTED', 'DONE', 'FAILED', 'SYNC_FAILED')
RESERVE_BYTES = 1 << 20  # room for the state file and the final steps on a full disk (a state file is ~1 KB)


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
        self.cfg, self.settings, paths = cfg, cfg['agent'], cfg['paths']
        for d in (paths['state'], paths['logs'], paths['checkpoints']):
            os.makedirs(d, exist_ok=True)
        self.state_file, self.exit_file, self.csv, self.reserve = (
            os.path.join(paths['state'], name)
            for name in ('agent-state.json', 'trainer.exit', 'utilisation.csv', 'reserve'))
        # One agent per node: a second one (a human's manual run) must not start a second trainer.
        self.lock = open(os.path.join(paths['state'], 'agent.lock'), 'w')
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(f"node agent: another agent is running on {paths['state']}; not starting a second one") from None
        self.trainer_log_path = os.path.join(paths['logs'], 'trainer.log')
        self.state, self.spawned, self.asked = {}, False, None
        if os.path.exists(self.state_file):
            with open(self.state_file) as f:
                self.state = json.load(f)
        self.keep_reserve()
        self.retry, self.runtime = retrying(cfg), runtime(cfg)
        # Each value is checked against the cloud's declared format by the metadata reader (s3.py):
        # an HTML error page or an empty body is no answer, retried and then fatal (exit 1).
        self.node = self.retry(self.runtime.instance_id)()
        self.region, self.zone = self.retry(self.runtime.placement)()
        if self.region != cfg['region']:
            log.warning('the metadata service places this node in %s, the node config says %s',
                        self.region, cfg['region'])
        self.store = Store(cfg, self.node, cfg['identity']['roleName'] and self.retry(self.runtime.credentials))
        self.monitor = Monitor(cfg, self.csv)
        # The trainer's and the agent's log go to logs/<node>/ (logship.py): a released node keeps its log.
        self.logs = LogShipper(self.store, self.node, paths['logs'])
        # systemd stop / shutdown: stop the trainer gracefully, save, do not release (see watch).
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda number, _: setattr(self, 'asked', signal.Signals(number).name))

    def keep_reserve(self):
        """Hold RESERVE_BYTES on the state disk (written, not sparse), unless a full disk took it already."""
        if os.path.exists(self.reserve):
            return
        try:
            with open(self.reserve + '.tmp', 'wb') as f:
                f.write(bytes(RESERVE_BYTES))
                os.fsync(f.fileno())
            os.replace(self.reserve + '.tmp', self.reserve)
        except OSError as e:
            log.warning('no room for the %d-byte state reserve: %s', RESERVE_BYTES, e)
            with suppress(OSError):
                os.unlink(self.reserve + '.tmp')

    def save(self, **kw):
        self.state.update(kw)
        try:
            self.write_state()
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT) or not os.path.exists(self.reserve):
                raise
            # The disk is full: the state decides whether a trainer runs twice; it comes before the reserve.
            os.unlink(self.reserve)
            log.error('the state disk is full: gave up the %d-byte reserve to record the state; free space on %s',
                      RESERVE_BYTES, self.cfg['paths']['state'])
            self.write_state()

    def write_state(self):
        try:
            with open(self.state_file + '.tmp', 'w') as f:
                json.dump(self.state, f)
                f.flush()
                os.fsync(f.fileno())  # the phase must survive a power cut, or a restart could start a second trainer
            os.replace(self.state_file + '.tmp', self.state_file)
        except OSError:
            with suppress(OSError):
                os.unlink(self.state_file + '.tmp')  # a partial file would only take more of a full disk
            raise

    def end(self, state, reason, release=True, **kw):
        self.save(phase='final', state=state, reason=reason, release=release, endedAt=time.time(), **kw)

    def run(self):
        """The whole lifecycle; the exit status (0 finished, 3 data or marker not saved, 4 release failed)."""
        state, bad = self.state, os.path.join(self.cfg['paths']['state'], 'UNHEALTHY')
        if not state:
            # The TTL counts from the node's start (the cloud's counts from `pulumi up`), not from
            # the agent's: a bare-image bootstrap can take 15 minutes before the agent runs.
            self.save(phase='start', boot=self.settings['bootTime'] or kernel_boot_time() or time.time())
        log.info('node %s (%s), stack %s, phase %s', self.node, self.zone, self.cfg['stack'], state['phase'])
        if state['phase'] == 'done':
            log.info('finished earlier (%s): nothing to do', state.get('state'))
            return 0
        while state['phase'] in ('start', 'run'):
            if state['phase'] == 'start' and os.path.exists(bad):
                with open(bad) as f:
                    # Humans must look at a node whose accelerators do not match: no training, no release.
                    self.end('FAILED', 'unhealthy: ' + (f.read().strip() or 'see bootstrap-status.json'), False)
            elif state['phase'] == 'start':
                self.start()
            else:
                self.watch()
        return self.finish()

    def start(self):
        paths, train, state = self.cfg['paths'], self.cfg['train'], self.state
        ckpt, nodes, port = paths['checkpoints'], int(self.cfg['nodeCount']), str(int(train['rendezvousPort']))
        os.makedirs(train['workdir'], exist_ok=True)
        self.store.fetch_code(train['workdir'])
        if not self.install():
            return None
        restored = self.store.restore(ckpt)
        staged = None
        if self.cfg['data']['stage']:
            try:
                staged = Stager(self.store, paths['dataset'], os.path.join(paths['state'], 'staging.json'),
                                wait_s=self.cfg['data']['waitMinutes'] * 60,
                                poll_s=min(15.0, self.cfg['data']['waitMinutes'] * 6),
                                expect=self.cfg['data']['manifestSha256']).run()
            except StagingError as e:
                # Never train on partial data; the marker names the shard, and the node is released.
                log.error('%s: not starting the trainer', e)
                return self.end('FAILED', str(e))
        rank, master = 0, '127.0.0.1'
        until = time.time() + self.settings['peerWaitMinutes'] * 60
        while nodes > 1:
            try:
                # A reclaimed peer may still be listed for a while: its PREEMPTED marker rules it out.
                gone = {i for i, m in self.store.markers().items() if m.get('state') in ENDED and i != self.node}
                peers = sorted(p for p in self.runtime.peers() if p[0] not in gone)
            except Exception as e:
                log.warning('peer lookup failed: %s', e)
                peers = []
            ids = [p[0] for p in peers]
            if len(ids) >= nodes and self.node in ids:
                rank, master = ids.index(self.node), peers[0][1]
                break
            if time.time() > until:
                return self.end('FAILED', f'peers: {len(ids)} of {nodes} nodes found within peerWaitMinutes')
            log.info('waiting for peers: %d of %d', len(ids), nodes)
            time.sleep(5)
        env = {**os.environ, **self.env_file(), **{k: str(v) for k, v in train['env'].items()}, 'CKPT_DIR': ckpt,
               'RESUME_FROM': ckpt if restored or any(os.scandir(ckpt)) else '', 'NODE_RANK': str(rank),
               'MASTER_ADDR': master, 'MASTER_PORT': port,
               'GPU_TRAINING_STATS_FILE': self.monitor.stats_file}
        if staged:
            env['GPU_TRAINING_DATA'] = paths['dataset']  # the trainer reads the staged shards from here
        if paths['venv']:
            env['PATH'] = os.path.join(paths['venv'], 'bin') + os.pathsep + env.get('PATH', '')
        command = train['command']
        if train['launcher'] == 'torchrun':
            # Each rank runs the whole command through sh (launch.py): `cd`, `&&`, pipes and VAR=x work per rank.
            env = {**launch.ENV, **env}
            command = shlex.join(['torchrun', '--nnodes', str(nodes), '--node_rank', str(rank), '--nproc_per_node',
                                  str(int(train['gpusPerNode'])), '--master_addr', master, '--master_port', port,
                                  *launch.per_rank(command)])
        else:
            env.update(RANK=str(rank), WORLD_SIZE=str(nodes), LOCAL_RANK='0')
        pid, started = proc.spawn(command, train['workdir'], env, self.trainer_log_path, self.exit_file)
        self.spawned = True
        self.save(phase='run', pid=pid, pstart=started, spawnedAt=time.time(), rank=rank,
                  startedAt=state.get('startedAt') or time.time(), lastCheckpoint=restored,
                  stop=None, state=None, exitCode=None, reason=None, endedAt=None)
        log.info('trainer pid %d started, rank %d of %d, RESUME_FROM=%r: %s', pid, rank, nodes, env['RESUME_FROM'],
                 command)
        try:
            self.marker('RUNNING', **({'data': staged} if staged else {}))
        except Exception as e:
            log.warning('no RUNNING marker: %s', e)

    def install(self):
        """The user's packages (setup.py), once per node; False when the run ended here (FAILED or stopped)."""
        train, venv = self.cfg['train'], self.cfg['paths']['venv']
        if not setup.wanted(train):
            return True
        env = {**os.environ, **self.env_file(), **{k: str(v) for k, v in train['env'].items()}}
        if venv:
            env['PATH'] = os.path.join(venv, 'bin') + os.pathsep + env.get('PATH', '')
        try:
            self.save(setup=setup.Setup(self.cfg, self.store, env, self.deadline() or None, lambda: self.asked,
                                        self.installing).run())
            return True
        except setup.SetupFailed as e:
            # Nothing trains on a half-installed node: the marker says why, and the node is released.
            log.error('setup failed: %s. Not starting the trainer; releasing this node', e)
            self.end('FAILED', f'setup failed: {e}'[:2000], setup={'failed': str(e)[:2000]})
        except setup.SetupStopped as e:
            log.warning('%s: the node is stopping', e)
            self.end('PREEMPTED', f'agent got {self.asked} during the setup', False)
        return False

    def installing(self):
        """A RUNNING marker while the setup installs: `status` shows the node busy, not silent, for minutes."""
        try:
            self.marker('RUNNING', setup={'running': True, 'since': iso(time.time())})
        except Exception as e:
            log.warning('no marker for the setup: %s', e)

    def deadline(self):
        """When the agent stops the trainer (epoch seconds): the cloud's release time (agent.expiresAt) or
        maxHours after the boot, less ttlMarginMinutes; 0 for none."""
        settings, margin = self.settings, self.settings['ttlMarginMinutes'] * 60
        if settings['expiresAt']:
            return expiry(settings['expiresAt']) - margin
        return settings['maxHours'] and self.state['boot'] + settings['maxHours'] * 3600 - margin

    def env_file(self):
        """KEY=VALUE lines of the bootstrap's train.env (DataLoader workers, AMP, NCCL hints)."""
        try:
            with open(self.cfg['paths']['trainEnv']) as f:
                kv = [ln.strip().removeprefix('export ').split('=', 1)
                      for ln in f if '=' in ln and ln.strip()[0] != '#']
        except OSError:
            return {}
        return {k.strip(): v.strip().strip('"\'') for k, v in kv}

    def watch(self):
        """Follow the trainer until its process group is gone; stop it on notice, idle, TTL or SIGTERM."""
        settings, state = self.settings, self.state
        pid, started, grace = state['pid'], state['pstart'], settings['maxGraceSeconds']
        if not self.spawned:
            log.info('re-attaching to the running trainer, pid %d', pid)
        tail, halt, self.idle_since = proc.Tail(self.trainer_log_path, not self.spawned), threading.Event(), None
        # Sampling and uploads run beside the loop, so a slow nvidia-smi or upload never delays the spot poll.
        jobs = (settings['syncIntervalSeconds'], self.sync), (settings['utilSampleSeconds'], self.sample)
        for seconds, job in jobs:
            threading.Thread(target=self.every, args=(seconds, job, halt), daemon=True).start()
        # Import the plotting library now, not between the job's end and the release (about 0.6 s).
        threading.Thread(target=self.monitor.warm, daemon=True).start()
        # The stack's one clock: the node config's expiresAt is when the cloud releases the node (the recorded creation
        # time + maxHours), so a node that booted later (a spot replacement, one added by `nodes`) stops before it
        # too. Without it (pods: their Job's deadline counts from its start) the TTL counts maxHours from the boot.
        expires, ttl = settings['expiresAt'], self.deadline()
        deadline = f'expiresAt {expires}' if expires else f"maxHours {settings['maxHours']}"
        spot = 0
        # The leader's /proc entry is cheap to check; the whole group is scanned only once it is gone.
        while proc.alive(pid, started) or proc.group_alive(pid):
            tail.pump(trainer_log.info)
            now, stop, why, reclaim = time.time(), state.get('stop'), None, None
            if stop:
                if now > stop['kill'] and not stop.get('killed'):
                    log.warning('grace period over: SIGKILL to the trainer process group')
                    proc.signal_group(pid, signal.SIGKILL)
                    self.save(stop={**stop, 'killed': True})
            elif not proc.alive(pid, started):
                # It ended by itself: leftovers of its group (workers) get the grace period, then SIGKILL.
                self.save(stop={'kill': now + grace})
            elif self.asked:
                why = 'PREEMPTED', f'agent got {self.asked}: node stopping', grace
            elif now >= spot:
                spot = now + settings['spotPollSeconds']
                try:
                    notice = self.runtime.spot_notice()
                except Exception as e:
                    log.warning('spot notice check failed: %s', e)
                    notice = None
                if notice:
                    reclaim = notice.timestamp()
                    left = reclaim - now - settings['uploadAllowanceSeconds']
                    why = 'PREEMPTED', f'spot notice: terminated at {notice.isoformat()}', max(1, min(grace, left))
            idle = settings['idleMinutes']
            if not (stop or why) and self.idle_since and idle and now - self.idle_since >= idle * 60:
                why = 'FAILED', f"idle: utilisation under {settings['idleUtilPercent']}% for {idle} min", grace
            if not (stop or why) and ttl and now >= ttl:
                why = ('FAILED', f"ttl: {deadline} less {settings['ttlMarginMinutes']} min reached", grace)
            if why:
                log.warning('%s: %s to the trainer, grace %.1f s', why[1], self.cfg['train']['stopSignal'], why[2])
                proc.signal_group(pid, getattr(signal, self.cfg['train']['stopSignal']))
                # `at` and `reclaimAt` go into the marker: when the trainer was told, and the cloud's notice.
                self.save(stop={'state': why[0], 'reason': why[1], 'kill': now + why[2], 'at': now,
                                'reclaimAt': reclaim})
            time.sleep(0.2)
        while tail.pump(trainer_log.info):
            pass
        halt.set()
        return self.conclude(pid)

    def conclude(self, pid):
        """The trainer's group is gone: relaunch it, wait for the cluster, or record how it ended."""
        state = self.state
        (code, unknown), stop = proc.exit_code(self.exit_file), state.get('stop') or {}
        relaunched = state.get('relaunched') or []
        if code is None and not stop.get('state'):
            # Killed together with its wrapper (reboot, or systemd killing the unit's cgroup): not the
            # trainer's own failure. Start it again from the last checkpoint, a bounded number of times,
            # and say so in every marker from now on: a relaunch must never pass for the first run.
            note = {'at': iso(time.time()), 'pid': pid, 'reason': f'the trainer ended without an exit status: {unknown}'}
            if len(relaunched) < 3:
                log.warning('%s: relaunching it from the last checkpoint', note['reason'])
                return self.save(phase='start', stop=None, relaunched=[*relaunched, note])
            stop = {'state': 'FAILED', 'reason': f"{note['reason']}, after {len(relaunched)} relaunches"}
        if code and not stop.get('state') and int(self.cfg['nodeCount']) > 1:
            peer = self.peer_stopped(state.get('spawnedAt') or 0)
            if peer:
                # torchrun ends every rank when one node goes: wait for the cluster to re-form and
                # resume with it, instead of failing (and releasing) a healthy node.
                log.warning('peer %s was stopped: saving, then waiting for the cluster to re-form', peer)
                self.sync()
                return self.save(phase='start', stop=None)
        outcome = stop.get('state') or ('DONE' if code == 0 else 'FAILED')
        reason = stop.get('reason') or (code != 0 and f'trainer exit code {code}' or None)
        if stop.get('killed'):
            reason = f"{reason or 'leftover processes'}; killed after the grace period"
        log.info('trainer ended: exit code %s, %s%s', code, outcome, f' ({reason})' if reason else '')
        self.end(outcome, reason, outcome != 'PREEMPTED', exitCode=code)

    def peer_stopped(self, since):
        """The id of a peer that was preempted after `since`; polled while its agent may still be uploading."""
        until = time.time() + self.settings['maxGraceSeconds'] + 60
        while True:
            try:
                for node, m in self.store.markers().items():
                    at = m.get('updatedAt')
                    if node != self.node and m.get('state') == 'PREEMPTED' and at and \
                            datetime.fromisoformat(at).timestamp() >= since - 1:
                        return node
            except Exception as e:
                log.warning('peer markers unreadable: %s', e)
            if time.time() > until:
                return None
            time.sleep(1)

    def every(self, seconds, job, halt):
        """Run job every `seconds` until halted (0: never)."""
        while seconds and not halt.wait(seconds):
            try:
                job()
            except Exception as e:
                log.error('%s failed: %s', job.__name__, e)

    def sync(self):
        try:
            self.state['lastCheckpoint'] = (self.store.snapshot(self.cfg['paths']['checkpoints'])
                                            or self.state['lastCheckpoint'])
        finally:
            self.logs.ship()  # with the periodic sync, even when the snapshot failed

    def sample(self):
        util = self.monitor.sample(log)
        low = util is not None and util < self.settings['idleUtilPercent']
        self.idle_since = (self.idle_since or time.time()) if low else None

    def finish(self):
        state, keep = self.state, self.settings['keep']
        if state['phase'] == 'final':
            try:
                newest = self.store.snapshot(self.cfg['paths']['checkpoints'], True)
                self.save(lastCheckpoint=newest or state.get('lastCheckpoint'))
                why = state['state'] == 'DONE' and self.untrained()
                if why:
                    # Not a clean DONE, yet nothing is left to do here: the node is released all the same.
                    log.error('%s', why)
                    self.save(state='FAILED', reason=why)
                try:
                    self.report()
                except Exception as e:
                    log.warning('utilisation report incomplete: %s', e)
                # Before the marker: whoever sees a final marker finds the log that explains it.
                self.logs.ship('final')
                self.marker(state['state'])
            except Exception as e:
                log.error('final upload or marker failed after retries: %s. NOT releasing this node', e)
                with suppress(Exception):
                    self.marker('SYNC_FAILED', reason=f"{e}; the run was {state['state']}: {state['reason']}")
                self.logs.ship('sync failed')
                return 3
            if state['state'] == 'PREEMPTED':
                # The cloud reclaims a preempted node; should it come back, the agent resumes.
                self.save(phase='start', stop=None)
                self.logs.ship('preempted')
                return self.exit_code('PREEMPTED')
            self.save(phase='release')
        if state['release'] and not keep:
            if self.cfg['cluster'].get('poolName') and not (state.get('pool') or {}).get('retired'):
                self.retire()
            elif self.cfg.get('billing') == 'spot' and not self.cfg['cluster'].get('poolName'):
                log.warning('spot node without cluster.poolName: no pool to retire')
            log.info('releasing this node')
            # Always attempted before the release request (bounded: SHIP_DEADLINE_S), never after it only.
            self.logs.ship('release')
            try:
                self.retry(self.runtime.release)()
            except Exception as e:
                log.error('release failed: %s (the cloud-side TTL remains the backstop)', e)
                self.logs.ship('release failed')
                return 4
        else:
            log.info('not releasing this node: %s', 'agent.keep' if keep else state['reason'])
            self.logs.ship('kept')
        self.save(phase='done')
        return self.exit_code(state['state'])

    def untrained(self):
        """Why a command that exited 0 did not train, or None. Judged on node rank 0 only (the rank that saves,
        docs/training-contract.md §2): no checkpoint restored or snapshotted from CKPT_DIR, and no step in
        GPU_TRAINING_STATS_FILE. A command that ends at once (`true && ...` started nothing) lands here."""
        state, stats = self.state, {}
        if state.get('rank') or state.get('lastCheckpoint'):
            return None
        with suppress(OSError, ValueError):
            with open(self.monitor.stats_file) as f:
                stats = json.load(f)
        if isinstance(stats, dict) and stats.get('step'):
            return None
        return (f"finished without training: the command exited 0 but left no checkpoint in CKPT_DIR "
                f"({self.cfg['paths']['checkpoints']}) and no step in GPU_TRAINING_STATS_FILE; its output is in "
                f"{layout.log(self.node, 'trainer.log')}.* in the bucket")

    def exit_code(self, outcome):
        """0, unless the runtime maps outcomes to exit codes (a pod's: its Job recreates or fails it)."""
        mapping = getattr(self.runtime, 'exit_code', None)
        return mapping(outcome) if mapping else 0

    def retire(self):
        """Stop this stack's spot pool from replacing nodes, before this node releases itself.

        A pool that keeps its capacity would replace the released node, and the replacement would train,
        release itself and be replaced again until the cloud-side TTL. A retire that still fails after the
        retries is logged, recorded in the state and the marker, and does not keep this node: a kept node
        costs money for certain, a replacement at worst until the TTL (docs/agent.md, "Spot pools").
        """
        name = self.cfg['cluster']['poolName']
        try:
            pool = {'name': name, 'retired': True, 'detail': self.retry(self.runtime.retire_pool)()}
            log.info('spot pool %s retired: %s', name, pool['detail'])
        except Exception as e:
            pool = {'name': name, 'retired': False, 'error': f'{type(e).__name__}: {e}'[:500]}
            log.error('spot pool %s NOT retired after %d tries (%s): releasing this node anyway; the pool may start '
                      'a replacement, which the cloud-side TTL bounds', name, self.settings['uploadAttempts'], pool['error'])
        self.save(pool={**pool, 'at': iso(time.time())})
        try:
            self.marker(self.state['state'], pool=self.state['pool'])
        except Exception as e:  # the final marker is already stored; this only adds the pool outcome
            log.warning('marker not updated with the pool outcome: %s', e)

    def stop_record(self):
        """{'stopSignal': when the trainer was told to stop, the grace it got, the reclaim the notice named},
        or {} when the agent stopped nothing (to the millisecond: a drill compares it with its notice)."""
        stop = self.state.get('stop') or {}
        if not stop.get('at'):
            return {}
        ms = lambda t: t and datetime.fromtimestamp(t, timezone.utc).isoformat(timespec='milliseconds')  # noqa: E731
        return {'stopSignal': {'at': ms(stop['at']), 'graceSeconds': round(stop['kill'] - stop['at'], 3),
                               'reclaimAt': ms(stop.get('reclaimAt'))}}

    def report(self):
        folder = self.cfg['paths']['state'] + '/report'
        os.makedirs(folder, exist_ok=True)
        log.info('utilisation: %s', json.dumps(self.monitor.report(folder, self.node)))
        for path in (self.csv, self.monitor.loader_csv, folder + '/utilisation.png', folder + '/summary.json'):
            if os.path.exists(path):
                with open(path, 'rb') as f:
                    self.store.put_data(layout.report(self.node, os.path.basename(path)), f.read())

    def marker(self, outcome, **extra):
        state, cfg = self.state, self.cfg
        began, ended, rate = state.get('startedAt'), state.get('endedAt'), cfg['cost'].get('effectivePerNodeHour')
        hours = ((ended or time.time()) - began) / 3600 if began else 0
        try:
            util = self.monitor.summary()[0]
        except Exception as e:  # the report is diagnostics: it must never keep a marker from being written
            util = {'error': repr(e)}
        self.store.put_data(layout.marker(self.node), json.dumps({
            'state': outcome, 'node': self.node, 'stack': cfg['stack'], 'region': self.region, 'zone': self.zone,
            'exitCode': state.get('exitCode'), 'reason': state.get('reason'), 'startedAt': iso(began),
            'endedAt': iso(ended), 'durationSeconds': round(hours * 3600, 1),
            'gpuHours': round(hours * cfg['accelerator']['count'], 4),
            'estimatedCost': None if rate is None else round(hours * rate, 4),
            'currency': cfg['cost'].get('currency'), 'utilisation': util,
            'lastCheckpoint': state.get('lastCheckpoint'), 'relaunches': state.get('relaunched') or [],
            **({'setup': state['setup']} if state.get('setup') else {}),
            **self.stop_record(), 'updatedAt': iso(time.time()), **extra}, indent=1).encode())
        log.info('marker %s', outcome)
