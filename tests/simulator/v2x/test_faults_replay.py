"""The replay operator (issue 37 item 3): a captured message re-sent later with its original timestamps, and
the reference applications' plausibility option (freshness) that catches it."""

from __future__ import annotations

import numpy as np
import pytest

from lastv2x.core.catalogue import FAULT_OPERATORS, FailureClass, Stream
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import Fault, parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import verify
from services.simulator.apps.plugin import resolve_app
from services.simulator.execute import SimulatorLimits, run_one
from services.simulator.info import PHASE_GREEN
from services.simulator.v2x.faults import FaultContext, FaultEngine, ReplayHistory
from services.simulator.v2x.messages import BsmBatch, KeyTable, make_bsms
from services.simulator.v2x.stack import V2XConfig, V2XInformationSource
from tests.simulator.v2x.world import rlvw_spec, run

T = 0.1
_OFFSET = {"b": 1000.0}
NO_JITTER = V2XConfig(bus_delay_max_s=0.0)


def _bsms(keys: KeyTable, t: float, senders: tuple[str, ...] = ("lead",)) -> BsmBatch:
    """One BSM per sender at ``t``: x = 10 t (+ 1000 for sender b), so a row tells who generated it and when."""
    n = len(senders)
    k = np.array([keys.key(s) for s in senders])
    xy = np.array([[10.0 * t + _OFFSET.get(s, 0.0), 0.0] for s in senders])
    return make_bsms(k, np.full(n, round(t / T)), t, np.zeros(n), xy, np.full(n, 10.0), np.zeros(n), np.zeros(n),
                     np.zeros(n, bool), np.zeros(n, bool))


def test_the_catalogue_entry() -> None:
    info = FAULT_OPERATORS["replay"]
    assert info.failure_class is FailureClass.STALE_BUT_DETECTABLE and set(info.streams) == set(Stream)
    assert info.magnitude_unit == "s" and info.magnitude_range == (0.1, 30.0) and info.tolerance == "latency"
    (knob,) = info.knobs  # a shorter lag is weaker
    assert (knob.field, knob.weakest, knob.strongest) == ("magnitude", 0.1, 30.0)


def test_replay_resends_the_message_from_lag_earlier_with_its_original_timestamp() -> None:
    keys = KeyTable()
    f = Fault(name="rp", operator="replay", stream="BSM", anchor={"offset_s": 1.0}, duration_s=1.0, magnitude=0.5)
    eng = FaultEngine([f], FaultContext(0, 10.0), keys, KeyTable(), KeyTable())
    for i in range(30):
        t = round(i * T, 10)
        step = eng.apply(Stream.BSM, t, _bsms(keys, t))
        b = step.batch
        x, ts, cnt, mid = float(b.x_m[0]), float(b.timestamp_s[0]), int(b.msg_count[0]), int(b.msg_id[0])
        assert mid == i and bool(step.keep[0])  # the transmission is this step's
        if 1.0 <= t < 2.0:  # the message sent 0.5 s earlier, content, count and timestamp as they were
            assert (x, ts, cnt) == (pytest.approx(10.0 * (t - 0.5)), pytest.approx(t - 0.5), i - 5)
        else:
            assert (x, ts, cnt) == (pytest.approx(10.0 * t), pytest.approx(t), i)
    act = eng.activities()[0]
    assert act.messages_affected == 10 and (act.start_s, act.end_s) == (1.0, 2.0)


def test_contrast_freeze_restamps() -> None:
    keys = KeyTable()
    faults = [Fault(name="fz", operator="freeze", stream="BSM", anchor={"offset_s": 1.0}),
              Fault(name="rp", operator="replay", stream="EEBL", anchor={"offset_s": 1.0}, magnitude=0.5)]
    eng = FaultEngine(faults, FaultContext(0, 10.0), keys, KeyTable(), KeyTable())
    for i in range(15):
        t = round(i * T, 10)
        step = eng.apply(Stream.BSM, t, _bsms(keys, t))
        assert float(step.batch.timestamp_s[0]) == pytest.approx(t)  # freeze: old content, fresh stamps


def test_a_sender_with_nothing_that_old_sends_nothing_and_senders_do_not_mix() -> None:
    keys = KeyTable()
    f = Fault(name="rp", operator="replay", stream="BSM", anchor={"offset_s": 0.0}, magnitude=0.3, sender="b")
    eng = FaultEngine([f], FaultContext(0, 10.0), keys, KeyTable(), KeyTable())
    for i in range(8):
        t = round(i * T, 10)
        # the rows' order in the batch changes every step: the replay is keyed by sender, not by row
        order = ("a", "b") if i % 2 else ("b", "a")
        step = eng.apply(Stream.BSM, t, _bsms(keys, t, order))
        b = step.batch
        for r, name in enumerate(order):
            row_x = float(b.x_m[r]) - _OFFSET.get(name, 0.0)
            if name == "a":
                assert row_x == pytest.approx(10.0 * t) and step.keep[r]
            elif t < 0.3 - 1e-9:
                assert not step.keep[r]  # nothing 0.3 s old yet: withheld
            else:
                assert step.keep[r] and row_x == pytest.approx(10.0 * (t - 0.3))


