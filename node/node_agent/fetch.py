"""Download the rest of the node agent from object storage and verify it: the bootstrap's last step.

    python -m node_agent.fetch --config /etc/gpu-training/node.json

Part of the boot set (docs/node-config.md, "Agent delivery"): needs only the standard library,
boto3 and the cloud runtime. node.json's `artifacts.agent` = {prefix, files: [relative paths],
sha256: digest(...)}; each <bucket>/<prefix><relative path> is fetched with the node role's
credentials into <paths.agent>/<relative path>. One digest over every file's path and sha256 (not a
sha256 per file) keeps user-data small: each file listed with its own hash cost ~70 encoded bytes,
and Tencent's 16 KB limit is near. Nothing is written until the whole set matched the digest, and
each file is renamed into place from a temp file, so a bad download never leaves a half-written
agent. Exit 0 when the set verifies, 1 when a file is missing or the set does not match after the
retries (the agent must not start), 2 bad config.
"""
import argparse
import hashlib
import json
import os
import sys
import time

from .s3 import client, runtime


def digest(hashes):
    """One sha256 over {relative path: sha256 of its bytes}: node.json's artifacts.agent.sha256."""
    h = hashlib.sha256()
    for rel in sorted(hashes):
        h.update(f'{rel}\0{hashes[rel]}\n'.encode())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(prog='node_agent.fetch', description='fetch and verify the node agent')
    ap.add_argument('--config', default='/etc/gpu-training/node.json')
    path = ap.parse_args().config
    try:
        with open(path) as f:
            cfg = json.load(f)
        art, dest = cfg['artifacts']['agent'], cfg['paths']['agent']
        files = [r for r in art['files'] if isinstance(r, str) and not (os.path.isabs(r) or '..' in r.split('/'))]
        assert files == list(art['files']) and art['prefix'] and len(art['sha256']) == 64 and cfg['checkpoint']['bucket']
    except Exception as e:  # noqa: BLE001 - any shape problem is a bad config, reported in one line
        print(f'node_agent.fetch: {path}: artifacts.agent (prefix, files, sha256), paths.agent and '
              f'checkpoint.bucket are required, with relative file paths: {e!r}', file=sys.stderr)
        return 2
    rt = runtime(cfg)
    role, a = (cfg.get('identity') or {}).get('roleName'), cfg.get('agent') or {}
    tries, base = a.get('uploadAttempts', 8), a.get('retryBaseSeconds', 1)
    for attempt in range(1, tries + 1):
        try:
            s3 = client(cfg, role and rt.credentials)
            bucket = cfg['checkpoint']['bucket']
            got = {r: s3.get_object(Bucket=bucket, Key=art['prefix'] + r)['Body'].read() for r in files}
            hashes = {r: hashlib.sha256(body).hexdigest() for r, body in got.items()}
            if digest(hashes) != art['sha256']:
                # Each file's own hash, to compare with the checkout's (components.artifacts): which one differs.
                fetched = ', '.join(f'{r} ({len(got[r])} B, sha256 {hashes[r]})' for r in sorted(got))
                raise ValueError(f"sha256 does not match node.json's artifacts.agent.sha256; fetched: {fetched}")
            # Written only once every file verified: never a mix of old and new modules.
            for rel, body in got.items():
                dst = os.path.join(dest, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst + '.tmp', 'wb') as f:
                    f.write(body)
                os.replace(dst + '.tmp', dst)
            print(f'node_agent.fetch: {len(files)} files verified into {dest}')
            return 0
        except Exception as e:  # noqa: BLE001 - metadata, credentials or storage: all retried, then exit 1
            print(f'node_agent.fetch: try {attempt} of {tries} failed: {e}', file=sys.stderr)
            time.sleep(min(base * 2 ** attempt, 30) * (attempt < tries))
    return 1


if __name__ == '__main__':
    sys.exit(main())
