"""Application rules as pure functions of belief + ego state (Appendix D, Table 6)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lastv2x.core.catalogue import Application, stopping_distance_m
from lastv2x.core.spec import Agent, Ego, MapQuery, ScenarioSpec
from lastv2x.core.synthetic import SYNTH_GROUP_NS, program_from_spec_on_straight_roads
from services.simulator.apps import APPS, Action, EgoState, register
from services.simulator.apps.conflict import FCW_BRAKE_MPS2
from services.simulator.info import (
    PHASE_AMBER,
    PHASE_GREEN,
    PHASE_RED,
    BelievedSignal,
    EEBLEvent,
    EgoInformation,
    Track,
)
from services.simulator.paired import app_context

V = 13.9


def _ctx(spec: ScenarioSpec):
    p = program_from_spec_on_straight_roads(spec)
    return p, app_context(p)


def _ego(p, d_bar: float, v: float = V, t: float = 5.0) -> EgoState:  # noqa: ANN001
    s = p.ego.route.stop_bar_s_m - d_bar - p.ego.length_m / 2
    c = p.ego.route.conflict_s_m
    y = -10.0 - d_bar - 2.25
    return EgoState(t, s, v, 0.0, (1.75, y), math.pi / 2, d_bar, None if c is None else c - s)


def _info(phase: int | None = None, ttc: float = 2.0, aoi: float = 0.0, tracks=(), events=()):  # noqa: ANN001
    sig = {} if phase is None else {SYNTH_GROUP_NS: BelievedSignal(phase, ttc, aoi, True)}
    return EgoInformation(5.0, sig, SYNTH_GROUP_NS if phase is not None else None,
                          {t.vehicle_id: t for t in tracks}, tuple(events))


def test_registry_has_six_and_rejects_duplicates():
    assert set(APPS) == set(Application)
    with pytest.raises(ValueError, match="duplicate"):
        register(Application.RLVW, APPS[Application.RLVW].decide)


@pytest.mark.parametrize("phase,ttc,want", [
    (PHASE_RED, 20.0, Action.STOP),
    (PHASE_AMBER, 1.0, Action.STOP),  # cannot reach the bar (~3 s) before amber ends
    (PHASE_AMBER, 3.05, Action.PROCEED),  # reaches the bar in 2.98 s
    (PHASE_GREEN, 0.5, Action.PROCEED),
])
def test_rlvw_epoch_rule(phase, ttc, want):
    p, ctx = _ctx(ScenarioSpec(application="RLVW"))
    rlvw = APPS[Application.RLVW].decide
    d = stopping_distance_m(V) - 0.1
    dec = rlvw(_info(phase, ttc), _ego(p, d), ctx, None)
    assert dec.action is want and dec.epoch and dec.committed
    # before the epoch nothing is decided; after it the decision latches whatever the belief says
    early = rlvw(_info(PHASE_RED, 20.0), _ego(p, d + 10.0), ctx, None)
    assert early.action is Action.PROCEED and not early.committed
    later = rlvw(_info(PHASE_GREEN if want is Action.STOP else PHASE_RED, 5.0), _ego(p, d - 5.0), ctx, dec)
    assert later.action is want and not later.epoch


def test_rlvw_stale_or_absent_spat_falls_back_to_the_nominal_controller():
    p, ctx = _ctx(ScenarioSpec(application="RLVW"))
    rlvw = APPS[Application.RLVW].decide
    d = stopping_distance_m(V) - 0.1
    for info in (_info(None), _info(PHASE_RED, 20.0, aoi=ctx.freshness_budget_s + 0.05)):
        dec = rlvw(info, _ego(p, d), ctx, None)
        assert dec.action is Action.PROCEED and not dec.info_valid and dec.epoch
    fresh = rlvw(_info(PHASE_RED, 20.0, aoi=ctx.freshness_budget_s - 0.05), _ego(p, d), ctx, None)
    assert fresh.action is Action.STOP


def test_rlvw_latched_stop_released_only_by_fresh_green_at_standstill():
    p, ctx = _ctx(ScenarioSpec(application="RLVW"))
    rlvw = APPS[Application.RLVW].decide
    stop = rlvw(_info(PHASE_RED, 20.0), _ego(p, 30.0), ctx, None)
    assert rlvw(_info(PHASE_GREEN, 20.0), _ego(p, 10.0, v=5.0), ctx, stop).action is Action.STOP
    assert rlvw(_info(None), _ego(p, 0.5, v=0.0), ctx, stop).action is Action.STOP
    assert rlvw(_info(PHASE_GREEN, 20.0), _ego(p, 0.5, v=0.0), ctx, stop).action is Action.PROCEED


def test_glosa_stop_ends_when_the_light_turns_green_before_the_standstill():
    """GLOSA advises: a driver told to stop who sees (fresh SPaT) the green come while still rolling drives on, as a
    driver without V2X does; RLVW's warning holds to the standstill (above). Stale SPaT releases nothing."""
    p, ctx = _ctx(ScenarioSpec(application="GLOSA"))
    glosa = APPS[Application.GLOSA].decide
    stop = glosa(_info(PHASE_RED, 20.0), _ego(p, 30.0), ctx, None)
    assert stop.action is Action.STOP
    rolling = glosa(_info(PHASE_GREEN, 20.0), _ego(p, 10.0, v=5.0), ctx, stop)
    assert rolling.action is Action.PROCEED and rolling.reason == "believed green before the stop"
    stale = _info(PHASE_GREEN, 20.0, aoi=ctx.freshness_budget_s + 0.5)
    assert glosa(stale, _ego(p, 10.0, v=5.0), ctx, stop).action is Action.STOP


