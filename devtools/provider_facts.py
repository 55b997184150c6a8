#!/usr/bin/env python3
"""Regenerate a cloud's provider facts (components/providers/<cloud>/provider_facts.json) from a
checkout of its Terraform provider's Go source.

For every resource type in components/providers/<cloud>/bridge.yaml it reads the resource's
schema.Resource literal (devtools/goschema.py) and writes, per input, keyed by the Pulumi name the
engine sees (camelCase, nested blocks too) with the Terraform name beside it: the type, whether it is
required, computed or forces replacement (ForceNew), its validators (allowed values, ranges,
patterns, lengths), defaults, item limits, and the inputs a CustomizeDiff may replace on. The Pulumi
names are checked against the installed SDK's argument classes; what the SDK has and the source does
not is listed as sdk_only (a version gap to know about).

The file's "hand_written" section (Read and Update behaviour the parser cannot see, each with the
file:line and the quoted source line) is kept across regenerations; each quote is looked for again
in the new source and the run fails if one is gone, so a stale quirk cannot survive silently.

Any schema construct the parser does not understand stops the run with its file:line.

A cloud whose bridge.yaml says `kind: dynamic` (Baidu: the project's own Pulumi dynamic resources)
has no Terraform source: its facts are its python_module's facts_document(), written without --source.

examples:
  git -C ~/src/terraform-provider-alicloud checkout 81c43b67
  devtools/provider_facts.py alicloud --source ~/src/terraform-provider-alicloud \\
      --module github.com/aliyun/aliyun-oss-go-sdk=~/src/aliyun-oss-go-sdk \\
      --module github.com/denverdino/aliyungo=~/src/aliyungo
  devtools/provider_facts.py tencentcloud --source ~/src/terraform-provider-tencentcloud \\
      --module github.com/aws/aws-sdk-go=~/src/aws-sdk-go
  devtools/provider_facts.py baiducloud

Exit status: 0 written, 2 bad arguments, 1 the source could not be read (the message says where).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO_ROOT)]  # run as a file from a clone: this checkout's packages, devtools/ among them

from components.providers import facts as provider_facts
from devtools.goschema import GoSchemaError, SourceTree, resource_schema
from tools.cliargs import FAILED as EXIT_FAILED, USAGE as EXIT_BAD_ARGS
from tools.sdknames import args_class, camel, plurals, sdk_fields


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="provider_facts.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cloud", help="a provider with a bridge.yaml: " + ", ".join(provider_facts.clouds()))
    parser.add_argument("--source", type=Path,
                        help="a checkout of the Terraform provider at the commit to read (required unless the"
                             " cloud's bridge.yaml says kind: dynamic: then its module's facts_document() is written)")
    parser.add_argument("--module", action="append", default=[], metavar="GO_MODULE=DIR",
                        help="a checkout of a Go module the schemas take constants from (bridge.yaml lists"
                             " them with the versions the provider's go.mod requires); repeatable")
    parser.add_argument("--commit", help="the provider commit (default: `git rev-parse HEAD` in --source)")
    parser.add_argument("--output", type=Path, help="where to write (default: the cloud's provider_facts.json)")
    return parser.parse_args(argv)


class FactsError(Exception):
    pass


# ---------------------------------------------------------------- the provider's registry

def constructors(tree: SourceTree, registry: str) -> dict[str, tuple[str, str]]:
    """tf resource name -> (package directory, constructor func) from the ResourcesMap literal."""
    path = tree.root / registry
    text = path.read_text(encoding="utf-8")
    start = text.find("ResourcesMap:")
    if start < 0:
        raise FactsError(f"{registry}: no ResourcesMap")
    end = text.find("\n\t\t},", start)
    body = text[start:end if end > 0 else len(text)]
    imports = next(f for f in tree.package(str(Path(registry).parent)) if f.path == registry).imports()
    found = {}
    for m in re.finditer(r'"([a-z0-9_]+)":\s*(?:(\w+)\.)?(\w+)\(\)', body):
        alias, func = m.group(2), m.group(3)
        if m.group(1) in found:
            raise FactsError(f"{registry}: {m.group(1)} appears twice after ResourcesMap; the map's end was not found")
        if alias:
            directory = tree.directory_of_import(imports.get(alias, ""))
            if directory is None:
                raise FactsError(f"{registry}: {m.group(1)} is built by {alias}.{func}, outside the provider")
        else:
            directory = str(Path(registry).parent)
        found[m.group(1)] = (directory, func)
    return found


# ---------------------------------------------------------------- Pulumi names

def pulumi_block(tf_fields: dict, cls, where: str) -> tuple[dict, list[str]]:
    """TF fields -> the same facts keyed by Pulumi name; and the SDK's names the source lacks."""
    sdk = sdk_fields(cls) if cls is not None else {}
    out: dict = {}
    for tf_name, facts in tf_fields.items():
        facts = dict(facts)
        facts["tf"] = tf_name
        inputs = facts.get("required") or facts.get("optional")
        if not inputs:
            facts["output_only"] = True
        base = camel(tf_name)
        many = facts["type"] in ("list", "set") and facts.get("max_items") != 1
        if facts["type"] in ("list", "set") and facts.get("max_items") == 1:
            facts["max_items_one"] = True  # the bridge passes the single element, not a list
        candidates = [base] + (plurals(base) if many else [])
        name = next((c for c in candidates if c in sdk), None)
        nested_cls = None
        if name is None:
            name = plurals(base)[0] if many and not base.endswith("s") else base
            if cls is not None and inputs and not facts.get("removed"):
                facts["sdk"] = False  # the source has it; the installed SDK does not
        else:
            nested_cls = sdk[name][1]
            if facts.get("max_items_one") and sdk[name][2]:
                facts["sdk_takes_list"] = True  # the bridge kept it a list after all
        if "block" in facts:
            facts["block"], _ = pulumi_block(facts["block"], nested_cls, f"{where}.{name}")
        if name in out:
            raise FactsError(f"{where}: two Terraform fields map to the Pulumi name {name}")
        out[name] = facts
    missing = sorted(set(sdk) - set(out))
    return dict(sorted(out.items())), missing


