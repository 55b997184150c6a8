"""`gpu-training rehearse STACK` for a platform stack (ModelArts, PAI-DLC: docs/platforms.md): the job the stack
declares, submitted through the same job API client `pulumi up`'s dynamic resource uses, to the platform's job
API stand-in (localcloud/standins/jobserver.py, a real HTTP server on 127.0.0.1 that refuses what the
platform's api.yaml refuses). The stand-in runs the job's command here, under the training contract, with the
stack's bucket prefix as a local folder; the drill kills the worker mid-run (a lost worker, no chance to save),
the stand-in starts it again, and the job must resume from its newest checkpoint and finish; a second job is
stopped through the API and must read stopped.

What it is not: the platform. Flavors, quotas, the CANN/CUDA image and the platform's own restart policy are
not rehearsed (docs/platforms.md, "Unverified").
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

from components import shipped
from localcloud import standins
from localcloud.processes import kill_tree
from tools.trainerevidence import runs_the_example

SUMMARY = '"train_cnn.summary"'  # the example trainer's last log line (examples/cnn/train_cnn.py)


def checkpoint_steps(folder: Path) -> dict[str, int]:
    """{name: step} of the checkpoint files in `folder` whose names carry a number (ckpt-000120.pt); dot names are
    work in progress."""
    return {p.name: int(m.group(1)) for p in folder.glob("*")
            if p.is_file() and not p.name.startswith(".") and (m := re.search(r"(\d+)", p.name))}


class PlatformRehearsal:
    """The same face as scripts/rehearse.py's Rehearsal: run(), checks, count, stop()."""

    def __init__(self, args, stack: str, spec, workdir: Path, check_type, command_for: Callable[[str, int], str]):
        self.args, self.stack, self.spec, self.workdir = args, stack, spec, workdir
        self.Check = check_type
        self.checks: list = []
        self.count, self.lost = 1, None
        self.nodes, self.retired = [], []  # no nodes: print_log_tails shows the job's log instead
        self.job = importlib.import_module(f"{spec.platform.offer.package}.job")
        self.bucket = workdir / "bucket"
        self.standin = standins.job_api(spec.platform.offer, self.bucket, workdir)
        self.server = None
        self.command = command_for(args.command or spec.train.command, args.steps)
        from tools.setuprehearsal import SetupRehearsal

        self.setup = SetupRehearsal(spec, getattr(args, "wheels", None))  # train.setup/requirements, before the command

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def check(self, name: str, ok: "bool | None", detail: str) -> None:
        """ok None: not verified (shown as such, never a pass: scripts/rehearse.py)."""
        self.checks.append(self.Check(name, None if ok is None else bool(ok), detail))
        if ok is not None and not ok:
            self.say(f"  FAIL {name}: {detail}")

    def _wait(self, predicate, what: str) -> bool:
        end = time.monotonic() + self.args.timeout
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.2)
        self.say(f"  timed out after {self.args.timeout:g} s waiting for {what}")
        return False

    def _summary(self, client, job_id: str) -> dict:
        log = self.job.logs(job_id, self.spec.region, base_url=client.base_url)
        found = [json.loads(line) for line in log.splitlines() if SUMMARY in line]
        return found[-1] if found else {}

    def run(self) -> list:
        from components.platforms import training_contract
        from components.platforms.jobapi import JobApiError

        spec = self.spec
        self.say(f"rehearsing {spec.platform.offer.display_name} job of {self.stack} against its job API stand-in")
        # The code the program uploads to <prefix>/<stack>/code/ (components/platforms/training.py): train.codeDir.
        shutil.copytree(spec.train.code_dir or shipped.folder("example-trainer"), self.bucket / "code",
                        ignore=shutil.ignore_patterns("__pycache__"))
        # The job runs `python ...` here: this interpreter, which has the example trainer's packages; with a setup,
        # a venv of the job's own layered on it, so the setup installs there and never into this environment.
        venv = self.setup.venv(self.workdir)
        first = [str(Path(venv) / "bin")] if venv else []  # its python first; torchrun from this environment's
        os.environ["PATH"] = os.pathsep.join([*first, str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        if self.setup.wanted:
            self.say(f"  setup: {self.setup.describe()}")
            environment = self.setup.env(os.environ)
            os.environ.clear()
            os.environ.update(environment)
        self.server = self.standin.serve()
        client = self.job.client(spec.region, base_url=f"http://127.0.0.1:{self.server.server_address[1]}")
        # A name of its own per submit, as the dynamic resource gives each (a platform may refuse a name it knows).
        body = self.job.API.named(self.job.request(self._sized(spec)), "rehearsal")
        try:
            job_id = client.submit(body)
        except JobApiError as error:
            self.check("submitted", False, f"the stand-in refused the stack's request: {error}")
            return self.checks
        self.check("submitted", True, f"{job_id}: the stack's request met the platform's API data (api.yaml)")
        checkpoints = self.bucket / training_contract.CHECKPOINTS

        def newest() -> int:
            """The step of the newest checkpoint the trainer wrote (its names carry it: ckpt-000120.pt)."""
            return max(checkpoint_steps(checkpoints).values(), default=0)
        quarter = max(1, self.args.steps // 4)
        ok = self._wait(lambda: newest() >= quarter, f"a checkpoint past step {quarter}")
        at_fault = newest()
        running = client.state(job_id)["state"] == "running"
        self.check("checkpoint saved", ok and running, f"step {at_fault} in {training_contract.CHECKPOINTS} while the job runs"
                   if running else f"the job ended before the fault (step {at_fault}): raise --steps")
        if not (ok and running):
            return self.checks
        self.standin.restart(job_id)  # a lost worker: SIGKILL, then the platform starts it again
        self.check("worker lost and restarted", True, f"SIGKILL at step >= {at_fault}, started again with the same"
                   " environment and mounts")
        ended = self._wait(lambda: client.state(job_id)["state"] != "running", "the job to end")
        state = client.state(job_id)
        self.check("finished", ended and state["state"] == "succeeded", f"{job_id}: {state['state']}"
                   f" ({state.get('phase')})")
        if self.example:
            summary = self._summary(client, job_id)
            resumed, final = summary.get("resumed_from_step"), summary.get("step")
            self.check("resumed, not from zero", bool(resumed) and resumed >= at_fault,
                       f"the restarted worker resumed at step {resumed} (saved before the fault: {at_fault})")
            self.check("trained to the end", summary.get("status") == "finished" and final == self.args.steps,
                       f"final step {final} of {self.args.steps} ({summary.get('status') or 'no summary line in the log'})")
            self.lost = self._steps_redone(resumed)
        else:
            self._judge_user_resume(job_id, at_fault, checkpoints)
        self._check_setup()
        second = client.submit(self.job.API.named(body, "2"))
        self._wait(lambda: self.standin.jobs[second].process is not None, "the second job to start")
        client.stop(second)
        stopped = self._wait(lambda: client.state(second)["state"] == "stopped", "the stop")
        self.check("stop through the API", stopped, f"{second}: {client.state(second)['state']}")
        return self.checks

    @property
    def example(self) -> bool:
        return runs_the_example(self.command)

    def _judge_user_resume(self, job_id: str, saved: int, checkpoints: Path) -> None:
        """A user's own command: judged by the steps its trainer reported before and after the restart
        (tools/trainerevidence.py), as the VM rehearsal judges it; its summary line is the example trainer's only."""
        from tools.trainerevidence import judge_resume, logged_steps

        job = self.standin.jobs[job_id]
        data = job.log.read_bytes() if job.log.exists() else b""
        cut = job.restarted_at[0] if job.restarted_at else len(data)
        before = logged_steps(data[:cut].decode(errors="replace"))
        after = logged_steps(data[cut:].decode(errors="replace"))
        # The checkpoint the restarted worker found: the one of the step saved before the fault (newest() reads it).
        names = sorted(name for name, step in checkpoint_steps(checkpoints).items() if step == saved)
        verdict = judge_resume(str(checkpoints), before, after[0] if after else None, max(before + after, default=0),
                               saved, names[-1] if names else "")
        self.check("resumed, not from zero", verdict.ok, verdict.detail)
        self.lost = verdict.lost

    def _check_setup(self) -> None:
        """The job's log: the setup ran and ended before training, on the first start and after the restart."""
        if not self.setup.wanted:
            return
        log = self.log_tail()
        done = re.findall(r"gpu-training: setup: done in (\d+) s", log)
        before = log.find("gpu-training: setup: done") < log.find("step ") if "step " in log else bool(done)
        self.check("setup before training", len(done) >= 2 and before,
                   f"{len(done)} setups in the job's log ({', '.join(d + ' s' for d in done)}: the first start and the"
                   " restarted worker's; a platform job has no agent, so no wheel cache: docs/platforms.md)")
        self.setup.check_index(self.check)

    def _steps_redone(self, resumed) -> "int | None":
        """Steps trained before the fault and trained again after it: the last step the log shows before the
        resume, less the step resumed from (a lower bound: the log prints every --log-every steps)."""
        if not resumed:
            return None
        before = self.log_tail().split("resumed from", 1)[0]
        logged = [int(m) for m in re.findall(r"step (\d+)/\d+", before)]
        return max(0, max(logged, default=resumed) - resumed)

    def _sized(self, spec):
        """The spec with the rehearsal-size command (the job's request carries it)."""
        from dataclasses import replace

        return replace(spec, train=replace(spec.train, command=self.command))

    def keep_bucket(self, out_root: Path, started: float) -> None:
        self.say("rehearse --keep: not kept for a platform stack (status and logs ask the platform's job API,"
                 " whose stand-in ends with the rehearsal; report reads node markers, which a job has none of:"
                 " docs/platforms.md)")
        return None

    def log_tail(self) -> str:
        jobs = list(self.standin.jobs.values())
        return jobs[0].log.read_text(errors="replace") if jobs and jobs[0].log.exists() else ""

    def stop(self) -> None:
        for job in self.standin.jobs.values():
            if job.process and job.process.poll() is None:
                kill_tree(job.process.pid)
                job.process.wait()
        if self.server:
            self.server.shutdown()
            self.server.server_close()
        self.setup.stop()
