"""The access sections: who may reach the nodes over SSH, with which key, and the image they boot."""
from __future__ import annotations

import re
from typing import Optional

from components import cidrs as cidr_lists
from components.providers.profile_records import ImageIds
from components.validation.read import Problems, show

# OpenSSH public key line: type, base64 body, optional comment (sshd(8) AUTHORIZED_KEYS FILE FORMAT).
_SSH_KEY_RE = re.compile(r"(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)"
                         r"@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\x00-\x1f\x7f]*)?")
# Image ids: Alibaba's m-... and public image names (ubuntu_22_04_x64_20G_alibase_20240710.vhd), Tencent's img-...
_IMAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_ssh(values: dict, problems: Problems) -> tuple[str, ...]:
    cidrs = values.get("sshAllowCidrs", [])
    allow_world = values.get("allowWorldSsh", False)
    good = []
    for key, cidr, network in cidr_lists.parsed_entries(cidrs, "sshAllowCidrs", "203.0.113.7/32", problems, show):
        if network.prefixlen == 0:
            if not allow_world:
                problems.error(key, f"{cidr!r} opens SSH to the whole internet; set allowWorldSsh: true to accept"
                               " it, or list your own address (e.g. 203.0.113.7/32)")
                continue
            problems.warning(key, f"{cidr!r}: SSH is open to the whole internet (allowWorldSsh: true)")
        good.append(str(network))
    _check_ssh_union(good, allow_world, problems)
    if cidrs and not values.get("sshPublicKey"):
        problems.warning("sshPublicKey", "SSH ingress is open but no sshPublicKey is set: nobody can log in")
    return tuple(good)


def _check_ssh_union(cidrs: list[str], allow_world: bool, problems: Problems) -> None:
    """CIDRs that together cover a whole address family are world-open too (0.0.0.0/1 + 128.0.0.0/1)."""
    for world, pieces in cidr_lists.world_unions(cidrs):
        if allow_world:
            problems.warning("sshAllowCidrs", f"{pieces}: together these open SSH to the whole internet"
                             f" ({world}; allowWorldSsh: true)")
        else:
            problems.error("sshAllowCidrs", f"{pieces}: together these cover {world}, which opens SSH to the"
                           " whole internet; set allowWorldSsh: true to accept it, or list your own addresses"
                           " (e.g. 203.0.113.7/32)")


def check_login_and_image(values: dict, image_ids: Optional[ImageIds], who: str, problems: Problems) -> None:
    """sshPublicKey and image reach the cloud API as they are: refuse what no cloud would take, and an image
    in none of the forms of id the stack's cloud (`who`) takes (`image_ids`, its profile's; None: any)."""
    key = values.get("sshPublicKey")
    if key is not None and not _SSH_KEY_RE.fullmatch(key.strip()):
        problems.error("sshPublicKey", f"{show(key, 60)} is not an OpenSSH public key; expected one line such as"
                       " 'ssh-ed25519 AAAAC3Nza... you@host' (the contents of ~/.ssh/id_ed25519.pub)")
    image = values.get("image")
    if image is not None and not _IMAGE_RE.fullmatch(image):
        problems.error("image", f"{show(image)} is not an image id; expected letters, digits, '.', '_' and '-'"
                       " (e.g. m-bp1... or ubuntu_22_04_x64_20G_alibase_20240710.vhd on Alibaba, img-... on Tencent)")
    elif image is not None and image_ids is not None and not image_ids.accepts(image):
        # `image: ubuntu` would reach the instance API as an id and fail there, after the network and the
        # bucket were created: an image is named by its id, never by its name or OS.
        problems.error("image", f"{show(image)} is no {who} image id; allowed: {image_ids.described()}; or leave"
                       f" image unset for the default image (the forms: {image_ids.source})")