# ---------------------------------------------------------------- hand-written section

def recheck_hand_written(section: dict, source: Path) -> dict:
    """Find each quoted line again in the new source; move its line number, or fail."""
    checked = {}
    for name, quirk in section.items():
        if name.startswith("_"):
            checked[name] = quirk
            continue
        path, _, line = quirk["at"].rpartition(":")
        file = source / path
        if not file.is_file():
            raise FactsError(f"hand-written {name}: {path} is not in the new source; re-check it by hand")
        lines = file.read_text(encoding="utf-8").splitlines()
        hits = [i + 1 for i, text in enumerate(lines) if quirk["quote"].strip() == text.strip()]
        if not hits:
            raise FactsError(f"hand-written {name}: the quoted line {quirk['quote']!r} is no longer in {path};"
                             " re-read the source and update or drop the entry")
        nearest = min(hits, key=lambda hit: abs(hit - int(line)))
        checked[name] = {**quirk, "at": f"{path}:{nearest}"}
    return checked


# ---------------------------------------------------------------- main

def generate(cloud: str, source: Path, modules: dict[str, Path], commit: str, previous: dict) -> dict:
    bridge = provider_facts.bridge(cloud)
    provider = bridge["provider"]
    tree = SourceTree(source, provider["go_module"], modules)
    registry = constructors(tree, provider["registry"])
    resources = {}
    opaque = []
    for token, tf_name in sorted(bridge["resources"].items()):
        if tf_name not in registry:
            raise FactsError(f"{tf_name} ({token}) is not in {provider['registry']}'s ResourcesMap at {commit[:8]}")
        directory, func = registry[tf_name]
        schema = resource_schema(tree, directory, func)
        try:
            cls = args_class(bridge["sdk"]["python_module"], token)
        except (ImportError, AttributeError) as error:
            raise FactsError(f"{token}: no Args class in the installed {bridge['sdk']['package']}: {error}") from error
        inputs, sdk_only = pulumi_block(schema.fields, cls, token)
        entry: dict[str, Any] = {"tf_resource": tf_name, "source": f"{schema.file}:{schema.line}", "inputs": inputs}
        if schema.customize_diff:
            entry["customize_diff"] = schema.customize_diff
        if schema.force_new_in_customize_diff:
            entry["force_new_in_customize_diff"] = schema.force_new_in_customize_diff
        if schema.deprecation:
            entry["deprecated"] = schema.deprecation
        if sdk_only:
            entry["sdk_only"] = sdk_only
        resources[token] = entry
        opaque += [f"{token}.{path}: {v['func']} at {v['at']}" for path, v in provider_facts.validators_of(inputs)
                   if v["kind"] == "opaque"]
        for _path, v in provider_facts.validators_of(inputs):
            for pattern in provider_facts.patterns_of(v):
                provider_facts.compile_go_regex(pattern)  # fails loudly on RE2 syntax we cannot translate
    for line in opaque:
        print(f"note: validator with no known meaning (kept as opaque): {line}", file=sys.stderr)
    hand_written = recheck_hand_written(previous.get("hand_written", {}), source)
    return {
        "_about": "Generated by devtools/provider_facts.py from the Terraform provider's Go source; do not"
                  " edit except the hand_written section (see docs/providers.md).",
        "cloud": cloud,
        "provider": {"repository": provider["repository"], "commit": commit, "note": provider.get("commit_note", "")},
        "sdk": {"package": bridge["sdk"]["package"], "version": bridge["sdk"]["version"],
                "installed": _installed_version(bridge["sdk"]["package"])},
        "modules": provider.get("modules", {}),
        "resources": resources,
        "hand_written": hand_written,
    }


