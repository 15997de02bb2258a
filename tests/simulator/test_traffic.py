"""Physical properties of the traffic core."""

from __future__ import annotations

import numpy as np
import pytest

from lastv2x.core.spec import (
    Agent,
    Behaviour,
    DriverProfile,
    Ego,
    MapQuery,
    ScenarioSpec,
    SignalPlan,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.routes import RouteTable, resample, shared_geometry
from services.simulator.traffic import IDM, EgoControl, Scene, initial_state, leaders, step


def _run(programs, obey, steps, control=None):  # noqa: ANN001
    scene = Scene.from_programs(programs, obey)
    st = initial_state(scene)
    ctl = control or EgoControl.nominal(len(programs))
    hist = [st]
    for _ in range(steps):
        st = step(scene, st, ctl)
        hist.append(st)
    return scene, hist


def _lead_stopped_program(gap: float, profile=DriverProfile.NORMAL):  # noqa: ANN001
    brake = Behaviour(kind="hard_brake", at_time_s=0.0, decel_mps2=9.0)  # an obstacle from t = 0
    spec = ScenarioSpec(application="FCW", map=MapQuery(signalized=False), ego=Ego(profile=profile),
                        agents=(Agent(id="lead", role="lead", gap_m=gap, speed_mps=0.5, behaviour=brake),))
    return program_from_spec_on_straight_roads(spec)


@pytest.mark.parametrize("profile", list(DriverProfile))
@pytest.mark.parametrize("gap", [60.0, 120.0])
def test_idm_stops_before_a_stopped_obstacle_and_speed_never_negative(profile, gap):
    p = _lead_stopped_program(gap, profile)
    scene, hist = _run([p], [True], 600)
    s = np.array([h.s[0] for h in hist])
    v = np.array([h.v[0] for h in hist])
    assert (v >= 0.0).all()
    assert (np.diff(s[:, 0]) >= -1e-12).all(), "vehicles never move backwards"
    bumper_gap = s[:, 1] - s[:, 0] - (scene.length_m[0, 0] + scene.length_m[0, 1]) / 2
    assert bumper_gap.min() > 0.5
    assert v[-1, 0] < 0.05, "the follower comes to rest behind the obstacle"
    assert bumper_gap[-1] == pytest.approx(IDM.PROFILES[profile].min_gap_m, abs=1.0)


def test_background_vehicle_stops_at_the_stop_bar_on_red():
    # ego group red from t = 3 s; the lead (background driver) must stop at the bar and wait
    spec = ScenarioSpec(application="RLVW", signal=SignalPlan(offset_s=24.0),
                        agents=(Agent(id="lead", role="lead", gap_m=25.0),))
    p = program_from_spec_on_straight_roads(spec)
    scene, hist = _run([p], [False], 400)
    bar = p.agents[0].route.stop_bar_s_m
    front = np.array([h.s[0, 1] for h in hist]) + p.agents[0].length_m / 2
    assert front.max() <= bar + 1e-9, "the lead never crosses on red"
    assert bar - front[-1] < 1.0 and hist[-1].v[0, 1] < 0.05
    # the ego (a signal-application ego without commands) ignores the signal but not its leader
    gap = hist[-1].s[0, 1] - hist[-1].s[0, 0] - 4.5
    assert gap > 1.0 and hist[-1].v[0, 0] < 0.05


def test_commanded_ego_stop_ends_at_the_bar_at_comfortable_deceleration():
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", ego=Ego(start_distance_m=40.0)))
    ctl = EgoControl(np.array([True]), np.array([np.nan]), np.array([0.0]))
    scene, hist = _run([p], [False], 300, ctl)
    front = hist[-1].s[0, 0] + p.ego.length_m / 2
    assert 0.0 < p.ego.route.stop_bar_s_m - front < 1.0
    assert hist[-1].v[0, 0] == 0.0
    assert min(h.a[0, 0] for h in hist) >= -4.0, "v^2/(2d) from 40 m at 13.9 m/s is ~2.5 m/s^2"


def test_hard_brake_behaviour_and_event_then_standstill():
    brake = Behaviour(kind="hard_brake", at_time_s=2.0, decel_mps2=6.0)
    spec = ScenarioSpec(application="EEBL", map=MapQuery(signalized=False),
                        agents=(Agent(id="lead", role="lead", gap_m=80.0, behaviour=brake),))
    p = program_from_spec_on_straight_roads(spec)
    scene, hist = _run([p], [True], 200)
    a = np.array([h.a[0, 1] for h in hist])
    v = np.array([h.v[0, 1] for h in hist])
    t = np.array([h.t_s for h in hist])
    assert (a[(t > 2.05) & (v > 0.1)] == pytest.approx(-6.0))
    assert v[-1] == 0.0 and hist[-1].braked_out[0, 1]


def test_arrival_plan_puts_the_agent_on_the_conflict_point_on_time():
    spec = ScenarioSpec(application="IMA", map=MapQuery(signalized=False),
                        agents=(Agent(id="x", role="cross", arrival_offset_s=1.5, speed_mps=8.0),))
    p = program_from_spec_on_straight_roads(spec)
    scene, hist = _run([p], [True], 400)
    c = p.agents[0].route.conflict_s_m
    t_hit = next(h.t_s for h in hist if h.s[0, 1] >= c)
    assert t_hit == pytest.approx(p.agents[0].arrive_conflict_at_s, abs=0.06)


def test_batch_rows_equal_single_runs():
    a = _lead_stopped_program(50.0)
    b = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", map=MapQuery(busy=True)))
    _, single_a = _run([a], [True], 120)
    _, single_b = _run([b], [False], 120)
    _, batch = _run([a, b], [True, False], 120)
    na, nb = len(a.vehicles), len(b.vehicles)
    assert np.array_equal(batch[-1].s[0, :na], single_a[-1].s[0])
    assert np.array_equal(batch[-1].s[1, :nb], single_b[-1].s[0])
    assert not batch[-1].alive[0, na:].any(), "padding rows stay dead"


def test_leaders_only_along_shared_geometry():
    spec = ScenarioSpec(application="RLVW", map=MapQuery(busy=True),
                        agents=(Agent(id="lead", role="lead", gap_m=30.0),))
    p = program_from_spec_on_straight_roads(spec)
    scene = Scene.from_programs([p], [False])
    st = initial_state(scene)
    gap, _v = leaders(scene, st)
    ids = scene.vehicle_ids[0]
    lead = ids.index("lead")
    assert gap[0, 0] == pytest.approx(30.0 - 4.5)
    assert np.isinf(gap[0, lead]), "nobody ahead of the lead on its lane"
    for i in range(len(ids)):  # everyone's leader shares its approach lane
        if np.isfinite(gap[0, i]):
            assert gap[0, i] > 0


def test_route_table_lookup_matches_the_polyline():
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="LTA", ego=Ego(maneuver="left"),
                                                         agents=(Agent(id="o", role="opposing"),)))
    r = p.ego.route
    pts, length = resample(r.points_xy_m)
    assert length == pytest.approx(r.length_m)
    table = RouteTable.build([[r]], 1)
    s = np.array([[0.0]]) + np.linspace(0, length, 57)[None, :1]
    xy, _h = table.lookup(s)
    assert np.allclose(xy[0, 0], r.points_xy_m[0])
    off, lo, hi = shared_geometry([r, p.agents[0].route], 2)
    assert np.isnan(off).all(), "an opposing route shares no lane with the ego"


