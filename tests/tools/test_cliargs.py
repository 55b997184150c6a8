"""The command lines' shared argparse scaffold (tools/cliargs.py): bad arguments exit 2 with one line
and where to read the --help, at the top level and in a subcommand, in each script built on it, run
as a person runs it (a subprocess)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import cliargs

REPO = Path(__file__).resolve().parents[2]

BAD = [  # (script, arguments, what the one line says)
    ("prices.py", ["bogus"], "invalid choice: 'bogus' (choose from 'show', 'refresh')"),
    ("prices.py", ["show", "--max-age-days", "soon"], "argument --max-age-days: invalid int value: 'soon'"),
    ("prices.py", ["refresh", "--region", "cn-hangzhou"], "the following arguments are required: --provider"),
    ("regions.py", [], "the following arguments are required: command"),
    ("regions.py", ["show", "--provider", "azure"], "argument --provider: invalid choice: 'azure'"),
    ("new_provider.py", [], "the following arguments are required: name"),
    ("recommend.py", ["--top", "0"], "--top and --pick must be 1 or more, --explain 0 or more"),
    ("recommend.py", ["--epochs", "many"], "argument --epochs: invalid float value: 'many'"),
]


@pytest.mark.parametrize("script, args, says", BAD, ids=[f"{s}:{' '.join(a) or 'none'}" for s, a, _ in BAD])
def test_bad_arguments_exit_2_with_one_line_and_the_scripts_help(script, args, says):
    run = subprocess.run([sys.executable, str(REPO / "scripts" / script), *args], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert run.returncode == cliargs.USAGE == 2, run.stderr
    assert run.stdout == "" and "Traceback" not in run.stderr and "usage:" not in run.stderr
    first, hint = run.stderr.splitlines()
    assert first.startswith("error: ") and says in first
    assert hint == f"(see scripts/{script} --help)"


def test_a_subcommand_refuses_as_its_parent_does(capsys):
    parser, show, refresh = cliargs.show_and_refresh("scripts/example.py", "An example.", "show it", "refresh it")
    refresh.add_argument("--provider", required=True)
    assert parser.parse_args(["refresh", "--provider", "alicloud"]).command == "refresh"
    assert parser.parse_args(["show"]).command == "show"
    for args in (["refresh"], ["nothing"], []):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(args)
        assert exited.value.code == cliargs.USAGE
        assert capsys.readouterr().err.endswith("\n(see scripts/example.py --help)\n")

