"""A cloud's local stand-ins by the cloud's name, for the tests, `make rehearse` and the benches.

The cloud-neutral servers and base classes live in localcloud/ (the floor below components/, which
imports nothing from here); each cloud's subclasses live in its package's localcloud.py, found through
the registry (`providers.stand_ins`). This module puts the two together with the cloud's defaults:
an instance id in the cloud's format, and an object store that vouches for content the way the
cloud's profile declares.
"""
from __future__ import annotations

from components import providers
from localcloud import ApiStub, MetadataStub, S3Proxy


def Metadata(cloud: str, instance_id: str | None = None, ip: str = "10.0.0.5",
             role: str = "node-role") -> MetadataStub:
    """The metadata stand-in of `cloud`; a new id in the cloud's format unless one is given."""
    return providers.stand_ins(cloud).Metadata(instance_id, ip, role)


def CloudApi(cloud: str, instances=()) -> ApiStub:
    """The API stand-in of `cloud` that records signed requests."""
    return providers.stand_ins(cloud).CloudApi(instances)


def new_instance_id(cloud: str) -> str:
    """An instance id in `cloud`'s format, for peers and stand-ins."""
    return providers.stand_ins(cloud).Metadata.new_instance_id()


def ObjectStorage(cloud: str, target: str) -> S3Proxy:
    """The object storage of `cloud` in front of the S3 server at `target`: it vouches for content the way
    the cloud's profile declares (the CRC-64 header of OSS or COS; for OBS and BOS, Content-MD5 checked
    on arrival and ETags that are not MD5s), and injects faults like S3Proxy."""
    verification = providers.profile(cloud).object_storage.store("local").verification
    # A store verified by Content-MD5 alone is one whose ETags are no MD5 (OBS with SSE-KMS): the stand-in
    # answers other ETags, so nothing of ours can lean on them.
    return S3Proxy(target, crc64_header=verification.header if verification.method == "crc64ecma" else None,
                   md5_etags=verification.method != "content-md5")
