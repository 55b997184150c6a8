"""The agent tests' stand-ins: the shared local cloud (components/localcloud, one module per cloud
in components/providers/<cloud>/localcloud.py), imported here so the tests say `from stubs import`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from components.localcloud import (BIN, CloudApi, LocalS3, Metadata, ObjectStorage, S3Proxy, Stub,  # noqa: E402,F401
                                   new_instance_id)
