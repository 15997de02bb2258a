"""The spoofed_rsu operator (issue 37 item 3): SPaT for the junction from a roadside unit that is not the
junction's, beside the real one, and what the ego believes when it hears both."""

from __future__ import annotations

import pytest

from lastv2x.core.catalogue import FAULT_OPERATORS, FailureClass, Stream
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import verify
from services.simulator.execute import SimulatorLimits, run_one
from services.simulator.info import PHASE_GREEN, PHASE_RED
from services.simulator.v2x.stack import V2XInformationSource
from tests.simulator.v2x.world import rlvw_spec, run

WINDOW = (25.0, 32.0)  # amber at 27 s, red at 30 s


def _rlvw(t_dec: float = 28.0, **fault: object) -> dict:
    f = {"name": "spoof", "operator": "spoofed_rsu", "stream": "SPAT",
         "anchor": {"kind": "scenario_time", "offset_s": WINDOW[0]}, "duration_s": WINDOW[1] - WINDOW[0], **fault}
    return rlvw_spec(t_dec=t_dec, faults=[f])


def test_the_catalogue_entry() -> None:
    info = FAULT_OPERATORS["spoofed_rsu"]
    assert info.failure_class is FailureClass.FRESH_BUT_WRONG and info.streams == (Stream.SPAT, Stream.MAP)
    assert info.magnitude_range is None and info.knobs == ()  # weakened only through its window
    assert not info.requires_sender  # the forged id defaults to 'rsu_spoof'


def test_the_ego_believes_the_forged_green_through_the_window_and_the_truth_after() -> None:
    """Two SPaT streams for the ego's group: the real RSU's (the truth) and the forger's (green), both at 10 Hz.
    The forger stamps one period ahead, so the newest-stamp-wins belief keeps its green for the whole window
    although the real RSU never stops; a period after the window the truth is back."""
    # the ego is within the RSU's reach from ~24.6 s and reaches the stop bar after the run ends (34 s)
    prog = program_from_spec_on_straight_roads(parse_spec(_rlvw(t_dec=31.0)))
    src = V2XInformationSource()
    steps = run(prog, src, 0)
    inside = [(s, i.ego_signal()) for s, i in steps if WINDOW[0] + 0.3 <= s.t_s < WINDOW[1]]
    assert any(s.true_phase[0] == PHASE_RED for s, _ in inside)  # there is an amber and a red to lie about
    assert all(sig is not None and sig.phase == PHASE_GREEN for _, sig in inside)
    after = [(s, i.ego_signal()) for s, i in steps if WINDOW[1] + 0.5 <= s.t_s]
    assert after and all(sig is not None and sig.phase == s.true_phase[0] for s, sig in after)
    before = [(s, i.ego_signal()) for s, i in steps if s.t_s < WINDOW[0]]
    assert all(sig is None or sig.phase == s.true_phase[0] for s, sig in before)
    (act,) = src.faults.activities()
    assert act.operator == "spoofed_rsu" and 69 <= act.messages_affected <= 71  # 10 Hz for 7 s, its own count


def test_the_real_rsu_keeps_sending_beside_the_forger() -> None:
    prog = program_from_spec_on_straight_roads(parse_spec(_rlvw()))
    src = V2XInformationSource()
    run(prog, src, 0)
    base = V2XInformationSource()
    run(program_from_spec_on_straight_roads(parse_spec(rlvw_spec(t_dec=28.0))), base, 0)
    spat = Stream.SPAT.value
    # the forger adds ~70 SPaTs (10 Hz for 7 s); nothing of the real RSU's is removed
    assert src.stats.tx[spat] - base.stats.tx[spat] == src.faults.activities()[0].messages_affected


def test_rlvw_enters_on_a_forged_green_and_the_twin_stops() -> None:
    """The admitted failure: the message-driven ego believes the forged green at its decision epoch and enters
    on red; its ground-truth twin sees the amber that ends before the stop bar and stops."""
    spec = parse_spec(_rlvw(anchor={"kind": "signal_event", "event": "amber_onset", "offset_s": -1.0},
                            duration_s=None))
    assert verify(spec).ok
    o, _ = run_one(program_from_spec_on_straight_roads(spec), None, SimulatorLimits())
    assert o.admitted and "red_entry" in o.md.violations and not o.gt.violations
    md = next(d for d in o.md.decisions if d.epoch)
    gt = next(d for d in o.gt.decisions if d.epoch)
    assert (md.action, md.reason) == ("proceed", "believed green") and gt.action == "stop"


