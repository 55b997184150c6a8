"""What the offline preview's mock engine answers for Huawei Cloud's data sources and computed outputs.

Placeholders say where the real value comes from, so the plan never shows an invented value.
"""
from __future__ import annotations


def _zones(args: dict) -> dict:
    # One placeholder zone: the program keeps it (it cannot ask the flavor list offline).
    return {"names": ["<first available zone of the region whose flavor list has the type (ListFlavors)>"],
            "id": "zones", "state": args.get("state", "available")}


def _flavors(args: dict) -> dict:
    return {"id": "flavors", "ids": [], "flavors": []}


def _image(args: dict) -> dict:
    image = "<newest public image matching {} for {}>".format(args.get("nameRegex", ""), args.get("flavorId", ""))
    return {"id": image, "name": image}


CALL_ANSWERS = {
    "huaweicloud:index/getAvailabilityZones:getAvailabilityZones": _zones,
    "huaweicloud:Ecs/getFlavors:getFlavors": _flavors,
    "huaweicloud:Ims/getImage:getImage": _image,
}

# Outputs the cloud computes after creation: {resource type: {output: template}}.
COMPUTED_OUTPUTS = {
    "huaweicloud:Ecs/instance:Instance": {"accessIpV4": "10.42.0.{index}", "publicIp": "<public ip of {name}>"},
    # Shaped as the bootstrap validates it (a host and a path); it says that Huawei assigns the value.
    "huaweicloud:Sfs/turbo:Turbo": {"exportLocation": "{name}.export-location.assigned-by-huawei:/"},
}
