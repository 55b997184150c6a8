"""A trainer for the tests of train.command under torchrun: each rank records what it saw, rank 0 saves.

Writes <RECORD_DIR>/rank-<RANK>.json with its launcher variables, WANDB_MODE, PYTHONUNBUFFERED, its working
folder and arguments; rank 0 then writes one checkpoint into CKPT_DIR atomically (the training contract, §2),
and every rank prints `step 1 on rank R`. Copied into a test's code folder, run by the command under test.

With SAVE_ON_STOP_SECONDS set it then trains until the stop signal (SIGTERM), as a real trainer does, and
rank 0 takes that long to write its final checkpoint `ckpt-final.pt` (a save takes time on a real node);
it prints nothing after the signal (its stdout may be a pipe whose reader got the signal too).
"""
import json
import os
import signal
import sys
import time

rank = os.environ.get("RANK", "?")


def save(name):
    path = os.path.join(os.environ["CKPT_DIR"], name)
    with open(path + ".tmp", "w") as f:
        f.write("weights")
    os.replace(path + ".tmp", path)


seen = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "WANDB_MODE", "PYTHONUNBUFFERED")}
with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{rank}.json"), "w") as f:
    json.dump({**seen, "cwd": os.getcwd(), "argv": sys.argv[1:]}, f)
if rank == "0":
    save("ckpt-1.pt")
print(f"step 1 on rank {rank}", flush=True)

if os.environ.get("SAVE_ON_STOP_SECONDS"):
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    while not stopped:
        time.sleep(0.05)
    time.sleep(float(os.environ["SAVE_ON_STOP_SECONDS"]))
    if rank == "0":
        save("ckpt-final.pt")
