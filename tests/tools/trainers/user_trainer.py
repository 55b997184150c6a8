"""A user's own trainer, as small as a rehearsal drill allows (tests/tools/test_rehearse_user_trainer.py).

It prints `step N` each step and writes `ckpt-N.txt` (the step) into CKPT_DIR every --ckpt-every steps, atomically,
on RANK 0 only. --mode picks which promise of docs/training-contract.md it keeps:
  good       resumes from the newest checkpoint in RESUME_FROM; on SIGTERM saves and exits 75
  noresume   ignores RESUME_FROM: a replacement starts over from step 1 (it still saves on SIGTERM)
  nohandler  installs no SIGTERM handler: the stop signal kills it before it can save (it still resumes)
  silent     as good, but prints no step: nothing shows whether it resumed
"""
import argparse
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=100)
parser.add_argument("--ckpt-every", type=int, default=10)
parser.add_argument("--mode", choices=["good", "noresume", "nohandler", "silent"], default="good")
parser.add_argument("--pace", type=float, default=0.05, help="seconds a step takes")
args = parser.parse_args()
ckpt_dir = os.environ["CKPT_DIR"]
stopping = []
if args.mode != "nohandler":
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))


def save(step: int) -> None:
    if os.environ.get("RANK", "0") != "0":
        return
    temporary = os.path.join(ckpt_dir, ".ckpt.tmp")
    with open(temporary, "w") as f:
        f.write(str(step))
    os.replace(temporary, os.path.join(ckpt_dir, f"ckpt-{step:06d}.txt"))


start = 0
resume_from = os.environ.get("RESUME_FROM")
if args.mode != "noresume" and resume_from:
    names = sorted(n for n in os.listdir(resume_from) if n.startswith("ckpt-"))
    if names:
        with open(os.path.join(resume_from, names[-1])) as f:
            start = int(f.read())
        print(f"resumed from {names[-1]}", flush=True)
for step in range(start + 1, args.steps + 1):
    time.sleep(args.pace)
    if args.mode != "silent":
        print(f"step {step}", flush=True)
    if step % args.ckpt_every == 0 or stopping:
        save(step)
    if stopping:
        print(f"SIGTERM: saved at step {step}", flush=True)
        sys.exit(75)
sys.exit(0)
