"""ScenarioProgram: the synthetic builder honours the spec; the model validates and round-trips."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.program import ScenarioProgram, program_from_json, program_to_json
from lastv2x.core.spec import (
    Agent,
    Anchor,
    Ego,
    Fault,
    Maneuver,
    MapQuery,
    ScenarioSpec,
    SignalPlan,
)
from lastv2x.core.synthetic import (
    SYNTH_GROUP_EW,
    SYNTH_GROUP_NS,
    program_from_spec_on_straight_roads,
)


def _route_xy(route, s):  # noqa: ANN001
    p = np.asarray(route.points_xy_m)
    cs = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))))
    return np.array([np.interp(s, cs, p[:, 0]), np.interp(s, cs, p[:, 1])])


def test_ego_start_distance_is_front_bumper_to_stop_bar():
    spec = ScenarioSpec(application="RLVW", ego=Ego(start_distance_m=87.0, speed_mps=11.0))
    p = program_from_spec_on_straight_roads(spec)
    front = p.ego.start_s_m + p.ego.length_m / 2
    assert p.ego.route.stop_bar_s_m - front == pytest.approx(87.0)
    assert p.ego.initial_speed_mps == p.ego.desired_speed_mps == 11.0
    assert p.ego_group_id == SYNTH_GROUP_NS


def test_lead_gap_is_centre_to_centre_on_the_same_route():
    spec = ScenarioSpec(application="FCW", agents=(Agent(id="lead", role="lead", gap_m=33.0),))
    p = program_from_spec_on_straight_roads(spec)
    lead = p.agents[0]
    assert [s.id for s in lead.route.segments] == [s.id for s in p.ego.route.segments]
    assert lead.start_s_m - p.ego.start_s_m == pytest.approx(33.0)


@pytest.mark.parametrize("offset", [-3.0, 0.0, 2.5])
@pytest.mark.parametrize("maneuver,role", [(Maneuver.STRAIGHT, "cross"), (Maneuver.LEFT, "opposing")])
def test_conflict_agent_arrives_offset_after_the_constant_speed_ego(offset, maneuver, role):
    spec = ScenarioSpec(application="IMA" if role == "cross" else "LTA", ego=Ego(maneuver=maneuver),
                        agents=(Agent(id="a", role=role, arrival_offset_s=offset, speed_mps=9.0),))
    p = program_from_spec_on_straight_roads(spec)
    ego, a = p.ego, p.agents[0]
    t_e = (ego.route.conflict_s_m - ego.start_s_m) / ego.initial_speed_mps
    assert a.arrive_conflict_at_s == pytest.approx(t_e + offset)
    assert (a.route.conflict_s_m - a.start_s_m) / 9.0 == pytest.approx(t_e + offset)
    # the two conflict arcs name the same point in the plane
    assert np.allclose(_route_xy(ego.route, ego.route.conflict_s_m), _route_xy(a.route, a.route.conflict_s_m))


def test_agent_that_would_arrive_before_t0_is_a_failed_precondition():
    spec = ScenarioSpec(application="IMA", agents=(Agent(id="a", role="cross", arrival_offset_s=-20.0),))
    with pytest.raises(FailedPrecondition):
        program_from_spec_on_straight_roads(spec)


def test_signal_plan_is_the_spec_plan_and_the_timeline_cross_group():
    plan = SignalPlan(cycle_s=80.0, green_s=35.0, amber_s=4.0, all_red_s=2.0, offset_s=11.0)
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", signal=plan))
    ns, ew = p.group(SYNTH_GROUP_NS), p.group(SYNTH_GROUP_EW)
    assert (ns.cycle_s, ns.green_s, ns.amber_s, ns.offset_s) == (80.0, 35.0, 4.0, 11.0)
    assert ew.green_s == pytest.approx(80.0 - 35.0 - 8.0 - 4.0)


def test_unsignalized_map_has_no_groups_and_faults_resolve():
    spec = ScenarioSpec(application="IMA", map=MapQuery(signalized=False),
                        agents=(Agent(id="x", role="cross"),),
                        faults=(Fault(name="s", operator="suppress_sender", stream="BSM", sender="x",
                                      duration_s=10.0),))
    p = program_from_spec_on_straight_roads(spec)
    assert p.signal_groups == () and p.ego.route.signal_group_id is None
    assert p.faults[0].sender_id == "x" and p.faults[0].nominal_window_s == (0.0, 10.0)


def test_rsu_sender_and_cross_group_resolve_to_ids():
    spec = ScenarioSpec(application="RLVW", faults=(
        Fault(name="f", operator="freeze", stream="SPAT", sender="rsu",
              anchor=Anchor(kind="signal_event", event="amber_onset", group="cross", offset_s=-0.5)),
        Fault(name="m", operator="map_misassociation", stream="MAP")))
    p = program_from_spec_on_straight_roads(spec)
    assert p.faults[0].sender_id == "rsu0" and p.faults[0].sender_ids == ("rsu0",)
    assert p.faults[0].anchor_group_id == SYNTH_GROUP_EW
    assert p.faults[1].target_group_id == SYNTH_GROUP_EW


def test_busy_background_is_deterministic_and_json_round_trips():
    spec = ScenarioSpec(application="RLVW", seed=7, map=MapQuery(busy=True))
    a = program_from_spec_on_straight_roads(spec)
    b = program_from_spec_on_straight_roads(spec)
    assert program_to_json(a) == program_to_json(b)
    assert len([v for v in a.agents if v.role == "background"]) == 8
    assert program_from_json(program_to_json(a)) == a


def test_model_rejects_unknown_references():
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW"))
    data = p.model_dump(mode="json")
    data["signal_groups"] = []
    with pytest.raises(ValidationError, match="unknown signal group"):
        ScenarioProgram.model_validate(data)
    data = p.model_dump(mode="json")
    data["ego"]["start_s_m"] = 1e6
    with pytest.raises(ValidationError, match="beyond the end"):
        ScenarioProgram.model_validate(data)


def test_route_length_and_turn_geometry():
    for m in Maneuver:
        p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", ego=Ego(maneuver=m)))
        r = p.ego.route
        assert math.isclose(r.length_m, sum(s.length_m for s in r.segments), rel_tol=1e-9)
        end = np.asarray(r.points_xy_m[-1])
        if m is Maneuver.STRAIGHT:
            assert end[1] > 0 and abs(end[0]) < 2
        elif m is Maneuver.LEFT:
            assert end[0] < 0
        else:
            assert end[0] > 0 and abs(end[1]) < 2
