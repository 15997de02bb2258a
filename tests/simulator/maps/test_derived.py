"""Maps that ship none: derived building footprints, signalized 4-ways on request, maps by name."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from services.simulator.maps import LoadOptions, MapError, MapSettings, load_map, load_named
from services.simulator.maps.derived import GENERATED_SIGNAL_PREFIX, HEIGHTS_M, SIDEWALK_M


def _min_clearance_m(rm) -> float:
    """Smallest distance from any lane / connector centre-line point to any footprint, less
    half that lane's width (the kerb-to-facade clearance actually left)."""
    worst = np.inf
    rects = np.array([[b.footprint.min(axis=0), b.footprint.max(axis=0)] for b in rm.buildings])
    for el in list(rm.lanes.values()) + list(rm.movements.values()):
        p = el.polyline[:, None, :]
        d = np.hypot(np.maximum(np.maximum(rects[None, :, 0] - p, p - rects[None, :, 1]), 0.0)[..., 0],
                     np.maximum(np.maximum(rects[None, :, 0] - p, p - rects[None, :, 1]), 0.0)[..., 1])
        worst = min(worst, float(d.min()) - el.width_m / 2)
    return worst


def test_towns_get_buildings_kept_off_the_streets(towns):
    for name in ("Town01", "Town03", "Town05", "Town10HD"):
        rm = towns[name]
        assert len(rm.buildings) >= 5, name
        assert all(HEIGHTS_M[0] <= b.height_m <= HEIGHTS_M[1] for b in rm.buildings)
        # the setback holds for every lane (a 2 m raster may only add clearance)
        assert _min_clearance_m(rm) >= SIDEWALK_M - 1e-6, name
        lo, hi = np.array(rm.bounds[:2]), np.array(rm.bounds[2:])
        for b in rm.buildings:  # enclosed blocks only: inside the roads' extent
            assert (b.footprint >= lo - 1e-6).all() and (b.footprint <= hi + 1e-6).all()
        heights = {b.id.split(".")[0]: b.height_m for b in rm.buildings}  # one roof per block
        assert all(b.height_m == heights[b.id.split(".")[0]] for b in rm.buildings)


def test_derivation_is_deterministic_and_switchable(towns, town_dir):
    first = towns["Town03"]
    again = load_map(town_dir / "Town03.xodr")
    assert again.content_sha256 == first.content_sha256
    assert [(b.id, b.height_m, b.footprint.tolist()) for b in again.buildings] == \
           [(b.id, b.height_m, b.footprint.tolist()) for b in first.buildings]
    off = load_map(town_dir / "Town03.xodr", options=LoadOptions(generated_buildings=False))
    assert not off.buildings and off.content_sha256 != first.content_sha256
    assert list(off.movements) == list(first.movements)  # only the buildings differ


def test_a_sidecar_wins_over_derivation(carla_parser, town_dir, tmp_path):
    shutil.copy(town_dir / "Town02.xodr", tmp_path / "Town02.xodr")
    fp = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]]
    (tmp_path / "Town02.buildings.json").write_text(json.dumps(
        {"schema": "lastv2x.buildings/1", "map": "Town02",
         "buildings": [{"id": "mine", "height_m": 12.0, "footprint": fp}]}))
    rm = load_map(tmp_path / "Town02.xodr")
    assert [b.id for b in rm.buildings] == ["mine"]


def test_blockage_slope_matters_on_a_town_with_derived_buildings(towns):
    from services.simulator.coverage_service import coverage_for

    rm = towns["Town01"]
    hi, _ = coverage_for("Town01", blockage_db_per_m=5.0, road_map=rm, cell_m=5.0)
    lo, _ = coverage_for("Town01", blockage_db_per_m=1.0, road_map=rm, cell_m=5.0)
    assert hi.in_range_fraction < lo.in_range_fraction < 0.999
    import dataclasses

    bare = dataclasses.replace(rm, buildings=())
    open5, _ = coverage_for("Town01", blockage_db_per_m=5.0, road_map=bare, cell_m=5.0)
    open1, _ = coverage_for("Town01", blockage_db_per_m=1.0, road_map=bare, cell_m=5.0)
    assert open5.in_range_fraction == open1.in_range_fraction > hi.in_range_fraction + 0.05


def test_signalize_4way_is_explicit(towns, town_dir):
    plain = towns["Town03"]
    assert not plain.signal_groups
    rm = load_named("Town03", [town_dir], MapSettings(signalize_4way=("Town03",)))
    four = [j for j in rm.junctions.values() if len(j.approaches) == 4]
    assert four and all(j.signalized for j in four)
    assert all(not j.signalized for j in rm.junctions.values() if len(j.approaches) != 4)
    for j in four:
        assert len(j.signal_group_ids) == 4  # one group per approach
        for gid in j.signal_group_ids:
            g = rm.signal_groups[gid]
            assert len({rm.movements[m].approach_id for m in g.movement_ids}) == 1
            assert g.signal_ids[0].startswith(GENERATED_SIGNAL_PREFIX)
        assert all(m.signal_group_id for m in j.movements)
    assert rm.content_sha256 != plain.content_sha256
    other = load_named("Town05", [town_dir], MapSettings(signalize_4way=("Town03",)))
    assert not other.signal_groups  # only the named maps
    every = load_named("Town05", [town_dir], MapSettings(signalize_4way=("*",)))
    assert every.signal_groups
    town01 = load_named("Town01", [town_dir], MapSettings(signalize_4way=("*",)))
    assert town01.content_sha256 != towns["Town01"].content_sha256  # the variant is part of the identity
    assert set(town01.signal_groups) == set(towns["Town01"].signal_groups)  # already signalized: untouched


def test_maps_by_name_only(carla_parser, town_dir):
    assert load_named("Town01", [town_dir]).name == "Town01"
    assert load_named("Town01", [town_dir / "Town01.xodr"]).name == "Town01"  # a configured file
    with pytest.raises(MapError, match="LASTV2X_MAP_PATHS"):
        load_named("Town99", [town_dir])
    with pytest.raises(MapError):
        load_named(str(town_dir / "Town01"), [town_dir])  # a name never spells a path


def test_cli_takes_user_maps_by_name(carla_parser, town_dir, monkeypatch, capsys):
    from lastv2x_app.cli import main

    monkeypatch.setenv("LASTV2X_MAP_PATHS", str(town_dir))
    monkeypatch.delenv("LASTV2X_MAP_GENERATED_BUILDINGS", raising=False)
    assert main(["coverage", "Town01", "--json", "--cell", "10"]) == 0
    derived = json.loads(capsys.readouterr().out)
    monkeypatch.setenv("LASTV2X_MAP_GENERATED_BUILDINGS", "0")
    assert main(["coverage", "Town01", "--json", "--cell", "10"]) == 0
    bare = json.loads(capsys.readouterr().out)
    assert bare["in_range_fraction"] > derived["in_range_fraction"]
    assert main(["maps", "show", "Town03", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["signal_groups"] == 0
    monkeypatch.setenv("LASTV2X_MAP_SIGNALIZE_4WAY", "Town03")
    assert main(["maps", "show", "Town03", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["signal_groups"] > 0
    assert main(["coverage", "Town99"]) == 2
    assert "LASTV2X_MAP_PATHS" in capsys.readouterr().out
    assert main(["coverage", "urban_canyon", "--rsu", "168"]) == 2
    assert "X,Y" in capsys.readouterr().out
