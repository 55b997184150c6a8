"""What the offline preview's mock engine answers for Baidu AI Cloud (tools/mockrun.py).

The Baidu parts call no data source (the zone is the stack's, the image is looked up with the BCC API
only at deploy time: compute.IMAGE_PLACEHOLDER). The dynamic resources' computed outputs are
placeholders that say where the real value comes from.
"""
from components.providers.baiducloud.profile import TYPE_PREFIX

CALL_ANSWERS: dict = {}

COMPUTED_OUTPUTS = {
    TYPE_PREFIX + "BccInstance": {"internalIp": "10.42.0.{index}", "publicIp": "<public ip of {name}>",
                                  "status": "Running"},
}