def test_glosa_advises_arrival_on_the_next_green():
    p, ctx = _ctx(ScenarioSpec(application="GLOSA"))
    glosa = APPS[Application.GLOSA].decide
    dec = glosa(_info(PHASE_RED, 10.0), _ego(p, 110.0), ctx, None)
    assert dec.action is Action.ADVISE and dec.target_speed_mps == pytest.approx(110.0 / 11.0)
    far = glosa(_info(PHASE_GREEN, 30.0), _ego(p, 110.0), ctx, None)
    assert far.action is Action.ADVISE and far.target_speed_mps == pytest.approx(ctx.desired_speed_mps)


def test_glosa_keeps_its_advisory_across_a_gap_in_spat_until_the_bar_it_was_made_for():
    """Between a corridor's RSUs the SPaT ages out; the green onset the advisory aimed at is still predicted, so the
    advisory stands until the ego reaches that bar or fresh SPaT returns (issue 37 item 2); another bar, none."""
    p, ctx = _ctx(ScenarioSpec(application="GLOSA"))
    glosa = APPS[Application.GLOSA].decide
    advice = glosa(_info(PHASE_RED, 10.0), _ego(p, 110.0), ctx, None)
    assert advice.action is Action.ADVISE and advice.bar_s_m is not None
    gap = _ego(p, 100.0, t=5.7)  # the same bar, 10 m on
    for silent in (_info(None), _info(PHASE_RED, 9.3, aoi=ctx.freshness_budget_s + 0.5)):
        held = glosa(silent, gap, ctx, advice)
        assert held.action is Action.ADVISE and held.target_speed_mps == advice.target_speed_mps and held.t_s == 5.7
    elsewhere = glosa(_info(None), gap, ctx, dataclasses.replace(advice, bar_s_m=advice.bar_s_m - 250.0))
    assert elsewhere.action is Action.PROCEED and elsewhere.reason == "no fresh SPaT: no advisory"
    assert glosa(_info(None), gap, ctx, None).action is Action.PROCEED


def _fcw_world():
    spec = ScenarioSpec(application="FCW", map=MapQuery(signalized=False),
                        agents=(Agent(id="lead", role="lead", gap_m=20.0),))
    return _ctx(spec)


def test_fcw_brakes_on_a_closing_track_ahead_only():
    p, ctx = _fcw_world()
    fcw = APPS[Application.FCW].decide
    ego = _ego(p, 80.0)
    x, y = ego.xy_m
    ahead = Track("lead", (x, y + 20.0), 2.0, math.pi / 2, -6.0, 0.1)  # gap 15.5 m, closing 11.9 m/s
    behind = Track("tail", (x, y - 20.0), 30.0, math.pi / 2, 0.0, 0.1)
    oncoming = Track("opp", (x - 3.5, y + 20.0), 13.9, -math.pi / 2, 0.0, 0.1)
    dec = fcw(_info(tracks=[ahead]), ego, ctx, None)
    assert dec.action is Action.BRAKE and dec.brake_mps2 == FCW_BRAKE_MPS2 and dec.epoch
    for tr in (behind, oncoming):
        assert fcw(_info(tracks=[tr]), ego, ctx, None).action is Action.PROCEED
    stale = Track("lead", (x, y + 20.0), 2.0, math.pi / 2, -6.0, ctx.freshness_budget_s + 0.1)
    assert fcw(_info(tracks=[stale]), ego, ctx, None).action is Action.PROCEED


def test_eebl_brakes_on_events_ahead_including_relayed_and_ignores_behind():
    p, ctx = _ctx(ScenarioSpec(application="EEBL", agents=(Agent(id="lead", role="lead"),)))
    eebl = APPS[Application.EEBL].decide
    ego = _ego(p, 80.0)
    x, y = ego.xy_m
    relayed = EEBLEvent("lead", (x, y + 120.0), 6.0, 0.2, relayed=True, hops=1)
    behind = EEBLEvent("tail", (x, y - 30.0), 6.0, 0.1)
    assert eebl(_info(events=[relayed]), ego, ctx, None).action is Action.BRAKE
    assert eebl(_info(events=[behind]), ego, ctx, None).action is Action.PROCEED
    far = EEBLEvent("lead", (x, y + 400.0), 6.0, 0.1)
    assert eebl(_info(events=[far]), ego, ctx, None).action is Action.PROCEED


