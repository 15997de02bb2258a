"""Fault operators on top of the channel (LAST-V2X Appendix C)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import FAULT_OPERATORS, FailureClass, Stream, stopping_distance_m
from lastv2x.core.spec import AnchorEvent, Fault, parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.info import PHASE_AMBER, PHASE_GREEN, PHASE_RED
from services.simulator.v2x.faults import (
    OPERATORS,
    EgoEventInput,
    FaultContext,
    FaultEngine,
    FaultWindow,
    register_operator,
)
from services.simulator.v2x.messages import BsmBatch, KeyTable, make_bsms
from services.simulator.v2x.stack import V2XConfig, V2XInformationSource
from tests.simulator.v2x.world import rlvw_spec, run

NO_JITTER = V2XConfig(bus_delay_max_s=0.0)
T = 0.1
LATENCY = 0.002  # ChannelParams.latency_base_s: every link here is far above the RSSI knee


def program(spec: dict):
    return program_from_spec_on_straight_roads(parse_spec(spec))


def fcw(*faults: dict, ego_speed: float = 13.9, duration: float = 8.0, **agent: object):
    lead = {"id": "lead", "role": "lead", "gap_m": 30.0, **agent}
    return program({"application": "FCW", "duration_s": duration, "ego": {"speed_mps": ego_speed},
                    "agents": [lead], "faults": list(faults)})


def rlvw(*faults: dict, **over: object):
    return program(rlvw_spec(faults=list(faults), **over))


def fault(name: str, op: str, stream: str, **kw: object) -> dict:
    return {"name": name, "operator": op, "stream": stream, **kw}


def at(t: float, duration: float | None = None) -> dict:
    out: dict = {"anchor": {"kind": "scenario_time", "offset_s": t}}
    if duration is not None:
        out["duration_s"] = duration
    return out


# ── registry ────────────────────────────────────────────────────────────────────
def test_every_catalogue_operator_has_one_implementation():
    assert set(OPERATORS) == set(FAULT_OPERATORS)


def test_operator_registry_rejects_duplicates():
    with pytest.raises(ValueError, match="duplicate"):
        register_operator(OPERATORS["drop"])


def test_engine_rejects_duplicate_fault_names():
    f = Fault(name="x", operator="drop", stream="BSM")
    with pytest.raises(ValueError, match="duplicate fault name"):
        FaultEngine([f, f], FaultContext(0, 10.0), KeyTable(), KeyTable(), KeyTable())


# ── freeze ──────────────────────────────────────────────────────────────────────
def _bsm(keys: KeyTable, t: float, x: float) -> BsmBatch:
    k = np.array([keys.key("lead")])
    return make_bsms(k, np.array([round(t / T)]), t, np.zeros(1), np.array([[x, 0.0]]), np.array([10.0]),
                     np.zeros(1), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool))


def test_freeze_holds_the_payload_captured_when_the_window_opens():
    keys = KeyTable()
    f = Fault(name="fz", operator="freeze", stream="BSM", anchor={"offset_s": 1.0}, duration_s=1.0)
    eng = FaultEngine([f], FaultContext(0, 10.0), keys, KeyTable(), KeyTable())
    seen = []
    for i in range(30):
        t = round(i * T, 10)
        step = eng.apply(Stream.BSM, t, _bsm(keys, t, 10.0 * t))
        seen.append((t, float(step.batch.x_m[0]), float(step.batch.timestamp_s[0]), int(step.batch.msg_count[0])))
    for t, x, ts, cnt in seen:
        if 1.0 <= t < 2.0:
            assert x == pytest.approx(9.0)  # the last message sampled before t = 1.0
        else:
            assert x == pytest.approx(10.0 * t)
        assert ts == pytest.approx(t)  # fresh timestamps throughout
        assert cnt == round(t / T) % 128
    act = eng.activities()[0]
    assert act.messages_affected == 10 and act.start_s == 1.0 and act.end_s == 2.0


def test_spat_freeze_before_amber_keeps_green_with_fresh_timestamps():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("fz", "freeze", "SPAT", anchor={"kind": "signal_event", "event": "amber_onset",
                                                           "offset_s": -0.5})), src, 3)
    window = [(s, i) for s, i in steps if 27.2 <= s.t_s <= 31.0]
    assert window
    for snap, info in window:
        sig = info.ego_signal()
        assert sig.phase == PHASE_GREEN  # captured at 26.5 s: green, ending at 27.0 s
        assert sig.time_to_change_s == pytest.approx(max(0.0, 27.0 - snap.t_s), abs=1e-9)
        assert sig.aoi_s <= T + LATENCY + 0.05 + 1e-9 and sig.valid
        assert snap.true_phase[0] != PHASE_GREEN
    act = src.faults.activities()[0]
    assert act.start_s == pytest.approx(26.5)


def test_spat_freeze_at_red_onset_captures_amber():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("fz", "freeze", "SPAT", anchor={"kind": "signal_event", "event": "red_onset"})), src, 3)
    after = [i.ego_signal().phase for s, i in steps if 30.2 <= s.t_s <= 31.0]
    assert after and all(p == PHASE_AMBER for p in after)


# ── drop ────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("n", [1, 4, 9])
def test_bsm_drop_burst_gives_the_predicted_aoi_peak(n):
    src = V2XInformationSource(config=NO_JITTER)
    run(fcw(fault("burst", "drop", "BSM", sender="lead", burst_count=n, **at(2.0))), src, 5)
    lead = src.senders.key("lead")
    peaks = [p for _, k, p in src.ego.peaks.peaks[Stream.BSM] if k == lead]
    assert max(peaks) == pytest.approx((n + 1) * T + LATENCY, abs=1e-9)  # (n + 1) T + L
    assert sorted(peaks)[-2] == pytest.approx(T + LATENCY, abs=1e-9)  # one burst only
    assert src.faults.activities()[0].messages_affected == n


def test_spat_drop_burst_gives_the_predicted_aoi_peak():
    src = V2XInformationSource(config=NO_JITTER)
    run(rlvw(fault("burst", "drop", "SPAT", burst_count=5, **at(24.0)), duration_s=26.0), src, 5)
    assert src.ego.peaks.max(Stream.SPAT) == pytest.approx(6 * T + LATENCY, abs=1e-9)


def test_drop_probability_is_seeded_and_near_p():
    def dropped(seed):
        src = V2XInformationSource(config=NO_JITTER)
        run(fcw(fault("p", "drop", "BSM", probability=0.3, **at(0.0))), src, seed)
        return src.faults.activities()[0].messages_affected, src.stats.tx["BSM"]

    a, n = dropped(11)
    assert dropped(11) == (a, n)
    assert dropped(12) != (a, n)
    assert abs(a / n - 0.3) < 0.12


# ── delay, timestamp offset ─────────────────────────────────────────────────────
def test_delay_adds_to_the_aoi():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(fcw(fault("d", "delay", "BSM", magnitude=0.4, **at(2.0))), src, 1)
    aoi = [i.tracks["lead"].aoi_s for s, i in steps if s.t_s > 3.0]
    assert min(aoi) >= 0.4 + LATENCY and max(aoi) <= 0.4 + T + LATENCY
    lead = src.senders.key("lead")
    late = [p for rx, k, p in src.ego.peaks.peaks[Stream.BSM] if k == lead and rx > 3.0]
    assert late and all(p == pytest.approx(0.4 + T + LATENCY, abs=1e-9) for p in late)  # T + L + d


def test_timestamp_offset_makes_spat_stale_but_detectable():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("ts", "timestamp_offset", "SPAT", magnitude=3.0, **at(23.0))), src, 1)
    stale = [i.signals["j0.sg0"] for s, i in steps if 24.2 <= s.t_s <= 26.0]
    assert stale and all(not sig.valid and sig.aoi_s > 1.0 for sig in stale)
    late = [i.signals["j0.sg0"] for s, i in steps if s.t_s > 26.5]
    assert late and all(sig.aoi_s == pytest.approx(3.0, abs=0.11) and not sig.valid for sig in late)


# ── semantic faults ─────────────────────────────────────────────────────────────
def test_phase_corrupt_reports_the_target_phase():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("pc", "spat_phase_corrupt", "SPAT", target_phase="red", **at(23.0, 2.0))), src, 1)
    ph = {round(s.t_s, 2): i.signals["j0.sg0"].phase for s, i in steps if 22.0 <= s.t_s <= 26.5}
    assert ph[22.5] == PHASE_GREEN and ph[24.0] == PHASE_RED and ph[26.0] == PHASE_GREEN


def test_phase_corrupt_default_flips_green_to_red():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("pc", "spat_phase_corrupt", "SPAT", **at(23.0, 2.0))), src, 1)
    assert [i for s, i in steps if round(s.t_s, 2) == 24.0][0].signals["j0.sg0"].phase == PHASE_RED


def test_bsm_speed_and_position_offsets():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(fcw(fault("v", "bsm_speed_offset", "BSM", magnitude=5.0, **at(2.0)),
                    fault("x", "bsm_position_offset", "BSM", magnitude=3.0, **at(2.0))), src, 1)
    snap, info = [(s, i) for s, i in steps if round(s.t_s, 2) == 4.0][0]
    tr = info.tracks["lead"]
    j = snap.index_of("lead")
    assert tr.speed_mps == pytest.approx(snap.speed_mps[j] + 5.0)
    # reported 3 m back along the heading, then dead-reckoned with the (wrong) speed
    expected_y = snap.xy_m[j, 1] - 3.0 + 5.0 * tr.aoi_s
    assert tr.xy_m[1] == pytest.approx(expected_y, abs=1e-6)


def test_misassociation_makes_the_ego_read_the_other_group():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("ma", "map_misassociation", "MAP", **at(0.0))), src, 1)
    groups = {i.ego_group_id for s, i in steps if i.ego_group_id is not None}
    assert groups == {"j0.sg1"}
    snap, info = [(s, i) for s, i in steps if round(s.t_s, 2) == 25.0][0]
    assert info.ego_signal() is info.signals["j0.sg1"]
    assert info.ego_signal().phase == PHASE_RED and snap.true_phase[snap.group_index("j0.sg0")] == PHASE_GREEN
    rep = src.report()
    ep = [e for e in rep.episodes if e.kind == "signal_phase"]
    assert ep and "misassociated:j0.sg1" in ep[0].detail


def test_suppression_makes_the_track_vanish_silent_by_absence():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(fcw(fault("s", "suppress_sender", "BSM", sender="lead", **at(3.0)), ego_speed=14.5), src, 1)
    present = {round(s.t_s, 2): "lead" in i.tracks for s, i in steps}
    assert present[2.9] and present[4.4]  # held up to the 1.5 s track timeout
    assert not any(v for t, v in present.items() if t >= 4.7)
    summary = src.summary()
    missing = [e for e in summary.episodes if e.kind == "track_missing" and e.subject == "lead"]
    assert missing and 4.4 <= missing[0].start_s <= 4.7 and missing[0].end_s is None
    assert summary.failure_class is FailureClass.SILENT_BY_ABSENCE
    assert not summary.divergence_alarm  # absence raises no divergence alarm


# ── windows ─────────────────────────────────────────────────────────────────────
def test_decision_epoch_anchor_is_resolved_online():
    src = V2XInformationSource(config=NO_JITTER)
    steps = run(rlvw(fault("fz", "freeze", "SPAT", anchor={"kind": "ego_event", "event": "decision_epoch"})),
                src, 1)
    first = next(s.t_s for s, _ in steps if s.stop_bar_distance_m[0] <= stopping_distance_m(s.speed_mps[0]))
    assert src.faults.activities()[0].start_s == pytest.approx(first)


def test_stop_bar_distance_anchor_with_negative_offset_uses_the_prediction():
    src = V2XInformationSource(config=NO_JITTER)
    run(rlvw(fault("fz", "freeze", "SPAT", anchor={"kind": "ego_event", "event": "stop_bar_distance",
                                                   "distance_m": 100.0, "offset_s": -1.0})), src, 1)
    v = 13.9
    d0 = stopping_distance_m(v) + 28.0 * v
    t_event = (d0 - 100.0) / v
    assert src.faults.activities()[0].start_s == pytest.approx(t_event - 1.0, abs=0.05 + 1e-9)


def test_signal_anchor_is_predicted_online_without_a_plan():
    ctx = FaultContext(0, 60.0, ego_group_id="g")
    f = Fault(name="fz", operator="freeze", stream="SPAT",
              anchor={"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5})
    w = FaultWindow(f, ctx)
    assert not w.resolved
    w.update(0.0, None, None, np.array([PHASE_RED]), np.array([5.0]), {"g": 0})
    assert not w.resolved  # red -> green next: the amber onset is not predictable yet
    w.update(5.0, None, None, np.array([PHASE_GREEN]), np.array([27.0]), {"g": 0})
    assert w.start_s == pytest.approx(31.5) and math.isinf(w.end_s)


def test_ego_event_never_reached_leaves_the_fault_inactive():
    f = Fault(name="fz", operator="freeze", stream="SPAT",
              anchor={"kind": "ego_event", "event": "stop_bar_distance", "distance_m": 5.0})
    w = FaultWindow(f, FaultContext(0, 60.0))
    for t in range(10):
        w.update(float(t), EgoEventInput(float(t), 50.0, 0.0))
        assert not w.active(float(t))
    w.update(11.0, EgoEventInput(11.0, 4.0, 1.0))
    assert w.active(11.0) and w.start_s == 11.0


def test_window_semantics_unset_duration_runs_to_the_end():
    f = Fault(name="d", operator="drop", stream="BSM", anchor={"offset_s": 2.0})
    w = FaultWindow(f, FaultContext(0, 10.0))
    assert not w.active(1.99) and w.active(2.0) and w.active(1e6)
    g = Fault(name="e", operator="drop", stream="BSM", anchor={"offset_s": 2.0}, duration_s=1.0)
    w = FaultWindow(g, FaultContext(0, 10.0))
    assert w.active(2.999) and not w.active(3.0)


def test_signal_event_anchor_from_the_plan():
    src = V2XInformationSource()
    src.reset(rlvw(fault("fz", "freeze", "SPAT", anchor={"kind": "signal_event", "event": "amber_onset",
                                                         "group": "cross", "offset_s": 1.0})), 0)
    af = src.faults.faults[0]
    plan = src.program.group("j0.sg1")
    from services.simulator.signals import onset_times_s
    assert af.window.start_s == pytest.approx(float(onset_times_s(plan, PHASE_AMBER, 0.0, 200.0)[0]) + 1.0)
    assert af.window.event is AnchorEvent.AMBER_ONSET


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 2**31), start=st.floats(1.0, 3.0))
def test_burst_peak_with_bus_jitter_stays_within_the_jitter_bound(n, seed, start):
    src = V2XInformationSource()  # default bus jitter: per-message delay in [0, 5 ms)
    run(fcw(fault("burst", "drop", "BSM", sender="lead", burst_count=n, **at(start)), duration=start + 2.5),
        src, seed)
    lead = src.senders.key("lead")
    peak = max(p for _, k, p in src.ego.peaks.peaks[Stream.BSM] if k == lead)
    base = (n + 1) * T + LATENCY
    jitter = src.config.bus_delay_max_s
    assert base - jitter - 1e-9 <= peak <= base + jitter + 1e-9


def test_a_whole_payload_freeze_runs_on_every_stream() -> None:
    """EEBL records carry no msg_count; freezing them used to crash the fault engine."""
    from lastv2x.core.catalogue import Application
    from lastv2x.core.spec import parse_spec
    from lastv2x.core.synthetic import program_from_spec_on_straight_roads
    from services.simulator.execute import SimulatorLimits, run_one
    from services.simulator.reference import reference_spec

    d = reference_spec(Application.EEBL).model_dump(mode="json")
    d["faults"] = [{"name": "freeze_eebl", "operator": "freeze", "stream": "EEBL",
                    "anchor": {"kind": "scenario_time", "offset_s": 3.2}, "duration_s": 2.0}]
    outcome, _ = run_one(program_from_spec_on_straight_roads(parse_spec(d)), None, SimulatorLimits())
    faults = {f["name"]: f for f in outcome.to_dict()["monitor"]["extra"]["faults"]}
    assert faults["freeze_eebl"]["messages_affected"] > 0


def _lead_bsms(keys: KeyTable, i: int) -> BsmBatch:
    k = np.array([keys.key("lead")])
    return make_bsms(k, np.array([i]), i * 0.1, np.zeros(1), np.array([[float(i), 0.0]]), np.full(1, 10.0),
                     np.zeros(1), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool))


@settings(max_examples=20, deadline=None)
@given(p=st.floats(0.05, 1.0), seed=st.integers(0, 2**31))
def test_a_random_drop_counts_its_longest_run_of_losses(p: float, seed: int):
    """The reflector's evidence of a random drop: the longest run of consecutive lost messages, the very run the
    kept flags show, never more than the losses in all (every loss in one run at p = 1)."""
    keys = KeyTable()
    f = Fault(name="d", operator="drop", stream="BSM", sender="lead", anchor={"offset_s": 1.0}, probability=p)
    eng = FaultEngine([f], FaultContext(seed, 10.0), keys, KeyTable(), KeyTable())
    kept = [bool(eng.apply(Stream.BSM, round(i * 0.1, 10), _lead_bsms(keys, i)).keep[0]) for i in range(60)]
    assert all(kept[:10])  # before the window
    longest = run = 0
    for k in kept:
        run = 0 if k else run + 1
        longest = max(longest, run)
    act = eng.activities()[0]
    assert act.longest_drop_run == longest <= act.messages_affected == kept.count(False)
    if p == 1.0:
        assert longest == 50
    assert "longest_drop_run" in act.to_dict()


def test_a_drop_without_probability_keeps_its_outcome_bytes():
    keys = KeyTable()
    f = Fault(name="d", operator="drop", stream="BSM", anchor={"offset_s": 1.0}, burst_count=3)
    eng = FaultEngine([f], FaultContext(0, 10.0), keys, KeyTable(), KeyTable())
    for i in range(30):
        eng.apply(Stream.BSM, round(i * 0.1, 10), _lead_bsms(keys, i))
    act = eng.activities()[0]
    assert act.messages_affected == 3 and act.longest_drop_run is None and "longest_drop_run" not in act.to_dict()