def _race_grid():  # bench/race_grid.py: the signalized grid of the traffic race
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import race_grid

    return race_grid


@pytest.mark.parametrize("seed", [0, 1])
def test_lane_search_finds_the_all_pairs_leaders(seed: int) -> None:
    """The per-lane sorted leader search (many vehicles) against the all-pairs one, on the race's
    signalized grid, every step of a congested run: the same leaders, the same gaps to 1e-6 m
    (all-pairs rounds the offset between two routes' arc lengths to 1e-6 m). Routes turn at most once, so two
    routes share at most one run (where all-pairs keeps only the longest)."""
    from services.simulator.traffic import lane_leaders

    prog, _ = _race_grid().grid_program(120, seed, max_turns=1)
    # no respawn: a vehicle put back at its start keeps its perceived history ahead (a ghost both
    # searches may see differently; the race's respawn is a bench device)
    pairs = Scene.from_programs([prog], [True], lane_search=False)
    lane = Scene.from_programs([prog], [True], lane_search=True)
    assert lane.seg_key is not None and pairs.seg_key is None and lane.offset.shape[1] == 1
    st = initial_state(pairs)
    ctl = EgoControl.nominal(1)
    found = 0
    for _ in range(400):
        g0, v0 = leaders(pairs, st)
        g1, v1 = lane_leaders(lane, st)
        fin = np.isfinite(g0)
        assert np.array_equal(fin, np.isfinite(g1))
        assert np.allclose(g1[fin], g0[fin], rtol=0.0, atol=1e-6)
        assert np.array_equal(v1[fin], v0[fin])
        found += int(fin.sum())
        st = step(pairs, st, ctl, pairs.signals.phase_at(st.t_s))
    assert found > 120 * 400 * 0.5  # most vehicles follow someone most of the time
