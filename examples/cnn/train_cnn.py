#!/usr/bin/env python3
"""Example training job: a small ResNet on generated images, written to the gpu-training contract.

It shows what a training script does to survive spot preemption and auto-teardown (see
docs/training-contract.md): read CKPT_DIR / RESUME_FROM / rank variables / GPU_TRAINING_* hints
from the environment, write atomic checkpoints every N steps, and on SIGTERM finish the current
step, save and exit. A resumed run continues exactly where the stopped one left off: same step,
same optimizer state, same batches. torch and the standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path

EXIT_FINISHED = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
# EX_TEMPFAIL from sysexits.h: "try again later", which is what a saved, resumable stop means.
EXIT_STOPPED = 75

# Arguments that change the model's shape: a checkpoint made with other values cannot be loaded.
MODEL_ARGS = ("classes", "width", "depth")

EPILOG = f"""\
environment (set by the node agent; all optional for a local run):
  CKPT_DIR        where checkpoints are written (default: --ckpt-dir, else ./checkpoints)
  RESUME_FROM     directory (or file) to resume from: the newest complete checkpoint in it is used;
                  without it, the newest checkpoint in CKPT_DIR; without that, from scratch
  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
                  set by torchrun: distributed data parallel, NCCL on GPUs, HCCL on NPUs, gloo on CPUs
  GPU_TRAINING_DATALOADER_WORKERS   DataLoader workers per process (default: half the cores
                  per local process); --workers wins
  GPU_TRAINING_AMP                  1/0: mixed precision on CUDA and NPU (default on); --amp wins
  GPU_TRAINING_DATA                 the staged data set (a folder made by scripts/pack.py, or
                  <folder>/<class>/<image>): train on it instead of generated images; --data wins
  GPU_TRAINING_STATS_FILE           where to write throughput and data-loader wait at each progress
                  line (JSON, for the node agent's utilisation report)

signals:
  SIGTERM, SIGINT  finish the current step, save a checkpoint, exit {EXIT_STOPPED}
                   (a second SIGINT stops at once; checkpoint files are never left half-written)

exit codes:
  {EXIT_FINISHED}   all --steps done, final checkpoint saved
  {EXIT_ERROR}   error (message on stderr)
  {EXIT_USAGE}   bad argument or environment variable
  {EXIT_STOPPED}  stopped by a signal, checkpoint saved: start again to resume

output: progress lines '[train_cnn] step S/N loss L ...' and a last line with a JSON summary
  {{"event": "train_cnn.summary", "status": "finished"|"stopped", "step": ..., ...}}

example:
  python train_cnn.py --steps 2000 --ckpt-every 200
  torchrun --standalone --nproc_per_node 4 train_cnn.py --steps 2000 --ckpt-every 200
"""


class UsageError(Exception):
    """A bad flag or environment variable: reported in one line, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="train_cnn.py",
        description="Train a small ResNet on generated images, with atomic checkpoints, exact "
                    "resume, AMP on CUDA and DDP under torchrun.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    t = p.add_argument_group("training")
    t.add_argument("--steps", type=int, default=2000, help="optimizer steps in all (default 2000)")
    t.add_argument("--batch-size", type=int, default=128, help="images per step per process (default 128)")
    t.add_argument("--lr", type=float, default=0.05, help="peak learning rate of SGD with momentum (default 0.05)")
    t.add_argument("--weight-decay", type=float, default=5e-4, help="(default 5e-4)")
    t.add_argument("--warmup-steps", type=int, default=None,
                   help="linear warm-up, then cosine decay to 0 (default: 5%% of --steps)")
    t.add_argument("--seed", type=int, default=0, help="seed of the model, the data and its order (default 0)")
    m = p.add_argument_group("model and data")
    m.add_argument("--width", type=int, default=32, help="channels of the first stage; x2 and x4 after (default 32)")
    m.add_argument("--depth", type=int, default=2, help="residual blocks per stage (default 2)")
    m.add_argument("--image-size", type=int, default=64, help="generated images are SIZE x SIZE RGB (default 64)")
    m.add_argument("--classes", type=int, default=10, help="classes of the generated dataset (default 10)")
    m.add_argument("--dataset-size", type=int, default=50000, help="images per epoch (default 50000)")
    m.add_argument("--noise", type=float, default=0.5, help="noise added to each image; higher is harder (default 0.5)")
    m.add_argument("--data", default=None,
                   help="train on the images in DATA (packed by scripts/pack.py, or one subfolder per class) "
                        "instead of generated ones; default GPU_TRAINING_DATA. --classes and --dataset-size "
                        "then come from the data")
    c = p.add_argument_group("checkpoints")
    c.add_argument("--ckpt-every", type=int, default=200, help="save every N steps (default 200)")
    c.add_argument("--keep-last", type=int, default=3, help="checkpoints kept in CKPT_DIR; 0 keeps all (default 3)")
    c.add_argument("--ckpt-dir", default=None, help="overrides CKPT_DIR")
    c.add_argument("--resume-from", default=None, help="overrides RESUME_FROM")
    r = p.add_argument_group("runtime")
    r.add_argument("--device", choices=("auto", "cpu", "cuda", "npu"), default="auto",
                   help="auto: CUDA when present, else an Ascend NPU (torch_npu), else the CPU (default auto)")
    r.add_argument("--amp", choices=("auto", "on", "off"), default="auto",
                   help="mixed precision (autocast + GradScaler); auto: GPU_TRAINING_AMP, on when on CUDA or NPU")
    r.add_argument("--amp-dtype", choices=("fp16", "bf16"), default="fp16",
                   help="autocast dtype; fp16 uses the GradScaler (default fp16, which T4s need)")
    r.add_argument("--workers", type=int, default=None,
                   help="DataLoader workers per process (default: GPU_TRAINING_DATALOADER_WORKERS, "
                        "else half the cores per local process)")
    r.add_argument("--log-every", type=int, default=20, help="progress line every N steps (default 20)")
    r.add_argument("--min-step-seconds", type=float, default=0.0,
                   help="pace: a step lasts at least this long (default 0). For rehearsals, so a drill can act"
                        " mid-run however fast the machine is")
    return p


def _env_int(env: dict, name: str, minimum: int, default: int | None = None) -> int | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"environment variable {name}={raw!r}: must be an integer >= {minimum}") from None
    if value < minimum:
        raise UsageError(f"environment variable {name}={raw!r}: must be an integer >= {minimum}")
    return value


