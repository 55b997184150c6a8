"""Whether run.py may destroy the stack, from the watch's verdict; and what to tell the user. Pure.

The rule (docs/run.md): destroy only when every node's markers say its data is in object storage.
SYNC_FAILED, a node still RUNNING, a node without a marker, or no marker at all means data may
exist only on a node's disk: refuse unless --force, and say what to do instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import exitcodes
from .markers import Verdict


@dataclass(frozen=True)
class Commands:
    """The exact command lines printed for the user to continue by hand."""
    watch: str          # resume watching
    destroy: str        # destroy through run.py (with the same checks)
    force_destroy: str  # destroy through run.py, over unsaved data
    pulumi_destroy: str  # destroy with the Pulumi CLI alone
    restart_agent: str  # on a node: retry the agent's final upload


@dataclass(frozen=True)
class Decision:
    destroy: bool
    exit_code: int
    headline: str
    advice: tuple[str, ...] = ()


def outcome_code(verdict: Verdict, timed_out: bool) -> int:
    if verdict.state == "DONE":
        return exitcodes.DONE
    if verdict.state in ("FAILED", "SYNC_FAILED"):
        return exitcodes.FAILED
    return exitcodes.TIMED_OUT if timed_out else exitcodes.FAILED


def _not_saved(verdict: Verdict, cmd: Commands, timed_out: bool) -> tuple[str, tuple[str, ...]]:
    if verdict.state == "SYNC_FAILED":
        return ("the final checkpoint upload FAILED on a node (SYNC_FAILED): its data is only on its disk", (
            "The node is not released and keeps /data/checkpoints; the cloud-side TTL stops it at expiry.",
            "Fix the cause named in the marker (bucket permissions, endpoint, quota), then on that node run",
            f"  {cmd.restart_agent}",
            "to retry the upload, and watch again:",
            f"  {cmd.watch}",
            "Or copy /data/checkpoints off the node yourself. To destroy anyway, losing that data:",
            f"  {cmd.force_destroy}",
        ))
    if verdict.state == "NO_MARKERS":
        return ("no node has reported (no marker)" + (" before the timeout" if timed_out else ""), (
            "Nodes may still be booting, or the bootstrap failed: see /var/log/gpu-training/bootstrap.log "
            "on a node (or its serial console).",
            f"Watch longer:  {cmd.watch}",
            f"Destroy anyway (nothing is lost if no node ever trained):  {cmd.force_destroy}",
        ))
    who = ", ".join(verdict.unsaved) or "-"
    extra = f"; {verdict.missing} node(s) never reported" if verdict.missing else ""
    return (f"no final marker from node(s) {who}{extra}" + (" at the timeout" if timed_out else "")
            + ": work since their last periodic sync is only on their disks", (
        f"Watch longer:  {cmd.watch}",
        "The agent stops training gracefully at agent.maxHours and uploads; a spot notice does the same.",
        f"Destroy anyway, losing what was not synced:  {cmd.force_destroy}",
    ))


def decide_start_failed(reason: str, keep: bool, cmd: Commands) -> Decision:
    """The run never started (startcheck.py): no pod ran the agent, so destroying loses nothing."""
    headline = f"training never started: {reason}"
    if keep:
        return Decision(False, exitcodes.FAILED, headline + "; stack kept (--keep)", (
            "Fix the cause (kubernetes.image, the pool's instance types or quota), then `pulumi up` again;",
            f"or destroy:  {cmd.destroy}"))
    return Decision(True, exitcodes.FAILED, headline + "; nothing ran, so nothing is lost by destroying")


def decide(verdict: Verdict, timed_out: bool, keep: bool, force: bool, cmd: Commands) -> Decision:
    """Destroy or not, the exit code, and the words for it."""
    code = outcome_code(verdict, timed_out)
    if verdict.data_saved:
        if verdict.state == "DONE":
            headline = "training DONE on every node; data saved"
        elif verdict.state == "FAILED":
            headline = f"training FAILED on node(s) {', '.join(verdict.failed)}; data saved"
        else:
            headline = (f"timed out with training unfinished ({verdict.state}); data saved: starting the "
                        "stack again resumes from the last checkpoint")
        if keep:
            return Decision(False, code, headline + "; stack kept (--keep)",
                            (f"Destroy later:  {cmd.destroy}",))
        return Decision(True, code, headline)

    headline, advice = _not_saved(verdict, cmd, timed_out)
    if keep:
        return Decision(False, exitcodes.NOT_SAVED, headline + "; stack kept (--keep)", advice)
    if force:
        return Decision(True, exitcodes.FAILED, headline + "; destroying anyway (--force)")
    return Decision(False, exitcodes.NOT_SAVED, "refusing to destroy: " + headline, advice)
