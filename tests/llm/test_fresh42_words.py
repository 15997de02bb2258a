"""The words fresh42 found unread (each rule in ``services/llm``; the set itself is scored in ``test_campaign_parse``):
one sentence each, parsed end to end."""

from __future__ import annotations

import pytest

from services.llm.roles import LlmRoles


def _faults(text: str) -> list[tuple]:
    spec = LlmRoles().parse_intent(text, 1).spec
    return [(f.operator.value, f.stream.value, f.anchor.event.value if f.anchor else None, f.magnitude, f.duration_s,
             f.probability) for f in spec.faults]


@pytest.mark.parametrize(("text", "want"), [
    # a unit of tenths of a second
    ("EEBL: starting at the decision epoch the lead's EEBL messages are stamped 5 deciseconds in the past.",
     ("timestamp_offset", "EEBL", "decision_epoch", 0.5, None, None)),
    # a change said with both values: the new one
    ("IMA: ego 10 m/s, crossing car 10 m/s. Halve the crossing car's BSM drop rate from 40% to 20%, applied over "
     "the whole run.", ("drop", "BSM", "none", None, None, 0.2)),
    ("FCW: double the delay from case 3: case 3 had 150 ms on the lead BSMs, so now 300 ms on the lead BSMs from the "
     "start of the run.", ("delay", "BSM", "none", 0.3, None, None)),
    # a replay said as old recordings
    ("IMA: cross car BSMs replaced by 3-second-old recordings starting at t=4 s for 5 s.",
     ("replay", "BSM", "none", 3.0, 5.0, None)),
    # a learner's word order and articles
    ("RLVW: ego 14 m/s. In moment when light become amber, SPaT must show still green during 2 seconds.",
     ("spat_phase_corrupt", "SPAT", "amber_onset", None, 2.0, None)),
    # an ordinal second
    ("LTA: starting at the fifth second, make the oncoming vehicle's BSM report a speed 15 kph lower than its real "
     "speed, for 4 s.", ("bsm_speed_offset", "BSM", "none", pytest.approx(-15 / 3.6), 4.0, None)),
])
def test_fresh42_words_are_read(text: str, want: tuple) -> None:
    assert _faults(text) == [want]


def test_a_list_numbered_inside_a_line_keeps_each_window_with_its_item() -> None:
    got = _faults("FCW: ego 28 m/s, lead 60 m ahead. 1) phantom car forged 30 m ahead of ego from t=10 s for 2 s "
                  "2) lead's BSM content frozen starting at the warning decision moment")
    assert [(op, dur) for op, _s, _a, _m, dur, _p in got] == [("ghost_sender", 2.0), ("freeze", None)]


@pytest.mark.parametrize("text", [
    # another team's work, a past run not retried, a hazard id's description, variants after a review, a site's outage
    "@raj for the EEBL demo pls just run the vanilla case, no drops, no delays. the replay-attack stuff is @mei's, "
    "not ours.",
    "EEBL relay scenario, clean run only. The earlier attempt with the relay suppressed crashed the sim (bug #5512), "
    "so not retrying that today; no faults in this run.",
    "HARA follow-up, hazard H-RLVW-02 (missed red-light warning due to stale SPaT, ASIL B). Test: clean run with "
    "unmodified SPaT and MAP. The stale-SPaT and phase-corruption variants come after the review on 14 June.",
    "right so the next left turn one is just the clean baseline no faults at all don't bother with the delay stuff "
    "either that's for the phase two budget",
    # fresh43: a commit's subject and housekeeping, a FAQ's answers, a fault the writer will not add
    "fix(fcw): widen TTC guard band to 2.4 s (v3.8.1); test: FCW baseline, ego 25 m/s, lead 40 m ahead, no faults.",
    "chore(ci): pin carla to 0.9.15, drop flaky replay fixture (moved to #882); test: FCW smoke baseline, clean comms.",
    "Q: Does RLVW still warn if the SPaT phase gets corrupted to green? A: That's the next batch, not this one. For now "
    "run the clean baseline, no faults on SPaT or MAP.",
    "Q: Should this LTA run include the oncoming-car position offset from last week? A: No. Last week's -5 m offset run "
    "is done; this one is clean, no injected faults.",
    "FCW: ego 30 m/s, lead 35 m ahead. If the baseline doesn't trigger a false warning, don't add the speed offset "
    "Priya suggested; just the baseline, no faults.",
])
def test_faults_said_of_other_runs_are_no_request(text: str) -> None:
    result = LlmRoles().parse_intent(text, 1)
    assert not result.spec.faults
    assert not [f for f in result.findings if f.check == "parser.unparsed_fault"]