def resolve(argv: list[str] | None, env: dict) -> argparse.Namespace:
    """Parse flags and the environment into one checked settings object (no torch needed)."""
    args = build_parser().parse_args(argv)
    minimums = {"steps": 1, "batch_size": 1, "width": 1, "depth": 1, "image_size": 8, "classes": 2,
                "dataset_size": 1, "ckpt_every": 1, "keep_last": 0, "log_every": 1, "workers": 0,
                "warmup_steps": 0}
    for key, minimum in minimums.items():
        value = getattr(args, key)
        if value is not None and value < minimum:
            raise UsageError(f"--{key.replace('_', '-')} {value}: must be >= {minimum}")
    if args.lr <= 0:
        raise UsageError(f"--lr {args.lr}: must be > 0")
    if args.noise < 0:
        raise UsageError(f"--noise {args.noise}: must be >= 0")

    args.world_size = _env_int(env, "WORLD_SIZE", 1, 1)
    args.rank = _env_int(env, "RANK", 0, 0)
    args.local_rank = _env_int(env, "LOCAL_RANK", 0, 0)
    args.local_world_size = _env_int(env, "LOCAL_WORLD_SIZE", 1, None)
    if args.rank >= args.world_size:
        raise UsageError(f"environment variable RANK={args.rank}: must be < WORLD_SIZE={args.world_size}")
    if args.world_size > 1:
        missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if not env.get(k)]
        if missing:
            raise UsageError(f"WORLD_SIZE={args.world_size} needs {' and '.join(missing)}: "
                             "launch with torchrun, which sets them")
    data = args.data or env.get("GPU_TRAINING_DATA") or None
    args.data = Path(data) if data else None
    if args.data is not None and not args.data.is_dir():
        raise UsageError(f"--data / GPU_TRAINING_DATA {str(args.data)!r} is not a folder")
    args.stats_file = env.get("GPU_TRAINING_STATS_FILE") or None
    if args.data is None and args.dataset_size // args.world_size < args.batch_size:
        raise UsageError(f"--dataset-size {args.dataset_size}: must hold at least one step for every "
                         f"process (>= --batch-size {args.batch_size} x WORLD_SIZE {args.world_size})")

    args.ckpt_dir = Path(args.ckpt_dir or env.get("CKPT_DIR") or "checkpoints")
    resume = args.resume_from or env.get("RESUME_FROM") or None
    args.resume_from = Path(resume) if resume else None
    if args.resume_from is not None and not args.resume_from.exists():
        # Carrying on would silently restart from step 0 and overwrite the run's progress.
        raise UsageError(f"RESUME_FROM={str(args.resume_from)!r} does not exist: point it at the "
                         "directory holding the checkpoints, or unset it to start from CKPT_DIR")

    amp_hint = env.get("GPU_TRAINING_AMP", "").strip().lower()
    if amp_hint not in ("", "1", "0", "true", "false", "on", "off", "yes", "no"):
        raise UsageError(f"environment variable GPU_TRAINING_AMP={amp_hint!r}: allowed 1 or 0")
    args.amp_hint = amp_hint not in ("0", "false", "off", "no")
    args.workers_hint = _env_int(env, "GPU_TRAINING_DATALOADER_WORKERS", 0)
    if args.warmup_steps is None:
        args.warmup_steps = max(1, args.steps // 20)
    return args


def log(message: str) -> None:
    emit(f"[train_cnn] {message}")


def emit(line: str) -> None:
    """A line on stdout, whether or not anyone still reads it."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        # stdout is a pipe whose reader has ended: `train_cnn.py | tee log` under a stop signal, which reaches tee
        # too. A lost line must not cost the checkpoint the stop asks for, so the rest of the output goes to
        # /dev/null, its descriptor included (what the interpreter flushes at exit); the Python docs' "Note on
        # SIGPIPE" (library/signal.html) does the same.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class StopFlag:
    """Remembers the first stop signal; the loop acts on it between steps.

    The handler only records: printing or saving inside a handler can re-enter the I/O in
    progress. A second SIGINT means the user really wants out now.
    """

    def __init__(self):
        self.signum: int | None = None

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self.signum is None:
            self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "-"


def _ignore_stop_signals(_worker_id: int) -> None:
    # The agent may signal the whole process group: workers must leave the stop to the main
    # process, or the batch being fetched dies with them and the final save never happens.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_workers(args) -> int:
    """Half the cores per local training process: the guide's rule of thumb."""
    if args.workers is not None:
        return args.workers
    if args.workers_hint is not None:
        return args.workers_hint
    local = args.local_world_size or 1
    return max(1, (os.cpu_count() or 2) // local // 2)


def learning_rate(args, step: int) -> float:
    """Linear warm-up then cosine decay; a function of the step alone, so resume needs no scheduler state."""
    import math
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    span = max(1, args.steps - args.warmup_steps)
    progress = min(1.0, (step - args.warmup_steps) / span)
    return args.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


class Trainer:
    """One training process: builds everything from the settings, resumes, trains, saves."""

    def __init__(self, args, stop: StopFlag):
        import torch
        import torch.distributed as dist
        from cnn_checkpoint import checkpoint_name, find_candidates, load_newest, remove_temporaries
        from cnn_device import DeviceError, choose
        from cnn_data import ResumableDistributedSampler, SyntheticImages
        from cnn_shards import open_images
        from cnn_model import ResNet

        self.torch, self.dist, self.args, self.stop = torch, dist, args, stop
        self.checkpoint_name = checkpoint_name
        self.distributed = args.world_size > 1
        try:
            self.accelerator = choose(torch, args.device, args.local_rank)  # cuda, npu or cpu (cnn_device.py)
        except DeviceError as error:
            raise UsageError(str(error)) from None
        self.device, accelerated = self.accelerator.device, self.accelerator.accelerated
        self.is_main = args.rank == 0
        if self.distributed:
            dist.init_process_group(self.accelerator.backend, init_method="env://",
                                    rank=args.rank, world_size=args.world_size)

        self.amp = accelerated and (args.amp == "on" or (args.amp == "auto" and args.amp_hint))
        if args.amp == "on" and not accelerated:
            self.say("--amp on ignored: mixed precision is only used on CUDA and NPU")
        self.amp_dtype = torch.bfloat16 if args.amp_dtype == "bf16" else torch.float16
        self.memory_format = torch.channels_last if self.accelerator.channels_last else torch.contiguous_format

        if args.data is not None:
            try:
                self.dataset = open_images(args.data, args.image_size)
            except (OSError, ValueError) as error:
                raise UsageError(f"--data {args.data}: {error}") from None
            args.classes, args.dataset_size = len(self.dataset.classes), len(self.dataset)
            if args.dataset_size // args.world_size < args.batch_size:
                raise UsageError(f"--data {args.data}: {args.dataset_size} images, fewer than one step for every "
                                 f"process (--batch-size {args.batch_size} x WORLD_SIZE {args.world_size})")
        else:
            self.dataset = SyntheticImages(args.dataset_size, args.image_size, args.classes, args.seed, args.noise)
        torch.manual_seed(args.seed)
        random.seed(args.seed)
        self.model = ResNet(args.classes, args.width, args.depth).to(self.device, memory_format=self.memory_format)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                         weight_decay=args.weight_decay)
        self.scaler = self.accelerator.scaler(torch, enabled=self.amp and self.amp_dtype == torch.float16)
        self.loss_fn = torch.nn.CrossEntropyLoss()

        if self.is_main:
            for path in remove_temporaries(args.ckpt_dir):
                self.say(f"removed {path.name}, left by a write that was killed")
        self.step = 0
        self.resumed_from: Path | None = None
        loaded = None
        sources = [p for p in (args.resume_from, args.ckpt_dir) if p is not None]
        for source in sources:
            if not source.exists():
                continue
            found = load_newest(find_candidates(source), self._load_file, self.say)
            if found is None:
                self.say(f"no checkpoint in {source}")
                continue
            candidate, loaded = found
            self._restore(loaded, candidate.path)
            self.resumed_from = candidate.path
            break
        if self.distributed:
            self._agree_on_resume(loaded)
        newer = [c for c in find_candidates(args.ckpt_dir, depth=1) if c.step > self.step] \
            if args.ckpt_dir.exists() else []
        if newer and self.resumed_from is not None:
            self.say(f"note: {args.ckpt_dir} holds a newer checkpoint ({newer[0].path.name}) than the one "
                     f"resumed from; it is kept, and picked up by a start without RESUME_FROM")

        self.ddp_model = self.model
        if self.distributed:
            from torch.nn.parallel import DistributedDataParallel
            self.ddp_model = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if accelerated else None)

        self.sampler = ResumableDistributedSampler(self.dataset, args.world_size, args.rank, args.seed)
        self.steps_per_epoch = (args.dataset_size // args.world_size) // args.batch_size
        self.workers = default_workers(args)
        # Its own generator: creating a loader iterator draws a seed, and a draw from the global
        # RNG would make a resumed run's RNG state differ from an uninterrupted run's.
        self.loader = torch.utils.data.DataLoader(
            self.dataset, batch_size=args.batch_size, sampler=self.sampler, drop_last=True,
            num_workers=self.workers, pin_memory=accelerated, persistent_workers=self.workers > 0,
            prefetch_factor=4 if self.workers > 0 else None,
            worker_init_fn=_ignore_stop_signals, generator=torch.Generator().manual_seed(args.seed))

    def say(self, message: str) -> None:
        if self.is_main:
            log(message)

    # --- checkpoints -------------------------------------------------------------------------
    def _load_file(self, path: Path) -> dict:
        # weights_only: a checkpoint restored from a bucket is data, never code to execute.
        return self.torch.load(path, map_location="cpu", weights_only=True)

    def _restore(self, state: dict, path: Path) -> None:
        torch, args = self.torch, self.args
        saved = state.get("args", {})
        differ = [k for k in MODEL_ARGS if k in saved and saved[k] != getattr(args, k)]
        if differ:
            raise UsageError(f"checkpoint {path} was made with "
                             + ", ".join(f"--{k} {saved[k]}" for k in differ) + "; this run has "
                             + ", ".join(f"--{k} {getattr(args, k)}" for k in differ)
                             + ": use the same values, or another CKPT_DIR to start afresh")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        rng = state.get("rng", {})
        if "torch" in rng:
            torch.set_rng_state(rng["torch"])
        self.accelerator.set_rng_states(rng.get(self.accelerator.kind) or [])
        if "python" in rng:
            random.setstate(_as_tuple(rng["python"]))
        self.step = int(state["step"])
        self.say(f"resumed from {path} at step {self.step}")

    def _agree_on_resume(self, state: dict | None) -> None:
        """Make every rank start from the same step: the newest checkpoint any rank found wins.

        On several nodes each rank reads its own node's CKPT_DIR; a node whose restore found
        nothing would otherwise start from step 0 and hang or corrupt the run at the first
        all-reduce, or drag the others back.
        """
        found = [None] * self.args.world_size
        self.dist.all_gather_object(found, (self.step, str(self.resumed_from) if self.resumed_from else None))
        steps = [step for step, _ in found]
        if len(set(steps)) == 1:
            return
        src = max(range(len(steps)), key=lambda r: (steps[r], -r))
        self.say(f"ranks found checkpoints at different steps {steps}: every rank resumes from rank {src}'s "
                 f"(step {steps[src]})")
        box = [state if self.args.rank == src else None]
        self.dist.broadcast_object_list(box, src=src)
        if self.args.rank != src:
            self._restore(box[0], Path(found[src][1]))
            self.resumed_from = Path(found[src][1])

    def save(self, reason: str) -> Path | None:
        """Rank 0 writes the checkpoint of the current step; a no-op when that file exists."""
        from cnn_checkpoint import FORMAT, atomic_write, rotate
        torch, args = self.torch, self.args
        path = args.ckpt_dir / self.checkpoint_name(self.step)
        if not self.is_main:
            return None
        if path.exists():
            return path
        started = time.monotonic()
        state = {
            "format": FORMAT,
            "step": self.step,
            "reason": reason,
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "world_size": args.world_size,
            "args": {k: getattr(args, k) for k in ("classes", "width", "depth", "image_size", "steps",
                                                   "batch_size", "lr", "seed", "dataset_size", "noise")},
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": {"torch": torch.get_rng_state(),
                    self.accelerator.kind: self.accelerator.rng_states(),
                    "python": random.getstate()},
        }
        atomic_write(path, lambda handle: torch.save(state, handle))
        removed = rotate(args.ckpt_dir, args.keep_last, self.step)
        log(f"checkpoint step {self.step} ({reason}) -> {path} in {time.monotonic() - started:.2f} s"
            + (f", removed {len(removed)} old" if removed else ""))
        return path

    def write_stats(self, images_per_s: float, wait_pct: float) -> None:
        """Throughput and data-loader wait for the agent's report (GPU_TRAINING_STATS_FILE), replaced atomically."""
        if not (self.is_main and self.args.stats_file):
            return
        stats = {"step": self.step, "imagesPerSecond": round(images_per_s, 1), "dataWaitPercent": round(wait_pct, 1),
                 "workers": self.workers, "data": str(self.args.data) if self.args.data else "generated",
                 "format": getattr(self.dataset, "FORMAT", "generated"),
                 "amp": self.amp,
                 "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = f"{self.args.stats_file}.tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(stats, f)
            os.replace(tmp, self.args.stats_file)
        except OSError as error:  # diagnostics only: never stop training for them
            log(f"note: cannot write {self.args.stats_file}: {error}")

    # --- training ----------------------------------------------------------------------------
    def _stop_requested(self) -> bool:
        """True on every rank as soon as any rank got a stop signal, so all stop at the same step."""
        local = self.stop.signum is not None
        if not self.distributed:
            return local
        flag = self.torch.tensor([1 if local else 0], device=self.device)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MAX)
        return bool(flag.item())

    def _train_step(self, images, labels):
        torch = self.torch
        images = images.to(self.device, non_blocking=True, memory_format=self.memory_format)
        labels = labels.to(self.device, non_blocking=True)
        lr = learning_rate(self.args, self.step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=self.device.type, dtype=self.amp_dtype, enabled=self.amp):
            logits = self.ddp_model(images)
            loss = self.loss_fn(logits, labels)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        correct = (logits.detach().argmax(1) == labels).sum()
        return loss.detach(), correct, lr

    def run(self) -> dict:
        torch, args = self.torch, self.args
        start_step = self.step
        self.say(f"start: step {self.step}/{args.steps}, device {self.device}, world {args.world_size}, "
                 f"batch {args.batch_size}/process, workers {self.workers}, amp "
                 f"{args.amp_dtype if self.amp else 'off'}, ckpt every {args.ckpt_every} -> {args.ckpt_dir}")
        began = window_start = time.monotonic()
        window_steps, window_wait = 0, 0.0
        loss_sum = torch.zeros((), device=self.device)
        correct_sum = torch.zeros((), device=self.device, dtype=torch.long)
        last_loss = None
        stopped = False
        while self.step < args.steps and not stopped:
            epoch, offset = divmod(self.step, self.steps_per_epoch)
            self.sampler.set_epoch(epoch)
            self.sampler.set_start(offset * args.batch_size)
            fetch_began = time.monotonic()
            for images, labels in self.loader:
                step_began = time.monotonic()
                window_wait += step_began - fetch_began  # the GPU waited for the input pipeline
                loss, correct, lr = self._train_step(images, labels)
                if args.min_step_seconds > 0:
                    time.sleep(max(0.0, args.min_step_seconds - (time.monotonic() - step_began)))
                self.step += 1
                window_steps += 1
                loss_sum += loss
                correct_sum += correct
                if self.step % args.log_every == 0 or self.step == args.steps:
                    stats = torch.stack([loss_sum / window_steps, correct_sum.to(loss_sum.dtype)])
                    if self.distributed:
                        self.dist.all_reduce(stats)
                        stats /= args.world_size
                    elapsed = time.monotonic() - window_start
                    images_per_s = window_steps * args.batch_size * args.world_size / max(elapsed, 1e-9)
                    last_loss = float(stats[0])
                    accuracy = float(stats[1]) / (window_steps * args.batch_size)
                    wait_pct = 100 * window_wait / max(elapsed, 1e-9)
                    self.say(f"step {self.step}/{args.steps} loss {last_loss:.4f} acc {accuracy:.3f} "
                             f"lr {lr:.5f} img/s {images_per_s:.1f} data-wait {wait_pct:.0f}%")
                    self.write_stats(images_per_s, wait_pct)
                    window_start, window_steps, window_wait = time.monotonic(), 0, 0.0
                    loss_sum.zero_()
                    correct_sum.zero_()
                stopped = self._stop_requested()
                if stopped:
                    self.say(f"{self.stop.name if self.stop.signum else 'stop signal on another rank'}:"
                             f" step {self.step} finished, saving and exiting")
                    break
                if self.step % args.ckpt_every == 0 and self.step < args.steps:
                    self.save("periodic")
                if self.step >= args.steps or self.step % self.steps_per_epoch == 0:
                    break
                fetch_began = time.monotonic()
        checkpoint = self.save("signal" if stopped else "final") if self.step > 0 else None
        if self.distributed:
            self.dist.barrier()  # nobody leaves before rank 0's last checkpoint is on disk
        elapsed = time.monotonic() - began
        trained = self.step - start_step
        return {
            "event": "train_cnn.summary",
            "status": "stopped" if stopped else "finished",
            "signal": self.stop.name if stopped else None,
            "step": self.step,
            "steps": args.steps,
            "resumed_from_step": start_step if self.resumed_from else None,
            "resumed_from": str(self.resumed_from) if self.resumed_from else None,
            "checkpoint": str(checkpoint) if checkpoint else None,
            "last_loss": last_loss,
            "elapsed_s": round(elapsed, 3),
            "images_per_s": round(trained * args.batch_size * args.world_size / elapsed, 1) if elapsed > 0 else None,
            "world_size": args.world_size,
            "device": str(self.device),
            "amp": args.amp_dtype if self.amp else None,
            "workers": self.workers,
            "data": str(args.data) if args.data else None,
        }

    def close(self) -> None:
        if self.distributed and self.dist.is_initialized():
            # destroy_process_group() drops only c10d's own references to the group (pytorch/pytorch#96017);
            # DistributedDataParallel keeps it alive, and a gloo group freed during interpreter shutdown can
            # abort the process ("terminate called without an active exception", exit -6: pytorch/pytorch#179291),
            # which the agent would read as a failed run. Drop ours first, while the interpreter is whole.
            import gc

            self.ddp_model = None
            gc.collect()
            self.dist.destroy_process_group()


