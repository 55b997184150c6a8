"""One credential convention per cloud: the variables its Pulumi provider reads, for every command.

Each provider package declares them in components/providers/<cloud>/credentials.py (ACCESS_KEY,
SECRET_KEY, TOKEN, with the source); `pulumi up`, the bucket readers (status, logs, report, up's
watcher, pack --upload) and the price and region refreshes all take the same ones, so a user
exports one pair per cloud. Object storage is reached with that pair through its S3-compatible API:
never through AWS_* variables. A missing credential is one line naming the variables (exit 2).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, MutableMapping, Optional


class MissingCredentials(Exception):
    """No credentials of the stack's cloud in the environment: the message names the variables."""


@dataclass(frozen=True)
class CloudCredentials:
    provider: str
    access_key: str
    secret_key: str
    token: Optional[str] = None

    def boto3_session(self):
        import boto3

        return boto3.Session(aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
                             aws_session_token=self.token or None)


def declaration(provider: str):
    """The provider's credentials module (ACCESS_KEY, SECRET_KEY, TOKEN, SOURCE, SDK_ALIASES)."""
    from components import providers

    return providers.module(provider, "credentials")


def variables(provider: str) -> tuple[str, str, str]:
    d = declaration(provider)
    return d.ACCESS_KEY, d.SECRET_KEY, d.TOKEN


def missing_message(provider: str) -> str:
    from components import providers

    key, secret, token = variables(provider)
    name = providers.profile(provider).display_name
    return f"no {name} credentials: set {key} and {secret} ({token} too for temporary keys)"


def from_env(provider: str, env: Mapping[str, str] = os.environ) -> CloudCredentials:
    key, secret, token = variables(provider)
    if not env.get(key) or not env.get(secret):
        raise MissingCredentials(missing_message(provider))
    return CloudCredentials(provider, env[key], env[secret], env.get(token) or None)


def use_sdk_names(provider: str, env: MutableMapping[str, str] = os.environ) -> str:
    """For a script that calls `provider`'s own SDK (prices, regions): put into `env` the names that SDK
    reads, filled from the convention's (with_sdk_aliases). Returns the start of a missing-credentials
    message naming the convention's variables ('' for a cloud that declares none)."""
    from components import providers

    if provider not in providers.with_module("credentials"):
        return ""
    env.update(with_sdk_aliases(provider, env))
    key, secret, _ = variables(provider)
    return f"set {key} and {secret} (the names every gpu-training command reads), or "


def with_sdk_aliases(provider: str, env: Mapping[str, str]) -> dict[str, str]:
    """env plus the names the cloud's own SDKs read (e.g. Alibaba's Tea SDK), filled from the convention's,
    for the commands that call those SDKs (prices, regions); a name the user set stays as it is."""
    out = dict(env)
    for ours, theirs in getattr(declaration(provider), "SDK_ALIASES", {}).items():
        if env.get(ours) and not env.get(theirs):
            out[theirs] = env[ours]
    return out
