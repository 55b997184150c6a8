#!/usr/bin/env python3
"""Throw bad stack configs at the real CLI (scripts/preview.py) and count how many are handled.

"Handled" is what the README promises: exit status 2, no traceback, and the message names the
dotted key (or, for a broken stack file, the file). Anything else is a failure, sorted by class:
traceback, accepted (exit 0), the program failed later (exit 1), exit 2 without the key named.

Each case runs the CLI as its own process, as a user would. Stack-file cases write a temporary
`stacks/Pulumi.zz-bad-<n>.yaml` into the checkout under test and delete it afterwards, so the same
driver measures an older checkout too:

    bench/bad_configs.py                     # this checkout
    bench/bad_configs.py --repo /tmp/old     # another checkout (e.g. a worktree at an older commit)
    bench/bad_configs.py --failures          # also list every case that was not handled
    bench/bad_configs.py --quick             # every 5th case (make bench)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    name: str
    key: str  # what the message must name: a dotted key, or a fragment for file-level problems
    stack: str = "entry-t4"
    sets: tuple[str, ...] = ()
    file: bytes | None = None  # a whole stack file instead of `stack`
    args: tuple[str, ...] = ()


def s(name: str, key: str, *sets: str, stack: str = "entry-t4", args: tuple[str, ...] = ()) -> Case:
    return Case(name, key, stack, tuple(sets), None, args)


def f(name: str, text: bytes | str, key: str = "Pulumi.zz-bad-") -> Case:
    return Case(name, key, file=text if isinstance(text, bytes) else text.encode("utf-8"))


GOOD_FILE = ("config:\n  alicloud:region: cn-hangzhou\n  gpu-training:tier: entry\n"
             "  gpu-training:checkpoint:\n    bucket: my-gpu-training-checkpoints\n")
_RNG = random.Random(12)
NOISE = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(30000))  # incompressible


def cases() -> list[Case]:
    out: list[Case] = []
    # Numbers: non-finite, overflowing, fractional, negative, zero, too large, of the wrong type.
    for key in ("nodes", "gpusPerNode", "dataDiskGb", "datasetGb", "maxHours", "idleMinutes", "sharedStorageGb"):
        for value in ("inf", "-inf", "nan", "1e400", "Infinity", "1" + "0" * 400, "-1", "1.5", "abc", "[1]",
                      '{"a": 1}', "true"):
            out.append(s(f"{key}={value[:12]}", key, f"{key}={value}"))
    for key in ("nodes", "gpusPerNode", "maxHours"):
        out.append(s(f"{key}=0", key, f"{key}=0"))
    out += [
        s("nodes=100000", "nodes", "nodes=100000"),
        s("maxHours=10**30", "maxHours", "maxHours=" + "1" + "0" * 30),
        s("idleMinutes=10**30", "idleMinutes", "idleMinutes=" + "1" + "0" * 30),
        s("dataDiskGb=10**30", "dataDiskGb", "dataDiskGb=" + "1" + "0" * 30),
        s("dataDiskGb below the category minimum", "dataDiskGb", "dataDiskGb=5", "dataDiskCategory=cloud_ssd"),
        s("dataDiskGb=0", "dataDiskGb", "dataDiskGb=0"),
        s("dataDiskGb above ESSD max", "dataDiskGb", "dataDiskGb=70000"),
        s("tencent dataDiskGb below minimum", "dataDiskGb", "dataDiskGb=10", stack="tc-entry-t4"),
        s("sharedStorageGb negative with cpfs", "sharedStorageGb", "sharedStorageGb=-5", stack="large-h20"),
    ]
    for value in ("inf", "nan", "-1", "0", "1e400", "Infinity", "NaN", "cheap", "-0"):
        out.append(s(f"spotMaxPricePerHour={value}", "spotMaxPricePerHour", "billing=spot",
                     f"spotMaxPricePerHour={value}"))
    out.append(s("spotMaxPricePerHour=inf --json", "spotMaxPricePerHour", "billing=spot",
                 "spotMaxPricePerHour=inf", args=("--json",)))
    out.append(s("tencent spotMaxPricePerHour=inf", "spotMaxPricePerHour", "spotMaxPricePerHour=inf",
                 stack="tc-medium-a100"))
    # Strings and choices of the wrong shape.
    for key in ("tier", "billing", "provider", "gpu", "instanceType", "sharedStorage", "dataDiskCategory"):
        for value in ("[1, 2]", '{"a": 1}', "\u00e9norme-\u6765", "x" * 5000):
            out.append(s(f"{key}={value[:10]}", key, f"{key}={value}"))
    # Booleans that are not.
    for key in ("allowWorldSsh", "keep", "spotFallback", "publicEgress"):
        for value in ("yes", "2", "[true]"):
            out.append(s(f"{key}={value}", key, f"{key}={value}"))
    # Region and zones.
    out += [
        s("region unknown", "alicloud:region", "alicloud:region=cn-nowhere"),
        s("region regex characters", "alicloud:region", "alicloud:region=cn-(hang"),
        s("region unicode", "alicloud:region", "alicloud:region=\u676d\u5dde"),
        s("region empty", "alicloud:region", "alicloud:region="),
        s("region a list", "alicloud:region", 'alicloud:region=["cn-hangzhou"]'),
        s("region huge", "alicloud:region", "alicloud:region=" + "cn-" * 3000),
        s("tencent region unknown", "tencentcloud:region", "tencentcloud:region=ap-nowhere", stack="tc-entry-t4"),
        s("zone unknown", "zone", "zone=cn-hangzhou-z"),
        s("zone of another region", "zone", "zone=cn-beijing-a"),
        s("zone a list", "zone", 'zone=["cn-hangzhou-h"]'),
        s("zone unicode", "zone", "zone=\u676d\u5dde-a"),
        s("tencent zone unknown", "zone", "zone=ap-guangzhou-99", stack="tc-entry-t4"),
        s("spotZones unknown", "spotZones[0]", "billing=spot", 'spotZones=["cn-hangzhou-z"]'),
        s("spotZones of another region", "spotZones[0]", "billing=spot", 'spotZones=["cn-shanghai-a"]'),
        s("spotZones nested list", "spotZones", "billing=spot", 'spotZones=[["cn-hangzhou-h"]]'),
        s("spotZones an object", "spotZones", "billing=spot", 'spotZones={"a": 1}'),
        s("spotZones numbers", "spotZones[0]", "billing=spot", "spotZones=[1, 2]"),
        s("tencent spotZones unknown", "spotZones[0]", 'spotZones=["ap-guangzhou-99"]', stack="tc-medium-a100"),
    ]
    # SSH: the world, whole or in pieces, and things that are not CIDRs.
    out += [
        s("ssh 0.0.0.0/0", "sshAllowCidrs[0]", 'sshAllowCidrs=["0.0.0.0/0"]'),
        s("ssh ::/0", "sshAllowCidrs[0]", 'sshAllowCidrs=["::/0"]'),
        s("ssh two /1 halves", "sshAllowCidrs", 'sshAllowCidrs=["0.0.0.0/1", "128.0.0.0/1"]'),
        s("ssh ipv6 halves", "sshAllowCidrs", 'sshAllowCidrs=["::/1", "8000::/1"]'),
        s("ssh quarters", "sshAllowCidrs", 'sshAllowCidrs=["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"]'),
        s("ssh host bits /0", "sshAllowCidrs[0]", 'sshAllowCidrs=["10.1.2.3/0"]'),
        s("ssh netmask form", "sshAllowCidrs[0]", 'sshAllowCidrs=["0.0.0.0/0.0.0.0"]'),
        s("ssh not a CIDR", "sshAllowCidrs[0]", 'sshAllowCidrs=["10.0.0.0/33"]'),
        s("ssh empty string", "sshAllowCidrs[0]", 'sshAllowCidrs=[""]'),
        s("ssh a number", "sshAllowCidrs[0]", "sshAllowCidrs=[123]"),
        s("ssh an object element", "sshAllowCidrs[0]", 'sshAllowCidrs=[{"cidr": "1.2.3.4/32"}]'),
        s("ssh an object", "sshAllowCidrs", 'sshAllowCidrs={"a": 1}'),
        s("ssh unicode", "sshAllowCidrs[0]", 'sshAllowCidrs=["\u0661.2.3.4/32"]'),
    ]
    # Objects: not JSON, wrong shapes, unknown and mistyped fields, nested objects.
    for key in ("checkpoint", "train", "bootstrap", "tags"):
        for value in ("not json {", "[1, 2]", "42", '"text"'):
            out.append(s(f"{key}={value[:10]}", key, f"{key}={value}"))
    out += [
        # A dotted --set is text as given, true/false and whole numbers aside (Pulumi's --path rule,
        # tools.stackfiles.path_value): control characters are in the text, not JSON escapes (no NUL in argv).
        s("checkpoint.bucket a number", "checkpoint.bucket", "checkpoint.bucket=5"),
        s("checkpoint.bucket a list", "checkpoint.bucket", 'checkpoint.bucket=["a"]'),
        s("checkpoint.bucket an object", "checkpoint.bucket", 'checkpoint.bucket={"x": 1}'),
        s("checkpoint.bucket huge", "checkpoint.bucket", "checkpoint.bucket=" + "a" * 1000),
        s("checkpoint unknown field", "checkpoint.nested", 'checkpoint.nested={"deep": {"x": 1}}'),
        s("checkpoint.create maybe", "checkpoint.create", "checkpoint.create=maybe"),
        s("checkpoint.endpoint ftp", "checkpoint.endpoint", "checkpoint.endpoint=ftp://x"),
        s("checkpoint.endpoint newline", "checkpoint.endpoint", "checkpoint.endpoint=http://a\nb"),
        s("checkpoint.prefix an object", "checkpoint.prefix", 'checkpoint.prefix={"a": 1}'),
        s("checkpoint.prefix wildcard", "checkpoint.prefix", "checkpoint.prefix=*"),
        s("checkpoint.prefix dot-dot", "checkpoint.prefix", "checkpoint.prefix=../other"),
        s("train.command empty", "train.command", "train.command="),
        s("train.command a list", "train.command", 'train.command=["python", "x.py"]'),
        s("train.command over the user-data budget", "train.command", "train.command=python t.py " + NOISE),
        s("train.command control character", "train.command", "train.command=python\x01x"),
        s("train.env a list", "train.env", "train.env=[1]"),
        s("train.env nested", "train.env", 'train.env={"A": {"b": 1}}'),
        s("train.env bad name", "train.env.1BAD", 'train.env={"1BAD": "x"}'),
        s("train.env credential", "train.env.MY_TOKEN", 'train.env={"MY_TOKEN": "x"}'),
        s("train.env over the user-data budget", "train.env.BLOB", json.dumps({"BLOB": NOISE}).join(["train.env=", ""])),
        s("train.launcher", "train.launcher", "train.launcher=mpirun"),
        s("train.codeDir missing", "train.codeDir", "train.codeDir=no/such/dir"),
        s("train.codeDir too long", "train.codeDir", "train.codeDir=" + "d" * 5000),
        s("train.codeDir control character", "train.codeDir", "train.codeDir=a\x01b"),
        s("train.codeDir a number", "train.codeDir", "train.codeDir=5"),
        s("train unknown field", "train.gpus", "train.gpus=4"),
        s("bootstrap.frameworkVersion shell", "bootstrap.frameworkVersion", "bootstrap.frameworkVersion=2.4.1; rm -rf /"),
        s("bootstrap.frameworkVersion subst", "bootstrap.frameworkVersion", "bootstrap.frameworkVersion=$(id)"),
        s("bootstrap.frameworkVersion empty", "bootstrap.frameworkVersion", "bootstrap.frameworkVersion="),
        s("bootstrap.cudaToolkit short", "bootstrap.cudaToolkit", "bootstrap.cudaToolkit=1-2"),
        s("bootstrap.cudaToolkit shell", "bootstrap.cudaToolkit", "bootstrap.cudaToolkit=12-4;id"),
        s("bootstrap.driverBranch shell", "bootstrap.driverBranch", "bootstrap.driverBranch=550`id`"),
        s("bootstrap.ascendPackagesUrl shell", "bootstrap.ascendPackagesUrl",
          "bootstrap.ascendPackagesUrl=http://x/$(id)"),
        s("bootstrap unknown field", "bootstrap.pythonVersion", "bootstrap.pythonVersion=3.11"),
        s("bootstrap.framework a list", "bootstrap.framework", 'bootstrap.framework=["pytorch"]'),
        s("tags nested", "tags", 'tags={"a": {"b": 1}}'),
        s("tags empty key", "tags.", 'tags={"": "x"}'),
        s("tags long key", "tags." + "k" * 100, json.dumps({"k" * 100: "v"}).join(["tags=", ""])),
        s("tags reserved prefix", "tags.gpu-training:x", 'tags={"gpu-training:x": "1"}'),
        s("tags long value", "tags.team", json.dumps({"team": "v" * 300}).join(["tags=", ""])),
        s("sshPublicKey a list", "sshPublicKey", 'sshPublicKey=["ssh-ed25519 AAAA"]'),
        s("image an object", "image", 'image={"id": "m-1"}'),
    ]
    # Keys and namespaces.
    out += [
        s("unknown key", "gpu-training:gpuz", "gpuz=T4"),
        s("namespace typo", "gpu-trainng:tier", "gpu-trainng:tier=entry"),
        s("empty key name", "gpu-training:", "gpu-training:=1"),
    ]
    # --set forms that cannot apply.
    out += [
        s("--set field of a non-object", "alicloud:region", "alicloud:region.x=1"),
        s("--set field of a broken object", "checkpoint", "checkpoint=not json", "checkpoint.bucket=x"),
        s("--set field of a list", "sshAllowCidrs", 'sshAllowCidrs=["1.2.3.4/32"]', "sshAllowCidrs.x=1"),
    ]
    # Whole stack files.
    out += [
        f("not UTF-8 (Latin-1)", GOOD_FILE.replace("entry", "entr\xe9e").encode("latin-1")),
        f("UTF-16", GOOD_FILE.encode("utf-16")),
        f("binary garbage", bytes(range(256)) * 4),
        f("empty file", b""),
        f("YAML syntax error", "config:\n  gpu-training:tier: [entry\n"),
        f("YAML tab indentation", "config:\n\tgpu-training:tier: entry\n"),
        f("top level a list", "- config\n- tier\n"),
        f("config a list", "config:\n  - gpu-training:tier\n"),
        f("config null", "config:\n"),
        f("python tag", "config: !!python/object:os.system\n  x: 1\n"),
        f("non-string key", GOOD_FILE + "  1: 2\n", key="1"),
        f("date value", GOOD_FILE + "  gpu-training:image: 2024-01-01\n", key="image"),
        f("date in an object", GOOD_FILE + "  gpu-training:tags:\n    since: 2024-01-01\n", key="tags"),
        f("binary value", GOOD_FILE + "  gpu-training:sshPublicKey: !!binary aGVsbG8=\n", key="sshPublicKey"),
        f("set value", GOOD_FILE + "  gpu-training:sshAllowCidrs: !!set {1.2.3.4/32: null}\n", key="sshAllowCidrs"),
        f("null value", GOOD_FILE + "  gpu-training:nodes: null\n", key="nodes"),
        f("duplicate keys", GOOD_FILE + "  gpu-training:tier: large\n", key="gpu-training:tier"),
        f("secure value on a number", GOOD_FILE + "  gpu-training:nodes:\n    secure: AAAA\n", key="nodes"),
        # 5 MB in one value (a comment that long is a valid file: Pulumi reads it, and so do we).
        f("huge value", GOOD_FILE + "  gpu-training:train:\n    command: " + "x" * 5_000_000 + "\n",
          key="train.command"),
        f("alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
          "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
          "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
          "config:\n  alicloud:region: cn-hangzhou\n  gpu-training:tags: {x: *f}\n", key="Pulumi.zz-bad-"),
    ]
    return out


@dataclass
class Outcome:
    case: Case
    code: int
    verdict: str  # handled | traceback | accepted | program failed | key not named | other
    detail: str
    seconds: float


def classify(case: Case, code: int, stdout: str, stderr: str, stack: str) -> tuple[str, str]:
    text = stdout + stderr
    want = case.key.replace("Pulumi.zz-bad-", f"Pulumi.{stack}") if case.file is not None else case.key
    last = (stderr.strip().splitlines() or [""])[-1][:160]
    if "Traceback (most recent call last)" in text:
        return "traceback", last
    if code == 0:
        return "accepted", "exit 0"
    if code == 1:
        return "program failed", last
    if code != 2:
        return "other", f"exit {code}: {last}"
    if want not in stderr:
        return "key not named", f"{want!r} not in: {stderr.strip()[:200]}"
    return "handled", ""


def run_case(index: int, case: Case, repo: Path, python: str, timeout: float) -> Outcome:
    stack = case.stack
    path = None
    if case.file is not None:
        stack = f"zz-bad-{index}"
        path = repo / "stacks" / f"Pulumi.{stack}.yaml"
        path.write_bytes(case.file)
    env = {**os.environ, "GPU_TRAINING_NOW": "2026-12-02T10:00:00Z", "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [python, str(repo / "scripts" / "preview.py"), stack, *case.args]
    for assignment in case.sets:
        argv += ["--set", assignment]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env, cwd=repo,
                              timeout=timeout)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        code, stdout, stderr = -1, "", f"timed out after {timeout:g} s"
    finally:
        if path is not None:
            path.unlink(missing_ok=True)
    verdict, detail = classify(case, code, stdout, stderr, stack)
    if code == -1:
        verdict = "other"
    return Outcome(case, code, verdict, detail, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose scripts/preview.py runs")
    parser.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--failures", action="store_true", help="list every case that was not handled")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per case")
    parser.add_argument("--json", type=Path, help="also write every outcome to this file")
    parser.add_argument("--quick", action="store_true", help="every 5th case only (make bench)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    chosen = [(i, c) for i, c in enumerate(cases()) if args.only in c.name]
    if args.quick:  # a fixed sample across every kind of case: the cases() list groups them by kind
        chosen = chosen[::5]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda ic: run_case(ic[0], ic[1], repo, args.python, args.timeout), chosen))
    verdicts = Counter(o.verdict for o in outcomes)
    handled = verdicts["handled"]
    print(f"repo: {repo}")
    print(f"bad configs tried: {len(outcomes)}, handled (exit 2, key named, no traceback): {handled},"
          f" not handled: {len(outcomes) - handled}  ({time.monotonic() - started:.0f} s)")
    for verdict, count in verdicts.most_common():
        if verdict != "handled":
            print(f"  {verdict}: {count}")
    if args.failures:
        for o in outcomes:
            if o.verdict != "handled":
                print(f"  [{o.verdict}] {o.case.name}: {o.detail}")
    if args.json:
        args.json.write_text(json.dumps([{"name": o.case.name, "key": o.case.key, "exit": o.code,
                                          "verdict": o.verdict, "detail": o.detail} for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
