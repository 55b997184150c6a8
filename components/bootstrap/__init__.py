"""Cloud-init user-data for GPU training nodes: Jinja2 templates in, a #cloud-config (gzip+base64) out.

Public API (used by the Pulumi program and scripts/preview.py):
    render_user_data(node_config) -> RenderedUserData(cloud_config, encoded, encoded_size, files, payload)
See docs/bootstrap.md for what the bootstrap does on the node and how to debug it.
"""
from components.bootstrap.config import BootstrapConfigError
from components.bootstrap.render import (MAX_ENCODED_BYTES, RenderedUserData, UserDataTooLarge, decode,
                                         loader_config_of, node_config_in_plan, node_config_of, payload_files,
                                         render_bootstrap, render_user_data, user_data_limit, write_files)

__all__ = ["BootstrapConfigError", "MAX_ENCODED_BYTES", "RenderedUserData", "UserDataTooLarge", "decode",
           "loader_config_of", "node_config_in_plan", "node_config_of", "payload_files", "render_bootstrap",
           "render_user_data", "user_data_limit", "write_files"]
