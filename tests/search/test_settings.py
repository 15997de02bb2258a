"""Every search setting says its unit and where its default comes from (as ChannelParams does)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from services.search.settings import SearchSettings


@pytest.mark.parametrize("f", fields(SearchSettings), ids=lambda f: f.name)
def test_every_setting_has_a_unit_and_a_source(f) -> None:  # type: ignore[no-untyped-def]
    assert f.metadata.get("unit"), f"{f.name} has no unit"
    assert len(f.metadata.get("source", "")) > 10, f"{f.name} does not say where its default comes from"


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="LASTV2X_SEARCH_ELITE_SIZE"):
        SearchSettings(elite_size=0)
    with pytest.raises(ValueError, match="max_candidates_per_scenario"):
        SearchSettings(candidates_per_scenario=10, max_candidates_per_scenario=5)
