"""Assign only what can be grounded (issue 19, item 5): open towns come from the grounding catalogue's view.

A real grounding catalogue of the built-in maps and the CARLA towns (shared data) is built into a
temporary directory; the LLM reads it as LASTV2X_LLM_MAP_CATALOGUE. In shared data Town03 and
Town05 have no traffic lights (Town01/02/06 only signalized T-junctions), so a signal application
must never get them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lastv2x.core.map_hosting import JunctionFacts, MapHosting, load_catalogue_dir, signal_required
from services.llm.config import LlmConfig
from services.llm.maps import CARLA_TOWNS, MapView
from services.llm.roles import LlmRoles

RLVW = "Red-light violation warning when the SPaT feed freezes just before amber."
SEEDS = range(24)


@pytest.fixture(scope="module")
def catalogue_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("carla", reason="carla extra not installed (CARLA towns need its parser)")
    towns = shared_data / "opendrive" / "carla"
    if not towns.is_dir():
        pytest.skip(f"CARLA towns not found at {towns}")
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue

    out = tmp_path_factory.mktemp("catalogue")
    MapCatalogue(CatalogueConfig(cache_dir=out, map_paths=(towns,), map_cache_dir=tmp_path_factory.mktemp("maps")))
    return out


def test_hosting_rule() -> None:
    t_signal = MapHosting("A", (JunctionFacts(frozenset({"t_junction"}), 3, True),))
    four_plain = MapHosting("B", (JunctionFacts(frozenset({"unsignalized_4way"}), 4, False),))
    assert t_signal.hosts("any", 3, True) and not t_signal.hosts("signalized_4way", 3, True)
    assert not t_signal.hosts("any", 4) and not four_plain.hosts("any", 3, True)
    assert four_plain.hosts("signalized_4way", 4, False)  # a 4-way asked for without signals
    assert signal_required("RLVW") is True and signal_required("GLOSA") is True and signal_required("FCW") is None
    assert signal_required("IMA", "signalized_4way") is True and signal_required("RLVW", signalized=False) is False


def test_signal_intents_get_only_towns_with_traffic_lights(catalogue_dir: Path) -> None:
    hosting = {h.name: h for h in load_catalogue_dir(catalogue_dir)}
    assert {"Town05", "Town04", "signalized_4way"} <= set(hosting)
    assert hosting["Town05"].signalized_junctions == 0  # what the bug assigned to signal intents
    before = LlmRoles(config=LlmConfig(assignable_maps=CARLA_TOWNS))  # the static view: every town "signalized"
    static = {before.parse_intent(RLVW, s).spec.map.town for s in SEEDS}
    assert static & {"Town03", "Town05"}
    config = LlmConfig(assignable_maps=CARLA_TOWNS, map_catalogue=str(catalogue_dir))
    roles = LlmRoles(config=config)
    towns = {roles.parse_intent(RLVW, s).spec.map.town for s in SEEDS}
    assert towns and all(hosting[t].hosts("signalized_4way", 4, True) for t in towns)
    fcw = {roles.parse_intent("FCW with the lead's BSMs delayed 300 ms.", s).spec.map.town for s in SEEDS}
    assert fcw & {"Town03", "Town05"}  # a conflict app on any approach may use them


def test_a_town_grounding_cannot_serve_is_unknown(catalogue_dir: Path) -> None:
    view = MapView.from_hosting([h for h in load_catalogue_dir(catalogue_dir) if h.name != "Town02"], CARLA_TOWNS)
    assert view.get("Town02") is None and view.get("Town04") is not None


def test_assigned_town_grounds(catalogue_dir: Path, shared_data: Path, tmp_path: Path) -> None:
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue
    from services.grounding.core import GroundingCore

    roles = LlmRoles(config=LlmConfig(assignable_maps=CARLA_TOWNS, map_catalogue=str(catalogue_dir)))
    spec = roles.parse_intent(RLVW, 3).spec
    catalogue = MapCatalogue(CatalogueConfig(cache_dir=catalogue_dir, include_builtins=False,
                                             map_paths=(shared_data / "opendrive" / "carla" / f"{spec.map.town}.xodr",),
                                             map_cache_dir=tmp_path))
    program = GroundingCore(catalogue=catalogue).ground(spec)
    assert program.map_name == spec.map.town


def test_the_parsers_builtin_map_facts_are_the_grounding_catalogues(tmp_path):
    """The parser knows the built-in maps' junctions without the catalogue (no I/O): the same facts."""
    from collections import Counter

    from services.grounding.core import GroundingConfig, GroundingCore
    from services.grounding.entries import entry_to_dict
    from services.llm.maps import BUILTIN_MAPS, DEFAULT_MAPS

    core = GroundingCore(GroundingConfig(cache_dir=tmp_path))
    static = {m.name: m.hosting for m in DEFAULT_MAPS if m.hosting is not None}
    assert set(static) == set(BUILTIN_MAPS)

    def facts(h: MapHosting) -> Counter:
        return Counter((tuple(sorted(j.kinds)), j.approaches, j.signalized, j.chain_ahead) for j in h.junctions)

    for name, hosting in static.items():
        real = MapHosting.from_entry(entry_to_dict(core.catalogue.entry(name)))
        assert facts(hosting) == facts(real), name
