"""Local stand-ins for AWS (tests): IMDSv2 (session token required: 401 without it) with the spot
instance-action notice. AWS nodes release themselves with a terminating shutdown, so there is no
API stand-in here; peers are listed through EC2 (moto's EC2 serves that in the tests).

Facts: REFERENCE.md "Instance metadata" (AWS row).
"""
from __future__ import annotations

import json
from datetime import timezone

from components.localcloud import MetadataStub

TOKEN_HEADER = "x-aws-ec2-metadata-token"
PREFIX = "/latest/meta-data/"


class Metadata(MetadataStub):
    def respond(self, method, path, headers):
        if method == "PUT" and path == "/latest/api/token":
            if not headers.get(TOKEN_HEADER + "-ttl-seconds"):
                return 400, b"missing ttl", {}
            return 200, self.issue_token().encode(), {}
        if headers.get(TOKEN_HEADER) not in self.tokens:
            return 401, b"token required", {}
        if not path.startswith(PREFIX):
            return 404, b"", {}
        key = path[len(PREFIX):]
        if key == "spot/instance-action":
            if self.fail_spot:
                return 500, b"injected spot fault", {}
            if self.notice is None:
                return 404, b"Not Found", {}
            when = self.notice.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 200, json.dumps({"action": "terminate", "time": when}).encode(), {}
        credentials = {"AccessKeyId": self.key_id, "SecretAccessKey": self.secret, "Token": self.token,
                       "Expiration": self.expiry().strftime("%Y-%m-%dT%H:%M:%SZ"), "Code": "Success"}
        values = {"instance-id": self.instance_id, "local-ipv4": self.ip,
                  f"iam/security-credentials/{self.role}": json.dumps(credentials)}
        if key in values:
            return 200, values[key].encode(), {}
        return 404, b"Not Found", {}
