"""Cloud-init user-data for GPU training nodes: Jinja2 templates in, a #cloud-config (gzip+base64) out.

Public API (used by the Pulumi program and scripts/preview.py):
    render_user_data(node_config) -> RenderedUserData(cloud_config, encoded, encoded_size, files, agent_bundle)
When agent_bundle is set, the program uploads agent_bundle.data to the checkpoint bucket at agent_bundle.key.
See docs/bootstrap.md for what the bootstrap does on the node and how to debug it.
"""
from components.bootstrap.config import BootstrapConfigError
from components.bootstrap.agentfiles import AgentBundle
from components.bootstrap.render import (MAX_ENCODED_BYTES, RenderedUserData, UserDataTooLarge, decode,
                                         render_bootstrap, render_user_data)

__all__ = ["AgentBundle", "BootstrapConfigError", "MAX_ENCODED_BYTES", "RenderedUserData", "UserDataTooLarge", "decode",
           "render_bootstrap", "render_user_data"]
