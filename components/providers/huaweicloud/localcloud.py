"""Local stand-ins for Huawei Cloud (tests, `make rehearse`): its metadata service and its instance API.

Contract: localcloud/__init__.py (MetadataStub, ApiStub); the stand-ins answer as the cloud's docs
say, with the source named here.
"""
from __future__ import annotations

import uuid

from localcloud import ApiStub, MetadataStub


class Metadata(MetadataStub):
    spot_path = "TODO/spot-termination-time"  # TODO(huaweicloud): the metadata path of the spot notice
    region, zone = "TODO-region", "TODO-zone"

    @staticmethod
    def new_instance_id():
        return "i-" + uuid.uuid4().hex[:12]  # TODO(huaweicloud): the cloud's instance id format

    def values(self):
        return {"instance-id": self.instance_id, "private-ipv4": self.ip}


class CloudApi(ApiStub):
    release_actions: tuple[str, ...] = ()  # TODO(huaweicloud): the API action(s) node_runtime.release calls

    def parse(self, method, path, headers, body):
        raise NotImplementedError("huaweicloud: localcloud.CloudApi.parse is not written yet")

    def respond(self, action, params):
        raise NotImplementedError("huaweicloud: localcloud.CloudApi.respond is not written yet")
