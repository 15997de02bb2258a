"""Adjudication rules (Appendix D), checked on hand-placed states."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lastv2x.core.spec import Agent, MapQuery, ScenarioSpec, SignalPlan
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.adjudicate import Adjudicator
from services.simulator.traffic import Scene, initial_state

SPEC_AGENTS = (Agent(id="lead", role="lead", gap_m=40.0), Agent(id="bg", role="background"))


def _world(app: str):
    spec = ScenarioSpec(application=app, map=MapQuery(signalized=False), agents=SPEC_AGENTS)
    p = program_from_spec_on_straight_roads(spec)
    scene = Scene.from_programs([p], [True])
    return p, scene, Adjudicator(scene, [p])


def _place(scene, st, xy, v):  # noqa: ANN001
    """A state with vehicles at xy (N, 2) and speeds v (N,), all alive."""
    return replace(st, t_s=1.0, step=20, xy=np.asarray(xy, float)[None], v=np.asarray(v, float)[None],
                   s=st.s.copy())


@pytest.mark.parametrize("app,counts", [("FCW", False), ("EEBL", False), ("RLVW", True), ("IMA", True)])
def test_a_vehicle_striking_the_ego_from_behind_counts_only_outside_fcw_eebl(app, counts):
    p, scene, adj = _world(app)
    st = initial_state(scene)
    ex, ey = st.xy[0, 0]
    st = _place(scene, st, [(ex, ey), (ex, ey + 200.0), (ex, ey - 3.0)], [0.0, 10.0, 8.0])
    adj.observe(st)
    assert (adj.outcome(0).collision is not None) == counts


@pytest.mark.parametrize("app", ["FCW", "EEBL"])
def test_ego_striking_a_stopped_vehicle_ahead_is_a_collision(app):
    p, scene, adj = _world(app)
    st = initial_state(scene)
    ex, ey = st.xy[0, 0]
    st = _place(scene, st, [(ex, ey), (ex, ey + 3.5), (ex, ey - 50.0)], [6.0, 0.0, 0.0])
    adj.observe(st)
    out = adj.outcome(0)
    assert out.collision is not None and out.collision.other_id == "lead" and out.failed
    assert out.min_agent_distance_m == pytest.approx(3.5)


def test_a_stopped_ego_touching_a_stopped_vehicle_is_no_collision():
    p, scene, adj = _world("RLVW")
    st = initial_state(scene)
    ex, ey = st.xy[0, 0]
    adj.observe(_place(scene, st, [(ex, ey), (ex, ey + 4.0), (ex, ey - 50.0)], [0.2, 0.3, 0.0]))
    assert adj.outcome(0).collision is None


def test_traffic_off_the_ego_route_is_ignored():
    p, scene, adj = _world("IMA")
    st = initial_state(scene)
    ex, ey = st.xy[0, 0]
    # adjacent lane, 3.5 m to the side: centre distance 3.6 m, yet not on the ego route
    adj.observe(_place(scene, st, [(ex, ey), (ex - 3.5, ey + 1.0), (ex, ey - 50.0)], [10.0, 10.0, 0.0]))
    out = adj.outcome(0)
    assert out.collision is None and out.closest_approach_m is None


def test_red_entry_under_true_red_only_and_stops_counted():
    from services.simulator.paired import execute_paired
    # red from t = 1 s to 31 s; a ground-truth RLVW ego stops once
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", signal=SignalPlan(offset_s=29.0)))
    out = execute_paired(p)
    assert out.gt.red_entries == () and out.gt.stops == 1 and out.gt.stop_bar_time_s is None
    # green throughout the approach: entry on green, no stop, travel time recorded
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", signal=SignalPlan(offset_s=0.0)))
    out = execute_paired(p)
    assert out.gt.red_entries == () and out.gt.stops == 0 and out.gt.travel_time_s is not None
    assert out.gt.stop_bar_time_s == pytest.approx(120.0 / 13.9, abs=0.01)
