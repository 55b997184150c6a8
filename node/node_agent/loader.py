"""The node's first program: fetch the boot payload from the stack's bucket, verify it, write it, run the bootstrap.

    python3 <paths.agent>/node_agent/loader.py /etc/gpu-training/loader.json [--payload-file FILE] [--install-only]

cloud-init runs it from user-data (docs/bootstrap.md, "The loader"). User-data holds only this file, s3.py,
the cloud runtime and loader.json (bucket, endpoint, the payload's key and sha256), so a stack's own values
(command, env, setup) never count against the clouds' user-data limits. The payload is one JSON document
{"version": 1, "files": [{"path", "mode", "content"}], "run": path}: node.json, the bootstrap, the agent's
unit and the rest of the boot set. Nothing is written unless its sha256 is the one in loader.json; a
mismatch or a payload still missing after the retries stops the boot with one line on stderr and in the
bootstrap log, and no bootstrap (so no agent, no training) runs; the node then writes a FAILED marker
(report_stopped), so the run's watch and `gpu-training status` see it instead of a node billing in silence.

Standard library only: it runs before the bootstrap has made the venv that holds boto3, and python3 is on
every image cloud-init runs on (cloud-init is written in it). The request is an S3 GET signed with the node
role's temporary credentials from the metadata service (the cloud runtime's credentials(), as the agent
uses them), never a key in user-data: Signature Version 4 (AWS S3 API reference, "Authenticating Requests:
Using the Authorization Header (AWS Signature Version 4)") or, where the store's checkpoint.signatureVersion
is "s3", Version 2 (AWS S3 developer guide, "Signing and authenticating REST requests"), the same headers
botocore's S3SigV4Auth and HmacV1Auth produce (tests/bootstrap/test_loader.py compares them).

--payload-file reads the payload from a local file instead (re-running a node by hand, the sandbox's
no-network mode); it is verified the same way. --install-only writes the verified payload and stops before
the bootstrap (scripts/rehearse.py: a rehearsed node has no machine to set up, but boots through the loader).
--report-stopped WHY only writes that FAILED marker: the bootstrap calls it when the agent cannot start.
GPU_TRAINING_ROOT prefixes every path written (the sandbox's and the rehearsal's node root).
Exit: 1 payload missing or not matching after the retries, 2 bad config; else the bootstrap's own status
(0 with --install-only; with --report-stopped 0 when the marker was written, else 1).
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from email.utils import format_datetime

# Object storage is not a proxy's business; the node's environment may carry one for pip.
_open = urllib.request.build_opener(urllib.request.ProxyHandler({})).open


def _hmac(key, text, algo=hashlib.sha256):
    return hmac.new(key, text.encode(), algo).digest()


def signed_request(store, key, creds, now, region, method='GET', body=b''):
    """(url, headers) of a GET (or a PUT of `body`, JSON) of `key` in store = checkpoint.{bucket, endpoint,
    addressingStyle, signatureVersion}, signed with creds = {access_key, secret_key, token}."""
    u = urllib.parse.urlsplit(store['endpoint'])
    bucket, quoted = store['bucket'], urllib.parse.quote(key, safe='/~')
    auth_path = f'/{bucket}/{quoted}'
    host, path = (u.netloc, auth_path) if store.get('addressingStyle') == 'path' else (f'{bucket}.{u.netloc}',
                                                                                       '/' + quoted)
    headers = {'x-amz-security-token': creds['token']} if creds.get('token') else {}
    if method == 'PUT':  # Content-MD5: every S3-compatible store checks it (OBS and BOS want it on a PUT)
        headers.update({'content-md5': base64.b64encode(hashlib.md5(body).digest()).decode(),
                        'content-type': 'application/json'})
    if store.get('signatureVersion') == 's3':
        headers['date'] = format_datetime(now, usegmt=True)
        amz = ''.join(f'{h}:{v}\n' for h, v in sorted(headers.items()) if h.startswith('x-amz-'))
        text = (f"{method}\n{headers.get('content-md5', '')}\n{headers.get('content-type', '')}\n{headers['date']}\n"
                f"{amz}{auth_path}")
        sig = base64.b64encode(_hmac(creds['secret_key'].encode(), text, hashlib.sha1)).decode()
        headers['authorization'] = f"AWS {creds['access_key']}:{sig}"
    else:
        stamp, digest = now.strftime('%Y%m%dT%H%M%SZ'), hashlib.sha256(body).hexdigest()
        scope = f'{stamp[:8]}/{region}/s3/aws4_request'
        headers.update({'host': host, 'x-amz-content-sha256': digest, 'x-amz-date': stamp})
        names = sorted(headers)
        canonical = '\n'.join([method, path, '', *(f'{h}:{headers[h]}' for h in names), '', ';'.join(names),
                               digest])
        text = '\n'.join(['AWS4-HMAC-SHA256', stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = ('AWS4' + creds['secret_key']).encode()
        for part in scope.split('/'):
            k = _hmac(k, part)
        headers['authorization'] = (f"AWS4-HMAC-SHA256 Credential={creds['access_key']}/{scope}, "
                                    f"SignedHeaders={';'.join(names)}, Signature={hmac.new(k, text.encode(), hashlib.sha256).hexdigest()}")
    return f'{u.scheme}://{host}{path}', headers


def _runtime(cfg):
    from node_agent.s3 import runtime  # the metadata reader and the cloud's runtime, as the agent has them
    return runtime(cfg)


def request(cfg, key, creds, method='GET', body=b''):
    """One signed request for `key` in the stack's bucket; the answer's bytes (urllib raises on >= 400)."""
    store = cfg['checkpoint']
    url, headers = signed_request(store, key, creds, datetime.now(timezone.utc), store.get('region') or cfg['region'],
                                  method, body)
    with _open(urllib.request.Request(url, data=body if method == 'PUT' else None, headers=headers,
                                      method=method), timeout=30) as r:
        return r.read()


def download(cfg):
    """The payload's bytes from the bucket, with the node role's credentials (one try)."""
    return request(cfg, cfg['payload']['key'], _runtime(cfg).credentials())


def report_stopped(cfg, why):
    """Say in the bucket that this node will not train: a FAILED marker, so `gpu-training status` shows why and
    `gpu-training up`'s watch destroys the stack instead of leaving the node billing until maxHours (Huawei's spot
    nodes have no cloud-side release at all). Written only where this node has no marker yet: one it wrote before
    a reboot may say RUNNING with work on its disk, and a FAILED over it would let the watch destroy that work.
    Best effort: the bucket may be what failed. True when the marker was written."""
    folder = cfg.get('markers')
    if not folder:
        return False
    try:
        rt = _runtime(cfg)
        node, creds = rt.instance_id(), rt.credentials()
        key = f'{folder}{node}.json'
        try:
            request(cfg, key, creds)
            log(cfg, f'{key} exists (written before this boot): left as it is')
            return False
        except urllib.error.HTTPError as e:
            # 403 too: a store may answer a missing key so to a role without the list right ("If you don't have
            # the s3:ListBucket permission, Amazon S3 returns ... 403", AWS S3 API reference, GetObject); the
            # role reads every object under the stack (checkpoint restores), so a marker there would answer 200.
            if e.code not in (403, 404):
                raise
        now = datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
        body = json.dumps({
            'state': 'FAILED', 'node': node, 'stack': cfg.get('stack'), 'region': cfg.get('region'),
            'stage': 'boot', 'released': False, 'durationSeconds': 0, 'gpuHours': 0, 'startedAt': None,
            'endedAt': now, 'updatedAt': now,
            'reason': f'boot stopped: {why}; nothing trained, and no agent runs to release this node: '
                      '`gpu-training down` (or `pulumi destroy`) releases it'}, indent=1).encode()
        request(cfg, key, creds, 'PUT', body)
        log(cfg, f'FAILED marker written: {key}')
        return True
    except Exception as e:  # noqa: BLE001 - the boot has already stopped; this line is all that is left to say
        log(cfg, f'no FAILED marker written ({e!r}): `gpu-training status` cannot see this node')
        return False


def log(cfg, line):
    """One line on stderr (cloud-init-output.log) and in the bootstrap's log."""
    text = f"{datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')} gpu-training loader: {line}"
    print(text, file=sys.stderr, flush=True)
    try:
        folder = os.environ.get('GPU_TRAINING_ROOT', '') + cfg['paths']['logs']
        os.makedirs(folder, exist_ok=True)
        with open(folder + '/bootstrap.log', 'a') as f:
            f.write(text + '\n')
    except OSError:
        pass