def test_a_stream_the_words_name_is_kept_against_the_verifier() -> None:
    """"drop one in five relay BSMs" in an EEBL scene: EEBL consumes no BSM, and the verifier's repair would move the
    fault to EEBL; the parser keeps the stream asked for and says what the repair would have set."""
    result = LlmRoles().parse_intent("EEBL with a relay car. Drop one in five relay BSMs for the whole run.", 1)
    (fault,) = result.spec.faults
    assert (fault.operator.value, fault.stream.value) == ("drop", "BSM")
    kept = [f for f in result.findings if f.check == "parser.stated_fault_kept"]
    assert kept and 'stream "BSM" kept as stated' in kept[0].message


def test_a_hazard_sentence_is_what_its_test_sentence_asks_for_not_a_second_fault() -> None:
    result = LlmRoles().parse_intent(
        "HARA item H-LTA-07. Hazard: the oncoming vehicle's BSM places it further back than it really is, so LTA "
        "judges the gap as safe and stays silent. Test: offset the opposing car's BSM position by 12 m behind its "
        "true location, starting at the decision epoch.", 1)
    assert [(f.operator.value, f.magnitude) for f in result.spec.faults] == [("bsm_position_offset", 12.0)]
    assert not [f for f in result.findings if f.check == "parser.unparsed_fault"]


# fresh43's words (scored in ``test_campaign_parse``)
@pytest.mark.parametrize(("text", "want"), [
    # a quoted request its reply keeps but for one value ("everything else the same")
    ("> GLOSA, ego 50 km/h, 300 m to the stop line, SPaT countdown offset +3 s from t=0\nmake that countdown offset "
     "-3 s instead (it runs short), everything else the same", ("spat_countdown_offset", "SPAT", "none", -3.0, None, None)),
    # an either/or the writer resolves ("we'll go with the delay ... No freeze.")
    ("EEBL: lead brakes hard at 8 s. Either delay the lead's EEBL by half a sec or freeze it; we'll go with the delay: "
     "EEBL messages delayed 0.5 s starting at t=8 s, for 3 s. No freeze.", ("delay", "EEBL", "none", 0.5, 3.0, None)),
    # a command line's flags
    ("simctl run --app ima --ego-speed 40kph --fault bsm:drop:p=0.5 --fault-start decision --fault-dur 2s",
     ("drop", "BSM", "decision_epoch", None, 2.0, 0.5)),
    ("glosa-bench --ego-speed 35mph --spoof-rsu spat --spoof-phase red --spoof-start green-onset",
     ("spoofed_rsu", "SPAT", "green_onset", None, None, None)),
    # a paper's erasure channel
    ("We evaluate EEBL under a 30 % packet erasure channel applied to EEBL messages throughout the trial.",
     ("drop", "EEBL", "none", None, None, 0.3)),
])
def test_fresh43_words_are_read(text: str, want: tuple) -> None:
    assert _faults(text) == [want]


def test_a_row_picked_from_a_matrix_is_the_request() -> None:
    text = ("IMA matrix, of rows A-D run only C:\nA: no faults\nB: cross BSM delay 300 ms\nC: cross BSM drop 50%\n"
            "D: cross car suppressed")
    assert [(op, p) for op, _s, _a, _m, _d, p in _faults(text)] == [("drop", 0.5)]