def _installed_version(package: str) -> Optional[str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.cloud not in provider_facts.clouds():
        print(f"error: cloud {args.cloud!r} has no bridge.yaml; known: {', '.join(provider_facts.clouds())}",
              file=sys.stderr)
        return EXIT_BAD_ARGS
    if provider_facts.bridged_by(args.cloud) == "dynamic":
        # The project's own dynamic resources: their schemas are the provider (bridge.yaml kind: dynamic).
        import importlib

        module = importlib.import_module(provider_facts.bridge(args.cloud)["sdk"]["python_module"])
        output = args.output or provider_facts.facts_path(args.cloud)
        output.write_text(json.dumps(module.facts_document(), indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {output}")
        return 0
    if args.source is None or not (args.source / "go.mod").is_file():
        print(f"error: --source {args.source} is not a Go module checkout (no go.mod)", file=sys.stderr)
        return EXIT_BAD_ARGS
    modules = {}
    for item in args.module:
        name, sep, directory = item.partition("=")
        if not sep or not Path(directory).expanduser().is_dir():
            print(f"error: --module {item!r}: expected GO_MODULE=DIR with an existing DIR", file=sys.stderr)
            return EXIT_BAD_ARGS
        modules[name] = Path(directory).expanduser()
    commit = args.commit
    if not commit:
        result = subprocess.run(["git", "-C", str(args.source), "rev-parse", "HEAD"], capture_output=True, text=True)
        if result.returncode:
            print("error: --source is not a git checkout; give the commit with --commit", file=sys.stderr)
            return EXIT_BAD_ARGS
        commit = result.stdout.strip()
    output = args.output or provider_facts.facts_path(args.cloud)
    previous = json.loads(output.read_text()) if output.is_file() else {}
    try:
        document = generate(args.cloud, args.source, modules, commit, previous)
    except (GoSchemaError, FactsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    output.write_text(json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
    count = sum(len(r["inputs"]) for r in document["resources"].values())
    print(f"wrote {output.relative_to(REPO_ROOT) if output.is_relative_to(REPO_ROOT) else output}:"
          f" {len(document['resources'])} resources, {count} top-level inputs, provider {commit[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
