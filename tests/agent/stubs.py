"""Local HTTP stand-ins for the cloud services the node agent talks to, all on 127.0.0.1.

- Metadata(cloud): the instance metadata service of Alibaba (hardened mode: session token
  required, 403 without it), Tencent (no token; spot termination time in UTC+8, not ISO) and AWS
  (IMDSv2). A spot notice can be switched on; faults can be injected (HTTP 500 for the next N
  requests, or on the spot path only); every request is logged.
- CloudApi(cloud): Alibaba ECS RPC and Tencent CVM API 3.0 endpoints that record each signed
  request (action, parameters, auth headers) and answer DeleteInstance / TerminateInstances /
  DescribeInstances.
- S3Proxy: sits in front of the moto S3 server and answers 503 for the next N requests, or for
  good, optionally only for paths containing a given string.
Facts on the real services: ../../../shared/REFERENCE.md (instance metadata, self-release).
"""
import http.client
import json
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit


class Stub:
    """A threaded HTTP server on 127.0.0.1:<free port>; subclasses implement answer()."""

    def __init__(self):
        stub = self

        class H(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def do(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n) if n else b''
                status, data, headers = stub.answer(self.command, self.path, dict(self.headers), body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if 'Content-Length' not in headers:
                    self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if self.command != 'HEAD':
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do

            def log_message(self, *a):
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Metadata(Stub):
    """Instance metadata of one node: cloud is 'alicloud', 'tencentcloud' or 'aws'."""

    def __init__(self, cloud, instance_id, ip='10.0.0.5', role='node-role'):
        self.cloud, self.instance_id, self.ip, self.role = cloud, instance_id, ip, role
        self.notice = None        # aware datetime of a spot termination, None = no notice
        self.fail = 0             # answer 500 to this many next requests
        self.fail_spot = False    # answer 500 on the spot path
        self.tokens, self.log = set(), []
        self.secret = f'secret-{uuid.uuid4().hex[:8]}'
        self.key_id = f'STS.{instance_id}'
        self.token = f'sts-token-{uuid.uuid4().hex[:8]}'
        super().__init__()

    def revoke_tokens(self):
        self.tokens.clear()

    def answer(self, method, path, headers, body):
        with self.lock:
            self.log.append((method, path, headers))
            if self.fail > 0:
                self.fail -= 1
                return 500, b'injected fault', {}
        h = {k.lower(): v for k, v in headers.items()}
        if self.cloud in ('alicloud', 'aws'):
            pre = 'x-aliyun-ecs-metadata-token' if self.cloud == 'alicloud' else 'x-aws-ec2-metadata-token'
            if method == 'PUT' and path == '/latest/api/token':
                if not h.get(pre + '-ttl-seconds'):
                    return 400, b'missing ttl', {}
                tok = uuid.uuid4().hex
                self.tokens.add(tok)
                return 200, tok.encode(), {}
            if h.get(pre) not in self.tokens:
                # Alibaba hardened mode: 403 without a valid token; IMDSv2: 401.
                return (403 if self.cloud == 'alicloud' else 401), b'token required', {}
        prefix = '/latest/meta-data/'
        if not path.startswith(prefix):
            return 404, b'', {}
        key = path[len(prefix):]
        spot = {'alicloud': 'instance/spot/termination-time', 'tencentcloud': 'spot/termination-time',
                'aws': 'spot/instance-action'}[self.cloud]
        if key == spot:
            if self.fail_spot:
                return 500, b'injected spot fault', {}
            if self.notice is None:
                return 404, b'Not Found', {}
            t = self.notice.astimezone(timezone.utc)
            if self.cloud == 'alicloud':
                return 200, t.strftime('%Y-%m-%dT%H:%M:%SZ').encode(), {}
            if self.cloud == 'tencentcloud':
                return 200, self.notice.astimezone(timezone(timedelta(hours=8))).strftime('%Y-%m-%d %H:%M:%S').encode(), {}
            return 200, json.dumps({'action': 'terminate', 'time': t.strftime('%Y-%m-%dT%H:%M:%SZ')}).encode(), {}
        later = datetime.now(timezone.utc) + timedelta(hours=6)
        creds = {
            'alicloud': ('ram/security-credentials/', {'AccessKeyId': self.key_id, 'AccessKeySecret': self.secret,
                         'SecurityToken': self.token, 'Expiration': later.strftime('%Y-%m-%dT%H:%M:%SZ'), 'Code': 'Success'}),
            'tencentcloud': ('cam/security-credentials/', {'TmpSecretId': self.key_id, 'TmpSecretKey': self.secret,
                             'Token': self.token, 'ExpiredTime': int(later.timestamp()), 'Code': 'Success'}),
            'aws': ('iam/security-credentials/', {'AccessKeyId': self.key_id, 'SecretAccessKey': self.secret,
                    'Token': self.token, 'Expiration': later.strftime('%Y-%m-%dT%H:%M:%SZ'), 'Code': 'Success'}),
        }[self.cloud]
        values = {'instance-id': self.instance_id, 'private-ipv4': self.ip, 'local-ipv4': self.ip,
                  creds[0] + self.role: json.dumps(creds[1])}
        if key in values:
            return 200, values[key].encode(), {}
        return 404, b'Not Found', {}


class CloudApi(Stub):
    """Records signed cloud API requests; `instances` answers DescribeInstances as (id, ip) pairs."""

    def __init__(self, cloud, instances=()):
        self.cloud, self.instances, self.requests, self.fail = cloud, list(instances), [], 0
        super().__init__()

    def calls(self, action):
        return [r for r in self.requests if r['action'] == action]

    def answer(self, method, path, headers, body):
        h = {k.lower(): v for k, v in headers.items()}
        if self.cloud == 'alicloud':
            # RPC style: parameters in the query string and/or a form body.
            params = dict(parse_qsl(urlsplit(path).query))
            params.update(parse_qsl(body.decode()))
            action = params.get('Action') or h.get('x-acs-action')
        else:
            params = json.loads(body or b'{}')
            action = h.get('x-tc-action')
        with self.lock:
            self.requests.append({'action': action, 'params': params, 'headers': h, 'method': method, 'time': time.time()})
            if self.fail > 0:
                self.fail -= 1
                return 503, b'{"message": "injected fault"}', {'Content-Type': 'application/json'}
        if self.cloud == 'alicloud':
            out = {'RequestId': uuid.uuid4().hex}
            if action == 'DescribeInstances':
                out.update(TotalCount=len(self.instances), PageNumber=1, PageSize=100, Instances={'Instance': [
                    {'InstanceId': i, 'Status': 'Running', 'VpcAttributes': {'PrivateIpAddress': {'IpAddress': [ip]}}}
                    for i, ip in self.instances]})
        else:
            out = {'Response': {'RequestId': uuid.uuid4().hex}}
            if action == 'DescribeInstances':
                out['Response'].update(TotalCount=len(self.instances), InstanceSet=[
                    {'InstanceId': i, 'PrivateIpAddresses': [ip]} for i, ip in self.instances])
        return 200, json.dumps(out).encode(), {'Content-Type': 'application/json'}


class S3Proxy(Stub):
    """Forwards to moto; `fail` next requests (or all while `down`) get 503 where `match` is in the path."""

    def __init__(self, target):
        self.target, self.fail, self.down, self.match, self.failed = target, 0, False, '', 0
        super().__init__()

    def answer(self, method, path, headers, body):
        with self.lock:
            hit = self.match in path and (self.down or self.fail > 0)
            if hit:
                self.fail -= not self.down
                self.failed += 1
        if hit:
            return 503, (b'<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>injected</Message>'
                         b'</Error>'), {'Content-Type': 'application/xml'}
        u = urlsplit(self.target)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request(method, path, body=body, headers={k: v for k, v in headers.items() if k.lower() != 'expect'})
        r = c.getresponse()
        data = r.read()
        drop = ('transfer-encoding', 'connection') + (() if method == 'HEAD' else ('content-length',))
        keep = {k.title() if k.lower() == 'content-length' else k: v for k, v in r.getheaders() if k.lower() not in drop}
        c.close()
        return r.status, data, keep