def _as_tuple(value):
    """random.setstate wants tuples; a checkpoint may hand back lists."""
    if isinstance(value, list):
        return tuple(_as_tuple(v) for v in value)
    return value


def main(argv: list[str] | None = None) -> int:
    stop = StopFlag()
    stop.install()
    try:
        args = resolve(argv, dict(os.environ))
    except UsageError as exc:
        print(f"train_cnn.py: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # Sibling modules live next to this file, wherever the agent unpacked the folder.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    trainer = None
    try:
        trainer = Trainer(args, stop)
        summary = trainer.run()
    except UsageError as exc:
        print(f"train_cnn.py: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("train_cnn.py: interrupted twice: stopped without a final checkpoint "
              "(the previous ones are complete)", file=sys.stderr)
        return 130
    except Exception as exc:
        from cnn_checkpoint import NoUsableCheckpoint
        if isinstance(exc, NoUsableCheckpoint):
            print(f"train_cnn.py: error: no checkpoint could be loaded, refusing to start from scratch "
                  f"over them: {exc}", file=sys.stderr)
        elif type(exc).__name__ == "OutOfMemoryError":
            print(f"train_cnn.py: error: out of accelerator memory with --batch-size {args.batch_size}: "
                  "lower it, or --width/--image-size", file=sys.stderr)
        else:
            traceback.print_exc()
            print(f"train_cnn.py: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if trainer is not None:
            trainer.close()
    if trainer.is_main:
        emit(json.dumps(summary))
    return EXIT_STOPPED if summary["status"] == "stopped" else EXIT_FINISHED


if __name__ == "__main__":
    sys.exit(main())
