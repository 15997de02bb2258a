"""Built-in maps: generated OpenDRIVE parsed back through carla gives the intended network."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from services.simulator.maps import MapError, Turn, builtin_map_names, builtin_sources, load_map
from services.simulator.maps.buildings import points_in_polygon
from tests.simulator.maps.invariants import check_road_map


def _turns(junction) -> Counter:
    return Counter(m.turn for m in junction.movements)


def test_names():
    names = builtin_map_names()
    assert {"signalized_4way", "t_junction", "corridor", "urban_canyon"} <= set(names)


@pytest.mark.parametrize("name", builtin_map_names())
def test_builtin_invariants(builtins, name):
    rm = builtins[name]
    check_road_map(rm)
    assert not rm.notes, rm.notes  # nothing dropped, no link taken from outside carla
    assert rm.buildings


@pytest.mark.parametrize("name", ["signalized_4way", "signalized_4way_1lane"])
def test_four_way_movements_and_signals(builtins, name):
    rm = builtins[name]
    (j,) = rm.junctions.values()
    assert len(j.movements) == 12
    assert _turns(j) == {Turn.STRAIGHT: 4, Turn.LEFT: 4, Turn.RIGHT: 4}
    assert j.signalized and len(j.approaches) == 4 and len(rm.signal_groups) == 4
    headings = sorted(round(math.degrees(a.heading_rad)) % 360 for a in j.approaches)
    assert headings == [0, 90, 180, 270]
    for a in j.approaches:  # one group per approach, holding its 3 movements
        groups = {m.signal_group_id for m in j.movements if m.approach_id == a.id}
        assert len(groups) == 1 and None not in groups
        assert len(rm.signal_groups[groups.pop()].movement_ids) == 3
    for m in j.movements:  # connectors are exact quarter turns
        expect = {Turn.STRAIGHT: 0.0, Turn.LEFT: 90.0, Turn.RIGHT: -90.0}[m.turn]
        assert math.degrees(m.heading_change_rad) == pytest.approx(expect, abs=1.0)


def test_two_lane_approach_has_dedicated_left_lane(builtins):
    rm = builtins["signalized_4way"]
    (j,) = rm.junctions.values()
    for a in j.approaches:
        assert len(a.incoming_lane_ids) == 2
        by_lane = {lid: sorted(m.turn.value for m in rm.movements_from(lid))
                   for lid in a.incoming_lane_ids}
        assert sorted(by_lane.values()) == [["left"], ["right", "straight"]]


def test_t_junction(builtins):
    rm = builtins["t_junction"]
    (j,) = rm.junctions.values()
    assert len(j.movements) == 6
    assert _turns(j) == {Turn.STRAIGHT: 2, Turn.LEFT: 2, Turn.RIGHT: 2}
    assert not j.signalized and not rm.signal_groups  # priority-controlled


def test_corridor_is_a_signalized_row(builtins):
    rm = builtins["corridor"]
    js = sorted(rm.junctions.values(), key=lambda j: j.centre[0])
    assert len(js) >= 4 and all(j.signalized for j in js)
    centres = np.array([j.centre for j in js])
    gaps = np.diff(centres[:, 0])
    assert np.all((gaps >= 200) & (gaps <= 300))
    assert np.ptp(centres[:, 1]) < 1.0  # in a row


def test_urban_canyon_grid_with_towers(builtins):
    rm = builtins["urban_canyon"]
    assert len(rm.junctions) == 9 and all(j.signalized for j in rm.junctions.values())
    assert all(len(j.movements) == 12 for j in rm.junctions.values())
    heights = np.array([b.height_m for b in rm.buildings])
    assert len(heights) >= 16 and heights.min() >= 30.0


@pytest.mark.parametrize("name", builtin_map_names())
def test_every_signalized_movement_has_a_group(builtins, name):
    rm = builtins[name]
    for j in rm.junctions.values():
        if j.signalized:
            for m in j.movements:
                assert m.signal_group_id is not None, m.id
                g = rm.signal_groups[m.signal_group_id]
                assert m.from_lane_id in {b.lane_id for b in g.stop_bars}


@pytest.mark.parametrize("name", builtin_map_names())
def test_buildings_stay_off_the_road(builtins, name):
    rm = builtins[name]
    paths = [ln.polyline for ln in rm.lanes.values()] + [m.polyline for m in rm.movements.values()]
    pts = np.vstack(paths)
    for b in rm.buildings:
        assert not points_in_polygon(pts, b.footprint).any(), b.id


def test_crossing_straights_conflict_and_self_never(builtins):
    rm = builtins["signalized_4way_1lane"]
    (j,) = rm.junctions.values()
    straights = [m for m in j.movements if m.turn is Turn.STRAIGHT]
    pairs = {frozenset((c.movement_a, c.movement_b)) for c in j.conflicts}
    perpendicular = opposing = 0
    for i, a in enumerate(straights):
        for b in straights[i + 1:]:
            cross = abs(math.sin(float(a.heading_at(0.0)) - float(b.heading_at(0.0))))
            if cross > 0.9:
                perpendicular += 1
                assert frozenset((a.id, b.id)) in pairs, (a.id, b.id)
            else:
                opposing += 1
                assert frozenset((a.id, b.id)) not in pairs  # parallel, never meet
    assert perpendicular == 4 and opposing == 2
    assert all(c.movement_a != c.movement_b for c in j.conflicts)
    kinds = Counter(c.kind for c in j.conflicts)
    assert kinds == {"crossing": 16, "merging": 12}  # classic 4-way: 16 crossings


def test_route_through_a_junction(builtins):
    rm = builtins["signalized_4way"]
    m = next(m for m in rm.movements.values() if m.turn is Turn.LEFT)
    route = rm.route([m.from_lane_id, m.id, m.to_lane_id])
    parts = [rm.element(i).length_m for i in route.ids]
    assert route.length_m == pytest.approx(sum(parts), abs=0.05)
    assert route.offsets_m[1] == pytest.approx(parts[0], abs=0.01)
    mid = route.position_at(route.offsets_m[1] + m.length_m / 2)
    assert np.allclose(mid, m.position_at(m.length_m / 2), atol=0.05)
    s = np.linspace(0, route.length_m, 50)
    steps = np.hypot(*np.diff(route.position_at(s), axis=0).T)
    assert steps.max() <= route.length_m / 49 + 1e-6  # continuous, no jumps
    with pytest.raises(MapError, match="route break"):
        rm.route([m.to_lane_id, m.id])
    with pytest.raises(MapError, match="unknown"):
        rm.route(["nope"])


def test_generation_is_deterministic():
    for name in builtin_map_names():
        assert builtin_sources(name) == builtin_sources(name)


def test_cache_files_and_load_map_path(builtins, map_cache):
    rm = builtins["urban_canyon"]
    (xodr,) = map_cache.glob("urban_canyon.v*.xodr")
    side = xodr.with_name(xodr.stem + ".buildings.json")
    assert side.is_file() and xodr.read_text().lstrip().startswith("<?xml")
    by_path = load_map(xodr)
    assert by_path.content_sha256 == rm.content_sha256
    assert len(by_path.buildings) == len(rm.buildings)
    assert rm.content_sha256 != builtins["corridor"].content_sha256


def test_cache_is_reused_and_repaired(carla_parser, tmp_path):
    from services.simulator.maps import builtin_files

    path = builtin_files("t_junction", tmp_path)
    stamp = path.stat().st_mtime_ns
    assert builtin_files("t_junction", tmp_path) == path and path.stat().st_mtime_ns == stamp
    path.write_text("<OpenDRIVE/>")  # a damaged cache entry is rewritten, never trusted
    builtin_files("t_junction", tmp_path)
    assert path.read_text() == builtin_sources("t_junction")[0]


def test_unknown_name_or_missing_path(tmp_path):
    with pytest.raises(MapError, match="neither a built-in map"):
        load_map("no_such_map")
    with pytest.raises(MapError, match="neither a built-in map"):
        load_map(tmp_path / "missing.xodr")


def test_user_map_with_bad_sidecar_is_a_map_error(carla_parser, tmp_path):
    xodr, _ = builtin_sources("t_junction")
    path = tmp_path / "mine.xodr"
    path.write_text(xodr)
    assert load_map(path).buildings == ()  # no sidecar: no buildings
    (tmp_path / "mine.buildings.json").write_text("{not json")
    with pytest.raises(MapError, match="not valid JSON"):
        load_map(path)


@pytest.mark.parametrize("name", builtin_map_names())
def test_native_path_matches_carla(builtins, map_cache, name):
    """Without carla the same network is built from the layout; both agree to 1 mm."""
    from services.simulator.maps import load_builtin

    via_carla = builtins[name]
    native = load_builtin(name, cache_dir=map_cache, parser="native")
    assert native.summary() == {**via_carla.summary(), "traffic_lights": native.traffic_lights}
    assert native.content_sha256 == via_carla.content_sha256
    assert sorted(native.lanes) == sorted(via_carla.lanes)
    assert list(native.movements) == list(via_carla.movements)
    for mid, m in via_carla.movements.items():
        n = native.movements[mid]
        assert (n.from_lane_id, n.to_lane_id, n.turn, n.signal_group_id) == (
            m.from_lane_id, m.to_lane_id, m.turn, m.signal_group_id)
        assert np.abs(n.polyline - m.polyline).max() < 1e-3
    for lid, lane in via_carla.lanes.items():
        assert np.abs(native.lanes[lid].polyline - lane.polyline).max() < 1e-3
    for jid, j in via_carla.junctions.items():
        assert np.allclose(native.junctions[jid].centre, j.centre, atol=1e-3)
        assert len(native.junctions[jid].conflicts) == len(j.conflicts)
    check_road_map(native)


def test_native_needs_no_carla(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "carla", None)  # any import of carla now fails
    from services.simulator.maps import load_builtin

    rm = load_builtin("signalized_4way", cache_dir=tmp_path)  # auto -> native
    assert len(rm.movements) == 12 and len(rm.signal_groups) == 4
    with pytest.raises(MapError, match="unknown parser"):
        load_builtin("signalized_4way", cache_dir=tmp_path, parser="fast")
