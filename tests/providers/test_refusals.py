"""A profile's (and a platform's) refusals name stack keys that exist: a misspelt one is refused at lookup.

`unsupported` maps "key" or "key=value" to why validation refuses it. Validation compares the stack's own
keys with the table, so an entry that names no key of components/schema.py (or a value the key never
takes) would silently refuse nothing; the profile record checks the table when it is made.
"""
from __future__ import annotations

import sys

import pytest

from components import providers, schema
from components.platforms import offer as platform_offers


def _cloud_copy(tmp_path, monkeypatch, source_cloud: str, edit) -> str:
    """Register a package whose profile.py is `source_cloud`'s with `edit` applied to its text."""
    package = tmp_path / "misspeltcloud"
    package.mkdir()
    (package / "__init__.py").write_text('"""A copy of a cloud with one edit in its profile."""\n')
    text = (providers.package_dir(source_cloud) / "profile.py").read_text(encoding="utf-8")
    edited = edit(text)
    assert edited != text, "the edit changed nothing"
    (package / "profile.py").write_text(edited, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(providers.REGISTRY, "misspeltcloud", "misspeltcloud")
    for module in ("misspeltcloud", "misspeltcloud.profile"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return "misspeltcloud"


def test_a_profile_with_a_misspelt_unsupported_key_is_refused_at_registry_lookup(tmp_path, monkeypatch):
    name = _cloud_copy(tmp_path, monkeypatch, "tencentcloud",
                       lambda text: text.replace('"spotFallback=true":', '"spotFalback=true":'))
    with pytest.raises(ValueError) as refused:  # schema.UnknownStackKey
        providers.profile(name)
    assert isinstance(refused.value, schema.UnknownStackKey)
    message = str(refused.value)
    assert "tencentcloud's profile" in message and "'spotFalback=true'" in message
    assert "did you mean 'spotFallback'?" in message


def test_a_profile_refusing_a_value_its_key_never_takes_is_refused_at_registry_lookup(tmp_path, monkeypatch):
    name = _cloud_copy(tmp_path, monkeypatch, "alicloud",
                       lambda text: text.replace('"spotFallback=true":', '"spotFallback=yes":'))
    with pytest.raises(schema.UnknownStackKey, match=r"'spotFallback=yes': spotFallback \(boolean\) never takes 'yes'"):
        providers.profile(name)


def test_the_registered_profiles_and_platforms_refuse_only_keys_that_exist():
    for name in providers.names():
        profile = providers.profile(name)
        assert schema.unknown_refusals(profile.rules.unsupported) == []
        for offer in profile.platforms().values():
            assert offer.unsupported and schema.unknown_refusals(offer.unsupported) == []


@pytest.mark.parametrize("entry, why", [
    ("gpuPerNode", "'gpuPerNode' is not a stack key (did you mean 'gpusPerNode'?)"),
    ("billing=spott", "billing (string) never takes 'spott'; allowed: on-demand, spot"),
    ("tier=huge", "tier (string) never takes 'huge'; allowed: entry, medium, large"),
    ("nodes=two", "nodes (integer) never takes 'two'"),
    ("spotMaxPricePerHour=cheap", "spotMaxPricePerHour (number) never takes 'cheap'"),
    ("sshAllowCidrs=10.0.0.0/8", "sshAllowCidrs (array) never takes '10.0.0.0/8'"),
    ("image=", "image (string) never takes ''"),
])
def test_an_entry_that_could_never_apply_is_named_with_why(entry, why):
    assert schema.unknown_refusals([entry]) == [f"{entry!r}: {why}"]


def test_entries_validation_can_match_pass():
    assert schema.unknown_refusals(["kubernetes", "billing=spot", "spotFallback=true", "nodes=2", "gpu=Ascend-910B",
                                    "dataDiskCategory=CLOUD_TSSD", "spotMaxPricePerHour=1.5"]) == []


def test_a_platform_with_a_misspelt_unsupported_key_is_refused_when_its_offer_is_loaded(tmp_path):
    directory = providers.package_dir("huaweicloud") / "modelarts"
    text = (directory / "platform.yaml").read_text(encoding="utf-8")
    edited = text.replace("\n  spotZones:", "\n  spotZone:")
    assert edited != text
    (tmp_path / "platform.yaml").write_text(edited, encoding="utf-8")
    with pytest.raises(schema.UnknownStackKey, match=r"the modelarts platform .*'spotZone' is not a stack key"):
        platform_offers.load_offer(tmp_path)
