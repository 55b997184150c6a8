"""Local stand-ins for AWS (tests): IMDSv2 (session token required: 401 without it) with the spot
instance-action notice. AWS nodes release themselves with a terminating shutdown, so there is no
API stand-in here; peers are listed through EC2 (moto's EC2 serves that in the tests).

Facts: REFERENCE.md "Instance metadata" (AWS row).
"""
from __future__ import annotations

import json
import uuid
from datetime import timezone

from localcloud import MetadataStub

UTC_ISO = "%Y-%m-%dT%H:%M:%SZ"


class Metadata(MetadataStub):
    token_header = "x-aws-ec2-metadata-token"  # IMDSv2: 401 without a session token
    denied_status = 401
    spot_path = "spot/instance-action"
    region, zone = "us-east-1", "us-east-1a"

    @staticmethod
    def new_instance_id():
        return "i-" + uuid.uuid4().hex[:17]

    def spot_body(self, notice):
        when = notice.astimezone(timezone.utc).strftime(UTC_ISO)
        return json.dumps({"action": "terminate", "time": when}).encode()

    def values(self):
        credentials = {"AccessKeyId": self.key_id, "SecretAccessKey": self.secret, "Token": self.token,
                       "Expiration": self.expiry().strftime(UTC_ISO), "Code": "Success"}
        return {"instance-id": self.instance_id, "local-ipv4": self.ip, "placement/region": self.region,
                "placement/availability-zone": self.zone,
                f"iam/security-credentials/{self.role}": json.dumps(credentials)}
