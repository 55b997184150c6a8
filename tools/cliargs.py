"""The argparse scaffold the scripts/ command lines share: their exit codes, a parser whose bad input
exits USAGE with one line and where to read the --help, and show/refresh subcommands.

scripts/prices.py, regions.py, new_provider.py and recommend.py build on it; preview, rehearse, pack,
report, provider_facts and the `gpu-training` command line take its codes (run.py adds its own in
tools/runlib/exitcodes.py: it tells more situations apart). A script adds its own meaning of
FAILED in its docstring ("the API priced nothing", "nothing fits").
"""
from __future__ import annotations

import argparse
import functools

OK = 0      # done: shown, written, found
FAILED = 1  # the work ran and did not succeed (an API priced nothing, nothing fits); nothing half-written
USAGE = 2   # bad arguments, missing credentials or a missing file: nothing was started


class Parser(argparse.ArgumentParser):
    """An ArgumentParser for `script` (its path as a person types it, e.g. scripts/prices.py): argparse's
    own refusals exit USAGE as `error: <message>` and `(see <script> --help)`, with no usage block."""

    def __init__(self, *args, script: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.script = script

    def error(self, message: str) -> None:
        # Run by the `gpu-training` command line (tools/cli/main.py sets the program name), the help to read
        # is the subcommand's as typed, e.g. `gpu-training prices show`; run directly, the script's path.
        where = self.prog if self.prog.startswith("gpu-training ") else self.script
        self.exit(USAGE, f"error: {message}\n(see {where} --help)\n")


def command_line(script: str, doc: str, **kwargs) -> Parser:
    """The parser of `script`, its module docstring as the description, laid out as written."""
    return Parser(script=script, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def subcommands(parser: Parser):
    """The required subcommands of `parser` (args.command names the one given); each refuses bad
    input as its parent does."""
    return parser.add_subparsers(dest="command", required=True,
                                 parser_class=functools.partial(Parser, script=parser.script))


def show_and_refresh(script: str, doc: str, show_help: str, refresh_help: str) -> tuple[Parser, Parser, Parser]:
    """(the parser, its `show` subcommand, its `refresh` subcommand): the shape of the commands that
    print a data file of the project and rewrite it from a cloud's API."""
    parser = command_line(script, doc)
    commands = subcommands(parser)
    return parser, commands.add_parser("show", help=show_help), commands.add_parser("refresh", help=refresh_help)