def test_a_window_that_misses_the_epoch_changes_nothing() -> None:
    """Opened and closed long before the decision epoch: the ego decides on the real SPaT (not admitted)."""
    spec = parse_spec(_rlvw(anchor={"kind": "scenario_time", "offset_s": 2.0}, duration_s=3.0))
    o, _ = run_one(program_from_spec_on_straight_roads(spec), None, SimulatorLimits())
    b, _ = run_one(program_from_spec_on_straight_roads(parse_spec(rlvw_spec(t_dec=28.0))), None, SimulatorLimits())
    assert not o.admitted and [d.action for d in o.md.decisions] == [d.action for d in b.md.decisions]


def test_the_forger_is_keyed_by_its_id_not_by_the_faults_order() -> None:
    """Its send slot, bus delays and link draws are those of its id: with a second fault listed before it, the
    forged SPaTs the ego receives are the same."""
    other = {"name": "late_bsm", "operator": "delay", "stream": "BSM", "magnitude": 0.2,
             "anchor": {"kind": "scenario_time", "offset_s": 0.0}, "duration_s": 1.0}
    a_spec = _rlvw()
    b_spec = _rlvw()
    b_spec["faults"] = [other, *b_spec["faults"]]

    def forged(d: dict) -> list:
        src = V2XInformationSource()
        steps = run(program_from_spec_on_straight_roads(parse_spec(d)), src, 5)
        return [(round(s.t_s, 2), round(i.ego_signal().aoi_s, 9)) for s, i in steps
                if i.ego_signal() is not None and WINDOW[0] <= s.t_s < WINDOW[1]]

    assert forged(a_spec) == forged(b_spec)
    renamed = _rlvw(sender="mallory")
    assert forged(renamed) != forged(a_spec)  # another id: another send slot


@pytest.mark.parametrize("sender", ["rsu0", "ego"])
def test_a_forged_id_of_a_real_sender_is_invalid_argument_naming_the_sender(sender: str) -> None:
    spec = parse_spec(_rlvw(sender=sender))
    with pytest.raises(InvalidArgument) as e:
        program_from_spec_on_straight_roads(spec)
    v = e.value.violations[0]
    assert v.field == "faults[0].sender" and "rsu_spoof" in v.hint


def test_the_simulator_refuses_a_program_whose_forger_has_a_real_id() -> None:
    from lastv2x.core.errors import ErrorCollector
    from services.simulator.execute import validate_faults

    prog = program_from_spec_on_straight_roads(parse_spec(_rlvw()))
    bad = prog.model_copy(update={"faults": tuple(f.model_copy(update={"fault": f.fault.model_copy(
        update={"sender": "rsu0"})}) for f in prog.faults)})
    errors = ErrorCollector()
    validate_faults(bad, errors)
    assert [v.field for v in errors.violations] == ["program.faults[0].fault.sender"]


def _rewired(operator: str, app: str = "RLVW") -> dict:
    """The reference RLVW/GLOSA scene with one MAP fault tying the ego's lane to the cross group, after the
    verifier's repair of the signal timing (the cross group must show green where the ego's stops it)."""
    from services.search.repairs import verifier_repaired

    spec = parse_spec({"application": app, "faults": [{"name": "m", "operator": operator, "stream": "MAP"}]})
    repaired, _records = verifier_repaired(spec)
    assert repaired is not None
    return repaired


