"""Start a new cloud from the template provider: its package, its stand-ins and their registry lines, nothing else.

    .venv/bin/python scripts/new_provider.py huaweicloud --display "Huawei Cloud"

Copies components/providers/_template/ to components/providers/<name>/ with the name filled in,
adds `"<name>": "components.providers.<name>"` to REGISTRY in components/providers/__init__.py,
writes the cloud's local stand-ins from localcloud/standins/_template.py to localcloud/standins/<name>.py
with `"<name>": "localcloud.standins.<name>"` in that package's CLOUDS, and lists what is left to write
(every TODO(<name>) in the new files). The new cloud is
registered at once, so the contract test (tests/providers/test_contract.py) and the conformance
suite (tests/test_conformance.py) check it from the first run and say what is missing; its stacks
go in stacks/Pulumi.<stack>.yaml. docs/providers.md is the checklist.

Exit status: 0 made; 2 bad name (not lower-case letters and digits, already registered, or the
folder exists), with nothing written.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from tools import cliargs
from tools.cliargs import OK, USAGE

REPO = Path(__file__).resolve().parent.parent
PROVIDERS_DIR = REPO / "components" / "providers"
TEMPLATE = PROVIDERS_DIR / "_template"
REGISTRY_FILE = PROVIDERS_DIR / "__init__.py"
REGISTRY_OPEN = "REGISTRY: dict[str, str] = {\n"
STANDINS_DIR = REPO / "localcloud" / "standins"
STANDINS_TEMPLATE = STANDINS_DIR / "_template.py"
STANDINS_REGISTRY_FILE = STANDINS_DIR / "__init__.py"
STANDINS_REGISTRY_OPEN = "CLOUDS: dict[str, str] = {\n"
NAME = re.compile(r"[a-z][a-z0-9]{1,30}")  # a Python package name and a Pulumi config namespace


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = cliargs.command_line("scripts/new_provider.py", __doc__, prog="new_provider.py")
    parser.add_argument("name", help="registry name of the cloud, as its Pulumi provider spells it (e.g. huaweicloud)")
    parser.add_argument("--display", help="the cloud's name for people (default: the registry name)")
    return parser.parse_args(argv)


def refusal(name: str, registry_text: str) -> str | None:
    if not NAME.fullmatch(name):
        return f"name: {name!r} is not allowed: 2-31 lower-case letters and digits, starting with a letter"
    if f'"{name}":' in registry_text.split(REGISTRY_OPEN, 1)[-1].split("}", 1)[0]:
        return f"name: {name!r} is already registered in {REGISTRY_FILE.relative_to(REPO)}"
    for path in (PROVIDERS_DIR / name, STANDINS_DIR / f"{name}.py"):
        if path.exists():
            return f"name: {name!r}: {path.relative_to(REPO)} already exists"
    return None


def with_entry(registry_text: str, name: str, opening: str = REGISTRY_OPEN,
               package: str = "components.providers") -> str:
    """The registry file with one more line, last in the dict that `opening` starts."""
    head, rest = registry_text.split(opening, 1)
    body, tail = rest.split("}\n", 1)
    return f'{head}{opening}{body}    "{name}": "{package}.{name}",\n}}\n{tail}'


def todos(text: str, name: str) -> int:
    return text.count(f"TODO({name})") + text.count("TODO\n") + text.count(": TODO")


def fill(text: str, name: str, display: str) -> str:
    return text.replace("__cloud__", name).replace("__Cloud__", display)


def create(name: str, display: str) -> list[tuple[Path, int]]:
    """Write the package, the stand-ins and their registry lines; (file, TODOs in it) for each file made."""
    target = PROVIDERS_DIR / name
    made = []
    for source in sorted(TEMPLATE.rglob("*")):
        if "__pycache__" in source.parts or source.is_dir():
            continue
        path = target / source.relative_to(TEMPLATE)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = fill(source.read_text(encoding="utf-8"), name, display)
        path.write_text(text, encoding="utf-8")
        shutil.copymode(source, path)
        made.append((path, todos(text, name)))
    REGISTRY_FILE.write_text(with_entry(REGISTRY_FILE.read_text(encoding="utf-8"), name), encoding="utf-8")
    stand_ins = STANDINS_DIR / f"{name}.py"
    text = fill(STANDINS_TEMPLATE.read_text(encoding="utf-8"), name, display)
    stand_ins.write_text(text, encoding="utf-8")
    made.append((stand_ins, todos(text, name)))
    STANDINS_REGISTRY_FILE.write_text(with_entry(STANDINS_REGISTRY_FILE.read_text(encoding="utf-8"), name,
                                                 STANDINS_REGISTRY_OPEN, "localcloud.standins"), encoding="utf-8")
    return made


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    problem = refusal(args.name, REGISTRY_FILE.read_text(encoding="utf-8"))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return USAGE
    made = create(args.name, args.display or args.name)
    print(f"made components/providers/{args.name}/, localcloud/standins/{args.name}.py and their registry lines:")
    for path, count in made:
        print(f"  {path.relative_to(REPO)}" + (f"  ({count} TODO)" if count else ""))
    print("next: fill in the TODOs (docs/providers.md lists what each file provides), add its stacks in"
          " stacks/, then run `make test`: tests/providers/test_contract.py and tests/test_conformance.py"
          " name what is still missing")
    return OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
