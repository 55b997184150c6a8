"""Local stand-ins for Tencent Cloud (tests, `make rehearse`): the CVM metadata service (no token;
the spot termination time in UTC+8, not ISO) and the CVM API 3.0, recording signed requests.

Facts: REFERENCE.md "Instance metadata" and "Self-release" (Tencent rows).
"""
from __future__ import annotations

import json
import uuid
from datetime import timedelta, timezone

from components.localcloud import ApiStub, MetadataStub

PREFIX = "/latest/meta-data/"
CHINA = timezone(timedelta(hours=8))


class Metadata(MetadataStub):
    def respond(self, method, path, headers):
        if not path.startswith(PREFIX):
            return 404, b"", {}
        key = path[len(PREFIX):]
        if key == "spot/termination-time":
            if self.fail_spot:
                return 500, b"injected spot fault", {}
            if self.notice is None:
                return 404, b"Not Found", {}
            return 200, self.notice.astimezone(CHINA).strftime("%Y-%m-%d %H:%M:%S").encode(), {}
        credentials = {"TmpSecretId": self.key_id, "TmpSecretKey": self.secret, "Token": self.token,
                       "ExpiredTime": int(self.expiry().timestamp()), "Code": "Success"}
        values = {"instance-id": self.instance_id, "local-ipv4": self.ip, "private-ipv4": self.ip,
                  f"cam/security-credentials/{self.role}": json.dumps(credentials)}
        if key in values:
            return 200, values[key].encode(), {}
        return 404, b"Not Found", {}


class CloudApi(ApiStub):
    def parse(self, method, path, headers, body):
        return headers.get("x-tc-action"), json.loads(body or b"{}")

    def respond(self, action, params):
        out = {"Response": {"RequestId": uuid.uuid4().hex}}
        if action == "DescribeInstances":
            out["Response"].update(TotalCount=len(self.instances), InstanceSet=[
                {"InstanceId": i, "PrivateIpAddresses": [ip]} for i, ip in self.instances])
        return out
