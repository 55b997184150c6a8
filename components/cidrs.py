"""CIDR lists of the stack config (sshAllowCidrs, kubernetes.apiAllowCidrs): one entry parsed, and the
address families a list opens as a whole (0.0.0.0/1 + 128.0.0.0/1 is as world-open as 0.0.0.0/0)."""
from __future__ import annotations

import ipaddress
from typing import Any, Optional, Union

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
WORLD = {4: "0.0.0.0/0", 6: "::/0"}


def network(value: Any) -> Optional[Network]:
    """The network a config entry names (host bits allowed, as the clouds accept them), or None."""
    try:
        return ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        return None


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
