"""What the offline preview's mock engine answers for Tencent Cloud's data sources and computed outputs.

Placeholders say where the real value comes from, so the plan never shows an invented value.
"""
from __future__ import annotations

from components.catalog import load_catalog


def _family(args: dict) -> str:
    for item in args.get("filters") or []:
        if item.get("name") == "instance-family":
            return (item.get("values") or ["?"])[0]
    return "?"


def _types(args: dict) -> dict:
    # The program asks for a family and keeps the row of its exact type: one row per catalog type.
    family = _family(args)
    rows = []
    for row in load_catalog("tencentcloud").instances:
        if row.name.split(".")[0] == family:
            zone = f"<first zone selling {row.name} (DescribeZoneInstanceConfigInfos)>"
            rows.append({"availabilityZone": zone, "instanceType": row.name, "family": family, "status": "SELL"})
    return {"instanceTypes": rows}


def _images(args: dict) -> dict:
    image = "<public image matching {} for {}>".format(args.get("imageNameRegex", ""), args.get("instanceType", ""))
    return {"images": [{"imageId": image, "imageName": image}]}


def _cfs_zones(args: dict) -> dict:
    # Placeholder zone with Turbo on sale: the real list comes from DescribeAvailableZoneInfo at deploy time.
    zone = "<zones selling CFS Turbo (DescribeAvailableZoneInfo)>"
    kinds = [{"type": "TP", "prepayment": False, "protocols": [{"protocol": "TURBO", "saleStatus": "saling"}]}]
    return {"regionZones": [{"region": region, "regionName": region, "regionCnName": region, "regionStatus": "AVAILABLE",
                             "zones": [{"zone": zone, "zoneId": 0, "zoneName": zone, "zoneCnName": zone, "types": kinds}]}
                            for region in ("ap-guangzhou", "ap-shanghai", "ap-beijing", "ap-nanjing", "ap-chengdu")]}


CALL_ANSWERS = {
    "tencentcloud:Cfs/getAvailableZone:getAvailableZone": _cfs_zones,
    "tencentcloud:Instance/getTypes:getTypes": _types,
    "tencentcloud:Images/getInstance:getInstance": _images,
}

# Outputs the cloud computes after creation: {resource type: {output: template}}.
COMPUTED_OUTPUTS = {
    "tencentcloud:Instance/instance:Instance": {"privateIp": "10.42.0.{index}", "publicIp": "<public ip of {name}>"},
    # Shaped as the bootstrap validates them (a host and a path); they say that Tencent assigns the values.
    "tencentcloud:Cfs/fileSystem:FileSystem": {"mountIp": "{name}.mount-ip.assigned-by-tencent",
                                               "fsId": "fs-id-assigned-by-tencent"},
}
