"""A small real trainer for the agent tests: steps, atomic checkpoints, resume, save on SIGTERM.

It follows the trainer contract of docs/agent.md: reads CKPT_DIR and RESUME_FROM, writes each
checkpoint atomically (temp file + rename) as ckpt-<step>.bin = one JSON header line
{"step", "sha256" of the payload} + payload, keeps the newest two, and on SIGTERM saves and exits.
Knobs (environment): FT_STEPS (20), FT_STEP_S (0.05), FT_EVERY (5 steps per checkpoint), FT_BLOB
(payload bytes, 65536), FT_IGNORE_TERM=1, FT_HANG_AT (step at which it hangs with the GPU idle),
FT_UTIL (the GPU utilisation it reports, 90), FT_EXIT (exit code at the end), FT_HOLD (a file to wait for
before that exit), FT_RECORD (JSON lines: one per start, one per SIGTERM, one at the end), FT_GPU
(file the fake nvidia-smi reads the utilisation from).
"""
import glob
import hashlib
import json
import os
import signal
import sys
import time

E = os.environ
ckpt, record, gpu = E['CKPT_DIR'], E.get('FT_RECORD'), E.get('FT_GPU')
steps, every, blob = int(E.get('FT_STEPS', 20)), int(E.get('FT_EVERY', 5)), int(E.get('FT_BLOB', 65536))
term = []


def note(**kw):
    if record:
        with open(record, 'a') as f:
            f.write(json.dumps({'pid': os.getpid(), 'time': time.time(), **kw}) + '\n')


def util(v):
    if gpu:
        with open(gpu + '.tmp', 'w') as f:
            f.write(str(v))
        os.replace(gpu + '.tmp', gpu)


def read(path):
    """(step, ok) of one checkpoint file."""
    with open(path, 'rb') as f:
        head, payload = f.read().split(b'\n', 1)
    h = json.loads(head)
    return h['step'], hashlib.sha256(payload).hexdigest() == h['sha256']


def payload(step):
    seed = hashlib.sha256(str(step).encode()).digest()
    return (seed * (blob // len(seed) + 1))[:blob]


def save(step):
    p = payload(step)
    path = os.path.join(ckpt, f'ckpt-{step:05d}.bin')
    with open(path + '.tmp', 'wb') as f:
        f.write(json.dumps({'step': step, 'sha256': hashlib.sha256(p).hexdigest()}).encode() + b'\n' + p)
    os.replace(path + '.tmp', path)
    for old in sorted(glob.glob(os.path.join(ckpt, 'ckpt-*.bin')))[:-2]:
        os.unlink(old)


step = 0
if E.get('RESUME_FROM'):
    done = [read(p) for p in glob.glob(os.path.join(E['RESUME_FROM'], 'ckpt-*.bin'))]
    step = max([s for s, ok in done if ok], default=0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if E.get('FT_IGNORE_TERM') else lambda *a: term.append(time.time()))
note(start=step, env={k: E.get(k) for k in ('CKPT_DIR', 'RESUME_FROM', 'RANK', 'WORLD_SIZE', 'LOCAL_RANK',
                                           'NODE_RANK', 'MASTER_ADDR', 'MASTER_PORT', 'FROM_TRAIN_ENV', 'EXTRA',
                                           'GPU_TRAINING_DATA', 'GPU_TRAINING_STATS_FILE')},
     cwd=os.getcwd())
util(int(E.get('FT_UTIL', 90)))
print(f'training from step {step}', flush=True)
while step < steps:
    if term:
        note(term=term[0], step=step)
        save(step)
        print(f'SIGTERM: saved step {step}', flush=True)
        sys.exit(0)
    if E.get('FT_HANG_AT') and step >= int(E['FT_HANG_AT']):
        util(0)
        print('hanging', flush=True)
        while True:
            time.sleep(1)
    time.sleep(float(E.get('FT_STEP_S', 0.05)))
    step += 1
    if E.get('FT_DATA_WAIT') and E.get('GPU_TRAINING_STATS_FILE'):
        # The figures the example trainer reports (docs/training-contract.md), replaced atomically.
        with open(E['GPU_TRAINING_STATS_FILE'] + '.tmp', 'w') as f:
            json.dump({'step': step, 'imagesPerSecond': 100.0, 'dataWaitPercent': float(E['FT_DATA_WAIT']),
                       'workers': int(E.get('FT_WORKERS', 1)), 'format': 'folder', 'amp': True}, f)
        os.replace(E['GPU_TRAINING_STATS_FILE'] + '.tmp', E['GPU_TRAINING_STATS_FILE'])
    if step % every == 0:
        save(step)
        print(f'step {step}: checkpoint', flush=True)
save(step)
note(end=step)
print('finished', flush=True)
while E.get('FT_HOLD') and not os.path.exists(E['FT_HOLD']):
    time.sleep(0.05)
sys.exit(int(E.get('FT_EXIT', 0)))