def test_the_history_keeps_only_what_a_replay_can_reach() -> None:
    keys = KeyTable()
    h = ReplayHistory(0.5)
    for i in range(50):
        t = round(i * T, 10)
        b = _bsms(keys, t)
        h.record(b, np.ones(1, bool), t)
    assert len(h._sent[keys.key("lead")]) == 6  # 4.4 .. 4.9: the newest at least 0.5 s old and those after it
    got = h.at(keys.key("lead"), 4.9 - 0.5)
    assert got is not None and float(got.timestamp_s[0]) == pytest.approx(4.4)
    assert h.at(keys.key("nobody"), 4.0) is None


def test_spat_replay_shows_the_old_phase_with_its_age() -> None:
    """Amber begins at 27 s; SPaT replayed 0.8 s late from 26 s: at 27.5 s the ego holds a green from 26.7 s."""
    src = V2XInformationSource(config=NO_JITTER)
    prog = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(faults=[{
        "name": "rp", "operator": "replay", "stream": "SPAT", "magnitude": 0.8,
        "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -1.0}}])))
    steps = run(prog, src, 3)
    at = {round(s.t_s, 2): (s, i) for s, i in steps}
    snap, info = at[27.5]
    sig = info.ego_signal()
    assert snap.true_phase[0] != PHASE_GREEN and sig.phase == PHASE_GREEN
    assert 0.8 <= sig.aoi_s <= 0.8 + T + 0.01 and sig.valid  # within RLVW's 1 s budget: used as it is


def _rlvw_replay(t_dec: float, lag: float):
    spec = parse_spec(rlvw_spec(t_dec=t_dec, faults=[{
        "name": "replay_spat", "operator": "replay", "stream": "SPAT", "sender": "rsu", "magnitude": lag,
        "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -1.0}}]))
    return spec, program_from_spec_on_straight_roads(spec)


@pytest.mark.parametrize(("t_dec", "lag", "reason"), [
    (28.0, 1.5, "no fresh SPaT: nominal controller"),  # past the 1 s budget: stale, the silent fallback
    (27.5, 0.8, "believed green"),  # within the budget: the replayed green is believed
])
def test_rlvw_fails_on_a_replay_without_the_plausibility_check_and_not_with_it(t_dec: float, lag: float,
                                                                               reason: str) -> None:
    """The plausibility option's absence is what a campaign reveals: the same replayed SPaT admits a red entry
    against the reference build and none against the build that checks the age of what it receives."""
    spec, prog = _rlvw_replay(t_dec, lag)
    assert verify(spec).ok
    plain, _ = run_one(prog, None, SimulatorLimits(), app=resolve_app("reference"))
    assert plain.admitted and "red_entry" in plain.md.violations and not plain.gt.violations
    epoch = next(d for d in plain.md.decisions if d.epoch)
    assert (epoch.action, epoch.reason) == ("proceed", reason)
    checked, _ = run_one(prog, None, SimulatorLimits(), app=resolve_app("reference:freshness=0.3"))
    assert not checked.admitted and not checked.md.violations
    epoch = next(d for d in checked.md.decisions if d.epoch)
    assert (epoch.action, epoch.reason) == ("stop", "SPaT older than the plausibility bound: stop")


def test_the_option_off_is_the_reference_build() -> None:
    """No bound: the same outcome bytes as the reference build (the golden hashes pin those)."""
    from services.simulator.apps.contract import ReferenceApp

    _, prog = _rlvw_replay(28.0, 1.5)
    a, _ = run_one(prog, None, SimulatorLimits(), app=resolve_app("reference"))
    b, _ = run_one(prog, None, SimulatorLimits(), app=ReferenceApp())
    assert a.md.decisions == b.md.decisions and a.admitted == b.admitted


@pytest.mark.parametrize("bad", ["reference:fresh=0.3", "reference:freshness=0", "reference:freshness=abc",
                                 "reference:freshness=inf"])
def test_a_bad_option_is_invalid_argument_naming_the_field(bad: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        resolve_app(bad, field="options.app")
    assert e.value.violations[0].field == "options.app" and "reference:freshness=" in e.value.violations[0].hint


def test_the_shrinker_weakens_a_replay_witness_through_its_lag() -> None:
    """A paired run per weakening: the 1-minimal witness keeps the replay, its certificate tried a halved lag."""
    from services.search.shrink import Shrinker, Verdict
    from tests.search.straight_roads import admission_on_straight_roads

    spec, _ = _rlvw_replay(28.0, 3.0)
    admitted = admission_on_straight_roads()
    result = Shrinker(admitted, max_calls=30).run(spec)
    assert result.complete and admitted(result.spec) is Verdict.ADMITTED
    (f,) = result.spec.faults
    assert f.operator.value == "replay" and (f.magnitude or 0.0) < 3.0  # a shorter lag still fails
    assert "halve_magnitude" in {e.pass_name for e in result.certificate}
