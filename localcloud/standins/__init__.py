"""Each cloud's local stand-ins, registered by the cloud's name: for the tests, `make rehearse` and the benches.

The stand-ins are test servers for a cloud's APIs on 127.0.0.1: its metadata service and instance API
(`Metadata`, `CloudApi` and any others such as `Sts`, in localcloud/standins/<cloud>.py), and the job API of
each of its platforms (localcloud/standins/<cloud>_<platform>.py over the neutral server in jobserver.py). They
are no part of the program: components/ imports nothing from localcloud/ (tests/test_import_graph.py), and
this package stands above components/, whose profiles and API references it reads. The neutral servers and
base classes below it (localcloud/__init__.py, signatures.py) import nothing from components/.

Adding a cloud adds one line to CLOUDS (scripts/new_provider.py writes it, with the cloud's stand-ins from
_template.py); a platform adds one line to PLATFORMS. Beside the lookups, this module builds the stand-ins
with the cloud's defaults: an instance id in the cloud's format, and an object store that vouches for
content the way the cloud's profile declares.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Optional

from components import providers
from localcloud import ApiStub, MetadataStub, S3Proxy

CLOUDS: dict[str, str] = {
    "alicloud": "localcloud.standins.alicloud",
    "tencentcloud": "localcloud.standins.tencentcloud",
    "huaweicloud": "localcloud.standins.huaweicloud",
    "baiducloud": "localcloud.standins.baiducloud",
}
# Each platform's job API stand-in, by the platform's kind (its platform.yaml `kind`), with the cloud it
# belongs to: a module with `job_api(bucket_dir, workdir, keys=None, tokens=None)`.
PLATFORMS: dict[str, tuple[str, str]] = {
    "pai-dlc": ("alicloud", "localcloud.standins.alicloud_dlc"),
    "modelarts": ("huaweicloud", "localcloud.standins.huaweicloud_modelarts"),
}


def of(cloud: str) -> ModuleType:
    """The stand-ins of `cloud` (`Metadata`, `CloudApi`, and any others such as `Sts`)."""
    if cloud not in CLOUDS:
        raise KeyError(f"no stand-ins registered for cloud {cloud!r} (localcloud/standins/__init__.py CLOUDS:"
                       f" {', '.join(sorted(CLOUDS))})")
    return importlib.import_module(CLOUDS[cloud])


def job_api(offer, bucket_dir: Path, workdir: Path, keys: Optional[dict] = None, tokens: Optional[dict] = None):
    """The job API stand-in of the platform `offer` (a PlatformOffer) with the stack's prefix at `bucket_dir`;
    `keys` ({access key id: secret}) turns on the gateway's signature check, `tokens` ({key: STS token}) the
    temporary keys' (each platform's module says how its gateway answers)."""
    cloud, module = PLATFORMS.get(offer.kind, (None, None))
    if module is None or cloud != offer.provider:
        raise KeyError(f"no job API stand-in registered for the {offer.provider} platform {offer.kind!r}"
                       " (localcloud/standins/__init__.py PLATFORMS)")
    return importlib.import_module(module).job_api(bucket_dir, workdir, keys=keys, tokens=tokens)


def Metadata(cloud: str, instance_id: str | None = None, ip: str = "10.0.0.5",
             role: str = "node-role") -> MetadataStub:
    """The metadata stand-in of `cloud`; a new id in the cloud's format unless one is given."""
    return of(cloud).Metadata(instance_id, ip, role)


def CloudApi(cloud: str, instances=()) -> ApiStub:
    """The API stand-in of `cloud` that records signed requests."""
    return of(cloud).CloudApi(instances)


def new_instance_id(cloud: str) -> str:
    """An instance id in `cloud`'s format, for peers and stand-ins."""
    return of(cloud).Metadata.new_instance_id()


def ObjectStorage(cloud: str, target: str) -> S3Proxy:
    """The object storage of `cloud` in front of the S3 server at `target`: it vouches for content the way
    the cloud's profile declares (the CRC-64 header of OSS or COS; for OBS and BOS, Content-MD5 checked
    on arrival and ETags that are not MD5s), and injects faults like S3Proxy."""
    verification = providers.profile(cloud).object_storage.store("local").verification
    # A store verified by Content-MD5 alone is one whose ETags are no MD5 (OBS with SSE-KMS): the stand-in
    # answers other ETags, so nothing of ours can lean on them.
    return S3Proxy(target, crc64_header=verification.header if verification.method == "crc64ecma" else None,
                   md5_etags=verification.method != "content-md5")
