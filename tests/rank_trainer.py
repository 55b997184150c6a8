"""A trainer for the tests of train.command under torchrun: each rank records what it saw, rank 0 saves once.

Writes <RECORD_DIR>/rank-<RANK>.json with its launcher variables, WANDB_MODE, PYTHONUNBUFFERED, its working
folder and arguments; rank 0 then writes one checkpoint into CKPT_DIR atomically (the training contract, §2),
and every rank prints `step 1 on rank R`. Copied into a test's code folder, run by the command under test.
"""
import json
import os
import sys

rank = os.environ.get("RANK", "?")
seen = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "WANDB_MODE", "PYTHONUNBUFFERED")}
with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{rank}.json"), "w") as f:
    json.dump({**seen, "cwd": os.getcwd(), "argv": sys.argv[1:]}, f)
if rank == "0":
    path = os.path.join(os.environ["CKPT_DIR"], "ckpt-1.pt")
    with open(path + ".tmp", "w") as f:
        f.write("weights")
    os.replace(path + ".tmp", path)
print(f"step 1 on rank {rank}", flush=True)
