"""Exit codes of scripts/run.py: one per situation a caller (a person or a CI job) must tell apart."""
from __future__ import annotations

from tools import cliargs

# The first three are every script's (tools/cliargs.py); the rest are run.py's own.
DONE = cliargs.OK       # every node DONE; report downloaded; stack destroyed (or kept with --keep)
ERROR = cliargs.FAILED  # unexpected error (Pulumi CLI missing, object storage unreadable, ...): stack left as it is
USAGE = cliargs.USAGE   # bad arguments: nothing was started
FAILED = 3          # training FAILED (or destroy was forced over unsaved data)
NOT_SAVED = 4       # markers say data is not saved (SYNC_FAILED, no final marker): stack left running
TIMED_OUT = 5       # the watch ended (--timeout, --destroy-only) before training finished; data saved
UP_FAILED = 6       # `pulumi up` failed: the stack may be partly created
DESTROY_FAILED = 7  # `pulumi refresh`/`destroy` failed: resources may remain
DECLINED = 8        # destroy not confirmed at the prompt (or no terminal and no --yes): stack left running
INTERRUPTED = 130   # Ctrl-C: stack left running, the commands to continue are printed

HELP = f"""\
exit codes:
  {DONE}    training DONE on every node; report downloaded; stack destroyed (or kept with --keep)
  {ERROR}    unexpected error (Pulumi CLI missing, object storage unreadable); stack left as it is
  {USAGE}    bad arguments; nothing started
  {FAILED}    training FAILED (its data saved), or destroy forced over unsaved data with --force
  {NOT_SAVED}    refused to destroy: SYNC_FAILED, or no final marker; stack left running
  {TIMED_OUT}    training unfinished when the watch ended (--timeout, or `down` before the end); data saved;
       stack destroyed (or kept)
  {UP_FAILED}    `pulumi up` failed; the stack may be partly created
  {DESTROY_FAILED}    `pulumi refresh` or `destroy` failed; resources may remain
  {DECLINED}    destroy not confirmed (no --yes and no terminal to ask on); stack left running
  {INTERRUPTED}  Ctrl-C; stack left running; the commands to resume watching or destroy are printed
"""
