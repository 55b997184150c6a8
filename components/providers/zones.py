"""The zone a stack lands in: one that sells the instance type and, with a shared file system, that too.

Offline nothing can ask a cloud which zones sell what, so providers check what their docs state as
data at validation, and their network parts call `pick_zone` at deploy time with what the cloud's
data sources answer. Values in "<...>" are the offline preview's placeholders (components/mockrun):
they are never real zone ids, so with one in a list the choice stays a placeholder.
"""
from __future__ import annotations

from typing import Optional, Sequence


class ZoneError(ValueError):
    """No zone fits; the message names what was asked, what each source offers and what to set."""


def _placeholder(values: Sequence[str]) -> bool:
    return any(str(v).startswith("<") for v in values)


def pick_zone(region: str, instance_type: str, instance_zones: Sequence[str], *, wanted: Optional[str] = None,
              fs_kind: Optional[str] = None, fs_zones: Optional[Sequence[str]] = None) -> str:
    """`wanted` if it sells both, else the first instance zone that also sells the file system."""
    fs = list(fs_zones) if fs_zones is not None else None
    if wanted:
        if fs is not None and not _placeholder(fs) and wanted not in fs:
            raise ZoneError(f"zone {wanted} sells no {fs_kind} in {region}; zones that do: {', '.join(fs) or 'none'}"
                            " (set gpu-training:zone to one of them, or another sharedStorage)")
        if instance_zones and not _placeholder(instance_zones) and wanted not in instance_zones:
            raise ZoneError(f"zone {wanted} does not sell {instance_type} in {region} right now; zones that do:"
                            f" {', '.join(instance_zones)}")
        return wanted
    if _placeholder(instance_zones) or (fs is not None and _placeholder(fs)):
        both = f" and {fs_kind}" if fs is not None else ""
        return f"<first zone of {region} selling {instance_type}{both}>"
    candidates = [z for z in instance_zones if fs is None or z in fs]
    if candidates:
        return candidates[0]
    if fs is None:
        raise ZoneError(f"no zone in {region} sells {instance_type} right now; set gpu-training:zone or pick another"
                        " instanceType")
    raise ZoneError(f"no zone in {region} sells both {instance_type} (zones: {', '.join(instance_zones) or 'none'})"
                    f" and {fs_kind} (zones: {', '.join(fs) or 'none'}); pick another region, instanceType or"
                    " sharedStorage")
