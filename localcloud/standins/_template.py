"""Local stand-ins for __Cloud__ (tests, `make rehearse`): its metadata service and its instance API.

Contract: localcloud/__init__.py (MetadataStub, ApiStub); the stand-ins answer as the cloud's docs
say, with the source named here. Registered by the cloud's name in localcloud/standins/__init__.py (CLOUDS);
scripts/new_provider.py writes this file from localcloud/standins/_template.py.
"""
from __future__ import annotations

import uuid

from localcloud import ApiStub, MetadataStub


class Metadata(MetadataStub):
    spot_path = "TODO/spot-termination-time"  # TODO(__cloud__): the metadata path of the spot notice
    region, zone = "TODO-region", "TODO-zone"

    @staticmethod
    def new_instance_id():
        return "i-" + uuid.uuid4().hex[:12]  # TODO(__cloud__): the cloud's instance id format

    def values(self):
        return {"instance-id": self.instance_id, "private-ipv4": self.ip}


class CloudApi(ApiStub):
    release_actions: tuple[str, ...] = ()  # TODO(__cloud__): the API action(s) node_runtime.release calls

    def parse(self, method, path, headers, body):
        raise NotImplementedError("__cloud__: CloudApi.parse in localcloud/standins/__cloud__.py is not written yet")

    def respond(self, action, params):
        raise NotImplementedError("__cloud__: CloudApi.respond in localcloud/standins/__cloud__.py is not written yet")
