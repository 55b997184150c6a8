"""tools/mockrun.py ends cleanly: the preview's engine leaves nothing for interpreter shutdown to trip on."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_probe(probe: str) -> str:
    """Run `probe` in a fresh interpreter from the repository; what it printed (it must exit 0)."""
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=180,
                          env=os.environ)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr[-1000:]


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
    assert "loop closed at exit: True" in run_probe(probe)


def test_a_refused_run_leaves_no_unreported_failure_for_a_later_parse_to_trip_on():
    """CI failed once in tests/test_import_graph.py with `SystemError: AST constructor recursion depth
    mismatch`: a refused `pulumi up` (an apply that raises) left its exception in futures nobody read; the
    collector freed them during a later ast.parse, asyncio's report formatted the traceback, and on
    CPython 3.11 that parses the source again inside the first parse. The probe replays it: the refused
    run, a good run (which drops the old run's references), then parses with the collector on a short
    fuse, and counts asyncio's reports; and, whether or not the collector gets to them, the failures left
    unread in the engine's futures right after the refusal."""
    probe = (
        "import ast, asyncio, gc, logging, os, sys\n"
        "from datetime import timedelta\n"
        "from pathlib import Path\n"
        "from components import clock\n"
        "from tools.mockrun import run_program\n"
        "from tools.stackfiles import apply_overrides, load_stack_config\n"
        "reports = []\n"
        "logging.getLogger('asyncio').addHandler(logging.Handler())\n"
        "logging.getLogger('asyncio').handlers[-1].emit = reports.append\n"
        "config = apply_overrides(load_stack_config('hw-entry-t4'), ('billing=spot', 'spotMaxPricePerHour=5'))\n"
        "first = run_program(config, 'hw-entry-t4')\n"
        "now = os.environ[clock.CLOCK_ENV]\n"
        "os.environ[clock.CLOCK_ENV] = clock.rfc3339(clock.parse(first.outputs['expiresAt']) + timedelta(hours=1))\n"
        "try:\n"
        "    run_program(config, 'hw-entry-t4', prior=first)\n"
        "    sys.exit('the run past the TTL was not refused')\n"
        "except Exception as refused:\n"
        "    assert 'refusing to start capped spot' in str(refused), refused\n"
        "unread = [f for f in gc.get_objects() if issubclass(type(f), asyncio.Future) and f.done()\n"
        "          and not f.cancelled() and f._log_traceback]\n"
        "print('unread failures after the refusal:', len(unread))\n"
        "del unread\n"
        "os.environ[clock.CLOCK_ENV] = now\n"
        "run_program(config, 'hw-entry-t4')\n"
        "gc.set_threshold(50, 2, 2)\n"
        "for path in sorted(Path('components').rglob('*.py')):\n"
        "    ast.parse(path.read_text())\n"
        "gc.collect()\n"
        "print('asyncio reports:', len([r for r in reports if 'never retrieved' in r.getMessage()]))\n")
    printed = run_probe(probe)
    assert "unread failures after the refusal: 0" in printed and "asyncio reports: 0" in printed, printed
