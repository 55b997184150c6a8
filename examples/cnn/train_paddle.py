#!/usr/bin/env python3
"""Example training job in PaddlePaddle: a small CNN on generated images, written to the gpu-training contract.

The PaddlePaddle variant of train_cnn.py (docs/training-contract.md): it reads CKPT_DIR /
RESUME_FROM / GPU_TRAINING_AMP from the environment, writes atomic checkpoints every N steps (numpy
.npz files, loaded without pickle: a checkpoint that came back from a bucket is data, never code),
resumes from the newest complete one, and on SIGTERM finishes the current step, saves and exits 75.
A resumed run continues exactly where the stopped one left off: the batches are a function of the
seed and the step, and the model, optimizer and loss-scaler state are in the checkpoint.
One process (train.launcher: direct); paddle and the standard library (plus numpy) only.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import cnn_checkpoint as ckpt

EXIT_FINISHED, EXIT_ERROR, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 75
FORMAT = "gpu-training/train_paddle/v1"
CHECKPOINT_RE = __import__("re").compile(r"^ckpt-(\d{8,})\.npz$")

EPILOG = f"""\
environment (set by the node agent; all optional for a local run):
  CKPT_DIR          where checkpoints are written (default: --ckpt-dir, else ./checkpoints)
  RESUME_FROM       directory (or file) to resume from: the newest complete checkpoint in it; without
                    it, the newest in CKPT_DIR; without that, from scratch
  GPU_TRAINING_AMP  1/0: mixed precision on a GPU (auto_cast O1 + GradScaler; default on); --amp wins

signals:
  SIGTERM, SIGINT   finish the current step, save a checkpoint, exit {EXIT_STOPPED}

exit codes:
  {EXIT_FINISHED}   all --steps done, final checkpoint saved
  {EXIT_ERROR}   error (message on stderr), or checkpoints exist but none loads
  {EXIT_USAGE}   bad argument or environment variable
  {EXIT_STOPPED}  stopped by a signal, checkpoint saved: start again to resume

output: progress lines '[train_paddle] step S/N loss L' and a last JSON line
  {{"event": "train_paddle.summary", "status": "finished"|"stopped", "step": ..., ...}}

example:
  python train_paddle.py --steps 2000 --ckpt-every 200
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="train_paddle.py", description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200, help="training steps in all (default 200)")
    p.add_argument("--ckpt-every", type=int, default=50, help="save a checkpoint every N steps (default 50)")
    p.add_argument("--keep-last", type=int, default=3, help="checkpoints kept in CKPT_DIR (0: all; default 3)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=16)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--width", type=int, default=8, help="channels of the first block")
    p.add_argument("--depth", type=int, default=2, help="conv blocks")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ckpt-dir", help="checkpoint directory when CKPT_DIR is not set")
    p.add_argument("--amp", choices=["on", "off"], help="mixed precision on a GPU (default: GPU_TRAINING_AMP, else on)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--min-step-seconds", type=float, default=0.0, help="pad each step to this long (rehearsals)")
    return p


