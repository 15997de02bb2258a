"""Map catalogue: every built-in map and CARLA town, the disk cache, hostile maps."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from lastv2x.core.catalogue import canonical_map_name
from services.grounding.catalogue import CatalogueConfig, MapCatalogue
from services.grounding.entries import entry_from_dict, entry_to_dict
from services.simulator.maps import builtin_map_names, builtin_sources
from services.simulator.maps.buildings import points_in_polygon
from tests.grounding.conftest import CARLA_TOWNS

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<OpenDRIVE><header name="&lol2;"/></OpenDRIVE>
"""

EXPECTED_BUILTIN = {  # name: (junctions, signalized junctions, kind every junction has)
    "signalized_4way": (1, 1, "signalized_4way"),
    "signalized_4way_1lane": (1, 1, "signalized_4way"),
    "t_junction": (1, 0, "t_junction"),
    "unsignalized_4way": (1, 0, "unsignalized_4way"),
    "corridor": (5, 5, "corridor"),
    "urban_canyon": (9, 9, "urban_canyon"),
}
SIGNALIZED_TOWNS = {"Town01", "Town02", "Town04", "Town06", "Town07", "Town10HD"}  # Town03/05: lights not in xodr


def _check_entry(entry, road_map) -> None:
    assert entry.content_sha256 == road_map.content_sha256
    assert len(entry.junctions) == len(road_map.junctions)
    for j in entry.junctions:
        rj = road_map.junctions[j.id]
        assert j.signalized == rj.signalized
        assert j.approach_count == len(rj.approaches)
        moves = {m.id for m in j.movements}
        assert moves == {m.id for m in rj.movements}
        for a in j.approaches:
            assert a.lane_ids and len(a.stop_bars) == a.lane_count
            assert set(a.movement_ids) <= moves
            assert set(a.signalized_turns) <= set(a.turns)
            assert 0.0 < a.run_up_m <= 600.0
            assert a.speed_limit_mps > 0
            for b in a.stop_bars:  # stop bar = end of the incoming lane
                end = road_map.lanes[b.lane_id].polyline[-1]
                assert math.dist(end, b.xy) < 1e-3
        for m in j.movements:
            assert m.turn in ("straight", "left", "right", "uturn")
            assert set(m.conflicts) <= moves
            if m.signal_group_id is not None:
                assert m.signal_group_id in j.signal_group_ids
        for c in j.conflicts:
            assert c.kind in ("crossing", "merging") and {c.movement_a, c.movement_b} <= moves
        assert len(j.rsu_sites) == j.approach_count
        for s in j.rsu_sites:
            assert not any(points_in_polygon(np.asarray([s.xy]), b.footprint)[0] for b in road_map.buildings)


@pytest.mark.parametrize("name", builtin_map_names())
def test_builtin_maps(builtin_catalogue, name):
    entry = builtin_catalogue.entry(name)
    n, n_sig, kind = EXPECTED_BUILTIN[name]
    assert len(entry.junctions) == n and entry.signalized_junction_count == n_sig
    assert all(kind in j.kinds for j in entry.junctions)
    _check_entry(entry, builtin_catalogue.road_map(name))
    if name == "corridor":  # the arterial's west end sees the four junctions ahead, 224 m apart
        first = entry.junction("j1")
        east = max(first.approaches, key=lambda a: len(a.chain_ahead))
        assert east.chain_ahead == ("j2", "j3", "j4", "j5")
        assert east.next_junction_m == pytest.approx(224.0, abs=1.0)
    if name == "urban_canyon":
        canyon = entry.junctions[0].exposure
        open_4way = builtin_catalogue.entry("signalized_4way").junctions[0].exposure
        assert canyon.mean_height_m > open_4way.mean_height_m and canyon.built_fraction > 0.2
    if name == "signalized_4way":  # one group per approach, every movement signalized
        j = entry.junctions[0]
        assert all(a.signalized_turns == ("left", "right", "straight") for a in j.approaches)
        assert all(len(a.signal_group_ids) == 1 for a in j.approaches)


@pytest.mark.parametrize("town", CARLA_TOWNS)
def test_carla_towns(catalogue, town):
    entry = catalogue.entry(town)
    assert entry.junctions, town
    assert (entry.signalized_junction_count > 0) == (town in SIGNALIZED_TOWNS)
    _check_entry(entry, catalogue.road_map(town))
    if town == "Town01":  # DESIGN: 12 junctions, all signalized (T-junctions)
        assert len(entry.junctions) == 12 and entry.signalized_junction_count == 12
        assert all("t_junction" in j.kinds for j in entry.junctions)
    if town == "Town04":
        assert any("signalized_4way" in j.kinds for j in entry.junctions)


def test_every_map_is_served_without_errors(catalogue):
    assert not catalogue.errors
    assert set(catalogue.names()) == set(builtin_map_names()) | set(CARLA_TOWNS)
    rows = catalogue.list_maps()
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows)
    for r in rows:
        assert set(r) == {"name", "content_sha256", "junction_count", "signalized_junction_count",
                          "building_count", "source"}
        assert len(r["content_sha256"]) == 64
    assert {r["source"] for r in rows if r["name"] in builtin_map_names()} == {"builtin"}


