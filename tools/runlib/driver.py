"""run.py's sequence: up -> baseline -> watch -> report -> decide -> refresh + destroy, and its Ctrl-C path.

The Pulumi stack and the bucket come in as factories (the real ones need a CLI and a cloud); the
console and the confirmation prompt too. Each phase maps its failure to one exit code.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping, Optional

from rich.console import Console
from rich.table import Table

from components import capacity
from components.teardown import TEARDOWN_ENV

from . import exitcodes
from .automation import AutomationError
from .bucket import BucketError, StackBucket
from .decide import Commands, Decision, decide, decide_start_failed
from .failover import Attempt, Plan as FailoverPlan
from .jobwatch import JobWatcher, decide_job, job_text
from .markers import Verdict, assess, current
from .report import ReportError, render, report_folder
from .spend import cost_so_far, money_text
from .targets import for_outputs
from .watch import Watcher, WatchResult, clock_text

DEFAULT_TIMEOUT_H = 24.0


@dataclass(frozen=True)
class RunOptions:
    stack: str
    work_dir: Path
    out_dir: Path
    mode: str = "full"            # full: up + watch + destroy | watch: watch + destroy | destroy
    keep: bool = False
    force: bool = False
    yes: bool = False
    timeout_h: float = DEFAULT_TIMEOUT_H
    poll_s: float = 10.0
    settle_s: float = 600.0
    data_dir: Optional[Path] = None  # a packed data set to upload (the stack's data.localDir, or --data)
    data_bucket: Optional[Mapping] = None  # the bucket as the stack file names it (checkpoint output)
    data_bucket_from_stack: bool = False   # checkpoint.create: the bucket exists only after `up`
    # The stack's providers take credentials the program computes (a Kubernetes stack's temporary kubeconfig):
    # refresh and destroy run the program so they get live ones, not the expired ones in state.
    teardown_runs_program: bool = False
    provider: str = ""  # the stack's cloud: whose documented stock-out and quota codes `up` recognises
    failover: Optional[FailoverPlan] = None  # the attempts the stack's `failover` key allows (tools/runlib/failover.py)
    allow_region_change: bool = False  # --allow-region-change: move to another region without asking
    config_changes: Mapping[str, object] = field(default_factory=dict)  # --set, as `pulumi config set` writes them

    @property
    def state_file(self) -> Path:
        return self.out_dir / "run.json"


def commands_for(opts: RunOptions) -> Commands:
    """What to run next, as the person types it: the `gpu-training` commands (a wheel install has no
    scripts/ folder), with the project, the timeout and the run record folder this run was given."""
    cli = ["gpu-training"]
    if opts.work_dir.resolve() != Path.cwd().resolve():
        cli += ["--project", str(opts.work_dir)]
    where = []
    default_out = opts.work_dir / "out" / opts.stack
    if opts.out_dir.resolve() != default_out.resolve():
        where += ["--out", str(opts.out_dir)]
    timeout = ["--timeout", f"{opts.timeout_h:g}"] if opts.timeout_h != DEFAULT_TIMEOUT_H else []
    join = shlex.join
    # Pulumi CLI >= 3.160 (automation.RUN_PROGRAM_SINCE): without it, teardown reuses the credential in state.
    run_program = " --run-program" if opts.teardown_runs_program else ""
    teardown = f"{TEARDOWN_ENV}=1 " if opts.teardown_runs_program else ""
    return Commands(
        watch=join([*cli, "up", opts.stack, "--watch-only", *timeout, *where]),
        destroy=join([*cli, "down", opts.stack, *where]),
        force_destroy=join([*cli, "down", opts.stack, "--force", *where]),
        pulumi_destroy=f"{teardown}pulumi refresh --stack {shlex.quote(opts.stack)} --yes{run_program} && "
                       f"{teardown}pulumi destroy --stack {shlex.quote(opts.stack)}{run_program}",
        restart_agent="sudo systemctl restart gpu-training-agent",
    )


def ask_on_terminal(question: str) -> Optional[bool]:
    """y/N on the terminal; None when there is no terminal to ask on."""
    if not sys.stdin.isatty():
        return None
    from rich.prompt import Confirm
    return Confirm.ask(question, default=False)


class Driver:
    def __init__(self, opts: RunOptions, stack_factory: Callable[..., object], *,
                 bucket_factory: Callable[[Mapping, str], StackBucket] = StackBucket,
                 console: Optional[Console] = None,
                 confirm: Callable[[str], Optional[bool]] = ask_on_terminal,
                 now: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep):
        self.opts, self.stack_factory, self.bucket_factory = opts, stack_factory, bucket_factory
        self.console = console or Console()
        self.confirm, self.now, self.sleep = confirm, now, sleep
        self.cmd = commands_for(opts)
        self.phase = "start"
        self.keeps_billing: list = []  # the stack's `keepsBilling` output, once known
        self.attempts: list[dict] = []  # each `up` attempt and how it ended (run.json; status shows them)

    # --- output helpers ----------------------------------------------------------------------
    def say(self, message: str, style: str = "") -> None:
        self.console.print(message, style=style or None, highlight=False, soft_wrap=True)

    def pulumi_line(self, line: str) -> None:
        # Pulumi's own progress, streamed as it comes; kept plain so it reads like `pulumi up`.
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def billing_lines(self, header: str) -> None:
        """What bills whatever the nodes do (the stack's keepsBilling output): nothing bills silently."""
        if not self.keeps_billing:
            return
        self.say(header, "bold")
        for item in self.keeps_billing:
            if not isinstance(item, Mapping):
                continue
            rate = item.get("rate") or "rate unknown"
            self.say(f"  - {item.get('what')}: {item.get('size')}; {item.get('basis')}; {rate}; until {item.get('until')}")

    def continue_hints(self, running: bool = True) -> None:
        if running:
            self.say(f"The stack {self.opts.stack} is left running (and billing). To continue:", "bold")
            self.billing_lines("Billing until destroyed, even once every node has released itself:")
        self.say(f"  watch again:        {self.cmd.watch}")
        self.say(f"  destroy (checked):  {self.cmd.destroy}")
        self.say(f"  destroy (Pulumi):   {self.cmd.pulumi_destroy}")

    # --- the sequence ------------------------------------------------------------------------
    def run(self) -> int:
        try:
            return self._run()
        except KeyboardInterrupt:
            self.say("")
            if self.phase == "up":
                self.say("Interrupted during `pulumi up`: Pulumi cancels the update; the stack may be partly "
                         "created.", "bold yellow")
                self.continue_hints()
            elif self.phase == "destroy":
                self.say("Interrupted during refresh/destroy: some resources may remain. Finish with:",
                         "bold yellow")
                self.say(f"  {self.cmd.pulumi_destroy}")
            else:
                self.say("Interrupted.", "bold yellow")
                self.continue_hints()
            return exitcodes.INTERRUPTED

    def _run(self) -> int:
        opts = self.opts
        try:
            self.phase = "select"
            stack = self.stack_factory(opts.stack, opts.work_dir, create=opts.mode == "full")
            if opts.mode == "full" and opts.config_changes:
                # What the preflight checked is what `pulumi up` reads: --set goes into the stack's config first.
                self.phase = "config"
                stack.set_config(dict(opts.config_changes))
                self.say("--set saved in the stack's config, as `pulumi config set` does: "
                         + ", ".join(f"{k}={v}" for k, v in opts.config_changes.items()))
            data_pending = opts.mode == "full" and opts.data_dir is not None
            if data_pending and not opts.data_bucket_from_stack:
                # Before `up`, into the user's bucket: the nodes find the set when they boot, and a failed
                # upload has created nothing.
                self.phase = "data"
                try:
                    self._upload_data(self.bucket_factory(opts.data_bucket, opts.stack), opts.data_dir)
                except BucketError as exc:
                    self.say(f"error: {exc}", "bold red")
                    self.say("Nothing was created: fix the cause and run this command again.")
                    return exitcodes.ERROR
                data_pending = False
            if opts.mode == "full":
                self.phase = "up"
                up_started = self.now()
                outputs = self.up_with_failover(stack)
                if outputs is None:
                    return exitcodes.UP_FAILED
            else:
                outputs = stack.outputs()
                up_started = None
        except AutomationError as exc:
            self.say(f"error: {exc}", "bold red")
            return exitcodes.ERROR

        self.phase = "outputs"
        keeps = outputs.get("keepsBilling")
        self.keeps_billing = list(keeps) if isinstance(keeps, list) else []
        self.billing_lines("Keeps billing after the training ends (maxHours ends the nodes or the job, not these):")
        checkpoint = outputs.get("checkpoint")
        if not isinstance(checkpoint, Mapping) or not checkpoint.get("bucket"):
            self.say(f"error: stack {opts.stack} has no 'checkpoint' output with a bucket (outputs: "
                     f"{', '.join(sorted(outputs)) or 'none'}): nothing to watch. Is it deployed?", "bold red")
            if opts.mode == "full":
                self.continue_hints()
            return exitcodes.ERROR
        node_count = int(outputs.get("nodeCount") or 1)
        run = for_outputs(outputs)  # how this stack's target is followed (tools/runlib/targets.py)
        if run.restart_agent(outputs):  # the stack says how its agent is restarted (a pod's)
            self.cmd = replace(self.cmd, restart_agent=run.restart_agent(outputs))
        if not run.markers:
            return self._run_job(stack, run, outputs, up_started)
        try:
            bucket = self.bucket_factory(checkpoint, str(outputs.get("stack") or opts.stack))
            baseline, since, stack_started = self._baseline(bucket, stack, up_started)
            if data_pending:  # the stack made the bucket: the nodes wait for the set (data.waitMinutes)
                self.phase = "data"
                try:
                    self._upload_data(bucket, opts.data_dir)
                except BucketError as exc:
                    raise BucketError(f"{exc}. The nodes wait data.waitMinutes for it: `scripts/pack.py <images> "
                                      f"{opts.data_dir} --upload {opts.stack}` sends what is missing, then watch "
                                      f"with `{self.cmd.watch}`") from None

            if opts.mode == "destroy":
                self.phase = "check"
                result = WatchResult()
                markers = current(bucket.markers(), baseline, since)
                result.markers, result.verdict = markers, assess(markers, node_count)
                result.preemptions = sum(m.state == "PREEMPTED" for m in markers)
                result.timed_out = True  # stopping now: unfinished training counts as "stopped early"
            else:
                self.phase = "watch"
                self.say(f"watching {bucket.url}markers/ for {node_count} node(s), timeout "
                         f"{opts.timeout_h:g} h (Ctrl-C leaves the stack running)", "bold")
                watcher = Watcher(bucket, node_count, outputs, baseline=baseline, since=since,
                                  stack_started=stack_started, timeout_s=opts.timeout_h * 3600,
                                  poll_s=opts.poll_s, settle_s=opts.settle_s, console=self.console,
                                  now=self.now, sleep=self.sleep,
                                  start_check=run.start_check(outputs, lambda line: self.say(line, "yellow")))
                result = watcher.run()

            self.phase = "report"
            nodes = sorted({m.node for m in result.markers})
            report_dir = opts.out_dir / "report"
            files = bucket.download_report(nodes, report_dir) if nodes else []
            quarantined = bucket.quarantined()
        except BucketError as exc:
            self.say(f"error: {exc}", "bold red")
            self.continue_hints()
            return exitcodes.ERROR

        self._summary(result, files, report_dir, outputs, stack_started, quarantined)
        if result.start_failed:
            return self._act(stack, decide_start_failed(result.start_failed, opts.keep, self.cmd))
        decision = decide(result.verdict or assess([], node_count), result.timed_out, opts.keep, opts.force,
                          self.cmd)
        return self._act(stack, decision)

    # --- up, moving on from a stock-out ----------------------------------------------------------
    def up_with_failover(self, stack) -> Optional[Mapping]:
        """`pulumi up`; when the cloud answers a documented stock-out or quota code and the stack lists
        alternatives (`failover`), remove what the attempt created and try the next one. None: it failed."""
        plan = self.opts.failover if self.opts.failover and len(self.opts.failover.attempts) > 1 else None
        attempt = plan.attempts[0] if plan else None
        # Only a stack with nothing deployed is torn down between attempts: a destroy of a running one
        # would stop its nodes (and whatever they have not saved).
        fresh = not stack.outputs() if plan else False
        while True:
            self.say(f"pulumi up --stack {self.opts.stack}"
                     + (f"  (attempt {attempt.number} of {len(plan.attempts)}: {attempt.label()})" if plan else ""),
                     "bold")
            try:
                outputs = stack.up(on_output=self.pulumi_line)
            except AutomationError:
                raise
            except Exception as exc:
                answer = capacity.classify(self.opts.provider, str(exc)) if self.opts.provider else None
                if answer is None:
                    self.say(f"pulumi up failed: {_tail(exc)}", "bold red")
                    self.say("The stack may be partly created. Fix the cause and run this command again, or "
                             f"remove what was created:  {self.cmd.pulumi_destroy}")
                    return None
                self._record(attempt, f"{answer.kind}: {answer.name}")
                self.say(f"{'attempt ' + str(attempt.number) + ' (' + attempt.label() + ')' if attempt else 'pulumi up'}"
                         f" found no {'stock' if answer.kind == 'stock' else 'quota'}: {answer.name}: {answer.meaning}"
                         f" ({answer.source})", "bold yellow")
                following = plan.next_after(attempt, answer) if plan else None
                if following is None:
                    self.say("No alternative left to try"
                             + ("" if plan else " (the stack lists none: a `failover` key names zones, instance types"
                                " and regions to try next, docs/capacity.md)")
                             + f". The stack may be partly created; remove it with:  {self.cmd.pulumi_destroy}",
                             "bold red")
                    return None
                if not fresh:
                    self.say(f"Not moving on: stack {self.opts.stack} was deployed before this up, and removing what it"
                             " holds would stop its nodes. Change zone or instanceType in its stack file yourself,"
                             f" or destroy it first ({self.cmd.destroy}).", "bold red")
                    return None
                if following.region != attempt.region and not self._region_change_agreed(plan, following):
                    return None
                self.say(f"removing what attempt {attempt.number} created: pulumi destroy --stack {self.opts.stack}",
                         "bold")
                try:
                    stack.destroy(on_output=self.pulumi_line, run_program=self.opts.teardown_runs_program)
                except Exception as gone:
                    self.say(f"destroy failed: {_tail(gone)}", "bold red")
                    self.say(f"Not moving on while attempt {attempt.number}'s resources may remain; retry with:  "
                             f"{self.cmd.pulumi_destroy}")
                    return None
                changes = ", ".join(f"{k}={'(removed)' if v is None else v}" for k, v in following.changes.items())
                self.say(f"moving on to attempt {following.number}: {following.label()} ({changes}; written to the"
                         f" stack's config, as `pulumi config set` does)", "bold")
                stack.set_config(following.changes)
                attempt = following
                continue
            if attempt is not None:
                self._record(attempt, "deployed")
                if attempt.number > 1:
                    self.say(f"deployed with attempt {attempt.number}: {attempt.label()}", "bold green")
            return outputs

    def _region_change_agreed(self, plan: FailoverPlan, attempt: Attempt) -> bool:
        cost = plan.region_change_cost(attempt)
        if self.opts.allow_region_change:
            self.say(f"{cost} (--allow-region-change)", "yellow")
            return True
        answer = self.confirm(f"{cost}. Move to {attempt.region}?")
        if not answer:
            self.say("not moving to another region" + (" (no terminal to ask on: pass --allow-region-change)"
                                                        if answer is None else ""), "bold yellow")
            self.say(f"The stack may be partly created; remove it with:  {self.cmd.pulumi_destroy}")
            return False
        return True

    def _record(self, attempt: Optional[Attempt], outcome: str) -> None:
        if attempt is not None:
            self.attempts.append({"number": attempt.number, "zone": attempt.zone, "instanceType": attempt.instance_type,
                                  "region": attempt.region, "outcome": outcome})

    def _run_job(self, stack, run, outputs: Mapping, up_started: Optional[float]) -> int:
        """A platform job (the `job` run style): its job API says when it has ended; no markers, no report."""
        opts = self.opts
        started = up_started if up_started is not None else self.now()
        if opts.mode == "destroy":
            self.phase = "check"
            result = WatchResult(job=run.job_state(outputs))
        else:
            self.phase = "watch"
            self.say(f"watching the {outputs.get('platform')} job {outputs.get('jobId')} through its job API, timeout "
                     f"{opts.timeout_h:g} h (Ctrl-C leaves it running)", "bold")
            result = JobWatcher(outputs, run.job_state, timeout_s=opts.timeout_h * 3600, poll_s=opts.poll_s,
                                stack_started=started, console=self.console, now=self.now, sleep=self.sleep).run()
        spent = cost_so_far(outputs, [], self.now(), started)
        self.say(f"outcome: {job_text(result.job)}" + (" (timed out)" if result.timed_out and opts.mode != "destroy"
                                                      else ""))
        self.say(f"cost so far: ~{money_text(spent)} ({spent['basis']})")
        return self._act(stack, decide_job(result.job, opts.keep, opts.force, self.cmd))

    def _baseline(self, bucket, stack, up_started: Optional[float]):
        """(baseline etags, fallback time, when the stack started) for telling this run's markers apart."""
        opts = self.opts
        if opts.mode == "full":
            # Taken right after `up`: nodes are still booting, so every marker already there is an
            # earlier run's. Saved, so that --watch-only and --destroy-only see the same run.
            baseline = bucket.marker_etags()
            opts.out_dir.mkdir(parents=True, exist_ok=True)
            record = {"stack": opts.stack, "upStartedAt": up_started, "baseline": baseline,
                      "baselineTakenAt": self.now(), "attempts": self.attempts}
            tmp = opts.state_file.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(record, indent=1))
            os.replace(tmp, opts.state_file)
            return baseline, _utc(up_started), up_started
        try:
            record = json.loads(opts.state_file.read_text())
            if record.get("stack") == opts.stack and isinstance(record.get("baseline"), dict):
                return record["baseline"], _utc(record.get("upStartedAt")), record.get("upStartedAt")
        except (OSError, ValueError):
            pass
        since = None
        try:
            since = stack.last_update_started()
        except Exception:  # a backend without history: fall back to counting every marker
            since = None
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=timezone.utc)
        self.say(f"note: no record of this run in {opts.state_file}; counting markers updated since the stack's "
                 f"last update ({since.isoformat() if since else 'unknown: every marker counts'})", "yellow")
        return None, since, since.timestamp() if since else None

    def _summary(self, result: WatchResult, files: list[Path], report_dir: Path, outputs: Mapping,
                 stack_started: Optional[float], quarantined: list[dict]) -> None:
        verdict: Optional[Verdict] = result.verdict
        table = Table(title=f"stack {self.opts.stack}: nodes", title_justify="left")
        for column in ("node", "state", "reason", "duration", "GPU-hours", "cost", "GPU util"):
            table.add_column(column)
        for m in result.markers:
            body = m.body
            table.add_row(m.node, m.state, str(m.reason or ""), clock_text(body.get("durationSeconds") or 0),
                          _num(body.get("gpuHours")), _money(body.get("estimatedCost"), body.get("currency")),
                          f"{m.gpu_util:.0f}%" if m.gpu_util is not None else "n/a")
        if result.markers:
            self.console.print(table)
        now = self.now()
        elapsed = now - stack_started if stack_started else None
        spent = cost_so_far(outputs, result.markers, now, stack_started)
        self.say(f"outcome: {verdict.state if verdict else 'NO_MARKERS'}"
                 + (" (timed out)" if result.timed_out and self.opts.mode != "destroy" else "")
                 + f", preemptions seen: {result.preemptions}"
                 + (f", elapsed {clock_text(elapsed)}" if elapsed is not None else ""))
        # What it rests on: each node's own figure or running time, and the dated price (or how to get one).
        self.say(f"cost so far: ~{money_text(spent)} ({spent['basis']})"
                 + (f"; price: {spent['price']}" if spent.get("price") else ""))
        if files:
            self.say(f"report: {len(files)} file(s) in {report_dir}")
            self._utilisation(report_dir, sorted({m.node for m in result.markers}))
        elif result.markers:
            self.say("report: none in the bucket yet (the agent uploads it when a node ends)")
        for note in quarantined:
            # A node found this snapshot damaged and restored an older one; every later node skips it.
            self.say(f"quarantined snapshot {note['snapshot']}: {note['reason']} (found by {note['node']} at "
                     f"{note['at']}; nodes restore older snapshots instead)", "bold yellow")

    def _upload_data(self, bucket: StackBucket, folder: Path) -> None:
        """Shards then manifest into <stack>/data/; the nodes wait for the manifest (data.waitMinutes)."""
        from boto3.exceptions import S3UploadFailedError
        from botocore.exceptions import BotoCoreError, ClientError
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        from tools.datapack import upload

        self.say(f"uploading the data set {folder} to {bucket.url}data/", "bold")
        with Progress("{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                      console=self.console, transient=True) as progress:
            task = progress.add_task("data", total=None)
            try:
                sent = upload.upload(folder, bucket.s3, bucket.bucket, bucket.root,
                                     lambda done, total: progress.update(task, completed=done, total=total))
            except (ClientError, BotoCoreError, S3UploadFailedError, OSError, ValueError) as exc:
                raise BucketError(f"uploading the data set {folder}: {exc}") from None
        self.say(f"data set uploaded: {sent['sent']} shards sent, {sent['kept']} already there, "
                 f"{sent['bytes'] / 1e9:.2f} GB in {sent['prefix']}")

    def _utilisation(self, report_dir: Path, nodes: list[str]) -> None:
        """This run's utilisation table, diagnosis and combined plot (the same as scripts/report.py's)."""
        try:
            render(self.console, report_folder(report_dir, self.opts.stack, nodes), self.opts.stack)
        except ReportError as exc:
            self.say(f"report: {exc}", "yellow")
        except Exception as exc:  # diagnostics only: never in the way of the decision to destroy
            self.say(f"report: not shown ({type(exc).__name__}: {exc}); the files are in {report_dir}", "yellow")

    def _act(self, stack, decision: Decision) -> int:
        style = "bold green" if decision.destroy or decision.exit_code == exitcodes.DONE else "bold yellow"
        self.say(decision.headline, style)
        for line in decision.advice:
            self.say(line)
        if not decision.destroy:
            if decision.exit_code == exitcodes.NOT_SAVED or self.opts.keep:
                self.say(f"The stack {self.opts.stack} is left running.", "bold")
                self.billing_lines("Billing until destroyed, even once every node has released itself:")
            return decision.exit_code
        self.phase = "confirm"
        if not self.opts.yes:
            answer = self.confirm(f"Destroy stack {self.opts.stack} (checkpoint bucket is kept)?")
            if not answer:
                self.say("not destroyed" + (" (no terminal to ask on: pass --yes)" if answer is None else ""),
                         "bold yellow")
                self.continue_hints()
                return exitcodes.DECLINED
        self.phase = "destroy"
        try:
            flag = " --run-program" if self.opts.teardown_runs_program else ""
            self.say(f"pulumi refresh --stack {self.opts.stack}{flag}", "bold")
            # Nodes release themselves when done: refresh first so destroy does not trip over them.
            stack.refresh(on_output=self.pulumi_line, run_program=self.opts.teardown_runs_program)
            self.say(f"pulumi destroy --stack {self.opts.stack}{flag}", "bold")
            stack.destroy(on_output=self.pulumi_line, run_program=self.opts.teardown_runs_program)
        except Exception as exc:
            self.say(f"destroy failed: {_tail(exc)}", "bold red")
            self.say(f"Some resources may remain; retry with:  {self.cmd.pulumi_destroy}")
            return exitcodes.DESTROY_FAILED
        self.opts.state_file.unlink(missing_ok=True)
        self.say(f"stack {self.opts.stack} destroyed; checkpoints and report stay in the bucket", "bold green")
        # What ends with the destroy says so first ("pulumi destroy", maybe followed by how run.py gets there).
        self.keeps_billing = [i for i in self.keeps_billing if isinstance(i, Mapping)
                              and (i.get("billsAfterDestroy") or not str(i.get("until") or "").startswith("pulumi destroy"))]
        self.billing_lines("Still billing after destroy (yours to delete):")
        return decision.exit_code


def _utc(epoch: Optional[float]) -> Optional[datetime]:
    # Whole seconds: markers carry updatedAt to the second, so a marker written in the very
    # second `up` started must still count as this run's.
    return datetime.fromtimestamp(int(epoch), timezone.utc) if isinstance(epoch, (int, float)) else None


def _tail(exc: Exception, limit: int = 1500) -> str:
    text = str(exc).strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _num(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else "n/a"


def _money(value, currency) -> str:
    return f"{value:.2f} {currency or ''}".rstrip() if isinstance(value, (int, float)) else "n/a"

