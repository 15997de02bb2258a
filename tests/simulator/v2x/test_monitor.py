"""Divergence monitor: criteria, episodes, hazard slack, margins, failure classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import (
    COUNTDOWN_DIVERGENCE_S,
    POSITION_BUDGET_BASE_M,
    POSITION_BUDGET_PER_S_M,
    FailureClass,
)
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.info import (
    PHASE_AMBER,
    PHASE_GREEN,
    PHASE_RED,
    BelievedSignal,
    DecisionRecord,
    DivergenceEpisode,
    EgoInformation,
    Track,
    WorldSnapshot,
)
from services.simulator.v2x.monitor import (
    LARGE_MARGIN,
    DivergenceMonitor,
    countdown_divergent,
    hazard_slack,
    position_budget_m,
)
from services.simulator.v2x.stack import V2XConfig, V2XInformationSource
from tests.simulator.v2x.world import rlvw_spec, run

G = "g0"


def snapshot(t: float, phase: int = PHASE_GREEN, ttc: float = 10.0, vehicles=(("ego", 0.0, 0.0),),
             alive=None, heading: float = 0.0) -> WorldSnapshot:
    ids = tuple(v[0] for v in vehicles)
    n = len(ids)
    xy = np.array([[v[1], v[2]] for v in vehicles], dtype=np.float64)
    z = np.zeros(n)
    return WorldSnapshot(
        t_s=t, step=int(round(t / 0.1)), vehicle_ids=ids, xy_m=xy, speed_mps=np.full(n, 10.0),
        heading_rad=np.full(n, heading), accel_mps2=z, brake_flag=np.zeros(n, bool),
        hard_brake_event=np.zeros(n, bool), equipped=np.ones(n, bool),
        alive=np.ones(n, bool) if alive is None else np.asarray(alive), route_s_m=z,
        stop_bar_distance_m=np.full(n, 50.0), next_group_index=np.zeros(n, np.int64), length_m=np.full(n, 4.5),
        ego_index=0, signal_group_ids=(G,), true_phase=np.array([phase]), time_to_change_s=np.array([ttc]),
        time_to_green_s=np.array([0.0]))


def info(t: float, phase: int = PHASE_GREEN, ttc: float = 10.0, aoi: float = 0.1, valid: bool = True,
         tracks=(), group: str | None = G) -> EgoInformation:
    sig = {G: BelievedSignal(phase, ttc, aoi, valid)}
    return EgoInformation(t, sig, group, {tr.vehicle_id: tr for tr in tracks})


def feed(mon: DivergenceMonitor, rows) -> None:
    for s, i in rows:
        mon.observe(s, i)


def ts(n: int, dt: float = 0.1):
    return [round(k * dt, 10) for k in range(n)]


# ── criteria ────────────────────────────────────────────────────────────────────
def test_countdown_threshold_is_strictly_above_one_second():
    assert COUNTDOWN_DIVERGENCE_S == 1.0
    assert not countdown_divergent(10.9, 10.0)
    assert not countdown_divergent(11.0, 10.0)
    assert countdown_divergent(11.05, 10.0)


@pytest.mark.parametrize("error,flagged", [(0.9, False), (1.1, True)])
def test_monitor_flags_countdown_error_above_1s_not_0_9s(error, flagged):
    mon = DivergenceMonitor("RLVW")
    feed(mon, [(snapshot(t, ttc=20.0 - t), info(t, ttc=20.0 - t + error)) for t in ts(30)])
    kinds = [e.kind for e in mon.episodes()]
    assert ("countdown" in kinds) is flagged
    assert mon.summary().divergence_alarm is flagged


@pytest.mark.parametrize("error,flagged", [(0.9, False), (1.1, True)])
def test_countdown_offset_fault_end_to_end(error, flagged):
    prog = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(
        duration_s=26.0, faults=[{"name": "cd", "operator": "spat_countdown_offset", "stream": "SPAT",
                                   "magnitude": error, "anchor": {"offset_s": 23.0}}])))
    src = V2XInformationSource(config=V2XConfig(bus_delay_max_s=0.0))
    run(prog, src, 2)
    eps = [e for e in src.summary().episodes if e.kind == "countdown"]
    assert bool(eps) is flagged
    if flagged:
        assert eps[0].start_s == pytest.approx(23.05, abs=0.11)
        assert eps[0].max_error == pytest.approx(error, abs=1e-6)


def test_phase_lag_at_a_true_change_is_not_a_divergence():
    mon = DivergenceMonitor("RLVW")
    rows = []
    for t in ts(40):
        true = PHASE_GREEN if t < 2.0 else PHASE_AMBER
        believed = PHASE_GREEN if t < 2.2 else PHASE_AMBER  # 0.2 s reporting lag
        rows.append((snapshot(t, true, 3.0), info(t, believed, 3.0)))
    feed(mon, rows)
    assert [e for e in mon.episodes() if e.kind == "signal_phase"] == []


def test_stuck_phase_episode_starts_at_the_true_change():
    mon = DivergenceMonitor("RLVW")
    feed(mon, [(snapshot(t, PHASE_GREEN if t < 2.0 else PHASE_AMBER, 3.0), info(t, PHASE_GREEN, 3.0))
               for t in ts(40)])
    ep = [e for e in mon.episodes() if e.kind == "signal_phase"]
    assert len(ep) == 1 and ep[0].start_s == pytest.approx(2.0) and ep[0].end_s is None


def test_position_budget_grows_with_age():
    assert position_budget_m(0.0) == POSITION_BUDGET_BASE_M
    assert position_budget_m(0.5) == pytest.approx(POSITION_BUDGET_BASE_M + 0.5 * POSITION_BUDGET_PER_S_M)
    mon = DivergenceMonitor("FCW")
    veh = (("ego", 0.0, 0.0), ("a", 30.0, 0.0))
    rows = []
    for t in ts(20):
        aoi = 0.0 if t < 1.0 else 0.5
        rows.append((snapshot(t, vehicles=veh), info(t, tracks=[Track("a", (32.0, 0.0), 10.0, 0.0, 0.0, aoi)])))
    feed(mon, rows)
    ep = [e for e in mon.episodes() if e.kind == "track_displaced"]
    # 2 m off: beyond 1.5 m at age 0, within 3.0 m at age 0.5 s
    assert len(ep) == 1 and ep[0].start_s == 0.0 and ep[0].end_s == pytest.approx(1.0)


def test_ghost_track_after_two_seconds():
    mon = DivergenceMonitor("FCW")
    veh = (("ego", 0.0, 0.0), ("a", 30.0, 0.0))
    rows = []
    for t in ts(50):
        alive = [True, t < 1.0]
        rows.append((snapshot(t, vehicles=veh, alive=alive),
                     info(t, tracks=[Track("a", (30.0, 0.0), 0.0, 0.0, 0.0, 0.1)])))
    feed(mon, rows)
    ghost = [e for e in mon.episodes() if e.kind == "ghost_track"]
    assert len(ghost) == 1
    assert ghost[0].start_s == pytest.approx(0.9 + 2.0 + 0.1, abs=1e-9)  # last alive at 0.9 s


# ── slack, margin ───────────────────────────────────────────────────────────────
def ep(start, end, kind="signal_phase"):
    return DivergenceEpisode(kind, G, start, end)


def test_hazard_slack_sign():
    assert hazard_slack(ep(2.0, 3.0), [4.0], 10.0).slack_s == pytest.approx(1.0)  # ended before: +
    neg = hazard_slack(ep(2.0, 5.0), [4.0], 10.0)
    assert neg.slack_s == pytest.approx(-1.0) and neg.decision_s == 4.0  # decided while wrong: -
    assert hazard_slack(ep(2.0, None), [4.0], 10.0).slack_s == pytest.approx(-6.0)  # open to the end
    assert hazard_slack(ep(5.0, 6.0), [4.0], 10.0).slack_s is None  # no decision after it
    assert hazard_slack(ep(4.0, 4.0), [4.0], 10.0).slack_s == 0.0  # ended at the decision


def _signal_mon(belief_wrong: list[tuple[float, float]]) -> DivergenceMonitor:
    mon = DivergenceMonitor("RLVW")
    for t in ts(100):
        wrong = any(a <= t < b for a, b in belief_wrong)
        mon.observe(snapshot(t, PHASE_AMBER, 3.0), info(t, PHASE_GREEN if wrong else PHASE_AMBER, 3.0))
    return mon


def test_signal_failure_margin_is_smallest_nonnegative_slack():
    mon = _signal_mon([(1.0, 2.0), (3.0, 4.5)])
    s = mon.summary([DecisionRecord(5.0, "proceed", True)])
    assert [round(x.slack_s, 6) for x in s.slacks] == [3.0, 0.5]
    assert s.failure_margin == pytest.approx(0.5)
    assert s.divergence_alarm and s.failure_class is None  # no fault, decision was right


def test_signal_margin_keeps_the_constant_with_only_negative_slack():
    mon = _signal_mon([(4.0, 6.0)])
    s = mon.summary([DecisionRecord(5.0, "proceed", True)])
    assert s.slacks[0].slack_s < 0 and s.failure_margin == LARGE_MARGIN
    assert s.failure_class is FailureClass.FRESH_BUT_WRONG


def test_no_episode_no_decision_large_margin():
    s = _signal_mon([]).summary([DecisionRecord(5.0, "stop", True)])
    assert s.failure_margin == LARGE_MARGIN and not s.divergence_alarm and s.episodes == []


def test_stale_belief_at_the_decision_is_stale_but_detectable():
    mon = DivergenceMonitor("RLVW")
    for t in ts(60):
        mon.observe(snapshot(t, PHASE_RED, 3.0), info(t, PHASE_GREEN, 3.0, aoi=2.0 + t, valid=False))
    s = mon.summary([DecisionRecord(4.0, "proceed", True)])
    assert s.failure_class is FailureClass.STALE_BUT_DETECTABLE
    assert s.aoi_at_decisions[0].spat_aoi_s == pytest.approx(6.0) and s.aoi_at_decisions[0].spat_valid is False


def test_conflict_margin_counts_only_vehicles_ahead_for_fcw():
    veh = (("ego", 0.0, 0.0), ("behind", -5.0, 0.0), ("ahead", 20.0, 0.0), ("side", 8.0, 6.0))
    for app, expected in (("FCW", 20.0), ("IMA", 5.0)):
        mon = DivergenceMonitor(app)
        for t in ts(5):
            mon.observe(snapshot(t, vehicles=veh), info(t))
        s = mon.summary()
        assert s.min_distance_m == pytest.approx(expected) and s.failure_margin == pytest.approx(expected)
    mon = DivergenceMonitor("FCW")
    for t in ts(5):
        mon.observe(snapshot(t, vehicles=veh[:2]), info(t))
    assert mon.summary().failure_margin == LARGE_MARGIN  # nobody ahead: no qualifying conflict


def test_report_carries_the_appendix_e_quantities():
    mon = _signal_mon([(1.0, 2.0)])
    rep = mon.report([DecisionRecord(3.0, "stop", True), DecisionRecord(3.5, "stop", False)])
    assert rep.alarms == 1
    assert set(rep.extra) >= {"hazard_slack", "aoi_at_decisions", "failure_margin", "divergence_alarm",
                              "failure_class"}
    assert rep.extra["failure_margin"] == pytest.approx(1.0)
    assert len(rep.extra["aoi_at_decisions"]) == 1  # epochs only


# the nearest-agent search compares squared lengths and keeps offsets (np.hypot once, in summary()):
# pinned bit for bit against the per-vehicle np.hypot it replaced, NaN / inf / subnormals included
_coord = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.floats(-400.0, 400.0), st.floats(-1e-150, 1e-150), st.sampled_from([0.0, -0.0, 300.0, -300.0]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_coord, _coord), min_size=1, max_size=6), st.sampled_from([300.0, 150.0, 1e-300]))
def test_nearest_agent_on_squares_is_np_hypot(offsets, radius):
    from services.simulator.v2x.monitor import _below, _nearer

    # old: np.hypot per vehicle, the first smallest; membership d <= radius
    j_old, best = -1, math.inf
    for i, (rx, ry) in enumerate(offsets):
        d = float(np.hypot(rx, ry))
        below, h = _below(rx, ry, radius, radius * radius)
        assert (below or (h is not None and h <= radius)) == (d <= radius)
        if j_old < 0 or d < best:
            j_old, best = i, d
    j, bx, by, bq = -1, math.inf, 0.0, math.inf
    for i, (rx, ry) in enumerate(offsets):
        q = rx * rx + ry * ry
        if j < 0 or _nearer(rx, ry, q, bx, by, bq):
            j, bx, by, bq = i, rx, ry, q
    assert j == j_old
    mon = DivergenceMonitor("FCW")
    mon._near_dx, mon._near_dy = [bx, math.inf], [by, 0.0]
    got = mon.near_distances_m()
    assert np.array_equal(got, np.array([best, math.inf]), equal_nan=True)
    assert np.signbit(got[0]) == np.signbit(best)


def test_the_divergence_only_baseline_alarms_on_a_lasting_error_only() -> None:
    """Issue 37, item 5: the baseline's own threshold, a belief error beyond the monitor's bounds for ALARM_MIN_S."""
    from services.simulator.info import DivergenceEpisode
    from services.simulator.v2x.monitor import ALARM_MIN_S, divergence_only_alarm

    short = DivergenceEpisode("countdown", "j0.sg0", 3.0, 3.0 + ALARM_MIN_S / 2)
    lasting = DivergenceEpisode("signal_phase", "j0.sg0", 3.0, 3.0 + ALARM_MIN_S)
    absent = DivergenceEpisode("signal_missing", "j0.sg0", 0.0, 20.0)  # an absence: evidence, never an alarm
    open_at_end = DivergenceEpisode("track_displaced", "lead", 29.5, None)
    assert not divergence_only_alarm([short, absent], 30.0)
    assert divergence_only_alarm([short, lasting], 30.0)
    assert not divergence_only_alarm([open_at_end], 30.0)  # 0.5 s to the end of the run
    assert divergence_only_alarm([open_at_end], 31.0)