def test_entry_json_round_trip(catalogue):
    for name in ("urban_canyon", "Town04"):
        entry = catalogue.entry(name)
        assert entry_from_dict(json.loads(json.dumps(entry_to_dict(entry)))) == entry


def test_cache_hit_avoids_rebuild(catalogue, cache_dir, town_dir, tmp_path):
    again = MapCatalogue(CatalogueConfig(cache_dir=cache_dir, map_paths=(town_dir,)))
    assert again.stats.builds == 0 and again.stats.road_map_loads == 0
    assert again.stats.cache_hits == len(catalogue.names())
    assert again.maps == catalogue.maps
    assert again.version == catalogue.version
    again.refresh()  # nothing changed: neither rebuilt nor re-read
    assert again.stats.builds == 0 and again.stats.cache_hits == len(catalogue.names())


def test_changed_map_is_rebuilt_alone(town_dir, tmp_path):
    maps = tmp_path / "maps"
    maps.mkdir()
    for town in ("Town01", "Town02"):
        shutil.copy(town_dir / f"{town}.xodr", maps / f"{town}.xodr")
    cfg = CatalogueConfig(cache_dir=tmp_path / "cache", include_builtins=False, map_paths=(maps,))
    first = MapCatalogue(cfg)
    assert first.stats.builds == 2
    old = first.entry("Town02").content_sha256
    text = (maps / "Town02.xodr").read_text()
    (maps / "Town02.xodr").write_text(text.replace("</OpenDRIVE>", "<!-- edited -->\n</OpenDRIVE>"))
    second = MapCatalogue(cfg)
    assert second.stats.builds == 1 and second.stats.cache_hits == 1
    assert second.entry("Town02").content_sha256 != old
    assert len(list((tmp_path / "cache").glob("Town02.*.json"))) == 1  # the stale entry was pruned
    first.refresh()  # a long-lived catalogue notices the change (and reads the entry the other one wrote)
    assert first.stats.builds == 2 and first.stats.cache_hits == 1
    assert first.entry("Town02").content_sha256 == second.entry("Town02").content_sha256


def test_hostile_maps_are_skipped_and_others_serve(tmp_path, builtin_catalogue):
    from lastv2x.core.spec import parse_spec
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex

    user = tmp_path / "user-maps"
    user.mkdir()
    (user / "laughs.xodr").write_text(BILLION_LAUGHS)
    (user / "garbage.xodr").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    (user / "empty.xodr").write_text("")
    xodr, bjson = builtin_sources("signalized_4way")
    (user / "mine.xodr").write_text(xodr)
    (user / "mine.buildings.json").write_bytes(bjson)
    (user / "broken_side.xodr").write_text(xodr)
    (user / "broken_side.buildings.json").write_text("{not json")
    cat = MapCatalogue(CatalogueConfig(cache_dir=tmp_path / "cache", map_paths=(user,),
                                       map_cache_dir=tmp_path / "gen"))
    assert set(cat.errors) == {"laughs", "garbage", "empty", "broken_side"}
    assert "DOCTYPE" in cat.errors["laughs"].reason
    assert all(e.source.endswith(".xodr") for e in cat.errors.values())
    assert "mine" in cat.names() and set(builtin_map_names()) <= set(cat.names())
    assert cat.entry("mine").content_sha256 == builtin_catalogue.entry("signalized_4way").content_sha256
    program = Grounder(cat, RetrievalIndex(cat)).ground(parse_spec({"application": "RLVW", "map": {"town": "mine"}}))
    assert program.map_name == "mine"


def test_duplicate_names_are_reported(tmp_path):
    user = tmp_path / "dup"
    user.mkdir()
    xodr, _ = builtin_sources("t_junction")
    (user / "t_junction.xodr").write_text(xodr)
    cat = MapCatalogue(CatalogueConfig(cache_dir=tmp_path / "cache", map_paths=(user,),
                                       map_cache_dir=tmp_path / "gen"))
    assert cat.entry("t_junction").source == "builtin"
    assert any("duplicate map name" in e.reason for e in cat.errors.values())


def test_canonical_names(catalogue):
    assert canonical_map_name("town 3") == "Town03" and canonical_map_name("Town10") == "Town10HD"
    assert catalogue.resolve_name("town03") == "Town03"
    assert catalogue.resolve_name("URBAN_CANYON") == "urban_canyon"
    assert catalogue.resolve_name("Town99") is None


def test_unwritable_cache_still_serves(tmp_path):
    ro = tmp_path / "ro"
    ro.write_text("a file where the cache directory should be")
    cat = MapCatalogue(CatalogueConfig(cache_dir=ro / "sub", map_cache_dir=tmp_path / "gen"))
    assert set(cat.names()) == set(builtin_map_names()) and not cat.errors


def test_default_cache_dir_is_under_home():
    from services.grounding.catalogue import default_cache_dir

    assert default_cache_dir() == Path.home() / ".cache" / "lastv2x" / "catalogue"
