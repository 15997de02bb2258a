"""Whole routes (issue 17, item 1): grounding lists every signalized junction a route crosses,
signal applications decide junction by junction, a junction no RSU covers is silent by absence,
and each decision epoch counts the junctions known ahead."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import parse_spec


def _corridor(offset_s: float = 0.0, placement: str = "junction", app: str = "RLVW") -> dict:
    return {"application": app, "duration_s": 45.0, "signal": {"offset_s": offset_s},
            "map": {"town": "corridor", "junction_kind": "corridor"}, "v2x": {"rsu_placement": placement}}


@pytest.fixture(scope="module")
def corridor_map(builtin_catalogue):
    return builtin_catalogue.road_map("corridor")


def test_the_route_lists_every_signalized_junction_it_crosses(builtin_grounder, corridor_map):
    rm = corridor_map
    program = builtin_grounder.ground(parse_spec(_corridor()))
    crossings = program.ego.route.crossings
    assert len(crossings) >= 2 and len({c.junction_id for c in crossings}) == len(crossings)
    assert [c.stop_bar_s_m for c in crossings] == sorted(c.stop_bar_s_m for c in crossings)
    planned = {g.id: g for g in program.signal_groups}
    seg_ids = [s.id for s in program.ego.route.segments]
    for c in crossings:
        assert rm.junctions[c.junction_id].signalized
        assert c.signal_group_id in planned and planned[c.signal_group_id].junction_id == c.junction_id
        lane = rm.lanes[c.approach_lane_id]
        assert math.dist(lane.polyline[-1], c.stop_bar_xy_m) < 1e-6  # the map's stop bar
        nxt = seg_ids[seg_ids.index(lane.id) + 1]  # the movement taken there is in the group
        assert rm.movements[nxt].signal_group_id == c.signal_group_id
        seg = program.ego.route.segments[seg_ids.index(lane.id)]
        assert c.stop_bar_s_m == pytest.approx(seg.start_s_m + seg.length_m, abs=0.01)
    assert program.ego.route.primary.junction_id == program.grounding.details["chosen_junction_id"]
    # placement "junction": an RSU at every signalized junction the ego route crosses, its own junction first
    # (issue 31: a healthy corridor must not lose the SPaT of the signals ahead)
    assert [r.junction_id for r in program.rsus] == [c.junction_id for c in crossings]
    listed = program.grounding.details["ego_crossings"]  # each crossing with its plan's group and its RSU
    assert [x["junction_id"] for x in listed] == [c.junction_id for c in crossings]
    assert [x["rsu_id"] for x in listed] == [r.id for r in program.rsus]
    chain = builtin_grounder.ground(parse_spec(_corridor(placement="chain")))
    assert {c.junction_id for c in chain.ego.route.crossings} <= {r.junction_id for r in chain.rsus}
    assert all(x["rsu_id"] for x in chain.grounding.details["ego_crossings"])
    single = builtin_grounder.ground(parse_spec(_corridor(placement="single")))  # "only one roadside unit"
    assert [r.junction_id for r in single.rsus] == [single.ego.route.crossings[0].junction_id]


def test_junction_by_junction_and_no_spat_where_no_rsu(builtin_grounder, corridor_map):
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    program = builtin_grounder.ground(parse_spec(_corridor(offset_s=6.0, placement="single")))  # one RSU only
    first, second = program.ego.route.crossings[:2]
    o = execute_paired(program, program.seed, md_source_factory=v2x_source_factory(road_map=corridor_map))
    epochs = [d for d in o.md.decisions if d.epoch]
    assert len(epochs) >= 2  # one decision epoch per junction reached
    assert epochs[0].reason == "believed green"  # covered by its RSU
    assert epochs[1].reason.startswith("no fresh SPaT")  # the next junction has no RSU: nothing heard
    # the message-driven ego drives through the uncovered red that its twin stops at: admitted, and
    # labelled silent by absence (never read as another junction's signal)
    assert o.admitted and not o.gt.failed
    assert o.md.red_entries and o.md.red_entries[0].t_s > epochs[1].t_s
    assert o.monitor.extra["failure_class"] == "silent_by_absence"
    gt_epochs = [d for d in o.gt.decisions if d.epoch]
    assert len(gt_epochs) >= 2 and not gt_epochs[1].reason.startswith("no fresh SPaT")
    covered = builtin_grounder.ground(parse_spec(_corridor(offset_s=6.0, placement="chain")))
    oc = execute_paired(covered, covered.seed, md_source_factory=v2x_source_factory(road_map=corridor_map))
    assert not oc.admitted and all(not d.reason.startswith("no fresh SPaT") for d in oc.md.decisions if d.epoch)
    # the outcome says, per epoch, how many junctions ahead the ego knew: fewer for the MD ego with
    # one RSU than for its twin (who knows every plan) and than with an RSU at every junction
    md_known = [d.known_ahead for d in epochs]
    assert all(k is not None for k in md_known) and md_known[1] == 0
    assert [d.known_ahead for d in gt_epochs][:2] == [len(program.ego.route.crossings),
                                                      len(program.ego.route.crossings) - 1]
    assert [d.known_ahead for d in oc.md.decisions if d.epoch][1] >= 1
    assert '"known_ahead"' in o.to_json_bytes().decode()


def test_junctions_known_ahead_per_decision():
    from services.simulator.apps.base import AppContext, EgoState, route_crossings
    from services.simulator.apps.signal import rlvw
    from services.simulator.info import PHASE_GREEN, PHASE_RED, BelievedSignal, EgoInformation

    ctx = AppContext(application=Application.RLVW, route_points=np.array([[0.0, 0.0], [800.0, 0.0]]),
                     conflict_xy_m=None, amber_s={}, desired_speed_mps=13.9,
                     crossings=((100.0, "a", "j1"), (350.0, "b", "j2"), (600.0, "c", "j3")))
    signals = {"a": BelievedSignal(PHASE_GREEN, 10.0, 0.1), "b": BelievedSignal(PHASE_GREEN, 10.0, 99.0),
               "c": BelievedSignal(PHASE_RED, 5.0, 0.2)}
    at_j1 = EgoState(5.0, 62.75, 13.9, 0.0, (62.75, 0.0), 0.0, 35.0, None)
    d = rlvw(EgoInformation(5.0, signals, "a", {}), at_j1, ctx, None)
    assert d.epoch and d.known_ahead == 2  # j1 and j3 fresh; j2's SPaT is stale
    at_j2 = EgoState(20.0, 312.75, 13.9, 0.0, (312.75, 0.0), 0.0, 35.0, None)
    d2 = rlvw(EgoInformation(20.0, signals, "b", {}), at_j2, ctx, d)
    assert d2.epoch and d2.known_ahead == 1 and not d2.info_valid  # j1 is behind; j2 itself unknown
    bare = AppContext(application=Application.RLVW, route_points=ctx.route_points, conflict_xy_m=None,
                      amber_s={}, desired_speed_mps=13.9)
    assert rlvw(EgoInformation(5.0, signals, "a", {}), at_j1, bare, None).known_ahead is None
    assert route_crossings(()) == ()


def test_single_junction_programs_keep_one_crossing(builtin_grounder):
    from lastv2x.core.synthetic import program_from_spec_on_straight_roads

    spec = parse_spec({"application": "RLVW"})
    assert len(program_from_spec_on_straight_roads(spec).ego.route.crossings) == 1
    program = builtin_grounder.ground(parse_spec({"application": "RLVW", "map": {"town": "signalized_4way"}}))
    assert len(program.ego.route.crossings) == 1  # nothing further on its 80 m exit
