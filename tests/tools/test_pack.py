"""scripts/pack.py as a user runs it: a generated image folder in, shards and a manifest out.

Checks the format (every index entry points at the image's exact bytes; the .cls members hold the
labels), reproducibility (the same images give the same shard hashes), bad images (reported by path;
fail or skip, never silently packed), resume (finished shards kept), changed input refused, and the
upload to a stack's bucket on a local S3 server (shards then manifest, nothing sent twice).
"""
import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import boto3
import pytest

from localcloud import LocalS3
from node_agent import layout
from tools.datapack import example

ROOT = Path(__file__).resolve().parents[2]
FAKE_AWS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


def pack(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "pack.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    example.make_folder(folder, classes=3, per_class=20, size=32)
    (folder / "class-00" / "notes.txt").write_text("not an image")
    return folder


def test_every_index_entry_is_the_image_and_its_label(images, tmp_path):
    out = tmp_path / "packed"
    result = pack(images, out, "--samples-per-shard", 16, "--workers", 2, "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    manifest = json.loads((out / layout.DATA_MANIFEST).read_text())
    assert manifest["format"] == layout.DATA_FORMAT and manifest["classes"] == ["class-00", "class-01", "class-02"]
    assert summary["samples"] == manifest["samples"] == 60 and len(manifest["shards"]) == 4
    originals = {hashlib.sha256(p.read_bytes()).hexdigest(): p.parent.name
                 for p in images.rglob("*.jpg")}
    seen = set()
    for shard in manifest["shards"]:
        data = (out / shard["name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard["sha256"] and len(data) == shard["size"]
        with tarfile.open(out / shard["name"]) as tar:
            labels = {m.name.split(".")[0]: int(tar.extractfile(m).read()) for m in tar if m.name.endswith(".cls")}
        assert len(labels) == shard["samples"] == len(shard["index"])
        for offset, size, label in shard["index"]:
            digest = hashlib.sha256(data[offset:offset + size]).hexdigest()
            assert manifest["classes"][label] == originals[digest]
            seen.add(digest)
        assert sorted(labels.values()) == sorted(label for _, _, label in shard["index"])
    assert seen == set(originals)  # every image once, the text file in none


def test_packing_again_gives_the_same_shards(images, tmp_path):
    for out in ("a", "b"):
        assert pack(images, tmp_path / out, "--samples-per-shard", 25).returncode == 0
    hashes = [[s["sha256"] for s in json.loads((tmp_path / o / layout.DATA_MANIFEST).read_text())["shards"]]
              for o in ("a", "b")]
    assert hashes[0] == hashes[1]


def test_a_bad_image_fails_by_its_path_then_skip_lists_it(images, tmp_path):
    broken = tmp_path / "src"
    example.make_folder(broken, classes=2, per_class=10, size=32)
    good = (broken / "class-01" / "00003.jpg").read_bytes()
    (broken / "class-01" / "00003.jpg").write_bytes(good[: len(good) // 2])  # truncated: verify() would pass it
    (broken / "class-00" / "zz.png").write_bytes(b"not a png")
    out = tmp_path / "packed"
    failed = pack(broken, out, "--samples-per-shard", 8)
    assert failed.returncode == 1
    assert "class-01/00003.jpg" in failed.stderr and "class-00/zz.png" in failed.stderr
    assert not (out / layout.DATA_MANIFEST).exists()
    skipped = pack(broken, out, "--samples-per-shard", 8, "--on-bad", "skip", "--json")
    assert skipped.returncode == 0, skipped.stderr
    manifest = json.loads((out / layout.DATA_MANIFEST).read_text())
    assert sorted(s["path"] for s in manifest["skipped"]) == ["class-00/zz.png", "class-01/00003.jpg"]
    assert manifest["samples"] == 19  # 21 files, 2 left out


def test_a_rerun_keeps_finished_shards_and_refuses_changed_input(images, tmp_path):
    src = tmp_path / "src"
    example.make_folder(src, classes=2, per_class=12, size=32)
    out = tmp_path / "packed"
    assert pack(src, out, "--samples-per-shard", 6).returncode == 0
    (out / layout.DATA_MANIFEST).unlink()
    (out / "shard-000002.tar").unlink()  # as if the run had stopped before this shard
    again = json.loads(pack(src, out, "--samples-per-shard", 6, "--json").stdout)
    assert (again["written"], again["kept"]) == (1, 3)
    (src / "class-00" / "00000.jpg").write_bytes((src / "class-00" / "00001.jpg").read_bytes())
    changed = pack(src, out, "--samples-per-shard", 6)
    assert changed.returncode == 2 and "--restart" in changed.stderr and "Traceback" not in changed.stderr
    assert pack(src, out, "--samples-per-shard", 6, "--restart").returncode == 0


@pytest.mark.parametrize("args, word", [(("nowhere", "out"), "no such folder"), (("--workers", "0", ".", "o"), "--workers"),
                                        (("--shard-mb", "-1", ".", "o"), "--shard-mb")])
def test_bad_arguments_exit_2_naming_them(tmp_path, args, word):
    result = pack(*args)
    assert result.returncode == 2 and word in result.stderr and "Traceback" not in result.stderr


def test_upload_puts_shards_then_manifest_in_the_stack_prefix(images, tmp_path):
    from tools.stackfiles import stack_spec

    out = tmp_path / "packed"
    assert pack(images, out, "--samples-per-shard", 20).returncode == 0
    _, spec = stack_spec("entry-t4")
    server = LocalS3()
    try:
        s3 = boto3.client("s3", endpoint_url=server.url, **{k.lower(): v for k, v in FAKE_AWS.items()
                                                          if k != "AWS_DEFAULT_REGION"}, region_name="us-east-1")
        s3.create_bucket(Bucket=spec.checkpoint.bucket)
        # The stack's cloud's own variables (entry-t4 is Alibaba's), not AWS_*: tools/runlib/credentials.py.
        env = {**__import__("os").environ, "ALICLOUD_ACCESS_KEY": "test", "ALICLOUD_SECRET_KEY": "test"}
        first = pack(images, out, "--samples-per-shard", 20, "--upload", "entry-t4", "--endpoint", server.url,
                     "--json", env=env)
        assert first.returncode == 0, first.stderr
        base = layout.stack_root(spec.checkpoint.prefix, "entry-t4") + layout.DATA
        keys = {o["Key"] for o in s3.list_objects_v2(Bucket=spec.checkpoint.bucket, Prefix=base)["Contents"]}
        manifest = json.loads((out / layout.DATA_MANIFEST).read_text())
        assert keys == {base + layout.DATA_MANIFEST} | {base + s["name"] for s in manifest["shards"]}
        for shard in manifest["shards"]:
            body = s3.get_object(Bucket=spec.checkpoint.bucket, Key=base + shard["name"])["Body"].read()
            assert hashlib.sha256(body).hexdigest() == shard["sha256"]
        again = json.loads(pack(images, out, "--samples-per-shard", 20, "--upload", "entry-t4", "--endpoint",
                                server.url, "--json", env=env).stdout)
        assert again["upload"]["sent"] == 0 and again["upload"]["kept"] == len(manifest["shards"])
    finally:
        server.stop()
