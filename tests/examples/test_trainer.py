"""The example trainer (examples/cnn/train_cnn.py) run as real processes: exact resume after SIGTERM,
atomic checkpoints under SIGKILL, RESUME_FROM selection, torchrun with gloo, and its bad-input path.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cnn"
TRAINER = EXAMPLE / "train_cnn.py"
import cnn_checkpoint  # examples/cnn is on the path through pytest.ini (pythonpath)

TINY = ["--batch-size", "16", "--width", "8", "--depth", "1", "--image-size", "16", "--classes", "4",
        "--dataset-size", "256", "--log-every", "1"]
STEP_LINE = re.compile(r"^\[train_cnn\] step (\d+)/\d+ loss (\S+)")


def trainer_env(ckpt_dir: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CKPT_DIR", "RESUME_FROM", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                        "GPU_TRAINING_DATALOADER_WORKERS", "GPU_TRAINING_AMP")}
    # One thread everywhere: the same arithmetic in every run, and no oversubscription on 2 cores.
    env.update(OMP_NUM_THREADS="1", CKPT_DIR=str(ckpt_dir), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def run_trainer(cwd: Path, args: list[str], env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TRAINER), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def summary_of(stdout: str) -> dict:
    last = stdout.strip().splitlines()[-1]
    summary = json.loads(last)
    assert summary["event"] == "train_cnn.summary"
    return summary


def losses_of(stdout: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in map(STEP_LINE.match, stdout.splitlines()) if m}


def load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def assert_same(a, b, where: str = "checkpoint") -> None:
    """Bit-for-bit equality of nested checkpoint structures."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def test_help_documents_the_contract():
    done = subprocess.run([sys.executable, str(TRAINER), "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    for needle in ("CKPT_DIR", "RESUME_FROM", "GPU_TRAINING_DATALOADER_WORKERS", "SIGTERM", "75", "--ckpt-every"):
        assert needle in done.stdout


@pytest.mark.parametrize("args, env, named", [
    (["--steps", "0"], {}, "--steps 0"),
    (["--ckpt-every", "-1"], {}, "--ckpt-every -1"),
    ([], {"GPU_TRAINING_DATALOADER_WORKERS": "many"}, "GPU_TRAINING_DATALOADER_WORKERS='many'"),
    ([], {"RESUME_FROM": "/nonexistent/restore"}, "RESUME_FROM='/nonexistent/restore'"),
    ([], {"WORLD_SIZE": "2", "RANK": "0"}, "MASTER_ADDR"),
])
def test_bad_input_exits_2_naming_it(tmp_path, args, env, named):
    done = run_trainer(tmp_path, args, trainer_env(tmp_path / "ckpt", **env))
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.slow  # an exactness run of the real trainer
def test_sigterm_mid_run_then_resume_is_exact(tmp_path):
    steps = ["--steps", "40", "--ckpt-every", "15", "--keep-last", "2"]
    # The reference: one uninterrupted run, no DataLoader workers.
    straight = run_trainer(tmp_path, [*TINY, *steps, "--workers", "0"], trainer_env(tmp_path / "straight"))
    assert straight.returncode == 0, straight.stderr
    reference = summary_of(straight.stdout)
    assert reference["status"] == "finished" and reference["step"] == 40
    straight_losses = losses_of(straight.stdout)
    assert float(straight_losses[40]) < float(straight_losses[1]), "the generated task should be learnable"

    # The interrupted run: SIGTERM to the whole process group (as an agent may do), workers included.
    ckpt = tmp_path / "interrupted"
    proc = subprocess.Popen([sys.executable, str(TRAINER), *TINY, *steps, "--workers", "1"], cwd=tmp_path,
                            env=trainer_env(ckpt), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    first_part = []
    for line in proc.stdout:
        first_part.append(line)
        match = STEP_LINE.match(line)
        if match and int(match.group(1)) >= 4:
            os.killpg(proc.pid, signal.SIGTERM)
            break
    rest, err = proc.communicate(timeout=60)
    stdout = "".join(first_part) + rest
    assert proc.returncode == 75, err
    stopped = summary_of(stdout)
    stop_step = stopped["step"]
    assert stopped["status"] == "stopped" and stopped["signal"] == "SIGTERM"
    assert 4 <= stop_step < 40, "the stop must land mid-run for this test to mean anything"
    assert Path(stopped["checkpoint"]).name == f"ckpt-{stop_step:08d}.pt"
    assert (tmp_path / stopped["checkpoint"]).is_file()
    assert not [p for p in ckpt.iterdir() if p.name.startswith(".")], "temporary files left behind"

    # The resume: a new process, same CKPT_DIR, no RESUME_FROM.
    resumed = run_trainer(tmp_path, [*TINY, *steps, "--workers", "1"], trainer_env(ckpt))
    assert resumed.returncode == 0, resumed.stderr
    summary = summary_of(resumed.stdout)
    assert summary["resumed_from_step"] == stop_step and summary["step"] == 40
    resumed_losses = losses_of(resumed.stdout)
    assert min(resumed_losses) == stop_step + 1, "the resumed run must not repeat or skip steps"
    assert resumed_losses == {s: straight_losses[s] for s in range(stop_step + 1, 41)}

    a = load(tmp_path / "straight" / "ckpt-00000040.pt")
    b = load(ckpt / "ckpt-00000040.pt")
    assert a["step"] == b["step"] == 40
    assert_same(a["model"], b["model"], "model")
    assert_same(a["optimizer"], b["optimizer"], "optimizer")
    assert_same(a["rng"]["torch"], b["rng"]["torch"], "rng.torch")
    # keep-last 2: the newest two, whatever the interruption left.
    assert sorted(p.name for p in ckpt.glob("ckpt-*.pt"))[-1] == "ckpt-00000040.pt"
    assert len(list(ckpt.glob("ckpt-*.pt"))) == 2


@pytest.mark.slow  # an exactness run of the real trainer
def test_a_stop_saves_even_when_the_pipe_on_stdout_is_gone(tmp_path):
    """`python train_cnn.py | tee log` on a node: the stop signal reaches the whole group, so `tee` ends with the
    trainer's stdout still a pipe to it, and the trainer's next line (`SIGTERM: saving ...`) met a broken pipe:
    BrokenPipeError, no final checkpoint, the steps since the last periodic one lost. Here the pipe's reader is
    gone when the signal comes, as it is under tee."""
    ckpt = tmp_path / "ckpt"
    proc = subprocess.Popen([sys.executable, str(TRAINER), *TINY, "--steps", "400", "--ckpt-every", "1000",
                             "--workers", "0", "--min-step-seconds", "0.02"], cwd=tmp_path, env=trainer_env(ckpt),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    for line in proc.stdout:
        if (match := STEP_LINE.match(line)) and int(match.group(1)) >= 4:
            break
    proc.stdout.close()  # the reader ends first (tee is killed by the same signal)
    os.killpg(proc.pid, signal.SIGTERM)
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 75, err
    saved = sorted(ckpt.glob("ckpt-*.pt"))
    assert saved and 4 <= load(saved[-1])["step"] < 400, (saved, err)
    assert "BrokenPipeError" not in err, err


def test_sigkill_never_exposes_a_partial_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    base = [*TINY, "--width", "24", "--depth", "2", "--ckpt-every", "1", "--keep-last", "2", "--log-every", "50",
            "--workers", "0"]
    broken: list[str] = []
    seen: set[str] = set()
    halt = threading.Event()

    def watch() -> None:
        # What a concurrent sync would do: open every checkpoint it can see under its final name.
        while not halt.is_set():
            for path in list(ckpt.glob("ckpt-*.pt")) if ckpt.exists() else []:
                try:
                    state = load(path)
                    assert state["step"] == int(path.stem.split("-")[1])
                    seen.add(path.name)
                except FileNotFoundError:
                    pass  # rotated away between listing and opening
                except Exception as exc:
                    broken.append(f"{path.name}: {type(exc).__name__}: {exc}")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    proc = subprocess.Popen([sys.executable, str(TRAINER), *base, "--steps", "400"], cwd=tmp_path,
                            env=trainer_env(ckpt), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    saves = 0
    for line in proc.stdout:
        saves += line.startswith("[train_cnn] checkpoint step")
        if saves >= 15:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=30)
    halt.set()
    watcher.join(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert len(seen) >= 3, "the watcher should have read several checkpoints while they were written"
    assert broken == []
    visible = sorted(ckpt.glob("ckpt-*.pt"))
    for path in visible:
        load(path)  # every file under a final name is whole, even after kill -9
    newest = int(visible[-1].stem.split("-")[1])

    resumed = run_trainer(tmp_path, [*base, "--steps", str(newest + 3)], trainer_env(ckpt))
    assert resumed.returncode == 0, resumed.stderr
    assert summary_of(resumed.stdout)["resumed_from_step"] == newest
    assert not [p for p in ckpt.iterdir() if p.name.startswith(".")]


def test_resume_from_takes_the_newest_complete_checkpoint(tmp_path):
    """RESUME_FROM may hold a restored tree; a truncated newest file falls back to the one before."""
    restored = tmp_path / "restored"
    state = {"format": cnn_checkpoint.FORMAT, "step": 0, "model": {"w": torch.arange(4.0)}}
    for step, sub in ((10, "a"), (30, "b")):
        state["step"] = step
        cnn_checkpoint.atomic_write(restored / sub / cnn_checkpoint.checkpoint_name(step),
                                    lambda f, s=dict(state): torch.save(s, f))
    whole = (restored / "b" / "ckpt-00000030.pt").read_bytes()
    (restored / "c").mkdir()
    (restored / "c" / "ckpt-00000050.pt").write_bytes(whole[: len(whole) // 2])  # a cut-off download
    (restored / ".ckpt-00000060.pt.1.tmp").write_bytes(whole)  # an unfinished write: never a candidate

    candidates = cnn_checkpoint.find_candidates(restored)
    assert [c.step for c in candidates] == [50, 30, 10]
    warnings: list[str] = []
    chosen, loaded = cnn_checkpoint.load_newest(candidates, load, warnings.append)
    assert chosen.step == 30 and loaded["step"] == 30
    assert len(warnings) == 1 and "ckpt-00000050.pt" in warnings[0]

    (restored / "b" / "ckpt-00000030.pt").write_bytes(b"junk")
    (restored / "a" / "ckpt-00000010.pt").write_bytes(b"junk")
    with pytest.raises(cnn_checkpoint.NoUsableCheckpoint):
        cnn_checkpoint.load_newest(cnn_checkpoint.find_candidates(restored), load, warnings.append)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def torchrun_run(tmp_path_factory):
    """One 2-process torchrun (gloo) run of 12 steps: (its checkpoint dir, the completed process)."""
    tmp = tmp_path_factory.mktemp("torchrun")
    ckpt = tmp / "ckpt"
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
         "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(TRAINER), *TINY, "--steps", "12",
         "--ckpt-every", "6", "--workers", "0"],
        cwd=tmp, env=trainer_env(ckpt), capture_output=True, text=True, timeout=120)
    return ckpt, done


@pytest.mark.slow  # an exactness run of the real trainer
def test_torchrun_two_processes_gloo(torchrun_run):
    ckpt, done = torchrun_run
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(summaries) == 1, "only rank 0 reports"
    assert summaries[0]["world_size"] == 2 and summaries[0]["step"] == 12
    assert sorted(p.name for p in ckpt.iterdir()) == ["ckpt-00000006.pt", "ckpt-00000012.pt"]
    state = load(ckpt / "ckpt-00000012.pt")
    assert state["world_size"] == 2 and state["step"] == 12


@pytest.mark.slow  # an exactness run of the real trainer
def test_ranks_that_restored_different_checkpoints_all_resume_from_the_newest(tmp_path, torchrun_run):
    """Two nodes, each with its own CKPT_DIR: rank 0's is empty (its restore found nothing), rank 1's
    holds step 6. Both must resume at 6, and the run must end exactly as the uninterrupted one."""
    reference, done = torchrun_run
    assert done.returncode == 0, done.stderr[-3000:]
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "ckpt-00000006.pt").write_bytes((reference / "ckpt-00000006.pt").read_bytes())
    port = str(free_port())
    procs = []
    for rank in (0, 1):
        env = trainer_env(tmp_path / f"node{rank}", RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0",
                          LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable, str(TRAINER), *TINY, "--steps", "12", "--ckpt-every", "6",
                                       "--workers", "0"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    try:
        outputs = [p.communicate(timeout=60) for p in procs]  # ranks out of step hang in an all-reduce
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    summary = summary_of(outputs[0][0])
    assert summary["resumed_from_step"] == 6 and summary["step"] == 12
    assert "every rank resumes from rank 1's (step 6)" in outputs[0][0]
    assert sorted(p.name for p in (tmp_path / "node0").iterdir()) == ["ckpt-00000012.pt"], "only rank 0 writes"
    a, b = load(reference / "ckpt-00000012.pt"), load(tmp_path / "node0" / "ckpt-00000012.pt")
    assert_same(a["model"], b["model"], "model")
    assert_same(a["optimizer"], b["optimizer"], "optimizer")
