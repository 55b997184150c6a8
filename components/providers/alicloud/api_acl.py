"""Bind the stack's whitelist to the ACK API server's listener: the API server admits only apiAllowCidrs.

ACK creates the API server's Classic Load Balancer itself (cs.ManagedKubernetes `slb_id`), so its
port-6443 listener is not a resource of this stack and no Pulumi resource can set its access control
(ACK doc "Configure access control policies for the API server": a whitelist on the listener of port
6443; the public endpoint is an EIP of the same CLB, so the rule covers both). The program makes the
whitelist (slb.Acl + entries) and, once the cluster exists, turns it on for that listener with
SetLoadBalancerTCPListenerAttribute (SLB API 2014-05-15: RegionId, LoadBalancerId, ListenerPort,
AclStatus=on, AclType=white, AclId), with the credentials `pulumi up` deploys with, as cpfs_export.py
reads the CPFS export. Setting the same values again changes nothing, so every `pulumi up` may do it.
The CLB goes with the cluster on destroy; the cluster depends on the whitelist, so it goes first.
"""
from __future__ import annotations

from typing import Optional

from components.providers.alicloud.cpfs_export import rpc_call

API_VERSION = "2014-05-15"
API_SERVER_PORT = 6443
SLB_ENDPOINT_ENV = "GPU_TRAINING_SLB_ENDPOINT"  # a local stand-in of the SLB API (tests)
PLANNED = "planned: the whitelist is bound to the API server's listener (port 6443) during pulumi up"


class BindError(RuntimeError):
    """The whitelist could not be bound; the message says what to do."""


def bind_whitelist(region: str, load_balancer_id: str, acl_id: str, credentials: dict,
                   endpoint: Optional[str] = None) -> str:
    """Whitelist `acl_id` on the API server's listener; what was done (raises BindError)."""
    query = {"RegionId": region, "LoadBalancerId": load_balancer_id, "ListenerPort": str(API_SERVER_PORT),
             "AclStatus": "on", "AclType": "white", "AclId": acl_id}
    try:
        rpc_call(region, endpoint or f"https://slb.{region}.aliyuncs.com", API_VERSION,
                 "SetLoadBalancerTCPListenerAttribute", query, credentials)
    except Exception as error:  # the SDK raises its own types for API and transport errors
        raise BindError(f"SetLoadBalancerTCPListenerAttribute({load_balancer_id}:{API_SERVER_PORT}, {acl_id}) failed:"
                        f" {error}. The deploying user needs slb:SetLoadBalancerTCPListenerAttribute; until it is"
                        " bound, the API server admits any address") from None
    return f"the API server's listener {load_balancer_id}:{API_SERVER_PORT} admits only whitelist {acl_id}"
