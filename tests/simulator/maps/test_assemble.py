"""The structural rules on a hand-built segment network (no carla needed)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from services.simulator.maps import MapError, Turn
from services.simulator.maps.assemble import assemble
from services.simulator.maps.raw import RawNetwork, RawSegment, RawSignal


def seg(key, pts, junction=None):
    pts = np.asarray(pts, dtype=float)
    d = np.diff(pts, axis=0)
    heads = np.arctan2(d[:, 1], d[:, 0])
    heads = np.append(heads, heads[-1])
    return RawSegment(key, junction, pts, heads, 3.5, 13.9, True, (0.0, 0.0))


def quarter(cx, cy, r, a0, a1, n=12):
    t = np.linspace(a0, a1, n)
    return np.column_stack([cx + r * np.cos(t), cy + r * np.sin(t)])


@pytest.fixture()
def plus_network() -> RawNetwork:
    """W/E and S/N arms around junction 7 at the origin; W arm has two sections."""
    segs = [
        seg((1, 0, -1), [[-100, 0], [-50, 0]]),
        seg((1, 1, -1), [[-50, 0], [-10, 0]]),
        seg((2, 0, -1), [[10, 0], [100, 0]]),
        seg((3, 0, -1), [[0, -100], [0, -10]]),
        seg((4, 0, -1), [[0, 10], [0, 100]]),
        seg((10, 0, -1), [[-10, 0], [10, 0]], junction=7),  # W -> E straight
        seg((11, 0, -1), [[0, -10], [0, 10]], junction=7),  # S -> N straight
        seg((12, 0, -1), quarter(-10, 10, 10, -np.pi / 2, 0.0), junction=7),  # W -> N left
    ]
    succ = {(1, 0, -1): ((1, 1, -1),), (1, 1, -1): ((10, 0, -1), (12, 0, -1)),
            (10, 0, -1): ((2, 0, -1),), (12, 0, -1): ((4, 0, -1),),
            (3, 0, -1): ((11, 0, -1),), (11, 0, -1): ((4, 0, -1),)}
    signals = [
        RawSignal("A", 10, 0.5, ((-1, -1),)),  # on a connecting road
        RawSignal("E", 10, 0.5, ((-1, -1),)),  # a second head on the same movement
        RawSignal("B", 12, 0.5, ((-1, -1),)),
        RawSignal("C", 3, 89.0, ((-1, -1),)),  # on the approach, 1 m before the stop bar
        RawSignal("F", 3, 5.0, ((-1, -1),)),  # 85 m upstream: still this approach
        RawSignal("X", 2, 50.0, ((-1, -1),)),  # on an exit lane: controls nothing
    ]
    ranges = {1: [(0.0, 50.0), (50.0, 90.0)], 2: [(0.0, 90.0)], 3: [(0.0, 90.0)],
              4: [(0.0, 90.0)], 10: [(0.0, 20.0)], 11: [(0.0, 20.0)], 12: [(0.0, 15.7)]}
    return RawNetwork({s.key: s for s in segs}, succ, signals, ranges)


def test_lanes_movements_approaches(plus_network):
    rm = assemble(plus_network, "plus", "0" * 64)
    assert sorted(rm.lanes) == ["r1.s0.l-1", "r2.s0.l-1", "r3.s0.l-1", "r4.s0.l-1"]
    west = rm.lanes["r1.s0.l-1"]  # two linear sections chained into one lane
    assert west.length_m == pytest.approx(90.0)
    (j,) = rm.junctions.values()
    assert j.id == "j7" and len(j.movements) == 3
    turns = {(m.from_lane_id, m.to_lane_id): m.turn for m in j.movements}
    assert turns == {("r1.s0.l-1", "r2.s0.l-1"): Turn.STRAIGHT,
                     ("r1.s0.l-1", "r4.s0.l-1"): Turn.LEFT,
                     ("r3.s0.l-1", "r4.s0.l-1"): Turn.STRAIGHT}
    assert len(j.approaches) == 2
    bar = next(a for a in j.approaches if "r1.s0.l-1" in a.incoming_lane_ids).stop_bars[0]
    assert bar.xy == (-10.0, 0.0) and bar.s_m == pytest.approx(90.0)
    assert set(west.successor_ids) == {m.id for m in rm.movements_from(west.id)}
    assert set(rm.lanes["r4.s0.l-1"].predecessor_ids) == {
        m.id for m in j.movements if m.to_lane_id == "r4.s0.l-1"}


def test_signal_grouping_rule(plus_network):
    rm = assemble(plus_network, "plus", "0" * 64)
    by_move = {(m.from_lane_id[:2], m.to_lane_id[:2]): m for m in rm.movements.values()}
    straight_we = by_move[("r1", "r2")]
    group = rm.signal_groups[straight_we.signal_group_id]
    assert group.signal_ids == ("A", "E")  # two heads on one movement: one group
    assert rm.signal_groups[by_move[("r1", "r4")].signal_group_id].signal_ids == ("B",)
    assert rm.signal_groups[by_move[("r3", "r4")].signal_group_id].signal_ids == ("C", "F")
    assert len(rm.signal_groups) == 3
    assert rm.notes == ("1 traffic-light landmark(s) control no movement",)


def test_conflict_kinds(plus_network):
    rm = assemble(plus_network, "plus", "0" * 64)
    (j,) = rm.junctions.values()
    ids = {(m.from_lane_id[:2], m.to_lane_id[:2]): m.id for m in j.movements}
    kinds = {frozenset((c.movement_a, c.movement_b)): c for c in j.conflicts}
    cross = kinds[frozenset((ids[("r1", "r2")], ids[("r3", "r4")]))]
    assert cross.kind == "crossing" and np.allclose(cross.xy, (0.0, 0.0))
    assert cross.s_a_m == pytest.approx(10.0) and cross.s_b_m == pytest.approx(10.0)
    merge = kinds[frozenset((ids[("r1", "r4")], ids[("r3", "r4")]))]
    assert merge.kind == "merging"
    # diverging from the same lane is not a conflict
    assert frozenset((ids[("r1", "r2")], ids[("r1", "r4")])) not in kinds
    assert len(j.conflicts) == 2


def test_far_upstream_light_is_ignored(plus_network):
    far = RawSignal("G", 1, 1.0, ((-1, -1),))  # 89 m + the next section: 89 m < 100 m
    net = RawNetwork(plus_network.segments, plus_network.successors, [far],
                     plus_network.section_ranges)
    assert assemble(net, "p", "0" * 64).signal_groups  # within 100 m of the stop bar
    longer = dict(plus_network.segments)
    longer[(1, 0, -1)] = seg((1, 0, -1), [[-200, 0], [-50, 0]])
    net = RawNetwork(longer, plus_network.successors, [far], plus_network.section_ranges)
    assert not assemble(net, "p", "0" * 64).signal_groups  # ~190 m away: not this junction


def test_road_map_pickles(plus_network):
    rm = assemble(plus_network, "plus", "0" * 64)
    back = pickle.loads(pickle.dumps(rm))
    assert back.summary() == rm.summary()
    assert np.array_equal(back.lanes["r1.s0.l-1"].polyline, rm.lanes["r1.s0.l-1"].polyline)
    with pytest.raises(TypeError):
        back.lanes["x"] = None  # read-only mappings


def test_empty_network_is_a_map_error():
    with pytest.raises(MapError, match="no drivable"):
        assemble(RawNetwork({}, {}, [], {}), "empty", "0" * 64)
