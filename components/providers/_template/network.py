"""__Cloud__ network: VPC, subnets, a security group without world-open ingress, the nodes' egress.

Contract: components/providers/contract.py NetworkPart; docs/providers.md and docs/egress.md.
The resources are placeholders (components/providers/placeholder.py) in the shape every cloud so far has
needed: replace each with its class in the cloud's Pulumi SDK. The part's policy (which subnets, in what
order, what create() returns) is the neutral NetworkComponent's (components/providers/network_part.py).
"""
from __future__ import annotations

import pulumi

from components.providers.part_records import NetworkParts, PartContext
from components.providers.network_part import VPC_CIDR, NetworkComponent
from components.providers.placeholder import Placeholder


class Network(NetworkComponent):
    def primary_zone(self, spec):
        # TODO(__cloud__): a zone that sells the instance type now (alicloud/network.py primary_zone, zones.pick_zone).
        return pulumi.Output.from_input(spec.zone or f"<a zone of {spec.region} that sells {spec.instance.name}>")

    def make_vpc(self, spec, name: str) -> Placeholder:
        return Placeholder("__cloud__:network:Vpc", f"{name}-vpc",
                           {"name": f"gpu-training-{spec.stack}", "cidrBlock": VPC_CIDR, "tags": self.tags}, self.child)

    def make_subnet(self, spec, name: str, index: int, zone, cidr: str) -> Placeholder:
        return Placeholder("__cloud__:network:Subnet", f"{name}-subnet-{index}",
                           {"vpcId": self.vpc.id, "cidrBlock": cidr, "zone": zone, "tags": self.tags}, self.child)

    def make_security_group(self, spec, name: str) -> Placeholder:
        # Members talk to each other (NCCL, the rendezvous, the shared FS); SSH only from sshAllowCidrs.
        # TODO(__cloud__): the nodes' outbound path (NAT or endpoints) the profile's egress.routes() declare
        # (docs/egress.md).
        return Placeholder(
            "__cloud__:network:SecurityGroup", f"{name}-sg",
            {"vpcId": self.vpc.id, "name": f"gpu-training-{spec.stack}", "tags": self.tags,
             "ingress": [{"from": "members", "protocol": "all"},
                         *({"cidr": cidr, "protocol": "tcp", "port": 22} for cidr in spec.ssh_allow_cidrs)]},
            self.child)


def create(spec, ctx: PartContext) -> NetworkParts:
    return Network("__cloud__", spec, ctx).parts()
