"""tools/mockrun.py ends cleanly: the preview's engine leaves nothing for interpreter shutdown to trip on."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_preview_closes_the_engine_loop_before_interpreter_shutdown():
    """The preview's rare `ValueError: Invalid file descriptor: -1` came from the engine's event loop being
    closed by its finalizer during shutdown, after its self-pipe socket (collection order varies under load).
    An exit handler registered first runs last: by then the loop must be closed already."""
    probe = (
        "import atexit, asyncio\n"
        "state = {}\n"
        "atexit.register(lambda: print('loop closed at exit:', state['loop'].is_closed()))\n"
        "from tools.mockrun import run_program\n"
        "from tools.stackfiles import load_stack_config\n"
        "run_program(load_stack_config('entry-t4'), 'entry-t4')\n"
        "state['loop'] = asyncio.get_event_loop()\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loop closed at exit: True" in done.stdout, done.stdout + done.stderr[-1000:]
