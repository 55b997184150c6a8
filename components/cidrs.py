"""CIDR lists of the stack config (sshAllowCidrs, kubernetes.apiAllowCidrs): one entry parsed, and the
address families a list opens as a whole (0.0.0.0/1 + 128.0.0.0/1 is as world-open as 0.0.0.0/0); and the
stack's own subnets, cut from its VPC: one per zone its nodes may use, each sized for the nodes."""
from __future__ import annotations

import ipaddress
from typing import Any, Callable, Iterable, Optional, Union

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
WORLD = {4: "0.0.0.0/0", 6: "::/0"}


def network(value: Any) -> Optional[Network]:
    """The network a config entry names (host bits allowed, as the clouds accept them), or None."""
    try:
        return ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        return None


def parsed_entries(entries: Iterable[Any], key: str, example: str, problems: Any,
                   show: Callable[[Any], str] = repr) -> list[tuple[str, Any, Network]]:
    """(dotted key, entry, network) for each entry of the config list `key` that names a network; each entry
    that does not is recorded on `problems` (validation's collector) by its dotted key, with an example."""
    parsed = []
    for index, entry in enumerate(entries):
        entry_key = f"{key}[{index}]"
        found = network(entry)
        if found is None:
            problems.error(entry_key, f"{show(entry)} is not a CIDR (e.g. {example})")
        else:
            parsed.append((entry_key, entry, found))
    return parsed


def world_unions(cidrs: list[str]) -> list[tuple[str, str]]:
    """(world, the entries) for each address family that the entries cover together, none of them alone."""
    found = []
    for family, world in WORLD.items():
        networks = [ipaddress.ip_network(c) for c in cidrs if ipaddress.ip_network(c).version == family]
        if any(n.prefixlen == 0 for n in networks):
            continue  # said entry by entry
        if any(n.prefixlen == 0 for n in ipaddress.collapse_addresses(networks)):
            found.append((world, ", ".join(str(n) for n in networks)))
    return found


# ---------------------------------------------------------------- the stack's own subnets

STACK_VPC = "10.42.0.0/16"  # every provider's VPC (network.py VPC_CIDR); its subnets are cut from it

# Addresses a subnet must keep free besides the nodes: what else the plan puts in it, the largest being
# Alibaba CPFS's NFS protocol service, which "takes up to 32 addresses of the vSwitch" (docs/shared-storage.md,
# NAS API CreateProtocolService), then SFS Turbo's two addresses and virtual IP, a NAT or load balancer
# address; and what the cloud reserves in every subnet (network, gateway, broadcast and a few more: a
# handful on each cloud, the exact count not verified here). 48 is above all of those together.
SUBNET_SPARE_ADDRESSES = 48
SMALLEST_SUBNET_PREFIX = 24  # a /24 as before: a stack whose nodes fit keeps the subnets it has


def subnet_prefix(nodes: int) -> int:
    """The longest prefix (smallest subnet, never smaller than a /24) that holds `nodes` and the spare addresses."""
    prefix = SMALLEST_SUBNET_PREFIX
    while prefix > 0 and 2 ** (32 - prefix) - SUBNET_SPARE_ADDRESSES < nodes:
        prefix -= 1
    return prefix


def subnet(vpc: str, index: int, nodes: int) -> str:
    """The `index`-th subnet of the VPC sized for `nodes` (each subnet could hold every node: a spot pool
    may start them all in one zone). For up to 208 nodes this is the /24 10.42.<index>.0/24 of a 10.42.0.0/16."""
    block = ipaddress.ip_network(vpc)
    prefix = subnet_prefix(nodes)
    if prefix < block.prefixlen:
        raise ValueError(f"{nodes} nodes need a /{prefix} subnet, larger than the VPC {vpc}")
    size = 2 ** (32 - prefix)
    start = int(block.network_address) + index * size
    found = ipaddress.ip_network(f"{ipaddress.ip_address(start)}/{prefix}")
    if not found.subnet_of(block):
        raise ValueError(f"subnet {index} of /{prefix} for {nodes} nodes lies outside the VPC {vpc}")
    return str(found)


def stack_subnets(vpc: str, primary_zone: Any, spec: Any) -> list[tuple[int, Any, str]]:
    """(index, zone, CIDR) of each subnet a stack's network makes: one per zone its nodes may use, the primary
    zone's first, then each other zone a spot pool may start nodes in (spotZones), every one sized for all nodes."""
    zones = [primary_zone, *(spec.spot_zones if spec.spot else ())]
    return [(index, zone, subnet(vpc, index, spec.nodes)) for index, zone in enumerate(zones)]


def subnets_fit(vpc: str, count: int, nodes: int) -> bool:
    """Whether `count` subnets sized for `nodes` fit in the VPC."""
    try:
        subnet(vpc, count - 1, nodes)
    except ValueError:
        return False
    return True


def usable_addresses(cidr: str) -> int:
    """The nodes a subnet of ours may hold: its size less the spare addresses."""
    return ipaddress.ip_network(cidr).num_addresses - SUBNET_SPARE_ADDRESSES