@pytest.mark.parametrize("app", ["RLVW", "GLOSA"])
def test_a_forged_map_rewires_the_ego_s_lane_as_a_misassociated_real_one(app: str) -> None:
    """spoofed_rsu on MAP: a forger beside the junction's RSU sends, at 1 Hz, the ego's approach lanes tied to the
    cross group, stamped a MAP period ahead; the ego reads the cross group's phase, as with the real RSU's MAP
    misassociated (map_misassociation), and enters on red where its twin stops. The verifier judges both alike."""
    forged, real = _rewired("spoofed_rsu", app), _rewired("map_misassociation", app)
    assert verify(forged).ok and verify(real).ok
    outs = [run_one(program_from_spec_on_straight_roads(s), None, SimulatorLimits())[0] for s in (forged, real)]
    for o in outs:
        assert o.admitted and "red_entry" in o.md.violations and not o.gt.violations
    assert outs[0].md.red_entries[0].t_s == pytest.approx(outs[1].md.red_entries[0].t_s, abs=0.2)
    src = V2XInformationSource()
    run(program_from_spec_on_straight_roads(forged), src, 0)
    (act,) = src.faults.activities()
    assert act.operator == "spoofed_rsu" and act.stream == "MAP" and act.messages_affected >= 10  # 1 Hz


def test_a_forged_map_shows_no_phase_and_takes_no_magnitude() -> None:
    spec = parse_spec({"application": "RLVW", "faults": [{"name": "m", "operator": "spoofed_rsu", "stream": "MAP",
                                                           "target_phase": "green"}]})
    problems = [f for f in verify(spec).findings if f.severity.value == "error" and "target_phase" in " ".join(f.fields)]
    assert problems and problems[0].repair.patch == (("faults[0].target_phase", None),)


def test_the_freshness_option_catches_a_forged_rsu_by_its_stamps_from_the_future() -> None:
    """The reference build's plausibility option (``reference:freshness=0.3``) also distrusts a stamp from the
    future (beyond half a SPaT period) and, for the rest of the run, the group it was seen on: the forged green
    and the forged MAP no longer pass (the ego stops, 'SPaT stamped in the future'), while on the same scenes
    without a forger its decisions are the reference's to the byte."""
    from services.simulator.apps.plugin import resolve_app

    checked = resolve_app("reference:freshness=0.3")
    green = parse_spec(_rlvw(anchor={"kind": "signal_event", "event": "amber_onset", "offset_s": -1.0},
                             duration_s=None))
    for spec in (green, _rewired("spoofed_rsu")):
        program = program_from_spec_on_straight_roads(spec)
        plain, _ = run_one(program, None, SimulatorLimits())
        caught, _ = run_one(program, None, SimulatorLimits(), app=checked)
        assert plain.admitted and not caught.admitted and not caught.md.violations
        assert any(d.reason == "SPaT stamped in the future: stop" for d in caught.md.decisions)
    clean = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(t_dec=28.0)))
    a, _ = run_one(clean, None, SimulatorLimits(), app=checked)
    b, _ = run_one(clean, None, SimulatorLimits())
    assert [(d.t_s, d.action, d.reason) for d in a.md.decisions] == [(d.t_s, d.action, d.reason) for d in b.md.decisions]


def test_a_forged_map_for_a_junction_off_the_ego_s_route_is_invalid_argument() -> None:
    """A forged MAP ties the ego's approach lanes to its target group; one naming a group whose junction the ego's
    route never crosses has no lane to rewire: INVALID_ARGUMENT naming the fault's target_group (never a crash)."""
    program = program_from_spec_on_straight_roads(_rewired("spoofed_rsu"))
    far = program.signal_groups[0].model_copy(update={"id": "jx.sg0", "junction_id": "jx"})
    rsu = program.rsus[0].model_copy(update={"id": "rsu_x", "xy_m": (900.0, 900.0), "junction_id": "jx"})
    fault = program.faults[0]
    moved = fault.model_copy(update={"fault": fault.fault.model_copy(update={"target_group": "jx.sg0"}),
                                     "target_group_id": "jx.sg0"})
    bad = program.model_copy(update={"signal_groups": (*program.signal_groups, far), "rsus": (*program.rsus, rsu),
                                     "faults": (moved,)})
    with pytest.raises(InvalidArgument) as info:
        run_one(bad, None, SimulatorLimits())
    assert info.value.violations[0].field == "program.faults[0].fault.target_group"
    assert "does not cross its junction jx" in info.value.violations[0].description
