"""Real maps: every CARLA town and the esmini roads through carla's parser."""

from __future__ import annotations

import re

import pytest

from tests.simulator.maps.invariants import CARLA_TOWNS, check_road_map


def test_every_town_loads_with_junctions(town_load):
    assert set(town_load) == set(CARLA_TOWNS)
    for name, (rm, seconds) in town_load.items():
        print(f"{name}: {seconds:.2f} s {rm.summary()}")
        assert rm.junctions, name
        assert rm.movements and rm.lanes, name
        assert not any("could not" in n for n in rm.notes), rm.notes


@pytest.mark.parametrize("town", CARLA_TOWNS)
def test_town_invariants(towns, town):
    check_road_map(towns[town])


def test_town01_matches_design_fact(towns, town_dir):
    """DESIGN: Town01 has 12 junctions and 72 traffic-light landmarks.

    The 72 landmarks are <signalReference>s on 72 connecting roads to 36 signal
    heads, one head per approach: so every one of the 72 movements is
    signalized, by exactly one of 36 groups (one per head / approach).
    """
    rm = towns["Town01"]
    text = (town_dir / "Town01.xodr").read_text()
    refs = re.findall(r'<signalReference id="(\d+)"', text)
    assert len(refs) == 72 and len(set(refs)) == 36
    assert rm.traffic_lights == 72  # carla's get_all_landmarks_of_type('1000001')
    assert not rm.notes  # every landmark controls a movement
    assert len(rm.junctions) == 12 and all(j.signalized for j in rm.junctions.values())
    assert len(rm.movements) == 72
    assert all(m.signal_group_id for m in rm.movements.values())
    assert len(rm.signal_groups) == 36
    heads = {s for g in rm.signal_groups.values() for s in g.signal_ids}
    assert heads == set(refs)
    for g in rm.signal_groups.values():  # a head controls one approach
        assert len({rm.movements[m].approach_id for m in g.movement_ids}) == 1


def test_towns_without_xodr_signals_have_no_groups(towns):
    # Town03/05 place their lights in the Unreal level, not in the OpenDRIVE.
    for town in ("Town03", "Town05"):
        assert not towns[town].signal_groups
        assert not any(j.signalized for j in towns[town].junctions.values())


def test_reload_is_deterministic(towns, town_dir):
    from services.simulator.maps import load_map

    again = load_map(town_dir / "Town01.xodr")
    first = towns["Town01"]
    assert again.content_sha256 == first.content_sha256
    assert list(again.movements) == list(first.movements)
    assert [m.turn for m in again.movements.values()] == [m.turn for m in first.movements.values()]


def test_esmini_roads_load(esmini_maps):
    for rm in esmini_maps.values():
        check_road_map(rm)
    # roads without junctions are fine: zero junctions
    assert not esmini_maps["straight_500m.xodr"].junctions
    assert len(esmini_maps["straight_500m.xodr"].lanes) == 2  # both directions, dead ends kept


def test_esmini_two_way_connectors_recovered(esmini_maps):
    """carla's topology drops esmini's two-way connecting roads; the XML links restore them."""
    rm = esmini_maps["simple_4way_intersection.xodr"]
    assert len(rm.junctions) == 1
    turns = sorted(m.turn.value for m in rm.movements.values())
    assert turns == ["left"] * 4 + ["right"] * 4 + ["straight"] * 4
    assert any("taken from the XML" in n for n in rm.notes)
    three = esmini_maps["simple_3way_intersection.xodr"]
    assert len(three.movements) == 6


def test_esmini_light_without_validity_uses_orientation(esmini_maps):
    """A <signal orientation='+'> without <validity> controls the lanes driving +s."""
    rm = esmini_maps["fabriksgatan_traffic_lights.xodr"]
    assert len(rm.signal_groups) == 1
    (group,) = rm.signal_groups.values()
    approaches = {rm.movements[m].approach_id for m in group.movement_ids}
    assert len(approaches) == 1 and len(group.movement_ids) == 3
    assert not rm.notes
