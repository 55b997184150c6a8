"""`gpu-training status` with no stack: every stack of the project at a glance, like `sky status` or
`dstack ps`: target, cloud and region, state, nodes, GPU utilisation, the newest checkpoint's step, the
cost so far and what keeps billing.

One look per stack, all at once (a thread each, up to `workers`): its Pulumi outputs (a deployed stack's
bucket, node count and price), then its markers and newest snapshot in that bucket. A stack with no
deployment is "not deployed" without touching a bucket; one whose outputs or bucket cannot be read says
why in its row instead of failing the table. States:

  not deployed             the backend has no such stack, or it has no outputs
  unknown                  the outputs could not be read (no Pulumi CLI, no login, ...): the row says why
  starting                 deployed; no node has reported yet
  running                  a node is running
  preempted and replacing  a node was preempted and another is running in its place
  preempted, no successor  every node stopped, one preempted, and none has taken over yet (a spot pool
                           that finds no stock shows this way: the cloud's pool history says why)
  waiting for nodes        some of the nodes have not reported
  finished                 every node DONE
  failed                   a node FAILED (or could not save its data: "failed (data not saved)")
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping, Optional

from .markers import assess, current
from .spend import cost_so_far
from .status import step_of
from .targets import for_outputs

NOT_DEPLOYED, UNKNOWN = "not deployed", "unknown"

# (outputs, why not): outputs None with why "not deployed" for a stack the backend does not have.
OutputsOf = Callable[[str], tuple[Optional[dict], str]]
BucketOf = Callable[[str, Mapping], object]  # (stack, outputs) -> a StackBucket
RunRecord = Callable[[str], tuple[Optional[dict], object]]  # (baseline, since) of the last `up` (run.json)


def describe(stack: str) -> dict:
    """What the stack file says: target, cloud, region (offline, no credentials)."""
    from components.spec import SpecError
    from tools.stackfiles import StackFileError, stack_spec

    try:
        _, spec = stack_spec(stack)
    except (StackFileError, SpecError) as error:
        return {"target": "?", "cloud": "?", "region": "?", "fileError": error.render().splitlines()[0]}
    from components import targets

    kind = targets.of(spec).kind  # the target seam (components/targets), shown with the platform's kind
    target = f"{kind}:{spec.platform.offer.kind}" if spec.platform is not None else kind
    return {"target": target, "cloud": spec.provider, "region": spec.region}


# A platform job's neutral states (components/platforms/jobapi.py NEUTRAL_STATES) in this table's words.
JOB_STATES = {"pending": "starting", "running": "running", "stopping": "stopping", "succeeded": "finished",
              "failed": "failed", "stopped": "stopped"}


def state_of(verdict, markers) -> str:
    preempted = any(m.state == "PREEMPTED" for m in markers)
    return {"NO_MARKERS": "starting", "DONE": "finished", "FAILED": "failed", "SYNC_FAILED": "failed (data not saved)",
            "WAITING": "waiting for nodes", "PREEMPTED": "preempted, no successor",
            "RUNNING": "preempted and replacing" if preempted else "running"}.get(verdict.state, verdict.state.lower())


def row(stack: str, outputs_of: OutputsOf, bucket_of: BucketOf, run_record: RunRecord, now: float) -> dict:
    """One stack's row; never raises (what went wrong is in `why`)."""
    out: dict = {"stack": stack, **describe(stack), "state": UNKNOWN, "why": None, "nodes": None, "gpuUtil": None,
                 "step": None, "costSoFar": None, "keepsBilling": []}
    try:
        outputs, why = outputs_of(stack)
    except Exception as error:  # a backend answering something unexpected: this row says so
        outputs, why = None, f"{type(error).__name__}: {error}"
    if not outputs:
        out.update(state=NOT_DEPLOYED if why in (None, "", NOT_DEPLOYED) else UNKNOWN,
                   why=None if why in (None, "", NOT_DEPLOYED, UNKNOWN) else why)
        return out
    out["cloud"] = outputs.get("provider") or out["cloud"]
    out["region"] = outputs.get("region") or out["region"]
    out["keepsBilling"] = [str(k.get("what")) for k in outputs.get("keepsBilling") or [] if isinstance(k, Mapping)]
    node_count = int(outputs.get("nodeCount") or 1)
    run = for_outputs(outputs)
    if not run.markers:  # a platform job: its job API says its state (tools/runlib/targets.py)
        job = run.job_state(outputs) or {}
        out.update(state=JOB_STATES.get(job.get("state"), UNKNOWN), why=job.get("error"),
                   costSoFar={k: v for k, v in cost_so_far(outputs, [], now).items() if k in ("amount", "currency")})
        return out
    try:
        bucket = bucket_of(stack, outputs)
        every = bucket.markers()
        baseline, since = run_record(stack)
        markers = every if baseline is None and since is None else current(every, baseline, since)
        snapshot = bucket.newest_snapshot()
    except Exception as error:  # the bucket's errors (credentials, network, access): in the row
        out.update(state=UNKNOWN, why=f"object storage: {error}")
        return out
    verdict = assess(markers, node_count)
    utils = [m.gpu_util for m in markers if m.gpu_util is not None]
    running = sum(m.state == "RUNNING" for m in markers)
    cost = cost_so_far(outputs, markers, now)
    out.update(state=state_of(verdict, markers), nodes={"planned": node_count, "running": running,
                                                        "reported": len(markers)},
               gpuUtil=round(sum(utils) / len(utils), 1) if utils else None,
               step=step_of(snapshot) if snapshot else None,
               costSoFar={"amount": cost["amount"], "currency": cost["currency"]})
    return out


def gather_all(stacks: list[str], outputs_of: OutputsOf, bucket_of: BucketOf, run_record: RunRecord,
               now: Optional[float] = None, workers: int = 16) -> list[dict]:
    """Every stack's row, in the order given; the stacks are looked at in parallel."""
    now = time.time() if now is None else now
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(stacks)))) as pool:
        return list(pool.map(lambda s: row(s, outputs_of, bucket_of, run_record, now), stacks))


def render_all(console, rows: list[dict]) -> None:
    from rich.table import Table

    table = Table(title=f"{len(rows)} stacks", title_justify="left")
    for column in ("stack", "target", "cloud/region", "state", "nodes", "GPU util", "step", "cost so far",
                   "keeps billing"):
        table.add_column(column, overflow="fold")
    for r in rows:
        nodes = r["nodes"]
        cost = r["costSoFar"]
        table.add_row(
            r["stack"], r["target"], f"{r['cloud']}/{r['region']}",
            r["state"] + (f" ({r['why']})" if r.get("why") else "") + moved_on(r.get("attempts") or []),
            f"{nodes['running']} running / {nodes['planned']}" if nodes else "",
            f"{r['gpuUtil']:.0f}%" if r["gpuUtil"] is not None else "",
            str(r["step"]) if r["step"] is not None else "",
            ("unknown" if cost["amount"] is None else f"{cost['amount']:g} {cost['currency'] or ''}".strip())
            if cost else "",
            ", ".join(r["keepsBilling"]))
    console.print(table)


def moved_on(attempts: list[dict]) -> str:
    """', moved on from <zone> (<code>)' for each attempt of the last `up` that found no stock or quota."""
    failed = [a for a in attempts if a.get("outcome") not in (None, "deployed")]
    return "".join(f"; up moved on from {a.get('instanceType')} in {a.get('zone') or a.get('region')}"
                   f" ({str(a.get('outcome')).split(': ', 1)[-1]})" for a in failed)
