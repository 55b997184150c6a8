"""Cloud-init user-data for GPU training nodes: Jinja2 templates in, a #cloud-config (gzip+base64) out.

Public API (used by the Pulumi program and scripts/preview.py):
    render_user_data(node_config) -> RenderedUserData(cloud_config, encoded, encoded_size, files)
See docs/bootstrap.md for what the bootstrap does on the node and how to debug it.
"""
from components.bootstrap.config import BootstrapConfigError
from components.bootstrap.render import (MAX_ENCODED_BYTES, RenderedUserData, UserDataTooLarge, decode,
                                         node_config_of, render_bootstrap, render_user_data,
                                         user_data_limit)

__all__ = ["BootstrapConfigError", "MAX_ENCODED_BYTES", "RenderedUserData", "UserDataTooLarge", "decode",
           "node_config_of", "render_bootstrap", "render_user_data", "user_data_limit"]
