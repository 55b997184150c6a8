"""Fixtures shared by the provider suites (their plain helpers, imported by name, are in provider_plans.py)."""
from __future__ import annotations

import pytest

from components.providers.baiducloud import bceapi
from localcloud.standins.baiducloud import ACCESS_KEY, SECRET_KEY, CloudApi


@pytest.fixture
def bce_api(monkeypatch):
    """The Baidu BCE API stand-in; the dynamic resources' SDK calls go to it with its own credentials."""
    stand_in = CloudApi()
    monkeypatch.setenv(bceapi.ENDPOINT_ENV, stand_in.url)
    monkeypatch.setenv(bceapi.ACCESS_KEY_ENV, ACCESS_KEY)
    monkeypatch.setenv(bceapi.SECRET_KEY_ENV, SECRET_KEY)
    monkeypatch.delenv(bceapi.TOKEN_ENV, raising=False)
    yield stand_in
    stand_in.stop()
