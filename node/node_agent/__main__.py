"""Entry point: `python -m node_agent --config /etc/gpu-training/node.json` (systemd runs it).

Logs go with timestamps to stdout (the journal) and to <paths.logs>/agent.log, the trainer's
output included. Exit status: 0 finished (or nothing left to do), 2 bad config, 3 the final
upload or marker failed (node kept; a restart retries), 4 the release request failed, 1 anything else
(metadata or object storage unreachable beyond the retries: systemd restarts the agent).
"""
import argparse
import logging
import os
import sys

from .agent import Agent
from .config import load


class LogFile(logging.FileHandler):
    """agent.log: a full disk costs the file its lines, not the journal a traceback for every line."""

    failed = False

    def handleError(self, record):
        if not self.failed:
            self.failed = True
            print(f'agent.log: cannot write ({sys.exc_info()[1]}); the journal keeps the log', file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(prog='node_agent', description='gpu-training node agent')
    ap.add_argument('--config', default='/etc/gpu-training/node.json', help='node config (docs/node-config.md)')
    cfg = load(ap.parse_args().config)
    os.makedirs(cfg['paths']['logs'], exist_ok=True)
    fmt = logging.Formatter('%(asctime)s %(name)s %(levelname)s %(message)s')
    for handler in (logging.StreamHandler(sys.stdout), LogFile(os.path.join(cfg['paths']['logs'], 'agent.log'))):
        handler.setFormatter(fmt)
        logging.getLogger().addHandler(handler)
    # Our own loggers talk; botocore and friends only when something is wrong.
    logging.getLogger().setLevel(logging.WARNING)
    for n in ('agent', 'trainer'):
        logging.getLogger(n).setLevel(logging.INFO)
    agent = None
    try:
        agent = Agent(cfg)
        sys.exit(agent.run())
    except Exception as e:
        # systemd restarts the agent (Restart=on-failure); the state file says where to continue.
        logging.getLogger('agent').error('agent failed, exiting for a restart: %r', e)
        if agent is not None:
            agent.logs.ship('agent failed')  # the reason goes to the bucket too (bounded, never raises)
        sys.exit(1)


main()
