"""A login public key whose private half nobody keeps: for clouds that need a key pair on a node that
nobody is meant to log in to.

Huawei's AS configuration reads its user data as the root password unless it also names a key pair
(terraform-provider-huaweicloud v1.73.3 docs/resources/as_configuration.md:256-258), so a spot pool
without the user's `sshPublicKey` still needs one. `GeneratedPublicKey` is a Pulumi dynamic resource
(state only, no cloud call): its create() makes an RSA key with `cryptography`, returns the OpenSSH
public key and drops the private key, so neither the state nor the user data ever holds it. Created
once: its diff ignores everything but `comment`, so later `pulumi up`s keep the same key (no new key
pair, no new pool configuration) until the resource is replaced.

RSA, not Ed25519: the key format Huawei's own key pair example imports (docs/resources/compute_keypair.md).
"""
from __future__ import annotations

from typing import Optional

import pulumi
from pulumi import dynamic

from components.dynamic_pickle import pickler_kept

TYPE = "pulumi-python:dynamic/gpu-training:GeneratedPublicKey"
RSA_BITS = 3072


def new_public_key(comment: str) -> str:
    """A fresh OpenSSH public key; the private key exists only inside this call."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return f"{public.decode()} {comment}".strip()


class _Provider(dynamic.ResourceProvider):
    serialize_as_secret_always = False  # it captures nothing secret: the state shows what it is

    def create(self, props: dict) -> dynamic.CreateResult:
        key = new_public_key(props.get("comment") or "")
        return dynamic.CreateResult(id_=key.split()[1][-24:], outs={**props, "public_key": key})

    def diff(self, _id: str, olds: dict, news: dict) -> dynamic.DiffResult:
        # Only the comment matters; the pickled provider changes with this file's code and must not
        # make a new key.
        changed = olds.get("comment") != news.get("comment")
        return dynamic.DiffResult(changes=changed, replaces=["comment"] if changed else [])


class GeneratedPublicKey(dynamic.Resource, module="gpu-training", name="GeneratedPublicKey"):
    public_key: pulumi.Output[str]

    def __init__(self, name: str, comment: str, opts: Optional[pulumi.ResourceOptions] = None):
        with pickler_kept():  # components/dynamic_pickle.py
            super().__init__(_Provider(), name, {"comment": comment, "public_key": None}, opts)