def usage_error(message: str):
    print(f"train_paddle.py: error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def resolve(argv, env) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    for name in ("steps", "ckpt_every", "batch_size", "image_size", "classes", "width", "depth", "log_every"):
        if getattr(args, name) < 1:
            usage_error(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    args.ckpt_dir = Path(env.get("CKPT_DIR") or args.ckpt_dir or "checkpoints")
    resume = env.get("RESUME_FROM") or ""
    if resume and not Path(resume).exists():
        usage_error(f"RESUME_FROM={resume!r} does not exist (empty or unset means: a first run)")
    args.resume_from = Path(resume) if resume else None
    amp = args.amp or {"1": "on", "0": "off", "": "on"}.get(env.get("GPU_TRAINING_AMP", ""), None)
    if amp is None:
        usage_error(f"GPU_TRAINING_AMP={env.get('GPU_TRAINING_AMP')!r}: allowed 1 or 0")
    args.amp = amp == "on"
    return args


def log(message: str) -> None:
    print(f"[train_paddle] {message}", flush=True)


def batch(args, step: int):
    """The batch of `step`: a function of the seed and the step only, so a resumed run sees the same."""
    rng = np.random.default_rng([args.seed, step])
    labels = rng.integers(0, args.classes, size=args.batch_size)
    images = rng.normal(0, 0.5, size=(args.batch_size, 3, args.image_size, args.image_size)).astype("float32")
    images += (labels[:, None, None, None] / args.classes).astype("float32")  # learnable: class shifts the mean
    return images, labels.astype("int64")


def build_model(args):
    import paddle.nn as nn

    layers, channels = [], 3
    for index in range(args.depth):
        out = args.width * (2 ** index)
        layers += [nn.Conv2D(channels, out, 3, padding=1), nn.BatchNorm2D(out), nn.ReLU()]
        channels = out
    layers += [nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(channels, args.classes)]
    return nn.Sequential(*layers)


class Trainer:
    def __init__(self, args):
        import paddle

        self.paddle, self.args, self.stop = paddle, args, False
        paddle.seed(args.seed)
        self.model = build_model(args)
        self.opt = paddle.optimizer.Momentum(learning_rate=args.lr, momentum=0.9, parameters=self.model.parameters())
        self.gpu = paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
        self.amp = args.amp and self.gpu  # mixed precision needs a GPU; the CPU build trains in float32
        self.scaler = paddle.amp.GradScaler(init_loss_scaling=2.0 ** 15) if self.amp else None
        self.step, self.resumed_from = 0, None

    # -- checkpoints
    def _arrays(self) -> dict:
        out = {f"model/{k}": v.numpy() for k, v in self.model.state_dict().items()}
        extra = {}
        for k, v in self.opt.state_dict().items():
            if hasattr(v, "numpy"):
                out[f"opt/{k}"] = v.numpy()
            else:
                extra[k] = v
        meta = {"format": FORMAT, "step": self.step, "opt_extra": extra,
                "scaler": self.scaler.state_dict() if self.scaler else None,
                "model_args": {k: getattr(self.args, k) for k in ("classes", "width", "depth")}}
        out["meta"] = np.array(json.dumps(meta, default=float))
        return out

    def save(self) -> Path:
        path = self.args.ckpt_dir / f"ckpt-{self.step:08d}.npz"
        arrays = self._arrays()
        ckpt.atomic_write(path, lambda handle: np.savez(handle, **arrays))
        ckpt.rotate(self.args.ckpt_dir, self.args.keep_last, self.step, pattern=CHECKPOINT_RE)
        return path

    @staticmethod
    def _load(path: Path) -> dict:
        with np.load(path, allow_pickle=False) as data:
            state = {k: data[k] for k in data.files}
        meta = json.loads(str(state.pop("meta")))
        return {**meta, "arrays": state}

    def restore(self) -> None:
        candidates = ckpt.find_candidates(self.args.resume_from, pattern=CHECKPOINT_RE) if self.args.resume_from \
            else []
        candidates = candidates or ckpt.find_candidates(self.args.ckpt_dir, depth=1, pattern=CHECKPOINT_RE)
        found = ckpt.load_newest(candidates, self._load, lambda m: log(m), fmt=FORMAT)
        if found is None:
            return
        candidate, state = found
        wanted = {k: getattr(self.args, k) for k in ("classes", "width", "depth")}
        if state["model_args"] != wanted:
            raise ckpt.NoUsableCheckpoint(f"{candidate.path} was made with {state['model_args']}, not {wanted}")
        arrays, tensor = state["arrays"], self.paddle.to_tensor
        self.model.set_state_dict({k[6:]: tensor(v) for k, v in arrays.items() if k.startswith("model/")})
        self.opt.set_state_dict({**{k[4:]: tensor(v) for k, v in arrays.items() if k.startswith("opt/")},
                                 **state["opt_extra"]})
        if self.scaler and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        self.step = self.resumed_from = state["step"]
        log(f"resumed from {candidate.path} at step {self.step}")

    # -- training
    def train_step(self) -> float:
        paddle, args = self.paddle, self.args
        images, labels = batch(args, self.step)
        images, labels = paddle.to_tensor(images), paddle.to_tensor(labels)
        self.model.train()
        with paddle.amp.auto_cast(enable=self.amp, level="O1"):
            loss = paddle.nn.functional.cross_entropy(self.model(images), labels)
        if self.scaler:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        self.opt.clear_grad()
        self.step += 1
        return float(loss)

    def run(self) -> dict:
        args, loss, status = self.args, None, "finished"
        while self.step < args.steps:
            if self.stop:
                status = "stopped"
                break
            started = time.monotonic()
            loss = self.train_step()
            if self.step % args.log_every == 0:
                log(f"step {self.step}/{args.steps} loss {loss:.4f}")
            if self.step % args.ckpt_every == 0 or self.step == args.steps:
                self.save()
            time.sleep(max(0.0, args.min_step_seconds - (time.monotonic() - started)))
        if status == "stopped":
            log(f"stop requested: saved {self.save()}")
        return {"event": "train_paddle.summary", "status": status, "step": self.step,
                "resumed_from_step": self.resumed_from, "loss": loss, "amp": self.amp}


def main(argv=None) -> int:
    args = resolve(argv, os.environ)
    warnings.filterwarnings("ignore", message="No ccache found")  # paddle's import-time note about C++ extensions
    trainer = Trainer(args)

    def request_stop(signum, frame):
        trainer.stop = True

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, request_stop)
    ckpt.remove_temporaries(args.ckpt_dir)
    try:
        trainer.restore()
    except ckpt.NoUsableCheckpoint as error:
        print(f"train_paddle.py: error: checkpoints exist but none loads, not starting from scratch: {error}",
              file=sys.stderr)
        return EXIT_ERROR
    summary = trainer.run()
    print(json.dumps(summary), flush=True)
    return EXIT_STOPPED if summary["status"] == "stopped" else EXIT_FINISHED


if __name__ == "__main__":
    sys.exit(main())
