"""Huawei Cloud side of the node agent: metadata, role credentials, spot notice, peers, pool retire, release.

Self-contained: the bootstrap copies this one file next to the agent as node_agent/cloud_runtime.py,
so it imports only the standard library (and the cloud SDK inside the method that calls the API).
Contract: components/providers/contract.py NodeRuntime; docs/agent.md, "Delivery to the node".
"""


class Runtime:
    def __init__(self, cfg, metadata):
        self.cfg, self.meta = cfg, metadata()

    def _todo(self, what):
        raise NotImplementedError(f'huaweicloud: node_runtime.{what} is not written yet (docs/agent.md)')

    def instance_id(self):
        return self._todo('instance_id')

    def private_ip(self):
        return self._todo('private_ip')

    def credentials(self):
        return self._todo('credentials')

    def spot_notice(self):
        return self._todo('spot_notice')

    def release(self):
        return self._todo('release')

    def peers(self):
        return self._todo('peers')

    def retire_pool(self):
        return self._todo('retire_pool')