def install(payload, root):
    """Write each file of a verified payload under root, replacing only what differs (a re-run changes nothing)."""
    doc = json.loads(payload)
    for f in doc['files']:
        path, body, mode = f['path'], f['content'].encode(), int(f['mode'], 8)
        if not path.startswith('/') or '..' in path.split('/'):
            raise ValueError(f'payload path {path!r} is not absolute')
        dst = root + path
        try:
            with open(dst, 'rb') as old:
                if old.read() == body and os.stat(dst).st_mode & 0o7777 == mode:
                    continue
        except OSError:
            pass
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst + '.tmp', 'wb') as out:
            out.write(body)
        os.chmod(dst + '.tmp', mode)
        os.replace(dst + '.tmp', dst)
    return root + doc['run']


def main(argv=None):
    ap = argparse.ArgumentParser(prog='loader', description='fetch, verify and run the boot payload')
    ap.add_argument('config')
    ap.add_argument('--payload-file')
    ap.add_argument('--install-only', action='store_true')
    ap.add_argument('--report-stopped', metavar='WHY',
                    help='only write the FAILED marker of a boot that stopped (the bootstrap, when the agent '
                         'cannot start)')
    args = ap.parse_args(argv)
    try:
        with open(args.config) as f:
            cfg = json.load(f)
        want, key = cfg['payload']['sha256'], cfg['payload']['key']
        assert len(want) == 64 and key and cfg['checkpoint']['bucket'] and cfg['checkpoint']['endpoint']
    except Exception as e:  # noqa: BLE001 - any shape problem is a bad config, reported in one line
        print(f'gpu-training loader: {args.config}: payload (key, sha256) and checkpoint (bucket, endpoint) are'
              f' required: {e!r}', file=sys.stderr)
        return 2
    if args.report_stopped:  # with --payload-file (no network: the sandbox, a run by hand) only the log says it
        return 0 if not args.payload_file and report_stopped(cfg, args.report_stopped) else 1
    a = cfg.get('agent') or {}
    tries, base = a.get('uploadAttempts', 8), a.get('retryBaseSeconds', 1)
    for attempt in range(1, tries + 1):
        try:
            if args.payload_file:
                with open(args.payload_file, 'rb') as f:
                    body = f.read()
            else:
                body = download(cfg)
            got = hashlib.sha256(body).hexdigest()
            if got != want:
                raise ValueError(f'sha256 {got} ({len(body)} B) is not the {want} loader.json names')
            run = install(body, os.environ.get('GPU_TRAINING_ROOT', ''))
            log(cfg, f'payload {key} verified (sha256 {want}); ' + ('installed' if args.install_only
                                                                    else f'running {run}'))
            if args.install_only:
                return 0
            sys.stdout.flush()
            os.execvp('bash', ['bash', run])
        except Exception as e:  # noqa: BLE001 - metadata, credentials, storage, digest: retried, then stop
            err = e
            log(cfg, f'try {attempt} of {tries}: {key}: {e}')
            time.sleep(min(base * 2 ** attempt, 30) * (attempt < tries))
    log(cfg, f'BOOT STOPPED: no verified boot payload ({err}); no bootstrap, no agent, no training on this node')
    if not args.payload_file:
        report_stopped(cfg, f'no verified boot payload ({err})')
    return 1


if __name__ == '__main__':
    # Run as a file (cloud-init's runcmd): the package is the folder above this one.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
