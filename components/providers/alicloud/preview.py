"""What the offline preview's mock engine answers for Alibaba's data sources and computed outputs.

Placeholders say where the real value comes from, so the plan never shows an invented value.
"""
from __future__ import annotations


def _zones(args: dict) -> dict:
    zone = "<first zone offering {}>".format(args.get("availableInstanceType", "the type"))
    return {"ids": [zone], "zones": [{"id": zone, "localName": zone}]}


def _images(args: dict) -> dict:
    image = "<newest image matching {}>".format(args.get("nameRegex", ""))
    return {"ids": [image], "images": [{"id": image, "name": image}]}


def _instance_types(args: dict) -> dict:
    # No price: the program then shows that the cap is read from the cloud at deploy time.
    name = args.get("instanceType", "")
    return {"ids": [name], "instanceTypes": [{"id": name, "price": ""}]}


def _nas_zones(args: dict) -> dict:
    zone = "<zones selling {} file systems>".format(args.get("fileSystemType", "NAS"))
    return {"zones": [{"zoneId": zone, "instanceTypes": [{"storageType": "advance_100", "protocolType": "cpfs"}]}]}


def _cluster_credential(args: dict) -> dict:
    # Never a real credential in a plan: the kubeconfig is read from ACK at deploy time, and kept secret.
    return {"id": args.get("clusterId", ""), "kubeConfig": "<kubeconfig of the cluster, read from ACK at deploy time>",
            "certificateAuthorities": []}


CALL_ANSWERS = {
    "alicloud:cs/getClusterCredential:getClusterCredential": _cluster_credential,
    "alicloud:index/getZones:getZones": _zones,
    "alicloud:nas/getZones:getZones": _nas_zones,
    "alicloud:ecs/getImages:getImages": _images,
    "alicloud:ecs/getInstanceTypes:getInstanceTypes": _instance_types,
}

# Outputs the cloud computes after creation: {resource type: {output: template}}.
COMPUTED_OUTPUTS = {
    "alicloud:ecs/instance:Instance": {"privateIp": "10.42.0.{index}", "publicIp": "<public ip of {name}>"},
    # A host name, as the bootstrap validates it; it says that Alibaba assigns the real one.
    "alicloud:nas/mountTarget:MountTarget": {"mountTargetDomain": "{name}.mount-domain.assigned-by-alibaba"},
    "alicloud:nas/protocolService:ProtocolService": {"protocolServiceId": "<protocol service id of {name}>"},
    "alicloud:nas/protocolMountTarget:ProtocolMountTarget": {"exportId": "<export id of {name}>"},
    # ACK (cluster.py): the API server's load balancer and the cluster's RRSA OIDC provider.
    "alicloud:cs/managedKubernetes:ManagedKubernetes": {
        "slbId": "<API server load balancer of {name}>",
        "rrsaMetadata": {"enabled": "true", "ramOidcProviderArn": "<RAM OIDC provider ARN of {name}>",
                         "ramOidcProviderName": "<RAM OIDC provider of {name}>",
                         "rrsaOidcIssuerUrl": "<RRSA OIDC issuer URL of {name}>"}},
}

# Ids in Alibaba's format where an input downstream is validated against it (provider facts: ACK's
# vswitch_ids must match ^vsw-[a-z0-9]*$); the mock engine fills {digest} from the resource's name.
ID_FORMATS = {"alicloud:vpc/switch:Switch": "vsw-{digest}"}