def test_an_ego_past_its_route_end_still_reads_events_ahead():
    """A run longer than its route (fresh27's f27_010: 40 s at 8.8 m/s on a 319 m route) carries the ego past the
    route's last point; locating a point there searches the last segment (it raised IndexError)."""
    p, ctx = _ctx(ScenarioSpec(application="EEBL", agents=(Agent(id="lead", role="lead"),)))
    end = ctx.route_points[-1]
    s, lat = ctx.locate(float(end[0]), float(end[1]) + 5.0, ctx._sl[-1] + 200.0)
    assert s == pytest.approx(ctx._sl[-1]) and lat == pytest.approx(5.0, abs=1e-6)
    beyond = dataclasses.replace(_ego(p, 80.0), s_m=ctx._sl[-1] + 50.0, xy_m=(float(end[0]), float(end[1]) + 50.0))
    event = EEBLEvent("lead", (float(end[0]), float(end[1]) + 120.0), 6.0, 0.1)
    assert APPS[Application.EEBL].decide(_info(events=[event]), beyond, ctx, None).action is Action.PROCEED


def test_ima_yields_to_cross_track_due_within_the_window():
    p, ctx = _ctx(ScenarioSpec(application="IMA", map=MapQuery(signalized=False),
                               agents=(Agent(id="x", role="cross"),)))
    ima = APPS[Application.IMA].decide
    ego = _ego(p, stopping_distance_m(V) - 0.2)
    cx, cy = ctx.conflict_xy_m
    coming = Track("x", (cx - 40.0, cy), 13.9, 0.0, 0.0, 0.1)  # due in ~2.9 s
    gone = Track("x", (cx + 10.0, cy), 13.9, 0.0, 0.0, 0.1)
    late = Track("x", (cx - 200.0, cy), 13.9, 0.0, 0.0, 0.1)  # due in ~14 s
    dec = ima(_info(tracks=[coming]), ego, ctx, None)
    assert dec.action is Action.YIELD and dec.epoch
    assert ima(_info(tracks=[gone]), ego, ctx, None).action is Action.PROCEED
    assert ima(_info(tracks=[late]), ego, ctx, None).action is Action.PROCEED
    assert ima(_info(tracks=[]), _ego(p, 200.0), ctx, None).reason == "before the decision epoch"


def test_ima_does_not_yield_to_the_ego_s_own_stream():
    """A follower (or leader) on the ego's lane heading for the conflict point crosses nothing: before, IMA yielded to
    the ego's own follower, which then struck it (issue 37 item 3, found with the phantom on the crossing route)."""
    p, ctx = _ctx(ScenarioSpec(application="IMA", map=MapQuery(signalized=False),
                               agents=(Agent(id="x", role="cross"),)))
    ima = APPS[Application.IMA].decide
    ego = _ego(p, stopping_distance_m(V) - 0.2)
    cx, cy = ctx.conflict_xy_m
    x, y = ego.xy_m
    follower = Track("f", (x, y - 10.0), 13.9, ego.heading_rad, 0.0, 0.1)  # behind us, heading our way
    assert abs(cx - x) < 2.0 and cy > y  # (it heads for the conflict point, as the ego does)
    assert ima(_info(tracks=[follower]), ego, ctx, None).action is Action.PROCEED
    crossing = Track("x", (cx - 40.0, cy), 13.9, 0.0, 0.0, 0.1)
    assert ima(_info(tracks=[follower, crossing]), ego, ctx, None).action is Action.YIELD


def test_lta_waits_for_opposing_within_gap_acceptance():
    p, ctx = _ctx(ScenarioSpec(application="LTA", ego=Ego(maneuver="left"),
                               agents=(Agent(id="o", role="opposing"),)))
    lta = APPS[Application.LTA].decide
    ego = _ego(p, 0.5, v=0.0)
    prev = lta(_info(), _ego(p, stopping_distance_m(V) - 0.2), ctx, None)
    cx, cy = ctx.conflict_xy_m
    near = Track("o", (cx, cy + 30.0), 13.9, -math.pi / 2, 0.0, 0.1)  # ~2.2 s away
    far = Track("o", (cx, cy + 150.0), 13.9, -math.pi / 2, 0.0, 0.1)  # ~11 s away
    assert lta(_info(tracks=[near]), ego, ctx, prev).action is Action.YIELD
    assert lta(_info(tracks=[far]), ego, ctx, prev).action is Action.PROCEED
