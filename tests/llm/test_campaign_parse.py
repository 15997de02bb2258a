"""No silent fault loss on campaign wording (issue 31, deliverable 1, the parser side).

A quantity with a unit and a clause asking for a fault are either bound to the spec or reported as
``parser.unparsed_fault`` quoting the clause; the parser never builds a default fault for one it could
not read. Sentences in the property and regression tests are written for the tests; the examples at the
end are taken from the campaign set (``bench/data/parse_campaign_heldout.jsonl``).
"""

from __future__ import annotations

import json
from unittest.mock import ANY

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import bench_parse, bench_parse_campaign
from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS
from services.llm import fault_cues, quantity_guard
from services.llm.intent_text import normalize, stated_range
from services.llm.roles import LlmRoles

ROLES = LlmRoles()


def _covered(text: str) -> None:
    """Every quantity of ``text`` is in the spec (a fault's field where its clause asks for a fault), or a
    ``parser.unparsed_fault`` finding quotes its clause."""
    res = ROLES.parse_intent(text, 11)
    answers = [h.data for h in res.history] + [res.spec.model_dump(mode="json")]
    quoted = [c.lower() for c in res.unparsed_clauses]
    for clause, lost, _fault in quantity_guard.unbound(text, answers):
        assert any(clause.lower() in q or q in clause.lower() for q in quoted), (text, clause, lost, res.unparsed)


APPS = ("Red-light warning", "Speed advice at the lights", "Rear-end warning", "Emergency brake warning",
        "Crossing assist", "Left-turn assist")
# fault clauses in words the grammar knows and in words it does not ("wibbled", "smeared", "parked")
CLAUSES = (
    "the phase broadcasts stop getting through for about {t} seconds",
    "the messages of the car ahead are wibbled for roughly {t} s",
    "the signal data is smeared by {t} s",
    "{p} % of the status packets are parked somewhere",
    "the other car's reported speed is {v} km/h too high",
    "its transmissions are held up by {ms} ms",
    "the alerts are frobnicated {d} m from the stop line",
    "the lane map is {t} s out of step",
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(app=st.sampled_from(APPS), clause=st.sampled_from(CLAUSES), t=st.integers(1, 9), p=st.integers(5, 95),
       v=st.integers(3, 40), ms=st.integers(100, 900), d=st.integers(20, 150))
def test_a_quantity_with_a_unit_is_never_silently_dropped(app: str, clause: str, t: int, p: int, v: int, ms: int,
                                                          d: int) -> None:
    _covered(f"{app} where {clause.format(t=t, p=p, v=v, ms=ms, d=d)}.")


@pytest.mark.parametrize("text", [
    # the issue's three silent losses: a drop with a duration, a percentage, "none of its ... reach"
    "Left-turn assist: the oncoming car's messages go missing for about two seconds while we wait to turn.",
    "Red-light warning with 50 % of the light-status packets lost over the air.",
    "Brake-light relay test: none of the braking car's alerts reach the ego.",
    # a quantity the parser reads as nothing at all
    "Red-light warning where the lamp data is garbled for 3 seconds.",
    "Crossing assist where the side car is quiet for the first 6 seconds.",
])
def test_campaign_wording_is_bound_or_reported(text: str) -> None:
    res = ROLES.parse_intent(text, 5)
    assert res.spec.faults or res.unparsed
    _covered(text)


def test_an_unbound_duration_is_reported_with_its_clause() -> None:
    """A fault bound without the duration the intent states: the duration is reported, the clause quoted."""
    text = "Red-light warning where the signal feed is wibbled for about four seconds."
    res = ROLES.parse_intent(text, 2)
    assert not any(f.duration_s == 4.0 for f in res.spec.faults)
    (clause,) = res.unparsed_clauses
    assert "for about four seconds" in clause


def test_the_guard_needs_no_grammar() -> None:
    """Backend-independent: an answer without the fault's quantity leaves the quantity unbound."""
    text = "FCW where the lead's BSMs are delayed by 700 ms."
    answer = {"application": "FCW", "faults": [{"operator": "delay", "stream": "BSM", "magnitude": 0.5}]}
    ((clause, (q,), fault),) = quantity_guard.unbound(text, [answer])
    assert fault and q.raw == "700 ms" and "delayed by 700 ms" in clause
    answer["faults"][0]["magnitude"] = 0.7
    assert quantity_guard.unbound(text, [answer]) == []
    # a quantity of the fault's own words bound only to another field (the scenario's length) is not bound
    text = "RLVW where the SPaT drops out for 20 s."
    assert quantity_guard.unbound(text, [{"duration_s": 20.0, "faults": [{"operator": "drop", "stream": "SPAT"}]}])


def test_no_default_fault_stands_in_for_one_the_parser_cannot_read() -> None:
    """A generic corruption of a vehicle stream with no field or quantity: no default position offset."""
    res = ROLES.parse_intent("Emergency brake warning where a stranger's car spoofs fake braking alerts.", 4)
    assert res.spec.faults == ()
    (finding,) = res.unparsed
    assert "spoofs fake braking alerts" in fault_cues.quoted_clause(finding)


def test_unsupported_clauses_are_reported() -> None:
    for text in ("Red-light warning where each signal message arrives twice.",
                 "Forward collision alert where the lead's heading is reported backwards."):
        res = ROLES.parse_intent(text, 1)
        assert res.spec.faults == () and len(res.unparsed) == 1, text


@pytest.mark.parametrize("text", [
    "Left-turn assist with oncoming traffic at 50 km/h and a 3 second gap.",
    "Forward collision check with a lead car braking at 5 m/s² and clean communications.",
    "RLVW at 40 km/h. The light turns amber at 6 s; then the ego stops and it stays red.",
    "A driver using the red-light warning approaches at 50 km/h when the signal turns yellow; roadside units healthy.",
    "Eco-approach demo: SPaT and MAP come through clean from the roadside unit with 300 m of range.",
    # a spacing bound the layout keeps, and a range said approximately (fresh6)
    "EEBL relay demo: four cars in a column, the first one brakes at 5 m/s² after 8 s, all within 250 m of each other.",
    "RLVW baseline: the RSU sends SPaT at 10 Hz, nothing goes missing, radio range about 250 m.",
])
def test_healthy_intents_bind_their_quantities_and_raise_no_alarm(text: str) -> None:
    res = ROLES.parse_intent(text, 7)
    assert res.spec.faults == () and not res.unparsed


def test_a_stated_signal_event_time_sets_the_plan_offset() -> None:
    spec = ROLES.parse_intent("RLVW where the light turns amber at 6 s.", 3).spec
    assert (spec.signal.green_s - spec.signal.offset_s) % spec.signal.cycle_s == pytest.approx(6.0)


# ── examples from the campaign set ───────────────────────────────────────────────────────────────────
CAMPAIGN = {r["id"]: r for r in bench_parse.load(bench_parse_campaign.DATA)}


@pytest.mark.parametrize("row_id", ["c001", "c009", "c010", "c011", "c017", "c018", "c023", "c030", "c033",
                                    "c041", "c053", "c058", "c069", "c070", "c085", "c088", "c094", "c106",
                                    "c107", "c110", "c113", "c036", "c006"])
def test_campaign_examples(row_id: str) -> None:
    verdict = bench_parse_campaign.score_row(CAMPAIGN[row_id], ROLES)
    assert not verdict["extra"], verdict["extra"]
    for f in verdict["faults"]:
        assert f["verdict"] != "silent", f
        assert f["verdict"] == "reported" or f["exact"], f


def test_campaign_set_shape() -> None:
    rows = list(CAMPAIGN.values())
    assert len(rows) >= 100 and len({r["text"] for r in rows}) == len(rows)
    assert {r["labels"]["application"] for r in rows} == {a.value for a in APPLICATIONS}
    ops = [f["operator"] for r in rows for f in r["labels"]["faults"]]
    assert all(ops.count(op) >= 3 for op in FAULT_OPERATORS), {op: ops.count(op) for op in FAULT_OPERATORS}
    assert sum(r["kind"] == "healthy" for r in rows) >= 10
    for r in rows:
        for f in r["labels"]["faults"]:
            assert f["clause"] in r["text"] and f["operator"] in FAULT_OPERATORS
        assert all(c in r["text"] for c in r["labels"].get("unsupported", []))
    others = set()
    for path in (bench_parse.DATA, bench_parse.HELDOUT, bench_parse.DEV):
        others |= {json.loads(line)["text"].lower() for line in path.read_text().splitlines() if line.strip()}
    assert not others & {r["text"].lower() for r in rows}  # kept apart from the other sets


@pytest.mark.parametrize("path", [bench_parse_campaign.DATA, bench_parse_campaign.FRESH, bench_parse_campaign.FRESH2,
                                  bench_parse_campaign.FRESH3, bench_parse_campaign.FRESH4,
                                  bench_parse_campaign.FRESH5, bench_parse_campaign.FRESH6])
def test_campaign_bench_meets_its_targets(path: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_parse_campaign.main(["--check", "--data", str(path)]) == 0
    out = capsys.readouterr().out
    assert "silent drops          0 " in out and "substitutions         0 " in out


def test_a_misassociation_in_new_words_is_reported_and_healthy_radios_are_not() -> None:
    res = ROLES.parse_intent("Red-light warning where the lane map sends our lane's signal to the left-turn arrow's "
                             "group.", 3)
    assert res.spec.faults or res.unparsed
    res = ROLES.parse_intent("Crossing assist on a quiet junction, radios fine, the side car arriving 2 s after us.", 3)
    assert res.spec.faults == () and not res.unparsed


def test_quantities_are_read_from_campaign_wording() -> None:
    """Approximate durations and spoken fractions of a second are quantities."""
    for words, seconds in (("for a couple of seconds", 2.0), ("three quarters of a second late", 0.75),
                           ("a quarter second late", 0.25), ("a full second late", 1.0),
                           ("for roughly one and a half seconds", 1.5), ("eight tenths of a second late", 0.8),
                           ("for ~3 s", 3.0)):
        (q,) = normalize(words).quantities
        assert q.value == pytest.approx(seconds), words


@pytest.mark.parametrize(("text", "operator", "field", "value"), [
    # one subject, two verb phrases: one fault (issue 31, the fresh sets)
    ("RLVW where the phase info freezes and keeps repeating the old state.", "freeze", None, None),
    ("FCW where the lead car's clock lags and its messages are stamped two seconds in the past.",
     "timestamp_offset", "magnitude", 2.0),
    ("EEBL where the braking car's radio stays completely quiet and never sends its brake warning.",
     "suppress_sender", None, None),
    ("RLVW where the SPaT keeps telling everyone it is green.", "spat_phase_corrupt", "target_phase", "green"),
    ("GLOSA where the controller is announcing red.", "spat_phase_corrupt", "target_phase", "red"),
    ("EEBL where the position in the braking car's alert is placed 30 metres back from where the car really is.",
     "bsm_position_offset", "magnitude", 30.0),
    ("FCW with 80 percent of the front car's packets going astray.", "drop", "probability", 0.8),
    # a message's own late arrival, said with a time (fresh5)
    ("RLVW where the SPaT messages arrive at the car half a second behind.", "delay", "magnitude", 0.5),
    ("FCW where the lead's BSMs get to us 300 ms too late.", "delay", "magnitude", 0.3),
    ("GLOSA where one in four of the SPaT packets never makes it.", "drop", "probability", 0.25),
    # reported ahead of where it is: a negative (forwards) offset (issue 31: it was bound backwards, a swap)
    ("EEBL where the brake alert puts the braking 8 m ahead of where the lead actually is.", "bsm_position_offset",
     "magnitude", -8.0),
    ("FCW where the lead car's GPS puts it 9 m ahead of where it actually is.", "bsm_position_offset", "magnitude",
     -9.0),
    # fresh6: fields said to be short, inflated, overstated, reading a colour; passive silence; "stop to change"
    ("RLVW where the time-remaining value in the SPaT is 600 ms short.", "spat_countdown_offset", "magnitude", -0.6),
    ("GLOSA where the end-of-red estimate in the SPaT is pushed 3 s earlier than the real switch.",
     "spat_countdown_offset", "magnitude", -3.0),
    ("FCW where the lead's broadcast speed is understated by 9 km/h.", "bsm_speed_offset", "magnitude", -2.5),
    ("GLOSA where the phase value in the SPaT reads red while the light is green.", "spat_phase_corrupt",
     "target_phase", "red"),
    ("EEBL where the lead's brake warning is never sent.", "suppress_sender", None, None),
    ("IMA where after 4 s the crossing car's BSMs stop to update.", "freeze", None, None),
    ("LTA where the oncoming car's position messages lag its real position by 7 m.", "bsm_position_offset",
     "magnitude", 7.0),
    ("RLVW where the lane-to-signal association in the map data is swapped.", "map_misassociation", None, None),
    ("GLOSA where our lane inherits the cross street's signal group in the MAP.", "map_misassociation", None, None),
    ("RLVW where the map data is handing our lane the group that belongs to the right turn arrow.",
     "map_misassociation", None, None),
    ("RLVW where 8 signal phase messages in a row never arrive.", "drop", "burst_count", 8),
])
def test_new_user_wording_binds_one_fault(text: str, operator: str, field: str | None, value: object) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.spec.faults
    assert fault.operator.value == operator and not res.unparsed_clauses
    if field is not None:
        got = getattr(fault, field)
        assert (got.value if hasattr(got, "value") else got) == pytest.approx(value) if not isinstance(value, str) \
            else got.value == value


@pytest.mark.parametrize("text", [
    "Speed advisory with everything nominal: SPaT and MAP come through clean, nothing is delayed and no messages go "
    "missing.",
    "EEBL baseline: the braking car's BSMs are delivered without loss, and nothing is corrupted or late.",
    "Red-light warning run where nothing is tampered with.",
    "A plain GLOSA run: messages are neither delayed nor lost, and the signal data is correct.",
    "EEBL reference run: the alert gets through without any delay or loss.",
    "Left-turn assist with perfect V2X, no dropped, delayed or faked messages.",
])
def test_negated_faults_are_healthy(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert res.spec.faults == () and not res.unparsed_clauses


@pytest.mark.parametrize(("text", "event", "duration"), [
    # a phase onset said as a clause, in any tense, and the first seconds of a phase (fresh5)
    ("RLVW: from the moment the yellow comes on, the SPaT countdown is 2 s shorter than the real time.",
     "amber_onset", None),
    ("GLOSA where the signal feed froze when the green started.", "green_onset", None),
    ("RLVW where the SPaT reports green for 1.5 s after real red begins.", "red_onset", 1.5),
    ("GLOSA where the signal broadcast is stuck for 6 seconds after green starts.", "green_onset", 6.0),
    ("RLVW: for 3 s after the signal turned amber the SPaT claims it is green.", "amber_onset", 3.0),
    ("GLOSA: during the first four seconds of green the signal says it is still red.", "green_onset", 4.0),
    ("RLVW: in the first 2 seconds of amber the SPaT says it is still green.", "amber_onset", 2.0),
    ("GLOSA: while our light is red, the SPaT feed wrongly tells the car it is green.", "red_onset", None),
    ("IMA where the crossing car's BSMs disappear for 2 s once the ego is within 30 m of the junction.",
     "stop_bar_distance", 2.0),
])
def test_phase_onsets_and_distances_anchor_the_fault(text: str, event: str, duration: float | None) -> None:
    res = LlmRoles().parse_intent(text, 1)
    first = res.history[0].data
    (fault,) = first["faults"]
    assert fault["anchor"]["event"] == event and not res.unparsed_clauses
    assert fault.get("duration_s") == (pytest.approx(duration) if duration is not None else None)


@pytest.mark.parametrize(("text", "event"), [
    # fresh6: "from the start of the yellow", "from the first green on", "1 s before our red"
    ("RLVW where from the start of the yellow the SPaT packets are dropped.", "amber_onset"),
    ("GLOSA where from the first green on the SPaT messages arrive 300 ms late.", "green_onset"),
    ("RLVW where 5 SPaT messages in a row are lost, beginning 2 s before our red.", "red_onset"),
])
def test_more_phase_onsets_anchor_the_fault(text: str, event: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert fault["anchor"]["event"] == event and not res.unparsed_clauses


def test_a_list_of_conditions_is_one_fault_per_item() -> None:
    """Each line of a bulleted list is a sentence of its own; an item without a message word of its own speaks
    of the list's messages (fresh6)."""
    text = ("FCW run, conditions:\n- the lead's BSMs: 10 in a row go missing from 3 s on\n"
            "- whatever does get through shows up 200 ms late\n- gap 30 m")
    res = LlmRoles().parse_intent(text, 1)
    faults = res.history[0].data["faults"]
    assert [(f["operator"], f["stream"]) for f in faults] == [("drop", "BSM"), ("delay", "BSM")]
    assert faults[0]["burst_count"] == 10 and faults[1]["magnitude"] == pytest.approx(0.2)
    assert not res.unparsed_clauses


def test_a_wrapped_line_is_not_a_list_item() -> None:
    """A hard-wrapped intent is one sentence: the message word on the line before still counts."""
    res = LlmRoles().parse_intent("FCW where the lead's BSMs\nare delayed by 400 ms.", 1)
    (fault,) = res.history[0].data["faults"]
    assert fault["operator"] == "delay" and fault["magnitude"] == pytest.approx(0.4)


def test_the_outcome_a_test_checks_is_no_fault() -> None:
    """"check whether the alert comes too late" is what the test looks at, not a message delay (fresh6)."""
    res = LlmRoles().parse_intent("FCW where the lead's BSMs are 2 s stale. Check whether the collision alert "
                                  "comes too late.", 1)
    assert [f["operator"] for f in res.history[0].data["faults"]] == ["timestamp_offset"]
    assert not res.unparsed_clauses


def test_a_driver_late_is_no_message_delay() -> None:
    """"brakes 1 s too late" is the driver, not a message: no fault is built for it."""
    res = LlmRoles().parse_intent("FCW where the driver brakes 1 s too late.", 1)
    assert res.spec.faults == ()


@pytest.mark.parametrize(("text", "operator", "field", "value"), [
    # fresh7: "reports the phase as", "understates ... by", "N more back than", "lower of", "too small", "transmits no",
    # "stuck on the same values", "needs N longer to arrive", "every third", "two-point-five"
    ("RLVW where the SPaT feed reports the state as red.", "spat_phase_corrupt", "target_phase", "red"),
    ("RLVW where the countdown in the SPaT understates the time left by two-point-five seconds.",
     "spat_countdown_offset", "magnitude", -2.5),
    ("FCW where the lead's BSMs give a position 7 m more back than the true one.", "bsm_position_offset",
     "magnitude", 7.0),
    ("IMA where the speed the crossing car announces is lower of 2 m/s than the real one.", "bsm_speed_offset",
     "magnitude", -2.0),
    ("FCW where the speed value in the lead's BSM is 10 km/h too small.", "bsm_speed_offset", "magnitude", -10 / 3.6),
    ("EEBL where the braking lead transmits no brake notification at all.", "suppress_sender", None, None),
    ("GLOSA where the SPaT data stays stuck on the same values for 5 s.", "freeze", "duration_s", 5.0),
    ("LTA where every BSM of the oncoming car needs 250 ms longer to arrive.", "delay", "magnitude", 0.25),
    ("FCW where every fourth BSM from the lead is lost.", "drop", "probability", 0.25),
])
def test_fresh7_wording_binds_one_fault(text: str, operator: str, field: str | None, value: object) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert fault["operator"] == operator and not res.unparsed_clauses
    if field is not None:
        assert fault[field] == (pytest.approx(value) if not isinstance(value, str) else value)


@pytest.mark.parametrize(("text", "event", "offset", "duration"), [
    # fresh7: "when it goes red", "passes to green", "the last second of amber", "at 40 m of the stop line",
    # "N s after the run begins"
    ("RLVW where 4 SPaT messages are lost right when it goes red.", "red_onset", 0.0, None),
    ("GLOSA where the SPaT is frozen from the moment the light passes to green, for 6 s.", "green_onset", 0.0, 6.0),
    ("RLVW where in the last 2 s of amber the SPaT packets are dropped.", "red_onset", -2.0, 2.0),
    ("RLVW where in the last second of amber the SPaT messages arrive 400 ms late.", "red_onset", -1.0, 1.0),
    ("LTA where the oncoming car's BSMs are lost when the ego is at 30 m of the stop line.", "stop_bar_distance", 0.0,
     None),
    ("FCW where the lead's BSMs go missing starting 8 s after the run begins.", "none", 8.0, None),
])
def test_fresh7_anchors(text: str, event: str, offset: float, duration: float | None) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert fault["anchor"].get("event", "none") == event and not res.unparsed_clauses
    assert fault["anchor"]["offset_s"] == pytest.approx(offset)
    assert fault.get("duration_s") == (pytest.approx(duration) if duration is not None else None)


def test_a_sentence_about_both_faults_anchors_both_and_the_same_point_keeps_the_anchor() -> None:
    res = LlmRoles().parse_intent("FCW where the lead's BSMs are 1 s stale, and its BSM speed is 3 m/s too high. "
                                  "Start both after 6 seconds.", 1)
    assert [f["anchor"]["offset_s"] for f in res.history[0].data["faults"]] == [6.0, 6.0]
    res = LlmRoles().parse_intent("IMA where once the ego is 40 m from the stop line 10 BSMs in a row from the "
                                  "crossing car are lost, and from the same point every BSM arrives 1 s late.", 1)
    assert [f["anchor"].get("distance_m") for f in res.history[0].data["faults"]] == [40.0, 40.0]
    assert not res.unparsed_clauses


@pytest.mark.parametrize("text", [
    # fresh7: a vehicle's or a driver's motion and timing is no message fault
    "FCW with healthy radios: the lead car, 40 m ahead, drops back a little.",
    "IMA baseline: the crossing car arrives 2 seconds after the ego and yields.",
    "EEBL demo: the lead brakes at 5 m/s2 20 s in and the brake message is relayed by a second car.",
    "RLVW where the warning must still come early enough for the ego to stop; the messages are clean.",
])
def test_vehicle_motion_and_timing_is_no_fault(text: str) -> None:
    res = LlmRoles().parse_intent(text, 3)
    assert res.history[0].data["faults"] == [] and not res.unparsed_clauses


def test_a_delayed_departure_moves_the_signal_plan_only_where_the_plan_is_all_that_times_the_test() -> None:
    """'The ego's departure is delayed by 2 s' is the lights running 2 s ahead for a signal application; for a
    conflict application the crossing vehicle's timing matters too, so the plan is not moved for it."""
    glosa = ROLES.parse_intent("GLOSA along the corridor; the ego's departure is delayed by 2 s.", 3).spec
    ima = ROLES.parse_intent("Intersection movement assist at a signalized crossing; the ego's departure is "
                             "delayed by 2 s.", 3).spec
    assert glosa.signal.offset_s == 2.0
    assert ima.signal.offset_s != 2.0


@pytest.mark.parametrize(("text", "operator", "stream", "field", "value"), [
    # fresh8: ETSI names are the streams' synonyms (SPATEM = SPaT, MAPEM = MAP, CAM = BSM, DENM = the EEBL event),
    # nominalisations ("a postponement of", "under-reporting of the ... speed"), "N times in a row", "N event messages"
    ("GLOSA where the MAPEM is lost five times in a row; the SPATEM stream is unaffected.", "drop", "MAP",
     "burst_count", 5),
    ("FCW with loss of 30 % of the cooperative awareness traffic.", "drop", "BSM", "probability", 0.3),
    ("RLVW with a 0.4-second postponement of every SPaT delivery.", "delay", "SPAT", "magnitude", 0.4),
    ("LTA test case: under-reporting of the oncoming car's speed by 12 km/h.", "bsm_speed_offset", "BSM", "magnitude",
     -12 / 3.6),
    ("EEBL: the DENM-style hard-braking notification arrives 0.8 s late.", "delay", "EEBL", "magnitude", 0.8),
    ("EEBL test. Three consecutive EEBL event messages are to be dropped.", "drop", "EEBL", "burst_count", 3),
    ("GLOSA: make the countdown in the signal message run eight seconds short.", "spat_countdown_offset", "SPAT",
     "magnitude", -8.0),
])
def test_fresh8_wording_binds_one_fault(text: str, operator: str, stream: str, field: str, value: object) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert (fault["operator"], fault["stream"]) == (operator, stream) and not res.unparsed_clauses
    assert fault[field] == pytest.approx(value)


@pytest.mark.parametrize(("text", "operator", "field", "value"), [
    # fresh8: one fault said twice is one fault: a ticket's title and its description, a fault and its gloss,
    # a fault announced before a colon and detailed after it
    ("IMA-88 Cross-traffic speed inflated\nDescription: the BSM speed field from the crossing car reads 5 m/s higher "
     "than truth.", "bsm_speed_offset", "magnitude", 5.0),
    ("IMA test: the crossing car is equipped, but its OBU never transmits during the run. V2X silence, not a radar "
     "dropout.", "suppress_sender", "sender", "cross"),
    ("GLOSA: the SPaT content freezes at the start of green: phase and end times stop changing although the messages "
     "keep arriving.", "freeze", "anchor", {"kind": "signal_event", "event": "green_onset", "offset_s": 0.0}),
])
def test_one_fault_said_twice_is_one_fault(text: str, operator: str, field: str, value: object) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert fault["operator"] == operator and fault[field] == value and not res.unparsed_clauses


def test_two_faults_of_one_operator_that_differ_stay_two() -> None:
    res = LlmRoles().parse_intent("RLVW where 3 SPaT messages are lost at the amber onset. Later 5 SPaT messages are "
                                  "lost at the red onset.", 1)
    assert [f["burst_count"] for f in res.history[0].data["faults"]] == [3, 5]


@pytest.mark.parametrize("text", [
    # fresh8: "no injection", "nothing is injected", a requirement or a nominal measurement is no setting
    "LTA-301 Clean reference\nDescription: oncoming car at 40 mph. BSM latency measured on the bench is about 20 ms, "
    "which is nominal, so no injection.",
    "EEBL regression on a clean channel. The follower must react within 1 s. Nothing is injected.",
    "IMA baseline on a stop-controlled crossroads, radio link nominal. The requirement is that the warning comes at "
    "least 3 s before the conflict point; there is no fault to inject.",
])
def test_healthy_wording_builds_no_fault_and_no_finding(text: str) -> None:
    res = LlmRoles().parse_intent(text, 3)
    assert res.history[0].data["faults"] == [] and not res.unparsed_clauses


def test_an_alt_operator_list_never_unbinds_the_labelled_operator() -> None:
    """fresh9 labels a silent sender ``suppress_sender`` with ``alt: ["drop"]``: the labelled operator still binds."""
    want = {"operator": "suppress_sender", "stream": "BSM", "alt": ["drop"]}
    assert bench_parse_campaign._binds(want, {"operator": "suppress_sender", "stream": "BSM"})
    assert bench_parse_campaign._binds(want, {"operator": "drop", "stream": "BSM"})
    assert not bench_parse_campaign._binds(want, {"operator": "delay", "stream": "BSM"})


@pytest.mark.parametrize(("text", "operator", "field", "value"), [
    # fresh9: a quantity glossed in another unit is one quantity ("4 m/s (≈ 14 km/h)")
    ("Intersection movement assist with the cross vehicle's BSM speed about 4 m/s (≈ 14 km/h) below its true speed.",
     "bsm_speed_offset", "magnitude", -4.0),
    # an effect in passing and the fault that states it, in one sentence, are one fault
    ("Left turn assist: the oncoming car appearing slower than it is, its BSM speed understated by 20 km/h.",
     "bsm_speed_offset", "magnitude", -20 / 3.6),
    # a cause that names the sender and a later gloss that does not ("... recognises the signal data as stale")
    ("RLVW-07. Because the roadside unit's GPS clock is 1.5 s behind, every SPaT message it sends is stamped that much "
     "in the past. Determine whether the warning recognises the signal data as stale.", "timestamp_offset",
     "magnitude", 1.5),
    # "placed wrong" says position; the next sentence states the offset
    ("EEBL claims show pile-ups where the braking car's warning was received but placed wrong. Please test with the "
     "hard-braking event's reported position ~8 m off along the road.", "bsm_position_offset", "magnitude", 8.0),
    # "Does the warning hold up?" is whether it withstands the fault, not a delay
    ("RLVW: for about 1.5 s after the red begins the SPaT broadcast still claims it's green. Does the red-light "
     "violation warning hold up?", "spat_phase_corrupt", "duration_s", 1.5),
    # "Fault injection:" heads the faults; "Verify that ..." is a pass criterion, not a setting
    ("GLOSA-TC-12. Fault injection: (a) SPaT messages are lost with a probability of up to 40 %. Verify that the "
     "advisory is issued before the ego is 2.5 s from the stop line.", "drop", "probability", 0.4),
])
def test_fresh9_wording_binds_one_fault(text: str, operator: str, field: str, value: object) -> None:
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert fault["operator"] == operator and fault[field] == pytest.approx(value) and not res.unparsed_clauses


def test_a_gap_behind_a_vehicle_is_the_lead_gap() -> None:
    res = LlmRoles().parse_intent("Forward collision warning at 90 km/h, 40 m behind a truck, with the truck's BSM speed "
                                  "reading 18 km/h higher than the truth.", 1)
    data = res.history[0].data
    assert [a["gap_m"] for a in data["agents"] if a["role"] == "lead"] == [40.0] and not res.unparsed_clauses


@pytest.mark.parametrize(("text", "lead_gap_m", "follower_gap_m"), [
    # a tailgater with no distance follows close (the default 30 m is two seconds): fresh15's f15_015 was refused
    # at grounding, a follower 30 m behind the ego lying before the mapped road
    ("FCW: lead vehicle BSM position shifted 12 metres further ahead than true, beginning 5 s into the scenario. "
     "There's a tailgating car behind the ego; leave it alone.", 30.0, 12.0),
    ("FCW with a tailgater 8 m behind; the lead brakes at 5 s.", 30.0, 8.0),  # a stated distance stands
    # the ego tailgating its lead is the lead's gap, never a follower's
    ("FCW where the ego tailgates the lead at 10 m; a van follows 25 m behind us; drop 50 % of the lead's BSMs.",
     10.0, 25.0),
    ("FCW test where we tailgate the lead car at 12 m; its BSMs are delayed by 0.4 s.", 12.0, None),
])
def test_tailgating_sets_the_gap_it_names(text: str, lead_gap_m: float, follower_gap_m: float | None) -> None:
    res = LlmRoles().parse_intent(text, 1)
    gaps = {a.role.value: a.gap_m for a in res.spec.agents}
    assert gaps.get("lead") == lead_gap_m and gaps.get("follower") == follower_gap_m and not res.unparsed_clauses


@pytest.mark.parametrize(("text", "followed"), [
    # fresh15's f15_029: a drawn 14.7 m/s ego fell behind an 80 km/h truck and never met its braking
    ("FCW: BSMs from the vehicle ahead arrive 0.3 s late once it starts braking. Lead vehicle is a truck ahead "
     "doing 80 km/h.", True),
    ("FCW: a slow truck ahead at 20 km/h; its BSMs are delayed by 0.5 s.", False),  # closed on, as drawn
    ("FCW at 25 m/s behind a truck doing 80 km/h; its BSMs are delayed by 0.5 s.", False),  # the ego's own speed
])
def test_an_unstated_ego_keeps_up_with_a_faster_stated_lead(text: str, followed: bool) -> None:
    spec = LlmRoles().parse_intent(text, 1).spec
    (lead,) = [a for a in spec.agents if a.role.value == "lead"]
    assert (spec.ego.speed_mps == lead.speed_mps) is followed
    assert spec.ego.speed_mps >= lead.speed_mps


def _range_note(res: object) -> str:
    return next(n for n in res.history[0].notes if "upper end of the stated range" in n)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "field", "value", "stated"), [
    ("Left turn assist where the oncoming car's BSMs arrive between 200 and 300 ms late.", "magnitude", 0.3,
     "'between 200 and 300 ms' (the upper end of the stated range 0.2-0.3 s)"),
    ("LTA where the oncoming car's BSMs are delayed between 200 ms and 300 ms.", "magnitude", 0.3,
     "'between 200 ms and 300 ms' (the upper end of the stated range 0.2-0.3 s)"),
    ("RLVW where the SPaT arrives 0.2 s to 0.3 s late.", "magnitude", 0.3, "'0.2 s to 0.3 s'"),
    ("FCW with the lead car's BSM position 3-5 m off.", "magnitude", 5.0,
     "'3-5 m' (the upper end of the stated range 3-5 m)"),
    ("FCW with the lead car's BSM position 3 – 5 metres off.", "magnitude", 5.0, "the stated range 3-5 m"),
    ("GLOSA with 20-40 % of SPaT messages dropped.", "probability", 0.4, "the stated range 0.2-0.4"),
])
def test_a_stated_range_binds_its_upper_end_and_says_so(text: str, field: str, value: float, stated: str) -> None:
    """A range of one fault quantity binds one value on purpose, the upper end (the worst case), with a note naming
    the range and the choice; the lower end is bound by the range (no unparsed report for it)."""
    res = LlmRoles().parse_intent(text, 1)
    (fault,) = res.history[0].data["faults"]
    assert fault[field] == pytest.approx(value) and not res.unparsed_clauses
    assert stated in _range_note(res)


def test_a_range_in_a_healthy_scene_is_no_fault() -> None:
    res = LlmRoles().parse_intent("RLVW baseline: the ego approaches at between 40 km/h and 50 km/h, the light turns "
                                  "red, clean channel with no faults.", 1)
    assert res.history[0].data["faults"] == [] and not res.unparsed_clauses and not any(
        f.check == "parser.unparsed_fault" for f in res.findings)


def test_from_a_to_b_is_a_window_not_a_range() -> None:
    n = normalize("spat messages are lost from 5 to 10 s")
    assert [stated_range(n, q) for q in n.quantities] == [None]
    n = normalize("between five and ten seconds")
    assert stated_range(n, n.quantities[0]) is not None and stated_range(n, n.quantities[0]).low == 5.0


@pytest.mark.parametrize("text", [
    # fresh10: a report's column or counter named by a fault word, quoted or not, is a mention, not a fault
    "Run an emergency brake lights scenario: lead slams on the brakes at 40 m, relay vehicle in between, everything "
    "transmits normally, and the 'lost' column in the report should read zero.",
    "FCW run with the lead braking hard; the dropped-packets counter must stay at 0.",
])
def test_a_report_column_named_by_a_fault_word_is_no_fault(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert res.history[0].data["faults"] == [] and not res.unparsed_clauses


def test_a_fault_word_outside_a_report_item_still_binds() -> None:
    res = LlmRoles().parse_intent("RLVW: 3 SPaT messages are lost at the amber onset; the lost column must show 3.", 1)
    assert [f["operator"] for f in res.history[0].data["faults"]] == ["drop"]


@pytest.mark.parametrize("text", [
    # fresh11: a negated list negates every item; "stock" is a word, not a typo of "stuck"
    "Run left turn assist with the stock Town05 intersection map, nothing dropped, nothing frozen, default radio.",
    "GLOSA run, nothing dropped, delayed, frozen or spoofed.",
    "Left turn assist, no packet loss, no message freezing, no added latency, default radio.",
])
def test_every_item_of_a_negated_list_is_negated(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert res.history[0].data["faults"] == [] and not res.unparsed_clauses


def test_a_negated_list_does_not_reach_past_a_new_subject() -> None:
    res = LlmRoles().parse_intent("GLOSA run, no SPaT loss, MAP delayed by 2 s.", 1)
    assert [(f["operator"], f["stream"]) for f in res.history[0].data["faults"]] == [("delay", "MAP")]


def test_a_stream_named_before_a_field_sets_the_stream() -> None:
    res = LlmRoles().parse_intent("Emergency electronic brake light test, the braking car's EEBL position is off by "
                                  "15 m.", 1)
    assert [(f["operator"], f["stream"]) for f in res.history[0].data["faults"]] == [("bsm_position_offset", "EEBL")]


def test_a_plus_sign_joins_two_faults() -> None:
    res = LlmRoles().parse_intent("fcw, bsm delay 0.4s + bsm speed +2 m/s overreported", 1)
    assert sorted(f["operator"] for f in res.history[0].data["faults"]) == ["bsm_speed_offset", "delay"]


# The later fresh sets after their rounds: what each must still bind exactly, and what it leaves on purpose.
# (set, ids bound but not exact, id -> verdicts its faults may have, refused ids, healthy ids still reported)
# fresh7 f7_015: a final gap "from 40 m to 15 m" and "reacts 1.5 s late": no spec field holds them.
# fresh8 f8_006: "between 200 and 300 ms late" binds the upper end, the label its midpoint; f8_015 (a radar range) and
#   f8_029 (gap acceptance 4 s): no spec field.
# fresh10 f10_028: LTA with a MAP misassociation, refused by the verifier (LTA does not read the lane -> signal-group
#   association), its clauses reported; f10_026 (distance to the conflict point): no spec field. (f10_015's "2 s
#   headway" is the lead's gap at the ego's speed since fresh21's round.)
# fresh11 f11_008: "the roadside unit's SPaT going completely silent" is not read yet: reported, never dropped.
# fresh15 f15_030 (LTA with a MAP misassociation): our LTA does not read the lane association, so the verifier refuses
#   it and its clause is reported. f15_024 (LTA with a SPaT phase corruption, the SPaT named) and fresh20's f20_022 (a
#   BSM speed offset in an EEBL scene) were refused the same way until fresh42: a stream the words name is kept against
#   the verifier's stream_consumption repair (``stated.stated_streams``), and the spec says the fault cannot reach the
#   decision (a ``parser.stated_fault_kept`` finding) instead of failing the parse or moving the fault to another stream
#   (fresh34's f34_011 and fresh37's f37_030 likewise).
# fresh16 f16_015 (a KPI's "packet error rate target of 10 %"): healthy, with a quantity no spec field holds, reported
#   (f16_028's "ego ... 80 m before the stop line at amber onset" now times the plan).
# fresh17: a pass criterion ("warning within 500 ms", "Expected: ...", "TTC must stay above 1.5 s") is the outcome a
#   test checks, not a setting: neither bound nor reported (quantity_guard._OUTCOME).
# fresh18 f18_010, f18_015, f18_028: healthy, each with a requirement's quantity ("latency budget 100 ms",
#   "SPaT every 100 ms", "a PER target of 10 %"), reported.
# fresh19 f19_025: a healthy LTA run whose SPaT is "switched off for maintenance" (a site's outage, no fault: since
#   fresh42) parses healthy.
# fresh27 f27_013 (German) and f27_017 (French): the offline parser reads only a foreign text's English words; the
#   clauses are reported, never dropped.
# fresh28 f28_024: "anywhere between 200 and 400 ms" binds the upper end (the worst case), the label its midpoint.
# fresh29 f29_025: "light turns amber about 3.5 s before arrival": no field holds a phase change timed to the ego's
#   arrival; reported.
LATER_SETS = [
    (bench_parse_campaign.FRESH7, (), {}, (), ("f7_015",)),
    (bench_parse_campaign.FRESH8, ("f8_006",), {}, (), ("f8_015", "f8_029")),
    (bench_parse_campaign.FRESH9, (), {}, (), ()),
    (bench_parse_campaign.FRESH10, (), {"f10_028": {"reported"}}, ("f10_028",), ()),
    (bench_parse_campaign.FRESH11, (), {"f11_008": {"bound", "reported"}}, (), ()),
    (bench_parse_campaign.FRESH12, (), {}, (), ()),
    (bench_parse_campaign.FRESH13, (), {}, (), ()),
    (bench_parse_campaign.FRESH14, (), {}, (), ()),
    (bench_parse_campaign.FRESH15, (), {"f15_030": {"reported"}}, (), ()),
    (bench_parse_campaign.FRESH16, (), {}, (), ("f16_015",)),
    (bench_parse_campaign.FRESH17, (), {}, (), ()),
    (bench_parse_campaign.FRESH18, (), {}, (), ("f18_010", "f18_015", "f18_028")),
    (bench_parse_campaign.FRESH19, (), {}, (), ()),
    (bench_parse_campaign.FRESH20, (), {}, (), ()),
    (bench_parse_campaign.FRESH21, ("f21_017",), {}, (), ()),
    (bench_parse_campaign.FRESH22, ("f22_020",), {}, (), ("f22_015",)),
    (bench_parse_campaign.FRESH23, (), {}, (), ()),
    (bench_parse_campaign.FRESH24, (), {}, (), ()),
    (bench_parse_campaign.FRESH25, (), {}, (), ()),
    (bench_parse_campaign.FRESH26, (), {}, (), ("f26_013",)),
    (bench_parse_campaign.FRESH27, (), {"f27_013": {"reported"}, "f27_017": {"reported"}}, (), ()),
    (bench_parse_campaign.FRESH28, ("f28_024",), {}, (), ()),
    (bench_parse_campaign.FRESH29, (), {}, (), ()),
    (bench_parse_campaign.FRESH30, (), {"f30_022": {"reported"}}, ("f30_022",), ()),
    (bench_parse_campaign.FRESH31, (), {"f31_012": {"reported"}}, ("f31_012",), ()),
    (bench_parse_campaign.FRESH32, (), {}, (), ()),
    (bench_parse_campaign.FRESH33, ("f33_017",), {"f33_007": {"reported"}}, ("f33_007",), ()),
    (bench_parse_campaign.FRESH34, ("f34_004", "f34_019", "f34_027"), {}, (),
     ("f34_017", "f34_029")),
    (bench_parse_campaign.FRESH35, ("f35_022",), {"f35_005": {"reported"}, "f35_023": {"reported"}}, (), ("f35_020",)),
    (bench_parse_campaign.FRESH36, ("f36_015",), {"f36_011": {"reported"}}, ("f36_011",), ()),
    (bench_parse_campaign.FRESH37, (), {"f37_010": {"reported"}}, ("f37_010",), ()),
    (bench_parse_campaign.FRESH38, (), {}, (), ()),
    (bench_parse_campaign.FRESH39, (), {}, (), ()),
    (bench_parse_campaign.FRESH40, ("f40_024",), {}, (), ()),
    (bench_parse_campaign.FRESH41, (), {}, (), ()),
    (bench_parse_campaign.FRESH42, (), {}, (), ()),
    (bench_parse_campaign.FRESH43, (), {}, (), ()),
]
# sets whose answers still carry a fault in place of one the parser could not read (reported, never silent): fresh35's
# f35_005, a board game's "RULE 4.2 (Silence): ... the cross car's next 5 BSMs in a row are removed from play" (a
# suppressed sender for a burst of five drops)
SUBSTITUTED = {"f35_005"}
# sets labelled with their scene's numbers (fresh34 on): the values still lost (neither in the spec nor said back), and
# how many at least are read exactly
SCENE = {
    "parse_campaign_fresh34": ([("f34_024", "lead.speed_mps"), ("f34_026", "lead.speed_mps"),
                               ("f34_026", "lead.brake_at_s")], 76),
    "parse_campaign_fresh35": ([("f35_009", "lead.speed_mps"), ("f35_026", "ego.start_distance_m")], 72),
    "parse_campaign_fresh36": ([], 68),
    "parse_campaign_fresh37": ([], 78),
    "parse_campaign_fresh38": ([], 79),
    "parse_campaign_fresh39": ([], 70),
    "parse_campaign_fresh40": ([], 85),
    "parse_campaign_fresh41": ([], 83),
    "parse_campaign_fresh42": ([], 95),
    "parse_campaign_fresh43": ([], 68),
}


@pytest.mark.parametrize(("path", "inexact", "left", "refused", "false_alarms"), LATER_SETS,
                         ids=[row[0].stem for row in LATER_SETS])
def test_a_later_fresh_set_drops_swaps_and_invents_nothing(path, inexact, left, refused,  # type: ignore[no-untyped-def]
                                                          false_alarms) -> None:
    scored = bench_parse_campaign.run(bench_parse_campaign.load(path), LlmRoles())["rows"]
    faults = [(s["id"], f) for s in scored for f in s["faults"]]
    assert faults
    for sid, f in faults:
        if sid in left:
            assert f["verdict"] in left[sid], (sid, f)
        else:
            assert f["verdict"] == "bound" and (f["exact"] or sid in inexact), (sid, f)
    assert sorted({sid for sid, f in faults if sid not in left and not f["exact"]}) == list(inexact)
    assert [s["id"] for s in scored if s["extra"]] == [s["id"] for s in scored if s["id"] in SUBSTITUTED]
    assert [s["id"] for s in scored if s["refused"]] == list(refused)
    assert [s["id"] for s in scored if s["false_alarms"]] == list(false_alarms)
    lost, exact = SCENE.get(path.stem, ([], 0))
    assert [(s["id"], v["label"]["field"]) for s in scored for v in s["scene"] if v["verdict"] == "lost"] == lost
    assert sum(v["verdict"] == "exact" for s in scored for v in s["scene"]) >= exact


@pytest.mark.parametrize(("text", "faults"), [
    # fresh12: "none of <the messages> should be X or Y" negates both; "comms" is a word, not a typo of "comes"
    ("Please run emergency electronic brake light with the lead braking at 6 m/s2 and no comms issues, none of the "
     "messages should be lost or stale.", []),
    ("EEBL where none of the lead messages are delayed, but the relay car drops 5 EEBL messages in a row.",
     [("drop", "EEBL")]),
])
def test_none_of_reaches_over_its_noun_phrase_and_no_further(text: str, faults: list[tuple[str, str]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert [(f["operator"], f["stream"]) for f in res.history[0].data["faults"]] == faults
    assert not res.unparsed_clauses


@pytest.mark.parametrize(("text", "faults"), [
    # fresh13: a contraction negates a list as "not" does; the application under test reaches its decision point
    ("IMA at the unsignalized crossing with perfect V2X: the crossing car's BSMs aren't delayed, frozen or dropped.", []),
    ("LTA check: at the moment the app has to decide, the oncoming car's messages start arriving 250 ms late.",
     [("delay", "BSM", "decision_epoch")]),
    ("FCW: once the app reaches its decision point the lead vehicle's broadcasts get stuck repeating the same "
     "message.", [("freeze", "BSM", "decision_epoch")]),
    # fresh14: a fault named as the label of a ticket or bug is a reference to it, not a fault to inject
    ("Can you set up a healthy RLVW run as reference for the delayed-SPaT ticket? Don't inject anything this time.",
     []),
    ("GLOSA for our packet-loss bug again, this time with 30 % of the SPaT messages lost.", [("drop", "SPAT")]),
])
def test_contractions_negate_and_the_app_reaches_its_decision_point(text: str, faults: list[tuple[str, ...]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    got = [(f["operator"], f["stream"]) + ((f["anchor"]["event"],) if faults and "anchor" in f else ())
           for f in res.history[0].data["faults"]]
    assert got == faults
    assert not res.unparsed_clauses


@pytest.mark.parametrize(("text", "faults"), [
    # fresh15: words that sound like faults and are not one
    ("Baseline GLOSA run along all five junctions of the corridor, clean channel, no interference. Just want to confirm "
     "the advisory speed stays stable.", []),  # "stable" is a word, not a typo of "stale"
    ("FCW nominal: lead car braking hard at 7 m/s2, a tailgating car behind the ego, radio link within its latency "
     "budget. No comms faults.", []),
    ("FCW where the lead's BSM reports 18 km/h less than it is doing; want to see if the warning comes late.",
     [("bsm_speed_offset", "BSM")]),
    # a delayed warning *message* is still a delay
    ("EEBL with a relay car in between. The brake warning is delayed by 600 ms.", [("delay", "EEBL")]),
    # the application's own name is a stream: "(emergency) brake light messages" are EEBL, not a traffic light's
    ("EEBL with the emergency brake light messages delivered 1500 ms late.", [("delay", "EEBL")]),
    # a freeze described as stale is the freeze; a replay's lag is the replay's
    ("GLOSA: SPaT content freezes at the decision epoch. Want to see whether the advisory notices the stale data.",
     [("freeze", "SPAT")]),
    ("Replay attack on EEBL: resend a previously captured hard-braking message with a 10 s lag and its original "
     "timestamp.", [("replay", "EEBL")]),
    ("RLVW: the genuine roadside unit keeps broadcasting, but a rogue transmitter near the stop line sends its own SPaT "
     "pretending to be the junction.", [("spoofed_rsu", "SPAT")]),
    # fresh19: a test named by its fault, zero loss, the application's output suppressed, a lane tied "instead of"
    ("Homologation baseline for the replay and spoofing campaign: clean RLVW approach at 50 km/h, no drops, no added "
     "delay.", []),
    ("Reference run before the freeze tests: GLOSA approach with the controller's countdown correct and zero packet "
     "loss.", []),
    ("Emergency brake light event at 30 s, all EEBL messages delivered without delay or drop. Verify warning latency "
     "below 100 ms as per J2945/1; this is the control for the replay case.", []),
    ("Penetration test: a ghost vehicle appears 25 metres ahead in our lane from t=10 s for 3 s, and on top of that add "
     "a 300 ms delay to all BSMs. We expect the false alert to be suppressed by plausibility checks.",
     [("ghost_sender", "BSM"), ("delay", "BSM")]),
    ("RLVW: when the ego is 60 m before the stop bar, have the MAP tie our lane to the left-turn signal group instead "
     "of the through group.", [("map_misassociation", "MAP")]),
    # the EEBL message is still one ("the brake warnings get dropped")
    ("EEBL; 70% of the brake warnings get dropped when the lead brakes at 5 s.", [("drop", "EEBL")]),
])
def test_fresh15_words_bind_what_they_ask_and_nothing_else(text: str, faults: list[tuple[str, str]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert [(f["operator"], f["stream"]) for f in res.history[0].data["faults"]] == faults
    assert not res.unparsed_clauses


def test_a_replays_lag_is_its_magnitude() -> None:
    res = LlmRoles().parse_intent("Replay attack on EEBL: resend a previously captured hard-braking message with a 10 s "
                                  "lag and its original timestamp.", 1)
    [fault] = res.history[0].data["faults"]
    assert fault["magnitude"] == 10.0


@pytest.mark.parametrize(("text", "brake_at_s"), [
    # the lead's own onset, stated or the default; a lead the words make brake brakes at the default onset
    ("EEBL with the lead's EEBL messages delivered 1.5 s late from the moment the lead vehicle begins braking at 6 s.",
     6.0),
    ("FCW: BSMs from the vehicle ahead arrive 0.3 s late once it starts braking. The lead is a truck doing 80 km/h.",
     4.0),
    ("FCW where the lead's BSM loses one in five packets after the lead starts braking.", 4.0),
])
def test_once_the_lead_starts_braking_is_the_leads_brake_onset(text: str, brake_at_s: float) -> None:
    """fresh15: "once it starts braking" was read as t = 0, dropping when the user asked the fault to start."""
    data = LlmRoles().parse_intent(text, 1).history[0].data
    lead = next(a for a in data["agents"] if a["role"] == "lead")
    assert lead["behaviour"]["kind"] == "hard_brake" and lead["behaviour"]["at_time_s"] == brake_at_s
    [fault] = data["faults"]
    assert fault["anchor"]["kind"] == "scenario_time" and fault["anchor"]["offset_s"] == brake_at_s


def test_once_the_crossing_vehicle_is_near_is_the_decision_epoch() -> None:
    data = LlmRoles().parse_intent("IMA: the crossing vehicle stops transmitting its BSMs once it gets near the conflict "
                                   "point.", 1).history[0].data
    [fault] = data["faults"]
    assert (fault["operator"], fault["anchor"]["event"]) == ("suppress_sender", "decision_epoch")


@pytest.mark.parametrize(("text", "faults"), [
    # fresh16: what a test measures or leaves out, said with a fault word, is no fault
    ("GLOSA reference run: the KPI sheet quotes a packet error rate target of 10 %, but this run is the clean baseline "
     "with no injected faults.", []),
    ("EEBL reference: the previous run lost its logs, so this is only a rerun of the clean case.", []),
    ("FCW late-warning check: the lead car's BSM places it 3 metres ahead of its true position. Start at t = 10 s.",
     [("bsm_position_offset", "BSM")]),
])
def test_fresh16_mentions_are_no_faults(text: str, faults: list[tuple[str, str]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert [(f["operator"], f["stream"]) for f in res.history[0].data["faults"]] == faults


@pytest.mark.parametrize(("text", "events"), [
    # fresh16: a window said in a sentence of its own that refers back, or said of both faults
    ("IMA security case: inject a ghost vehicle 40 m from the junction on the cross street, i.e. BSMs from a car that "
     "isn't there. Start it when the real crossing vehicle gets near.", ["decision_epoch"]),
    ("IMA: crossing vehicle's position reported 6 m behind where it really is, plus drop 20 % of its BSMs, both starting "
     "when it gets near the intersection.", ["decision_epoch", "decision_epoch"]),
    ("LTA: oncoming car reports its speed 36 km/h lower than it really drives, from the moment ego has to decide "
     "whether to turn.", ["decision_epoch"]),
    ("Security test for IMA: attacker records the crossing car's BSMs and replays them 2 s later with the original "
     "timestamps, starting as the crossing vehicle approaches the junction.", ["decision_epoch"]),
])
def test_fresh16_windows_open_where_the_words_say(text: str, events: list[str]) -> None:
    data = LlmRoles().parse_intent(text, 1).history[0].data
    assert [f["anchor"].get("event") for f in data["faults"]] == events


@pytest.mark.parametrize(("text", "bounds"), [
    ("LTA nominal run: oncoming car at 60 km/h. Drivers react 1.2 s late in the driver model.", (1.2, 1.2)),
    ("FCW with reaction times between 0.8 and 1.5 s, the lead brakes hard at 5 s.", (0.8, 1.5)),
    ("EEBL: reaction time 0.7-1.5 s, lead brakes at 6 m/s2 at t = 4 s.", (0.7, 1.5)),
    ("RLVW where the SPaT is delayed by 300 ms.", None),
])
def test_a_drivers_reaction_time_is_the_seeds_variation(text: str, bounds: tuple[float, float] | None) -> None:
    """fresh16: "drivers react 1.2 s late" was an unbound quantity; it is every driver's perception delay, pinned or
    drawn per seed (variation.reaction_time_s), and never a fault."""
    res = LlmRoles().parse_intent(text, 1)
    got = res.spec.variation.reaction_time_s if res.spec.variation is not None else None
    assert (None if got is None else (got.min, got.max)) == bounds
    assert not res.unparsed_clauses


@pytest.mark.parametrize(("text", "faults"), [
    # fresh17: non-native wording, scene edits, pass criteria, choreography
    ("RLVW test: the SPaT is coming with 300 ms retard since the beginning of the amber, please to verify.",
     [("delay", "SPAT", "amber_onset")]),
    ("FCW case, BSM of lead vehicle are loosing 15 percent, start when lead begin brake.", [("drop", "BSM", None)]),
    ("Kindly check IMA when the crossing vehicle BSM is sending same content again and again with fresh timestamps, "
     "from the time it is approaching the junction itself.", [("freeze", "BSM", "decision_epoch")]),
    ("RLVW: SPaT timestamps shall be 2 seconds in the past, beginning with the red phase.",
     [("timestamp_offset", "SPAT", "red_onset")]),
    ("What does FCW do if someone re-sends the lead vehicle's BSMs captured 3 s earlier, still carrying their old "
     "timestamps, while the lead is braking?", [("replay", "BSM", None)]),
    ("Run RLVW with the SPaT countdown over-reporting the remaining amber by two tenths of a second, from amber onset.",
     [("spat_countdown_offset", "SPAT", "amber_onset")]),
    ("Nominal GLOSA drive at 45 km/h with clean SPaT and MAP, and we dropped pedestrians from the scene to keep it "
     "simple.", []),
    ("IMA healthy case: the crossing vehicle has a delayed departure (it starts at 4 s instead of 0 s) as part of the "
     "choreography, and all BSMs are nominal. No warning should be late.", []),
])
def test_fresh17_words_bind_what_they_ask(text: str, faults: list[tuple[str, str, str | None]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    anchors = [f.get("anchor") or {} for f in res.history[0].data["faults"]]
    got = [(f["operator"], f["stream"], a.get("event") if a.get("kind", "scenario_time") != "scenario_time" else None)
           for f, a in zip(res.history[0].data["faults"], anchors, strict=True)]
    assert got == faults
    assert not res.unparsed_clauses


def test_a_crossroad_for_ima_is_a_four_way_without_signals() -> None:
    """fresh17 (and the held-out e102): "a rural crossroad" made the junction a signalized 4-way, which IMA's map has
    not, and the parse was refused."""
    spec = LlmRoles().parse_intent("Rural crossroad with the view blocked by a barn. IMA: the crossing vehicle's BSMs "
                                   "are dropped.", 1).spec
    assert (spec.map.junction_kind.value, spec.map.min_approaches, spec.map.signalized) == ("any", 4, False)


def test_an_expected_result_is_not_the_faults_window() -> None:
    """fresh17: "Expected: IMA holds the last track for at most 1 s" is the pass criterion, not the fault's duration."""
    data = LlmRoles().parse_intent("IMA: once the crossing vehicle enters the decision zone its sender goes silent. "
                                   "Expected: IMA holds the last track for at most 1 s.", 1).history[0].data
    [fault] = data["faults"]
    assert fault["operator"] == "suppress_sender" and fault.get("duration_s") is None


def test_a_lead_that_brakes_at_a_time_brakes_then() -> None:
    """fresh17: "lead vehicle brakes at 10 s at 4 m/s2" was unbound and FCW's default brake at 4 s took its place."""
    data = LlmRoles().parse_intent("FCW baseline: lead vehicle brakes at 10 s at 4 m/s2, all BSMs delivered normally.",
                                   1).history[0].data
    lead = next(a for a in data["agents"] if a["role"] == "lead")
    assert lead["behaviour"] == {"kind": "hard_brake", "at_time_s": 10.0, "decel_mps2": 4.0}


@pytest.mark.parametrize(("text", "key", "bounds"), [
    # seed-varied worlds in the user's words: a range the seed draws is nobody's speed and no fault's size
    ("GLOSA on the corridor, seed-varied worlds: every vehicle's speed drawn between 10 and 15 m/s.",
     "desired_speed_mps", (10.0, 15.0)),
    ("IMA with arrival jitter of ±1 s for the crossing car.", "arrival_jitter_s", (-1.0, 1.0)),
    ("IMA: the crossing car arrives up to 1 s early or late; its BSMs are dropped.", "arrival_jitter_s", (-1.0, 1.0)),
    ("EEBL chain where drivers respond to a warning within 0.7 to 1.5 s.", "alerted_reaction_s", (0.7, 1.5)),
])
def test_seed_varied_worlds_in_words(text: str, key: str, bounds: tuple[float, float]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert res.spec.variation is not None
    got = getattr(res.spec.variation, key)
    assert got is not None and (got.min, got.max) == pytest.approx(bounds)
    assert not res.unparsed_clauses


def test_a_speed_range_the_seed_draws_is_not_the_egos_speed() -> None:
    """Before: "every vehicle's speed drawn between 10 and 15 m/s" pinned the ego at 15 m/s, the range's upper end."""
    res = LlmRoles().parse_intent("GLOSA, seed-varied worlds: every vehicle's speed drawn between 10 and 15 m/s.", 1)
    assert res.spec.variation is not None and res.spec.variation.desired_speed_mps is not None
    assert not any(n.startswith("ego.speed_mps") and "assigned from seed" not in n for n in res.notes), res.notes


@pytest.mark.parametrize(("text", "want"), [
    # fresh18: requests written as key = value, YAML-ish lines and abbreviations
    ("app=EEBL; stream=EEBL; loss=30 %; start=t 9s; dur=3s; caller=campaign-runner",
     ("drop", "EEBL", 9.0, 3.0)),
    ("application: GLOSA\nstream: SPAT\nfault: RSU keeps re-sending its last SPaT content with fresh timestamps\n"
     "start: t=4 s\nduration: 5 s", ("freeze", "SPAT", 4.0, 5.0)),
    ("IMA-57: stale BSMs from crossing veh\nDesc: crossing veh OBU keeps tx'ing the same BSM content w/ fresh "
     "timestamps, from t=3 s for 4 s.", ("freeze", "BSM", 3.0, 4.0)),
])
def test_fresh18_key_value_requests(text: str, want: tuple[str, str, float, float]) -> None:
    [fault] = LlmRoles().parse_intent(text, 1).history[0].data["faults"]
    anchor = fault.get("anchor") or {}
    assert (fault["operator"], fault["stream"], anchor.get("offset_s", 0.0), fault.get("duration_s")) == want


@pytest.mark.parametrize("text", [
    "application: FCW\nfaults: none\nnotes: lead vehicle brakes at 4 m/s^2 from t=8 s; end-to-end latency must stay "
    "below 100 ms; the ~1.5 m GNSS position error of the receiver is intrinsic, not an injected offset",
    "Campaign 9, case 1 (IMA): nominal crossing, nothing injected; the message drop counter and the delay histogram are "
    "logged for reference only.",
    "EEBL campaign: the OBU firmware 2.3 drops support for v1 messages, so every EEBL message in this run is v2.",
])
def test_fresh18_requirements_and_counters_are_no_faults(text: str) -> None:
    assert LlmRoles().parse_intent(text, 1).history[0].data["faults"] == []


def test_a_lead_braking_from_a_time_brakes_then() -> None:
    data = LlmRoles().parse_intent("FCW: lead vehicle brakes at 4 m/s^2 from t=8 s.", 1).history[0].data
    lead = next(a for a in data["agents"] if a["role"] == "lead")
    assert lead["behaviour"]["at_time_s"] == 8.0 and lead["behaviour"]["decel_mps2"] == 4.0


def test_the_ego_n_metres_before_the_bar_at_amber_onset_times_the_plan() -> None:
    """fresh16 f16_028: "ego at 60 km/h is 80 m before the stop line at amber onset" was an unbound quantity; it is
    the plan's offset that puts amber onset where the ego, at its speed from its start distance, is 80 m out."""
    res = LlmRoles().parse_intent("RLVW nominal: ego at 60 km/h is 80 m before the stop line at amber onset.", 1)
    spec = res.spec
    at_s = (spec.ego.start_distance_m - 80.0) / spec.ego.speed_mps
    assert (spec.signal.green_s - at_s) % spec.signal.cycle_s == pytest.approx(spec.signal.offset_s, abs=1e-3)
    assert not res.unparsed_clauses


@pytest.mark.parametrize("text", [
    # a campaign stops on an unread clause; these are read (fresh15-18 through the campaign runner)
    "IMA: inject a phantom car on the cross street, roughly 25 m from the conflict point, transmitting BSMs from t = 3 s.",
    "IMA security case: inject a ghost vehicle 40 m from the junction on the cross street, i.e. BSMs from a car that "
    "isn't there.",
    "GLOSA q: what happens if the SPaT feed freezes at green onset? i.e. the RSU keeps sending the same last content, "
    "only with new timestamps. The car receives SPaT fine before the freeze.",
    "FCW regression: lead's BSMs delayed by 0.4 s. Expected result: FCW is issued before TTC drops below 2.5 s; TTC must "
    "stay above 1.5 s.",
    "GLOSA with the SPaT countdown off by 3 s; the advisory corrects its recommendation within 1 s after the phase change.",
    "EEBL | 40 % packet loss on the EEBL stream, whole run, lead car brakes hard at 7 m/s2 around t=12s",
])
def test_what_a_campaign_reads_without_stopping(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert res.history[0].data["faults"]
    assert not res.unparsed_clauses, res.unparsed_clauses


@pytest.mark.parametrize(("text", "offset_s", "magnitude"), [
    # a crossing phantom's distance is its magnitude, and the window the words give besides still opens it
    ("LTA-31: Phantom oncoming car\nDescription: From t=3 s, BSMs are broadcast for an oncoming car that does not exist, "
     "30 m from the intersection, for 4 s.", 3.0, 30.0),
    ("| field | value |\n| app | GLOSA |\n| fault | a SPaT captured 20 s earlier is re-sent with its original timestamp |\n"
     "| start | t = 15 s |", 15.0, 20.0),
])
def test_a_window_read_beside_a_distance_or_in_a_table(text: str, offset_s: float, magnitude: float) -> None:
    [fault] = LlmRoles().parse_intent(text, 1).history[0].data["faults"]
    assert (fault["anchor"]["offset_s"], fault["magnitude"]) == (offset_s, magnitude)


@pytest.mark.parametrize(("text", "key"), [
    ("FCW where drivers react 10 s late and the lead's BSMs are dropped.", "reaction_time_s"),
    ("IMA with arrival jitter of ±40 s; the crossing car's BSMs are dropped.", "arrival_jitter_s"),
    ("GLOSA with every vehicle's speed drawn between 10 and 60 m/s.", "desired_speed_mps"),
])
def test_a_variation_out_of_range_is_said_back_never_clamped(text: str, key: str) -> None:
    """Bad input: the verifier's repair would clamp a stated bound to its range; the parser keeps it out of the spec and
    reports the clause with the range (lastv2x.core.variation.RANGES), so a campaign stops on it."""
    res = LlmRoles().parse_intent(text, 1)
    assert res.spec.variation is None or getattr(res.spec.variation, key) is None
    [message] = [f.message for f in res.findings if f.check == "parser.unparsed_fault"]
    assert f"variation.{key}" in message and "is outside" in message


def test_a_lead_whose_reported_speed_closes_is_fcw() -> None:
    spec = LlmRoles().parse_intent("From t=8 s the lead vehicle reports a speed 18 km/h lower than it actually is, for "
                                   "5 s. Closing speed is therefore overestimated; log any early warning.", 10914).spec
    assert spec.application.value == "FCW"


@pytest.mark.parametrize(("text", "want"), [
    # fresh20's first read: a freeze said with its fresh stamps is a freeze, not a timestamp offset
    ("RLVW: beginning 40 m before the stop line the RSU keeps sending the very same SPaT content, only with fresh "
     "timestamps, for 6 s.", [("freeze", "stop_bar_distance")]),
    ("LTA: oncoming hatchback at 60 km/h. When the hatchback gets within the decision range, it stops transmitting "
     "entirely for 4 s.", [("suppress_sender", "decision_epoch")]),
    ("IMA: crossing motorbike at thirty mph from the right. From the moment the bike gets close to the junction, its "
     "reported position lags 3 metres behind where it really is.", [("bsm_position_offset", "decision_epoch")]),
    # requirements, measurements and past runs said with fault words: no fault
    ("hey can u set up a glosa run thru all 4 lights, nothing broken on the comms side pls. KPI is advisory latency "
     "< 100ms and we want packet loss logged per junction", []),
    ("- RLVW, ego 45 km/h\n- Red onset when ego is ~60 m out\n- Requirement: warning must fire even with up to 10% "
     "message loss (we are NOT injecting loss here, this is the nominal run)\n- Record SPaT age / staleness in the log",
     []),
    ("FCW baseline, lead brakes at t=15 s. No injected faults this time - last week's run had a position offset on "
     "the lead's BSMs.", []),
    ("lta nominal pls, no faults. fyi the sender went silent last time cos of a config bug", []),
    ("GLOSA: advice must stay valid even if the countdown were off by a second - but in this run the RSUs broadcast "
     "correct SPaT; we only measure the speed-advice delay KPI.", []),
    ("Expected: IMA warning at least 2.5 s before conflict; log BSM inter-arrival times and timestamp offset "
     "statistics.", []),
])
def test_fresh20_wording(text: str, want: list[tuple[str, str]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    got = [(f.operator.value, f.anchor.event.value if f.anchor.event.value != "none" else f.anchor.kind.value)
           for f in res.spec.faults]
    assert got == want and not res.unparsed_clauses


def test_fresh20_scene_words() -> None:
    red = LlmRoles().parse_intent("RLVW, ego 45 km/h; red onset when ego is ~60 m out; SPaT dropped for 2 s at red "
                                  "onset.", 1)
    assert red.spec.signal.offset_s is not None and any("signal.offset_s" in n and "60 m out" in n for n in red.notes)
    bike = LlmRoles().parse_intent("IMA: crossing motorbike at thirty mph from the right, ego at 25 km/h; its BSMs "
                                   "are delayed by 0.5 s.", 1).spec
    assert [a.speed_mps for a in bike.agents] == [pytest.approx(30 * 0.44704, abs=1e-3)]
    lead = LlmRoles().parse_intent("What happens if the lead car's BSMs get replayed with an eight-second lag? Ego is "
                                   "at 70 km/h, 18 m behind the lead.", 1).spec
    assert lead.application.value == "FCW"


def test_stated_conflicting_traffic_fits_its_road() -> None:
    """fresh18's f18_023 (a healthy IMA run, 'crossing vehicle approaches from the right at 40 km/h') was refused at
    grounding on seeds that drew a 30 km/h ego: the crosser, timed to meet it, needed 174 m of road where the 4-way has
    161. An unstated ego now approaches no slower than stated crossing or oncoming traffic; a stated one is kept."""
    text = "IMA nominal crossing, nothing injected. Crossing vehicle approaches from the right at 40 km/h."
    for seed in range(1, 9):
        spec = LlmRoles().parse_intent(text, seed).spec
        assert spec.ego.speed_mps >= spec.agents[0].speed_mps
    slow = LlmRoles().parse_intent("IMA at 25 km/h; crossing car at 40 km/h; its BSMs delayed by 1 s.", 2).spec
    assert slow.ego.speed_mps == pytest.approx(25 / 3.6, abs=1e-3)


def test_during_the_left_turn_is_the_egos_turn() -> None:
    """fresh20's f20_012 ('Oncoming car goes silent during left turn') gave the oncoming car a left turn, which never
    conflicts with the ego's: grounding refused it on every seed."""
    spec = LlmRoles().parse_intent("LTA-88 Oncoming car goes silent during left turn. Steps: ego starts turning left at "
                                   "the junction; oncoming hatchback at 60 km/h.", 1).spec
    assert spec.ego.maneuver.value == "left" and [a.maneuver.value for a in spec.agents] == ["straight"]
    turns = LlmRoles().parse_intent("LTA where the oncoming car turns left too, its BSMs delayed by 1 s.", 1).spec
    assert [a.maneuver.value for a in turns.agents] == ["left"]


def test_a_campaign_keeps_the_intents_line_breaks() -> None:
    """A campaign folded every intent to one line, so a ticket's title ran into its fields and a restated fault was
    a second, missing one: fresh20's f20_001 parsed whole in the benchmark and stopped its campaign on 'the parser
    could not read'. The request keeps its line breaks (and, since fresh41, is passed as written: the parser folds
    white space within lines itself)."""
    from services.search.core import validate_request
    from services.search.settings import SearchSettings

    text = ("RLVW-231 Stale SPaT near stop line\nType: Test | Priority: High\nDescription: ego at 50 km/h. Beginning "
            "40 m before the stop line the RSU keeps   sending the very same SPaT content, only with fresh timestamps, "
            "for 6 s.")
    (kept,) = validate_request(settings=SearchSettings(), intents=[text]).intents
    assert kept == text
    assert not LlmRoles().parse_intent(kept, 1).unparsed_clauses
    # and a spreadsheet row's tabs (fresh23's f23_006 parsed whole in the benchmark, stopped in its campaign)
    row = "LTA-012\tLTA\tunprotected left,  oncoming sedan 40 mph\toncoming BSM position offset -4 m (reported ahead)" \
          "\tat left-turn decision\t3 s\tpending"
    (kept,) = validate_request(settings=SearchSettings(), intents=[row]).intents
    assert kept == row
    (fault,) = LlmRoles().parse_intent(kept, 1).spec.faults
    assert fault.duration_s == 3.0 and not LlmRoles().parse_intent(kept, 1).unparsed_clauses


@pytest.mark.parametrize("text", [
    # an email's subject ends its sentence ("Subject: LTA packet loss" restates the loss below it)
    "Subject: LTA packet loss\n\nHi, ego turning left at 10 km/h, oncoming motorcycle at 65 km/h. Please make the "
    "oncoming bike lose 40% of its BSMs once it gets near the junction, for 6 seconds.",
    # the time before its brake ("at t = 12 s from scenario start the lead vehicle brakes at 6 m/s²")
    "FCW. Stimulus: at t = 12 s from scenario start the lead vehicle brakes at 6 m/s². From the moment it starts "
    "braking, the lead's BSMs report its position 4 m further ahead than it really is.",
    # a parenthesis is its own part of a clause ("(3 lights, ego 55 km/h)")
    "Hi Tom, for the corridor run (3 lights, ego 55 km/h) could you make the SPaT countdown read 4 s too long from "
    "green onset onwards?",
])
def test_fresh20_campaign_stoppers(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert len(res.spec.faults) == 1 and not res.unparsed_clauses


@pytest.mark.parametrize(("text", "operator"), [
    # the never-a-fault words of fresh20 leave a fault that is asked for alone
    ("RLVW: log into the RSU and drop 30 % of SPaT messages from t = 5 s.", "drop"),
    ("GLOSA: measure the effect of a 0.5 s delay on SPaT messages from 5 s.", "delay"),
    ("FCW: the lead's BSMs are delayed by 300 ms; record the warning time in the log.", "delay"),
    ("IMA: track how the app copes when the crossing car's BSMs are dropped for 2 s at the decision point.", "drop"),
])
def test_a_fault_near_a_logging_word_stays(text: str, operator: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert [f.operator.value for f in res.spec.faults] == [operator] and not res.unparsed_clauses


@pytest.mark.parametrize(("text", "want"), [
    # fresh21's first read: a table cell's fault is read, and its anchor stays in its own cell
    ("| test_id | app | speed | fault 1 | fault 2 |\n|---|---|---|---|---|\n| R-14 | RLVW | 40 mph | MAP binds ego lane "
     "to the left-turn signal group from start | SPaT time-to-change reads 2 s short starting at amber |",
     [("map_misassociation", "scenario_time"), ("spat_countdown_offset", "amber_onset")]),
    ("GLOSA: the second of three signals should broadcast red when it's actually green, for 4 s starting at its green "
     "onset. Currently we only cover countdown errors.", [("spat_phase_corrupt", "green_onset")]),
    # a past observation restated as the request is one fault, timed by the request
    ("LTA: our telematics suggest the SUV's broadcasts were showing it about 15 metres further back than it actually "
     "was, and the left-turn assist stayed silent. Please reproduce that: oncoming vehicle reported 15 m behind its "
     "real position from the moment the ego starts the turn decision.", [("bsm_position_offset", "decision_epoch")]),
    # an anchor that opens its sentence times every fault the sentence asks for
    ("IMA: when the crossing car is about to reach the decision point, have its BSMs report it 2 m/s slower than "
     "reality and also 8 m further ahead along its path than it is, both for 5 seconds.",
     [("bsm_speed_offset", "decision_epoch"), ("bsm_position_offset", "decision_epoch")]),
    # another time, another test, a question, a requirement to withstand: no fault
    ("Last month on the Elm Avenue corridor (five signals, 600 m apart) we saw the speed advice go stale after an RSU "
     "firmware update introduced about 300 ms of SPaT latency; that's fixed now. GLOSA with clean messages this time.",
     []),
    ("Please test RLVW with signal at 300 m, RSU on pole 8 m height. Requirement: system must warn also if SPaT has "
     "200 ms delay, but this we test in other campaign, not now. Today only normal messages.", []),
    ("| id | app | oncoming speed | fault | notes |\n|---|---|---|---|---|\n| L-07 | LTA | 60 km/h | none | replay attack "
     "covered in L-08; this row is the clean reference |", []),
    ("okay glosa on the harbor road corridor uh three signals first one at two hundred metres uh target is the "
     "advisory should handle like up to ten percent spat loss but uh we're not injecting anything this run", []),
    ("Quick question on the FCW suite, not a request to run anything: what would happen if the lead car's BSMs were "
     "replayed with a 2 s lag while it brakes? For today just the standard case, no faults.", []),
])
def test_fresh21_wording(text: str, want: list[tuple[str, str]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    got = [(f.operator.value, f.anchor.event.value if f.anchor.event.value != "none" else f.anchor.kind.value)
           for f in res.spec.faults]
    assert got == want and not res.unparsed_clauses


def test_fresh21_scene_words() -> None:
    eebl = LlmRoles().parse_intent("case;app;ego;braker;comment\nE-11;EEBL;80 km/h;lead brakes 9 m/s2 at t=12 s;no "
                                   "message faults", 1).spec
    lead = next(a for a in eebl.agents if a.id == "lead")
    assert (lead.behaviour.at_time_s, lead.behaviour.decel_mps2) == (12.0, 9.0)
    assert LlmRoles().parse_intent("RLVW with the signal at 300 m, SPaT delayed by 1 s.", 1).spec.ego.start_distance_m \
        == 300.0


def test_a_headway_is_the_leads_gap_at_the_egos_speed() -> None:
    """fresh16's f16_019 ('Ego follows at 2 s headway') stopped its campaign on an unread clause; fresh10's f10_015 was a
    false alarm: a headway in seconds is the lead's gap at the ego's speed."""
    spec = LlmRoles().parse_intent("FCW, the lead's BSMs delayed by 300 ms once it brakes. Ego follows at 2 s headway "
                                   "at 50 km/h.", 1).spec
    assert [a.gap_m for a in spec.agents] == [pytest.approx(2 * 50 / 3.6, abs=0.05)]
    gap = LlmRoles().parse_intent("FCW with a time gap of 1.5 s; the lead brakes hard at 5 s; its BSMs are delayed "
                                  "by 0.5 s.", 1)
    assert gap.spec.agents[0].gap_m == pytest.approx(1.5 * gap.spec.ego.speed_mps, abs=0.05)
    assert not gap.unparsed_clauses


def test_a_pasted_test_matrix_is_read_row_by_row() -> None:
    """fresh21's CSV rows ('test,app,ego_speed,lead_speed,gap,notes' and a row) were read as one run-on clause whose
    speeds and gap bound nothing: each row is now a sentence, its cells said with their column's name."""
    from services.llm.table_rows import rows_as_sentences

    assert rows_as_sentences(["test,app,ego_speed,lead_speed,gap,notes", "F-03,FCW,90 km/h,60 km/h,40 m,no faults"]) \
        == ["FCW; ego speed 90 km/h; lead speed 60 km/h; gap 40 m; no faults."]
    prose = ["FCW, lead brakes at 5 s, BSMs delayed by 0.5 s, ego at 50 km/h."]
    assert rows_as_sentences(prose) == prose  # prose is no table
    res = LlmRoles().parse_intent("scenario,app,crossing_speed,fault,start\nI-09,IMA,15 m/s,crossing car BSMs "
                                  "delayed 1.2 s,when it is near the junction", 1)
    (cross,) = res.spec.agents
    (fault,) = res.spec.faults
    assert cross.speed_mps == 15.0 and fault.operator.value == "delay" and fault.magnitude == pytest.approx(1.2)
    assert fault.anchor.event.value == "decision_epoch" and not res.unparsed_clauses
    fcw = LlmRoles().parse_intent("test,app,ego_speed,lead_speed,gap,notes\nF-03,FCW,90 km/h,60 km/h,40 m,baseline - "
                                  "no faults injected", 1).spec
    assert (fcw.ego.speed_mps, fcw.agents[0].speed_mps, fcw.agents[0].gap_m) == (25.0, pytest.approx(16.667, abs=1e-3),
                                                                                 40.0)


@pytest.mark.parametrize(("text", "want"), [
    # fresh22's first read: a Gherkin step after "When" continues its sentence, so the When times the fault
    ("Feature: RLVW under late SPaT\n  Given the ego approaches the signalized junction at 50 km/h, 120 m from the "
     "stop bar\n  When the signal turns amber\n  Then the SPaT stream from the RSU is delayed by 800 ms for 4 seconds\n"
     "  And the RLVW warning must still be issued before the ego crosses the stop bar", [("delay", "amber_onset")]),
    ("Scenario: LTA with stale oncoming BSMs\n  Given the ego is stopped in the left-turn pocket\n  When the left-turn "
     "decision is made\n  And from that moment the oncoming vehicle's BSMs carry timestamps one and a half seconds in "
     "the past\n  Then LTA shall still warn the driver not to turn", [("timestamp_offset", "decision_epoch")]),
    # hand-typed keys: a fault's attribute lines belong to its sentence; "lead_decel: -6 m/s2 at t=10"
    ("app: FCW\nego_speed: 90 km/h\ngap_to_lead: 30 m\nlead_decel: -6 m/s2 at t=10\nfault: bsm speed offset, lead "
     "reports 18 km/h too fast\nstart: when lead starts braking\nduration: 3s", [("bsm_speed_offset", "scenario_time")]),
    # a chat: what the next speaker turns down is withdrawn; an agreement that restates the fault is the request
    ("Tom: GLOSA, can we freeze the MAP at t=5?\nLea: MAP is static anyway, you won't see anything. Freeze the SPaT "
     "instead, from green onset, 8 s.\nTom: agreed, SPaT freeze from green onset for 8 s, ego 55 km/h.",
     [("freeze", "green_onset")]),
    ("Anna: can we run GLOSA on the 3-signal corridor with the SPaT countdown reading 5 s too short?\nBen: no, ticket "
     "says the opposite: the countdown reads longer, +5 s.\nAnna: ok, +5 then, starting at green onset, ego 60 km/h.",
     [("spat_countdown_offset", "green_onset")]),
    # a checklist's lines; "EEBL from V1" and "silent on EEBL" name the stream
    ("Acceptance criteria - EEBL relay test\n[ ] V1 brakes at -8 m/s² at t = 15 s, hidden behind V2; relay R1 is "
     "supposed to rebroadcast\n[ ] EEBL from V1 delayed by three tenths of a second from t = 15 s\n[ ] relay R1 "
     "completely silent on EEBL for the whole run", [("delay", "scenario_time"), ("suppress_sender", "scenario_time")]),
    # a pasted log line is what a run recorded; the request's "5 m ahead of true" reports the lead ahead (negative)
    ("BUG FCW-231 - late FCW on highway run\nLog excerpt:\n[10.42] bsm rx V2 pos err +4.9 m (ahead of truth)\n[11.90] "
     "FCW ALERT\nRepro: lead V2 BSM position reported 5 m ahead of true from the decision epoch. Ego 110 km/h, 35 m "
     "gap.", [("bsm_position_offset", "decision_epoch")]),
    ("LTA, oncoming @ 60kmh, ego turning L from stop. suppress oncoming veh V2 BSM from t=6s, 4s. thx",
     [("suppress_sender", "scenario_time")]),
    # never a fault: a withdrawn request, a comment's robustness requirement, "nobody tampers", a fixed bug's label, a
    # fault deferred to a separate test
    ("Ines: add 50 % EEBL loss on the relay test?\nKai: no, this one is the reference for the relay - keep it clean, we "
     "do the loss variant tomorrow.\nInes: ok, clean reference: V1 brakes -7 m/s² at t=18 behind the van, R1 "
     "rebroadcasts, ego at 70 km/h.", []),
    ("Given the lead vehicle brakes at -4 m/s² at t = 12 s with a 30 m gap\nAnd the ego follows at 80 km/h\nThen FCW "
     "warns at TTC >= 2.4 s\n# robustness to up to 10 % BSM loss is a requirement, covered by FCW-R2, not this run", []),
    ("Does IMA warn correctly when the crossing vehicle's BSMs arrive on time and nobody tampers with anything? "
     "Crossing car 50 km/h from the right, ego 40 km/h.", []),
    ("For RLVW I just want the plain approach: ego at 40 km/h, amber at t = 10 s, red at t = 13 s. The frozen-SPaT bug "
     "from March is fixed, so no freeze this time.", []),
    ("For the LTA we need first the reference run without any manipulation of the BSM. The position offset of 5 m we "
     "make afterwards in a separate test. Oncoming vehicle with 60 km/h, ego turns left from standstill.", []),
    ("fcw clean ref pls: 0 drops, 0 delay. lead brakes t=10 @ -6 m/s2, gap 25 m, ego 70 kmh", []),
])
def test_fresh22_wording(text: str, want: list[tuple[str, str]]) -> None:
    res = LlmRoles().parse_intent(text, 1)
    got = [(f.operator.value, f.anchor.event.value if f.anchor.event.value != "none" else f.anchor.kind.value)
           for f in res.spec.faults]
    assert got == want and not res.unparsed_clauses


def test_fresh22_scene_words() -> None:
    roles = LlmRoles()
    fcw = roles.parse_intent("fcw: lead brakes t=10 @ -6 m/s2, gap 25 m, ego 70 kmh, its BSMs delayed by 0.3 s", 1)
    lead = fcw.spec.agents[0]
    assert (lead.behaviour.at_time_s, lead.behaviour.decel_mps2, lead.gap_m) == (10.0, 6.0, 25.0)
    assert fcw.spec.faults[0].magnitude == pytest.approx(0.3)
    rlvw = roles.parse_intent("RLVW: inject SPaT phase = green from red onset for 6 s; ego 60 km/h, 80 m from stop "
                              "bar | S3 / E3 / C3", 1).spec
    assert (rlvw.ego.speed_mps, rlvw.ego.start_distance_m) == (pytest.approx(16.667, abs=1e-3), 80.0)
    # "amber at t = 10 s, red at t = 13 s": the plan's offset and a 3 s amber
    plain = roles.parse_intent("RLVW, ego at 40 km/h, amber at t = 10 s, red at t = 13 s.", 1).spec
    assert plain.signal.amber_s == 3.0
    assert plain.signal.offset_s == pytest.approx(plain.signal.green_s - 10.0)
    # a pass criterion's speed is checked, not driven
    glosa = roles.parse_intent("app: GLOSA\nego_speed: 50 km/h\nexpect: advisory within 45-55 km/h band", 1).spec
    assert glosa.ego.speed_mps == pytest.approx(50 / 3.6, abs=1e-3)
    # "jam GNSS on the ego" is said back as no operator, never a silent drop
    jam = roles.parse_intent("RLVW, SPaT countdown 2 s shorter than real from green onset, and in the same run jam "
                             "GNSS on the ego for 5 s.", 1)
    assert any("jam GNSS" in c for c in jam.unparsed_clauses)


def test_a_chat_keeps_its_lines_and_marks_what_was_turned_down() -> None:
    cleaned = LlmRoles().check_text("Ines: add 50 % EEBL loss on the relay test?\nKai: no, keep it clean.\nInes: ok.")
    assert cleaned.splitlines() == ["Ines: (withdrawn) add 50 % EEBL loss on the relay test",
                                    "Kai: no, keep it clean.", "Ines: ok."]
    # one speaker is no chat ("Fault: ... / Note: no, ..." are fields)
    assert "(withdrawn)" not in LlmRoles().check_text("Fault: SPaT delayed 1 s.\nNote: no MAP changes.")


def _as_read(text: str) -> tuple[list[tuple[str, str, float | None, float | None]], tuple[str, ...]]:
    """(operator, anchor event or kind, duration, magnitude) of each fault the parser answers, and its unread clauses:
    what the fresh sets' wording tests compare."""
    res = LlmRoles().parse_intent(text, 1)
    return [(f.operator.value, f.anchor.event.value if f.anchor.event.value != "none" else f.anchor.kind.value,
             f.duration_s, f.magnitude) for f in res.spec.faults], res.unparsed_clauses


@pytest.mark.parametrize(("text", "want"), [
    # fresh23's first read: durations in hand-typed keys and table cells, the decision said as the turn's
    ("{\"test\": \"rlvw_phase_lie\", \"app\": \"RLVW\", \"fault\": \"SPaT from RSU-7 reports green although the light is "
     "actually red\", \"start\": \"red onset\", \"duration\": \"4 s\"}", [("spat_phase_corrupt", "red_onset", 4.0)]),
    ("rlvw_case = {'app': 'RLVW', 'stream': 'SPAT', 'fault': 'time-to-red reads 3 s shorter than reality', 'trigger': "
     "'amber onset', 'duration_s': 3.5}", [("spat_countdown_offset", "amber_onset", 3.5)]),
    ("LTA-012\tLTA\tunprotected left, oncoming sedan 40 mph\toncoming BSM position offset -4 m (reported ahead)\tat "
     "left-turn decision\t3 s\tpending", [("bsm_position_offset", "decision_epoch", 3.0)]),
    ("Buongiorno, in the LTA test the oncoming vehicle BSM should be replayed with messages two seconds old, in place of "
     "the current ones, during the left-turn decision. Duration about 3 seconds. Grazie, Giulia",
     [("replay", "decision_epoch", 3.0)]),
    ("Hello, I am Tanaka. Please make test of GLOSA where the MAP is connecting ego lane to wrong signal group "
     "(left-turn signal group instead of through). Start from green start, please continue 10 seconds.",
     [("map_misassociation", "green_onset", 10.0)]),
    ("IMA: the crossing truck's BSM under-reports its speed by 10 mph, plus 150 ms extra latency on its BSMs, both "
     "beginning 4 s into the run and lasting 6 s.", [("bsm_speed_offset", "scenario_time", 6.0),
                                                    ("delay", "scenario_time", 6.0)]),
    ("Hola team, for the RLVW test we need that the SPaT messages arrive with the timestamp 2 seconds in the past, "
     "starting when the ego is at 80 metres of the stop line. Also please lose 5 messages consecutive of MAP in the "
     "same moment.", [("timestamp_offset", "stop_bar_distance", None), ("drop", "stop_bar_distance", None)]),
    ("IMA: freeze the crossing car's BSMs just before it reaches the intersection",
     [("freeze", "decision_epoch", None)]),
    ("[09:14:02] Marco: so for the FCW run, when the lead car brakes, we kill ten BSMs in a row from it.",
     [("drop", "scenario_time", None)]),
    ("Ciao, for the EEBL test with the hidden vehicle we want that the relay re-send old EEBL messages, of 3 seconds "
     "before, instead of the actual ones, starting at t = 9 s for 6 seconds.", [("replay", "scenario_time", 6.0)]),
    ("Ticket 2291. Our drivers keep getting bogus red light warnings near 5th & Main. Our security guy thinks someone "
     "parked a fake roadside unit there. Reproduce it: a fake RSU shows red from the moment the real light turns "
     "green, for 8 seconds.", [("spoofed_rsu", "green_onset", 8.0)]),
    # never a fault: a past incident and what someone said of it, a case moved to a later sprint, a disabled variant,
    # "0 ms added latency", a fault removed, a variant for next week
    ("Ticket #4471. Last month two of our trucks got NO brake alert when a car hidden behind a box van slammed on its "
     "brakes. Your tech said EEBL messages were dropped. I want to see a clean EEBL run: hidden braking vehicle, relays "
     "on.", []),
    ("GLOSA Q3 regression - slide 4\n- Baseline corridor run, 3 signals, 60 km/h\n- Countdown-offset and spoofed-RSU "
     "cases moved to next sprint (not in this run)\n- KPI: advisory accuracy 2 km/h", []),
    ("test(rlvw): re-enable nominal junction case\n\nThe SPaT phase-corruption variant stays disabled until the RSU sim "
     "is fixed.", []),
    ("FCW quick check: lead brakes hard at t=3s, BSM at 10 Hz, 0 ms added latency, nothing dropped.", []),
    ("Hi Sam, the logs show the replay fault was still configured from the previous test, so those results are "
     "invalid. Please rerun the EEBL hidden-braking-vehicle case with relays enabled and the replay removed. We'll do "
     "the 40 % drop variant separately next week.", []),
])
def test_fresh23_wording(text: str, want: list[tuple[str, str, float | None]]) -> None:
    got, unread = _as_read(text)
    assert [g[:3] for g in got] == want and not unread


@pytest.mark.parametrize("text", [
    "LTA validation: the oncoming car's BSMs are dropped from t = 4 s, and also like heavy rain on the front camera.",
    "GLOSA: SPaT frozen from green onset for 7 s; also an OTA update of the OBU firmware mid-run.",
    "LTA: its BSM reports 15 km/h more than true for 4 s. Also inject a CAN-bus fault on the ego's steering signal.",
])
def test_what_no_operator_expresses_is_said_back(text: str) -> None:
    """fresh23: weather on a sensor, a firmware update, a bus fault of the ego are no message fault: said back, never
    dropped in silence (the campaign stops and names them)."""
    res = LlmRoles().parse_intent(text, 1)
    assert res.spec.faults and res.unparsed_clauses


def test_an_unstated_start_lies_before_a_stop_bar_anchor() -> None:
    """A fault from 150 m before the stop line with no start distance stated: the ego starts 30 m before it (the default
    120 m start would never open the window); a stated start is left to the verifier."""
    spec = LlmRoles().parse_intent("GLOSA: the SPaT freezes when the ego is 150 m before the stop line.", 1).spec
    assert spec.ego.start_distance_m == 180.0
    stated = LlmRoles().parse_intent("GLOSA, the ego starts 100 m from the stop bar; the SPaT freezes when the ego is "
                                     "150 m before the stop line.", 1).spec
    assert stated.ego.start_distance_m == 100.0


@pytest.mark.parametrize(("text", "want"), [
    # fresh24's first read
    ("REQ-V2X-0421: The FCW function shall issue a warning within 1.2 s of lead vehicle braking onset when BSM messages "
     "from the lead vehicle are delayed by between 200 and 400 ms for 5 s starting at t = 10 s.",
     [("delay", "scenario_time", 5.0, 0.4)]),
    ("GLOSA corridor test, ego at 13,9 m/s: SPaT countdown shall show 2,5 s less than the real time-to-change from "
     "green onset, for 8,0 s.", [("spat_countdown_offset", "green_onset", 8.0, -2.5)]),
    ("EEBL relay test: braking vehicle two cars ahead, relay rebroadcasting. Packet delivery ratio 80 % on EEBL between "
     "t = 5 s and t = 20 s.", [("drop", "scenario_time", 15.0, None)]),
    ("FCW with the lead car braking at t = 9 s: its BSM position is reported 5 yards behind where it actually is, for 3 "
     "s from the braking.", [("bsm_position_offset", "scenario_time", 3.0, pytest.approx(4.572))]),
    ("LTA: during the left-turn decision the oncoming car's BSM speed reads 10 mph slower than actual, and its BSMs are "
     "also delayed 200 ms, 5 s each.", [("bsm_speed_offset", "decision_epoch", 5.0, pytest.approx(-4.4704)),
                                        ("delay", "decision_epoch", 5.0, 0.2)]),
    ("EEBL with hidden braker behind a box truck and relay RV2 rebroadcasting. At 00:12 RV2 goes completely quiet on "
     "EEBL for 8 s.", [("suppress_sender", "scenario_time", 8.0, None)]),
    ("IMA regression, ticket QA-3310: ghost crossing vehicle BSMs appearing 40 m ahead of the ego at the 20-second mark "
     "for 6 s.", [("ghost_sender", "scenario_time", 6.0, 40.0)]),
    ("GLOSA on Main St corridor: SPaT should wrongly say amber for 2 s, beginning 1 s after green onset.",
     [("spat_phase_corrupt", "green_onset", 2.0, None)]),
    ("hey lastv2x start an ima run crossing car from the left at thirty kilometres per hour and drop one in five of its "
     "bsms when it's about to reach the intersection for ten seconds", [("drop", "decision_epoch", 10.0, None)]),
    ("BUG-7731 comments:\n[anna] repro idea: IMA with 40 % BSM loss on the crossing car.\n[ben] field log says the "
     "crossing car went totally silent, not lossy. Suppress its BSM from 00:08 for 6 s.\n[anna] agreed, use ben's "
     "version.", [("suppress_sender", "scenario_time", 6.0, None)]),
    # never a fault: a requirement to withstand, a thread that ends on the baseline, a table's KPI, decimal commas
    ("REQ-V2X-0533: The EEBL application shall maintain warning availability with up to 10 % EEBL packet loss. Test "
     "TC-0533-A (this run) is the nominal reference: hidden braking vehicle 30 m ahead behind a van, relay on, no fault "
     "injection.", []),
    ("Ticket #4412 thread:\n[cho] should we add 20 % BSM drop on the crossing car for IMA?\n[dev] maybe later, let's see "
     "the baseline first\n[cho] ok, IMA baseline, no fault injection on this run.", []),
    ("| Test case | App | Messages | Fault | KPI |\n|---|---|---|---|---|\n| TC-RLVW-02 | RLVW | SPaT + MAP from RSU-3 | "
     "none | PER target 1 %, warning >= 2.5 s before stop bar |", []),
    ("EEBL baseline: front vehicle brakes at 6,5 m/s², hidden behind a truck, gap 35,0 m, ego at 22,2 m/s. No fault, "
     "BSM and EEBL undisturbed.", []),
])
def test_fresh24_wording(text: str, want: list[tuple[str, str, float | None, object]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh24_scene_words() -> None:
    roles = LlmRoles()
    drop = roles.parse_intent("EEBL relay test, relay rebroadcasting. Packet delivery ratio 80 % on EEBL between t = 5 s "
                              "and t = 20 s.", 1).spec.faults[0]
    assert (drop.probability, drop.anchor.offset_s, drop.duration_s) == (pytest.approx(0.2), 5.0, 15.0)
    eebl = roles.parse_intent("EEBL baseline: front vehicle brakes at 6,5 m/s², hidden behind a truck, gap 35,0 m, ego "
                              "at 22,2 m/s. No fault.", 1).spec
    assert (eebl.ego.speed_mps, eebl.agents[0].behaviour.decel_mps2) == (22.2, 6.5)
    # a key-value markdown table is read as key lines
    glosa = roles.parse_intent("| field | value |\n|---|---|\n| app | GLOSA |\n| fault | a SPaT captured 20 s earlier "
                               "is re-sent with its original timestamp |\n| start | t = 15 s |", 1).spec
    (replay,) = glosa.faults
    assert (replay.operator.value, replay.magnitude, replay.anchor.offset_s) == ("replay", 20.0, 15.0)
    # "300 ms each" for one fault is its magnitude, not its length
    (held,) = roles.parse_intent("LTA: the opposing car's safety messages are held up in the channel by 300 "
                                 "milliseconds each.", 1).spec.faults
    assert (held.magnitude, held.duration_s) == (0.3, None)


@pytest.mark.parametrize(("text", "want"), [
    # fresh25's first read
    ("Re: EEBL hidden-vehicle test\n\nOk, let's skip the loss idea for now. Can you instead replay the EEBL messages with "
     "content 2 s old, starting at t=8 s, for 5 s?\n\nThanks, Mara\n\n> On Tue, Jonas wrote:\n> For the EEBL case with the "
     "car hidden behind the van, could we drop 30% of EEBL msgs?\n> Also maybe freeze the BSMs from the van.",
     [("replay", "scenario_time", 5.0, 2.0)]),
    ("params: app=LTA, v_ego=12 m/s, v_oncoming=16 m/s, fault=speed_offset, stream=BSM, delta=-3 m/s, t0=turn decision, "
     "dur=4s", [("bsm_speed_offset", "decision_epoch", 4.0, -3.0)]),
    ("It would be good if maybe the MAP could associate the ego's lane with the wrong signal group - say the left-turn "
     "arrow instead of the through phase - so GLOSA ends up advising on the wrong light.",
     [("map_misassociation", "scenario_time", None, None)]),
    ("FCW-112 test log\nSetup: ego 22 m/s, lead brakes at t=9 s\nInjected: lead BSM timestamps shifted 0.8 s into the past "
     "from t=9 s for 5 s\nExpected: FCW alert within 1.2 s of lead braking\nActual: alert at 2.1 s, late\nPls rerun same "
     "config w/ seed fixed.", [("timestamp_offset", "scenario_time", 5.0, 0.8)]),
    ("EEBL run pls: lead veh hidden behind bus brakes hard @ t=15s. drop EEBL msgs w/ 50% loss + delay the relayed ones "
     "by 0.3s. 8s each, both starting @ braking. thx", [("drop", "scenario_time", 8.0, None),
                                                        ("delay", "scenario_time", 8.0, 0.3)]),
    ("RLVW, ego 14 m/s. When ego is 50 m from the stop bar: (a) SPaT time-to-red reads 2 s shorter than reality, (b) MAP "
     "links our lane to the wrong signal group. Hold both 5 s.", [("spat_countdown_offset", "stop_bar_distance", 5.0,
                                                                   -2.0),
                                                                  ("map_misassociation", "stop_bar_distance", 5.0,
                                                                   None)]),
    ("FCW scenario w/ a truck ahead braking at t=12 s. Failure we want to reproduce: as soon as the truck starts braking, "
     "the app sees the truck where it was two seconds ago, for roughly 4 s.", [("delay", "scenario_time", 4.0, 2.0)]),
    ("GLOSA on Elm corridor pls - from green onset make the SPaT countdown read way too long, like the green looks like "
     "it lasts much longer than it does.", [("spat_countdown_offset", "green_onset", None, 3.0)]),
    # never a fault: a sprint's fixed bug, a quoted request turned down, relaying's duplicates, a box truck in the way
    ("FCW nominal check. Lead veh brakes at 0.5 g at t=10 s, no loss, no offsets, nothing injected. Last sprint we had a "
     "300 ms latency bug in the stack, fixed now - just confirm the warning fires on time.", []),
    ("Actually, let's do the clean baseline first - no injection at all, just the left turn with the oncoming car at 15 "
     "m/s. We'll add faults next week.\n\n> From: Priya\n> For the LTA run, can we delay the oncoming car's BSMs by 0.5 s "
     "and\n> drop 10 in a row at the turn decision?", []),
    ("EEBL case with the hard-braking car hidden behind a box truck, two relay vehicles rebroadcasting its EEBL msgs. No "
     "faults at all, clean channel.", []),
    ("EEBL relay check (no fault): so we'll see duplicate EEBL msgs w/ older timestamps - expected from relaying, don't "
     "add anything.", []),
    ("GLOSA baseline on the 3-signal corridor, ego cruising 50 km/h. Don't inject anything this time. Green windows are "
     "short (12 s) on purpose so the advisory has to work hard.", []),
    ("RLVW baseline pls, ego aproaching at 60 km/h, light turns red 3 s b4 we get to the stop line. SPAT and MAP from "
     "the RSU recieved normally, no fault injeciton.", []),
])
def test_fresh25_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh25_scene_words() -> None:
    roles = LlmRoles()
    lta = roles.parse_intent("params: app=LTA, v_ego=12 m/s, v_oncoming=16 m/s, fault=speed_offset, delta=-3 m/s", 1).spec
    assert (lta.ego.speed_mps, lta.agents[0].speed_mps) == (12.0, 16.0)
    rlvw = roles.parse_intent("RLVW, ego at 60 km/h, light turns red 3 s before we get to the stop line.", 1).spec
    red_at = (rlvw.signal.green_s + rlvw.signal.amber_s - rlvw.signal.offset_s) % rlvw.signal.cycle_s
    assert red_at == pytest.approx(rlvw.ego.start_distance_m / rlvw.ego.speed_mps - 3.0, abs=1e-3)
    assert roles.parse_intent("GLOSA, 3 signals. Green windows are short (12 s) on purpose.", 1).spec.signal.green_s == 12
    # a chat or thread: quoted lines are what was asked before
    assert "(quoted)" in roles.check_text("Ok, replay it instead.\n> could we drop 30% of EEBL msgs?")


@pytest.mark.parametrize(("text", "want"), [
    # fresh26's first read
    ("RLVW-77 False green on the through phase\nSteps to reproduce:\n1. Ego approaches junction 4 on the through lane at "
     "50 km/h; signal group 2 is red.\n2. When the ego is 80 m before the stop bar, have the RSU report signal group 2 as "
     "green for 3 s.\nAcceptance criteria:\n- Warning issued at least 2 s before the stop bar.",
     [("spat_phase_corrupt", "stop_bar_distance", 3.0, None)]),
    ("RLVW stale-signal case: at amber onset, swap the live SPaT for a replay of 2 s old messages - not a freeze, the old "
     "messages are resent as they were. Keep it going for 4 s, then return to live data.",
     [("replay", "amber_onset", 4.0, 2.0)]),
    ("Could you chain two faults on the lead's BSM for the FCW run? First delay it by 0.4 s from the moment the lead "
     "starts braking, for 2 s; after the delay ends, drop 5 BSMs in a row.",
     [("delay", "scenario_time", 2.0, 0.4), ("drop", "scenario_time", None, None)]),
    ("GLOSA on the ring road: from red onset, make the SPaT countdown read 4 s shorter than the real remaining red, for 6 "
     "s. Once that countdown fault ends, drop 3 MAP messages in a row. Ego approaching at 50 kph, about 300 metres out.",
     [("spat_countdown_offset", "red_onset", 6.0, -4.0), ("drop", "red_onset", ANY, None)]),  # (a burst's window: the verifier's)
    ("```yaml\nscenario: eebl_hidden_braker\nfaults:\n  - type: delay\n    stream: EEBL\n    value: ~200 ms\n    start: "
     "3s\n  - type: timestamp_offset\n    stream: EEBL\n    value: 1s\n    start: 3s\n    duration: 5s\n```\nTwo faults "
     "at once on purpose: late delivery plus stale stamps.", [("delay", "scenario_time", None, 0.2),
                                                             ("timestamp_offset", "scenario_time", 5.0, 1.0)]),
    ("IMA junction test: the crossing car CV-7 should go completely silent on BSM from the moment it's about to enter "
     "the junction - not a random drop, a specific sender switched off.", [("suppress_sender", "decision_epoch", None,
                                                                           None)]),
    ("Rahul, for the EEBL relay run, could you set AoI 1.5 s on the EEBL stream from t = 5 s, for 4 s?",
     [("delay", "scenario_time", 4.0, 1.5)]),
    ("7.3.1 Phantom brake alerts. The system under test shall not present an EEBL warning when an EEBL message arrives "
     "from a vehicle that does not exist, claiming to be 150 m ahead of the ego, unless the alert is confirmed by a "
     "second independent source.", [("ghost_sender", "scenario_time", None, 150.0)]),
    # never a fault
    ("FCW sanity run: lead brakes hard at ~4 s, ego at 30 m/s. To be clear, the lead really does brake - this is not a "
     "ghost vehicle or a spoofed BSM, all messages are genuine and nothing is manipulated. Expect the alert before TTC "
     "drops below 2 s.", []),
    ("EEBL-210 Baseline for multi-hop relay\nSteps to reproduce:\n1. Hidden vehicle HV1, ~300 m ahead, brakes hard at 5 s "
     "and sends EEBL.\n2. Relays R1 and R2 rebroadcast as designed.\n3. Log end-to-end latency (we expect around 100 "
     "ms).\nAcceptance criteria:\n- No messages dropped or delayed on purpose; this is the reference run.", []),
    ("RLVW positive case: the ego genuinely runs the red at 45 km/h - not a fault case, no countdown offset, no phase "
     "corruption. Expect the warning about 2.5 s before the stop bar.", []),
])
def test_fresh26_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh26_scene_words() -> None:
    roles = LlmRoles()
    chained = roles.parse_intent("FCW: delay the lead's BSMs by 0.4 s from t = 3 s for 2 s; after the delay ends, drop 5 "
                                 "BSMs in a row.", 1).spec.faults
    assert [f.anchor.offset_s for f in chained] == [3.0, 5.0]
    glosa = roles.parse_intent("GLOSA, from red onset the SPaT countdown reads 4 s short. Ego approaching at 50 kph, about "
                               "300 metres out.", 1).spec
    assert glosa.ego.start_distance_m == 300.0 and [f.operator.value for f in glosa.faults] == ["spat_countdown_offset"]
    which = roles.parse_intent("Like the GLOSA corridor run from Tuesday, but this one is for RLVW: the ego stops at the "
                               "red. Nothing injected. Pass if RLVW stays quiet the whole time.", 1)
    assert which.spec.application.value == "RLVW" and not which.spec.faults and not which.unparsed_clauses


@pytest.mark.parametrize("seed", [3, 12511])
def test_messages_that_announce_a_hard_brake_are_no_braking(seed: int) -> None:
    """fresh25's f25_011 parsed whole at the benchmark's seed and stopped its campaign at another: 'send EEBL
    hard-braking msgs, starting 12 s in' made the lead brake hard at 12 s, so the phantom's window lost its start."""
    res = LlmRoles().parse_intent("EEBL spoof test: make a phantom car that doesn't exist appear 80 m ahead of us and send "
                                  "EEBL hard-braking msgs, starting 12 s in, lasting 5 s.", seed)
    (ghost,) = res.spec.faults
    assert (ghost.anchor.offset_s, ghost.duration_s) == (12.0, 5.0) and not res.unparsed_clauses


@pytest.mark.parametrize(("text", "want"), [
    # fresh27's first read
    ("$ lastv2x campaign --app glosa --corridor elm-st --inject 'spat.min_end_time +4s' --trigger on:green --hold 10s "
     "--runs 20", [("spat_countdown_offset", "green_onset", 10.0, 4.0)]),
    ("# eebl_loss.toml\n[scenario]\napp = \"emergency-brake-light\"\nlead_decel_mps2 = 7.0\n\n[[impairment]]\ntype = "
     "\"packet_loss\"\nchannel = \"EEBL\"\nrate = 0.5\nstart = \"T+8s\"\nlength_s = 3.0\n", [("drop", "scenario_time", 3.0,
                                                                                           None)]),
    ("3.2 Fault injection. To evaluate the left-turn assist function under degraded data integrity, we inject a constant "
     "bias of +10 km/h into the speed field of the oncoming vehicle's BSMs, applied from the decision epoch.",
     [("bsm_speed_offset", "decision_epoch", None, pytest.approx(2.7778, abs=1e-3))]),
    ("hey its Dan at the track. for the next fcw pass can u make the lead car's bsms show up like 1.5 sec late right when "
     "im closing in and the warning should go off? ready in 10", [("delay", "decision_epoch", None, 1.5)]),
    ("IMA fail-safe?\n  ego -> 4-way, cross veh from L\n  cross veh goes dark (no BSM tx at all) @ decision pt -> IMA "
     "holds last track? or drops it?\n  -> measure time to 'no threat'", [("suppress_sender", "decision_epoch", None,
                                                                          None)]),
    ("Support case #88213. Subject: phantom 'vehicle braking ahead' alerts on empty motorway. Engineering request: "
     "reproduce on the test platform with a non-existent vehicle broadcasting a hard-braking event 30 s into the drive.",
     [("ghost_sender", "scenario_time", None, ANY)]),
    ("; fcw_wet.ini\n[run]\napplication = FCW\n\n[v2x]\nlead_speed_bias = +5 mph\nbias_start = at_decision\n",
     [("bsm_speed_offset", "decision_epoch", None, pytest.approx(2.2352))]),
    ("def test_ima_crossing_pos_lag():\n    \"\"\"Crossing vehicle reports its position 6 m behind where it really is, starting "
     "once the ego is 40 m from the stop bar.\n\n    Expect IMA to still warn, just later than baseline.\n    \"\"\"",
     [("bsm_position_offset", "stop_bar_distance", None, 6.0)]),
    ("Exercise 4.2. Configure the testbed so that, for the whole run, the lead vehicle's BSM reports a position 5 m "
     "further forward than its true position; the lead therefore appears 5 m farther away than it really is.",
     [("bsm_position_offset", "scenario_time", None, -5.0)]),
    ("Test calendar, Thu 09:30, LTA slot: replay the oncoming car's BSMs with a 2 s lag, starting at green onset, run it "
     "for 6 s. edit: make that 3 s lag, not 2.", [("replay", "green_onset", 6.0, 3.0)]),
    ("RUN SHEET RLVW-09\n00:00:00 ego released from hold, 45 km/h\n00:00:12 SPaT reports red while the signal is "
     "actually green; hold 4 s\n00:00:30 end of run, ego stops at marker", [("spat_phase_corrupt", "scenario_time", 4.0,
                                                                            None)]),
    ("HZ-GL-05 | Op. situation: urban corridor, 50 km/h, approaching signalised junction | Hazard: rogue roadside unit "
     "transmits SPaT claiming green while the real signal is red; GLOSA advises driver to hold speed | S3 E2 C2 | "
     "Validation: fake RSU advertising green, activated at red onset.", [("spoofed_rsu", "red_onset", None, None)]),
    # never a fault
    ("INCIDENT REPORT TT-0317. At approx. 10:42 during FCW run 14 the lead vehicle's BSMs dropped out for about 2 s and "
     "the warning fired late (TTC 1.1 s vs 2.4 s expected). Request: repeat run 14 exactly as scripted, clean channel, "
     "nothing injected.", []),
    ("REQ-EEBL-044 (warn within 300 ms of receiving an EEBL event from a vehicle \u2264 300 m ahead) \u2192 TC-EEBL-044-01 "
     "nominal, status: to run this cycle. TC-EEBL-044-02 (50 % event loss) and TC-EEBL-044-03 (stale timestamps) deferred "
     "to release 3.1 \u2014 not in scope.", []),
    ("2.4.1 (2024-06-03)\n- Fixed: suppress-sender injector kept muting the oncoming vehicle for 200 ms after the window "
     "closed.\n- Fixed: replay lag was off by one message period.\n- Added: LTA baseline scenario (no faults).", []),
    ("Review comment on the overnight GLOSA batch: the advisory speed jitters \u00b14 km/h in run 7. Is that from the +2 s "
     "countdown offset we had in that batch, or does it show up in the clean runs too?", []),
    ("Toolbox talk: IMA sessions on the north intersection are baseline only. Do NOT arm the ghost-vehicle or "
     "position-offset injectors \u2014 an unexpected phantom car spooked their driver last month.", []),
    ("Robustness target: FCW has to tolerate up to 300 ms of BSM latency and 10 % loss without missing a warning. For "
     "this sprint we only need clean reference runs at 50, 80 and 100 km/h.", []),
    ("Talk abstract: In our 2023 field trial, left-turn assist missed an oncoming motorcycle whose BSMs were arriving 600 "
     "ms late because of a congested channel. Live demo: nominal unprotected-left run, no impairments.", []),
])
def test_fresh27_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh27_scene_words() -> None:
    roles = LlmRoles()
    bound = roles.parse_intent("EEBL: warn within 300 ms of an EEBL event from a vehicle \u2264 300 m ahead.", 1).spec
    assert [a.gap_m for a in bound.agents if a.id == "lead"] != [300.0]  # a bound, not the lead's gap
    jitter = roles.parse_intent("GLOSA: the advisory speed jitters \u00b14 km/h; plot the clean runs.", 1).spec
    assert jitter.ego.speed_mps > 5.0  # a spread, not the ego's speed
    said_back = roles.parse_intent("FCW config:\nrain = heavy\nroad = wet_asphalt\nlead_speed_bias = +5 mph", 1)
    assert [f.operator.value for f in said_back.spec.faults] == ["bsm_speed_offset"]
    assert sorted(said_back.unparsed_clauses) == ["rain = heavy", "road = wet_asphalt"]
    sheet = roles.parse_intent("RUN SHEET\n00:00:00 ego released, 45 km/h\n00:00:12 SPaT reports red while the signal "
                               "is actually green; hold 4 s", 1)
    first = sheet.history[0].data  # (the parser's own answer)
    assert first is not None and [f["anchor"]["offset_s"] for f in first["faults"]] == [12.0]
    handover = roles.parse_intent("EEBL #9: lead brakes hard at T+20 s; from then on re-send its hard-brake messages 5 s "
                                  "later. Track cleared till 23:00.", 1)
    (replay,) = handover.spec.faults
    assert (replay.operator.value, replay.anchor.offset_s, replay.magnitude) == ("replay", 20.0, 5.0)


@pytest.mark.parametrize(("text", "language", "stream"), [
    ("Testplan RLVW, Lauf 7: SPaT-Verz\u00f6gerung 300 ms ab Gelbbeginn, Dauer 6 s. Zus\u00e4tzlich soll die MAP die "
     "Ego-Spur der falschen Signalgruppe zuordnen, und zwar von Anfang an.", "German", "MAP"),
])
def test_a_clause_in_another_language_about_a_stream_is_said_back(text: str, language: str, stream: str) -> None:
    """The offline parser reads only a foreign text's English words: a clause naming a stream that no fault is on is
    reported, never dropped without a word (fresh27's f27_013 dropped its MAP clause)."""
    res = LlmRoles().parse_intent(text, 1)
    said = [f.message for f in res.unparsed if f"of the {stream} stream" in f.message]
    assert len(said) == 1 and f"in {language}" in said[0] and not res.spec.faults


@pytest.mark.parametrize(("text", "want"), [
    # fresh28's first read
    (":warning: heads up \u2014 kicking off the red-light-runner warning run on the Main/5th rig now "
     ":vertical_traffic_light: RSU-2 SPaT will be delayed by 400 ms starting at amber onset for 5 s :hourglass:",
     [("delay", "amber_onset", 5.0, 0.4)]),
    ("Campaign IMA-C7 (north crossing, 50 km/h cross traffic)\n1. Phase 1 \u2014 20 nominal crossings, nothing injected, to "
     "fix the reference.\n2. Phase 2 \u2014 offset the crossing vehicle's reported position by 6 m ahead of its true "
     "location once the ego is within warning range.\n3. Phase 3 \u2014 compare warning onset against Phase 1.",
     [("bsm_position_offset", "decision_epoch", None, -6.0)]),
    ("<testcase id=\"LTA-112\" app=\"left-turn-assist\">\n  <ego manoeuvre=\"left_turn\" speed_kph=\"20\"/>\n  <remote "
     "id=\"oncoming_RV\" speed_kph=\"55\"/>\n  <fault type=\"speed-bias\" stream=\"BSM\" target=\"oncoming_RV\" "
     "value=\"-15 km/h\" start=\"t=3.0s\" duration=\"4s\"/>\n</testcase>",
     [("bsm_speed_offset", "scenario_time", 4.0, pytest.approx(-4.1667, abs=1e-3))]),
    ("-- RLVW regression, intersection 7\nINSERT INTO faults (app, stream, kind, offset_s, trigger, duration_s)\nVALUES "
     "('RLVW', 'SPAT', 'countdown_bias', -2.0, 'ego_dist_to_stopbar <= 60m', NULL);\n-- i.e. time-to-change reported 2 "
     "s shorter than the controller's real value", [("spat_countdown_offset", "stop_bar_distance", None, -2.0)]),
    ("# GLOSA robustness cell 4\ninject(app=\"glosa\", stream=\"SPAT\", op=\"drop\", rate=0.25, start=\"green_onset\", "
     "duration=6)\nrun(seed=12808)", [("drop", "green_onset", 6.0, None)]),
    ("LTA TC-09: HV turning L @ int. 2, RV oncoming @ 50 kph. Inject ghost RV (BSM only, no phys. veh.) in opp. lane "
     "when HV reaches the decision pt (TTC \u2248 4 s). Log TTC + warn lat.", [("ghost_sender", "decision_epoch", None,
                                                                           ANY)]),
    ("GLOSA run pls \u2014 shift the SPaT countdown so it says 3s* longer than reality, starting at red onset. (*0.3 s sorry, "
     "not 3, fat fingers)", [("spat_countdown_offset", "red_onset", None, 0.3)]),
    ("Please run RLVW with a rogue roadside unit (not RSU-12 itself, but a second, fake one on the same channel) "
     "broadcasting SPaT that claims the ego's signal is green (while the real one is red), starting at red onset "
     "(lasting roughly 6 s).", [("spoofed_rsu", "red_onset", 6.0, None)]),
    ("GLOSA acceptance thresholds, release 4.1:\n(a) advisory speed within \u00b11 km/h of the optimum on clean runs;\n(b) "
     "run with the MAP tying our lane to the left-turn signal group instead of the through group from the start \u2014 "
     "advice must be withheld within 2 s;", [("map_misassociation", "scenario_time", None, None)]),
    ("What if the oncoming car's BSMs showed up late \u2014 say anywhere between 200 and 400 ms \u2014 right when our car "
     "commits to the left turn? Let's stop guessing and run exactly that.", [("delay", "decision_epoch", None, 0.4)]),
    ("FCW chk (BSM here \u2248 CAM in ETSI-speak, DENM not used): lead RV pos reported 4 m behind actual from t=5 s. Report "
     "TTC at warn.", [("bsm_position_offset", "scenario_time", None, 4.0)]),
    # never a fault
    ("Context C1: SPaT spoofing, countdown errors and MAP misassociation are argued separately under G2. Solution Sn1: "
     "baseline run, no injected faults, ego at 60 km/h approaching on amber.", []),
    ("quick q re last Thursday's intersection-movement-assist runs (the ones with the phantom crossing car and 40% BSM "
     "loss): did the warning ever fire late? I'd rather just get a fresh clean run, no injection at all.", []),
    ("PM here \u2014 I keep hearing GLOSA 'falls apart when SPaT freezes', but can someone just do a vanilla run on the Elm "
     "St corridor? No fault injection yet, please.", []),
    ("Ballot comment #112: the draft should require robustness to 25 per cent BSM loss from the opposing vehicle and to "
     "300 ms latency; suggest the test procedure begin with a nominal run.", []),
    ("Result review, run 4471: the EEBL warning came 180 ms later than the reference \u2014 was that the 150 ms delay we "
     "injected on the brake-event stream, or the app itself? Please just explain from the logs; don't rerun anything.",
     []),
])
def test_fresh28_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_what_no_operator_expresses_in_fresh28_is_said_back() -> None:
    res = LlmRoles().parse_intent("RLVW, fault plan: SPaT to wrongly report amber while the real signal is red, from red "
                                  "onset, for 3 s. Additional request: heavy rain simulation on the sprinkler section.", 1)
    assert [f.operator.value for f in res.spec.faults] == ["spat_phase_corrupt"]
    assert res.unparsed_clauses == ("Additional request: heavy rain simulation on the sprinkler section",)


@pytest.mark.parametrize(("text", "want"), [
    # fresh29's first read
    ("GLOSA BEFORE-RUN CHECKLIST. Ego speed ... SET 50 KPH. Countdown fault ... SPAT COUNTDOWN READS 6 SECONDS LONG FROM "
     "GREEN ONSET. Fault duration ... 10 SECONDS. Checklist complete.", [("spat_countdown_offset", "green_onset", 10.0,
                                                                          6.0)]),
    ("STATEMENT OF WORK, Item 4.2. The Contractor will perform one (1) Emergency Electronic Brake Light trial wherein the "
     "hard-braking event messages transmitted by the Remote Vehicle are withheld, i.e. not delivered to the Host "
     "Vehicle, with a probability of thirty percent (30%) for the entire duration of the trial.",
     [("drop", "scenario_time", None, None)]),
    ("GHOST CAR HAUNTS TEST INTERSECTION -- Engineers will today conjure a vehicle that does not exist, broadcasting BSMs "
     "as it apparently barrels through the cross street, to see whether the intersection movement assist in the ego "
     "sedan cries wolf. The phantom is due to appear 5 seconds into the run.",
     [("ghost_sender", "scenario_time", None, ANY)]),
    ("LTA run 3 -> oncoming SUV speed underreported by 15 kph w/ offset starting when ego commits to turn. b/c we saw "
     "late alerts last wk. keep it ~6s", [("bsm_speed_offset", "decision_epoch", 6.0, pytest.approx(-4.1667, abs=1e-3))]),
    ("Please to make the test of red light warning where the signal message is telling yellow phase but really the light "
     "is already red. This wrong phase begin at moment of red onset and continue during 3 seconds.",
     [("spat_phase_corrupt", "red_onset", 3.0, None)]),
    ("FCW session, Do / Don't:\n- DO offset the lead vehicle's reported position by a car length ahead of where it really "
     "is (call it 4.5 m), starting at the decision point.\n- DON'T add any packet loss this time.",
     [("bsm_position_offset", "decision_epoch", None, -4.5)]),
    ("What the driver should experience: approaching the signal at 45 mph, the advisory says 'hold 38 mph, you'll make "
     "the green', and then, right when the light goes green, the countdown on the dash suddenly reads 5 seconds less "
     "than it really has.", [("spat_countdown_offset", "green_onset", None, -5.0)]),
    ("IMA, crossing pickup from the right at 30 km/h. Put a 1.5 s timestamp offset on the pickup's BSMs (stamped older) "
     "at the decision epoch, and also drop every fourth packet -- no wait, skip the second one, just the timestamp "
     "thing.", [("timestamp_offset", "decision_epoch", None, 1.5)]),
    ("As a validation engineer, I want the lead truck's speed overstated by 3 m/s and its BSMs frozen for 2 s when it "
     "starts braking, so that I can see whether forward collision warning over-warns or goes quiet.",
     [("bsm_speed_offset", "scenario_time", None, 3.0), ("freeze", "scenario_time", 2.0, None)]),
    ("NOTAM LTA-07: ONCOMING VEH (CAR #2) BSM DROPPED IN BURST OF 5 CONSECUTIVE MSGS COMMENCING WHEN EGO WITHIN WARNING "
     "RANGE. EFFECTIVE NEXT RUN ONLY.", [("drop", "decision_epoch", None, None)]),
    ("And here comes the ego down the approach at 50 kph, 150 metres to the stop line... at 100 metres out, the SPaT goes "
     "stale on us, frozen until the light changes!", [("freeze", "stop_bar_distance", None, None)]),
    # never a fault
    ("Q: Did the speed advisory go wrong last Thursday because SPaT packets were being dropped? A: No, the logs show the "
     "RSU was fine. Q: So what do we run today? A: A plain green-light speed advisory approach at 40 km/h, no "
     "impairments.", []),
    ("Re: yesterday's left turn assist runs with the 500 ms BSM delay -- the alert came roughly 0.8 s later than the "
     "baseline. No new runs needed, I just want to understand the numbers we already have.", []),
    ("LESSONS LEARNED POSTER #7: In March a replayed brake event slipped through because nobody checked the message "
     "timestamps. Moral: always run the clean EEBL hard-brake scenario first. That clean run is today's job.", []),
    ("CAUTION: RLVW REFERENCE RUN. Do not enable the SPaT countdown offset left over from the last campaign. Record "
     "only.", []),
    ("Design review aside: if the oncoming vehicle's BSMs were lost for a full second, left turn assist would have to "
     "coast on prediction -- that's a topic for the architecture review, not a test. For now, please do the standard "
     "unprotected left on a clean channel.", []),
])
def test_fresh29_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh29_scene_words() -> None:
    roles = LlmRoles()
    narrator = roles.parse_intent("NARRATOR: Our lead vehicle brakes. Now we add the twist: the lead's messages show up a "
                                  "quarter second late, and at the same time we'll knock out the forward radar.", 1)
    assert narrator.spec.application.value == "FCW" and [f.operator.value for f in narrator.spec.faults] == ["delay"]
    assert narrator.unparsed_clauses == ("at the same time we'll knock out the forward radar",)
    radio = roles.parse_intent("Tower to test car two. Car one will go hard on the brakes; we'll be replaying its "
                               "brake-event messages two seconds late.", 1)
    assert radio.spec.application.value == "EEBL"
    advisory = roles.parse_intent("GLOSA: approaching at 45 mph, the advisory says 'hold 38 mph'; then the countdown "
                                  "reads 5 s less than it has.", 1)
    assert advisory.spec.ego.speed_mps == pytest.approx(20.117, abs=1e-3)


@pytest.mark.parametrize(("text", "want"), [
    # fresh30's first read: code and wire formats around the intent, a telegram, an itinerary's clock, LaTeX, a verse
    ("A limerick for the rig:\nA driver rolled up on the red,\nbut SPaT swore 'it's green' instead;\nfor six seconds it "
     "lied\nfrom when red was applied --\ndid the warning still fire?", [("spat_phase_corrupt", "red_onset", 6.0, None)]),
    ("#!/usr/bin/env bash\n# GLOSA check: ego at 60 km/h, one signal 300 m out, light goes green around t=14 s\n"
     "export APP=GLOSA\n# hold every SPaT back by a few hundred ms (call it 300 ms) starting at t=5 s, for 10 s\n"
     "./run_scenario.sh", [("delay", "scenario_time", 10.0, 0.3)]),
    ("fcw-speed-lie: ## FCW: lead car's BSM claims it's going 10 mph faster than it really is\n\t$(RUN) APP=FCW "
     "LEAD_SPEED_MPH=35 EGO_SPEED_MPH=45 LEAD_BRAKE_AT=12s", [("bsm_speed_offset", "scenario_time", None,
                                                                pytest.approx(4.4704))]),
    ("EEBL TEST REQUESTED STOP EGO 60 KMH BEHIND WHITE BOX TRUCK STOP TRUCK BRAKES HARD AT T 11 S STOP FROM T 10 S TRUCK "
     "TO GO SILENT ON EEBL CHANNEL UNTIL END STOP", [("suppress_sender", "scenario_time", None, None)]),
    ("Itinerary -- EEBL day trip\n09:00:00.0 depart, ego at 60 km/h behind the silver van\n09:00:06.0 van's EEBL messages "
     "start reporting its position 6 m ahead of where it really is (until 09:00:10.0)\n09:00:08.5 van brakes hard\n"
     "09:00:20.0 arrive", [("bsm_position_offset", "scenario_time", 4.0, -6.0)]),
    ("\\paragraph{Case R3 (RLVW).} Ego at $v_0 = 45\\,\\mathrm{km/h}$, stop bar $d_0 = 120\\,\\mathrm{m}$ ahead. The SPaT "
     "time-to-change is biased by $\\Delta = -2\\,\\mathrm{s}$ (reads early) over $t \\in [t_{\\mathrm{amber}}, "
     "t_{\\mathrm{amber}} + 3]$ s.", [("spat_countdown_offset", "amber_onset", 3.0, -2.0)]),
    ("# In[14]:\n# IMA -- crossing motorbike from the right at 50 km/h, ego 40 km/h.\n# shove the motorbike's reported "
     "position 12 m back along its heading, t=6 s \u2192 t=10 s", [("bsm_position_offset", "scenario_time", 4.0, 12.0)]),
    ("LTA \u25b8 ego turning left, oncoming white van @ 70 km/h\n\u2022 once ego \u2264 30 m from stop line \u2192 "
     "oncoming BSM latency +\u00bc s, for the rest of the run", [("delay", "stop_bar_distance", None, 0.25)]),
    ("Explain like I'm five: our car drives at 30 km/h. We make the radio tell it there's a pretend car, one that isn't "
     "really there, about 30 metres in front. Does the forward collision warning get scared?",
     [("ghost_sender", "scenario_time", None, 30.0)]),
    ("LTA horoscope: a blue pickup comes at you at 55 km/h. At the exact moment you must choose to go or wait, its BSM "
     "will get stuck repeating the same picture for 3 seconds.", [("freeze", "decision_epoch", 3.0, None)]),
    ("Ciao team, test GLOSA: ego a 50 km/h, semaforo a 250 m. Quando scatta il verde, un RSU falso (rogue roadside unit) "
     "transmite SPaT diciendo que est\u00e1 en rojo, durante cinco segundos.", [("spoofed_rsu", "green_onset", 5.0, None)]),
    # never a fault
    ("metadata:\n  annotations:\n    v2x.test/application: \"RLVW\"\n    v2x.test/notes: \"clean reference pass; ego 50 "
     "km/h, light turns red 70 m out. The spat-freeze and map-misassociation variants live in a separate manifest and "
     "are NOT applied here.\"", []),
    ("POST /api/v1/runs HTTP/1.1\nContent-Type: application/x-www-form-urlencoded\n\napp=FCW&ego_kph=90&gap_m=50"
     "&inject=none&note=baseline+only%3B+the+bsm-freeze+variant+stays+commented+out+until+v2", []),
    ("1/3 Running GLOSA today, ego at 50 km/h.\n2/3 This one is the control run, the RSU behaves perfectly.\n3/3 The nasty "
     "stuff (a spoofed RSU showing red) comes next week.", []),
    ("What happens if the crossing car's BSM freezes, or if someone spoofs the MAP? Good questions, but I'm not asking "
     "them today. Just run IMA clean: ego 25 km/h, a red hatchback crossing from the right at 40 km/h.", []),
    ("Greetings! Last Tuesday we spoofed the MAP and replayed the oncoming car's BSM from 5 s back. Today: plain LTA "
     "baseline, no faults at all.", []),
    ("TONIGHT: 'Left Turn Assist: The Baseline', no injected faults. NEXT WEEK at 20:00: 'The Ghost Car' -- a phantom "
     "oncoming sender and a frozen BSM.", []),
])
def test_fresh30_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh30_scene_words() -> None:
    roles = LlmRoles()
    # a crossing car's speed is the crossing car's, not the ego's ("a car crossing from the right at 40 km/h")
    ima = roles.parse_intent("Run IMA: ego 25 km/h, a car crossing from the right at 40 km/h.", 1).spec
    assert ima.ego.speed_mps == pytest.approx(6.944, abs=1e-3) and ima.agents[0].speed_mps == pytest.approx(11.111, abs=1e-3)
    # a light's onset before the ego's arrival is the plan's offset, not the amber's length
    amber = roles.parse_intent("RLVW: ego at 50 km/h, the light turns amber 3.5 s before the ego arrives.", 1).spec
    assert amber.signal.amber_s == 3.0 and amber.signal.offset_s > 0
    red = roles.parse_intent("RLVW: ego 50 km/h, light turns red 70 m out, driver stops.", 1)
    assert red.spec.signal.offset_s > 0 and not red.unparsed_clauses
    # "leading by 40 metres" is the lead's gap; "five lead BSMs in a row" a burst of five
    fcw = roles.parse_intent("FCW: the red hatchback leading by 40 metres brakes at t=9 s; at the decision point five "
                             "lead BSMs in a row vanish.", 1).spec
    assert fcw.agents[0].gap_m == 40.0 and fcw.faults[0].burst_count == 5
    # a pasted log's clock of the day is no run sheet: the repro's own start stands
    log = roles.parse_intent("EEBL missed.\nLog:\n14:02:31.200 RX EEBL V3 seq=1040\n14:02:32.700 RX EEBL V3 seq=1056\n"
                             "Repro request: drop 15 consecutive EEBL messages starting 12 s into the scenario.", 1).spec
    assert log.faults[0].anchor.offset_s == 12.0


@pytest.mark.parametrize(("text", "want"), [
    # fresh31's first read: notebook units, code, diffs, pseudo-code, plain-text math, other languages, verse
    ("(Lights up. A silver sedan, the LEAD, rolls 30 m ahead of EGO. At t=10 s the LEAD brakes hard. Just before, at "
     "t=9 s, fifteen of the LEAD's BSMs vanish in a row. Curtain.)", [("drop", "scenario_time", None, None)]),
    ("GALLERY 3 -- LEFT TURN ASSIST UNDER REPLAY. A white van approaches from the opposite direction at 60 km/h. At the "
     "decision point, the van's live BSMs are replaced by its own broadcasts from 2 seconds earlier, original timestamps "
     "intact, for a span of 4 seconds.", [("replay", "decision_epoch", 4.0, 2.0)]),
    ("14 Mar, run 8 -- GLOSA. v_approach = 13.9 [m/s]; d_stopbar(0) = 250 [m]. Inject (a) SPaT random loss, p = 0.30 "
     "[-], t = 0 [s] to end. (b) spoofed RSU broadcasting GREEN, start when d_stopbar = 120 [m], hold 10 [s].",
     [("drop", "scenario_time", None, None), ("spoofed_rsu", "stop_bar_distance", 10.0, None)]),
    ("--- a/rlvw_run.conf\n+++ b/rlvw_run.conf\n@@ -1,3 +1,3 @@\n application   RLVW\n-fault         none\n+fault         "
     "SPaT frozen from amber onset for 4 s", [("freeze", "amber_onset", 4.0, None)]),
    ("RLVW under MAP fault:\nIF ego.dist_to_stop_bar <= 60 m THEN\n    MAP ties ego lane to signal group 4 (true group is "
     "2) FOR 8 s\nELSE\n    MAP nominal\nEND", [("map_misassociation", "stop_bar_distance", 8.0, None)]),
    ("IMA \u00b7 crossing car v_c \u2248 12 m/s (from the left), ego v_e \u2248 10 m/s. Crossing-car BSM: \u0394t_delay = "
     "0.4 s for t \u2208 [3 s, 10 s]; over the same window, random loss with P(drop) \u2248 20%.",
     [("delay", "scenario_time", 7.0, 0.4), ("drop", "scenario_time", 7.0, None)]),
    ("RLVW, haiku-style: / amber onset, SPaT swears green / three seconds of lies", [("spat_phase_corrupt", "amber_onset",
                                                                                   3.0, None)]),
    ("Bring the GLOSA approach to a steady simmer at 40 km/h. The moment the light goes green, let the SPaT go stale "
     "like day-old bread -- same phase, same countdown, served again and again for 5 s with only the timestamps fresh.",
     [("freeze", "green_onset", 5.0, None)]),
    ("NOW HIRING: one EEBL application. The bus ahead brakes hard at t=7 s while an adversary re-broadcasts that bus's "
     "EEBL messages from 3 s ago, old timestamps and all, starting t=6 s for 4 s.", [("replay", "scenario_time", 4.0,
                                                                                       3.0)]),
    ("Akzeptanztest FCW: Lead vehicle bremst hart bei t=8 s, Abstand 35 m, Ego 27 m/s. Fault: ein Geisterfahrzeug sendet "
     "BSMs, 25 m vor dem Ego, ab t=4 s f\u00fcr 6 s.", [("ghost_sender", "scenario_time", 6.0, 25.0)]),
    ("EEBL-test: de vrachtwagen v\u00f3\u00f3r ons remt hard op t=10 s, ego rijdt 90 km/h. Storing: de vrachtwagen als zender "
     "wordt het zwijgen opgelegd op de EEBL-stroom, vanaf t=9 s gedurende 5 s.", [("suppress_sender", "scenario_time",
                                                                                   5.0, None)]),
    ("Testar o RLVW: o ego se aproxima a 60 km/h. Quando o sinal ficar vermelho, um RSU falso transmite SPaT indicando "
     "verde durante 6 s.", [("spoofed_rsu", "red_onset", 6.0, None)]),
    ("Ship's log. Oncoming vessel, a green coupe, making 30 kn. From the moment of decision until the turn's done, that "
     "coupe's BSM logs its speed 10 mph under the truth. Helm to trust LTA.",
     [("bsm_speed_offset", "decision_epoch", None, pytest.approx(-4.4704))]),
    # never a fault
    ("let run = TestRun {\n    app: App::Eebl,\n    lead: Vehicle { kind: \"box truck\", hard_brake_at_s: 9.0 },\n    "
     "faults: vec![], // ghost_sender EEBL experiment deferred to next sprint\n};", []),
    ("GLOSA baseline, state machine view. All transitions driven by genuine, on-time SPaT. The edge labelled 'SPaT +0.5 s "
     "late' in yesterday's diagram belongs to the delay campaign and is NOT exercised here. Ego 50 km/h.", []),
    ("The fog came in at t=0. Ahead, the lead car -- black as a hearse -- braked at t=14 s. I waited for them: the ghost "
     "vehicles, the frozen messages, the replayed whispers of seconds long dead. None came. It was only FCW and the "
     "truth, a clean baseline, nothing injected.", []),
    ("Alright, huddle up. GLOSA, 50kmh approach, light flips green at t+00:07. We are NOT running the 25% SPaT loss drill "
     "-- that was Tuesday. Clean baseline, nothing injected. Break!", []),
])
def test_fresh31_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh31_scene_words() -> None:
    roles = LlmRoles()
    fcw = roles.parse_intent("FCW baseline. The lead car braked at t=14 s.", 1).spec  # ("braked" is no typo of "brake")
    assert fcw.agents[0].behaviour.at_time_s == 14.0
    story = roles.parse_intent("FCW. At t=10 s the lead brakes hard. Just before, at t=9 s, 15 lead BSMs vanish in a "
                               "row.", 1).spec  # (each time in its own sentence)
    assert story.agents[0].behaviour.at_time_s == 10.0 and story.faults[0].anchor.offset_s == 9.0
    assert story.faults[0].burst_count == 15
    # where an oncoming car is, said after its speed, is no position offset; it times the car (fresh37: the ego placed
    # to meet it there)
    lta = roles.parse_intent("LTA: oncoming motorcycle at 70 km/h, 80 m out. At t+00:05 its BSM reports its position 8 m "
                             "ahead of where it really is; maintain for 4 s.", 1)
    assert [(f.operator.value, f.magnitude, f.anchor.offset_s, f.duration_s) for f in lta.spec.faults] == [
        ("bsm_position_offset", -8.0, 5.0, 4.0)]
    assert not lta.unparsed_clauses and any(n.startswith("ego.start_distance_m") and "conflict point with opposing" in n
                                            for n in lta.notes)
    glare = roles.parse_intent("FCW, the taxi brakes at t=9 s. Also, the ego's front camera will be blinded by sun glare.",
                               1)
    assert glare.unparsed_clauses == ("the ego's front camera will be blinded by sun glare",)


@pytest.mark.parametrize(("text", "want"), [
    # fresh32's first read: prohibitions that ask for a fault, typos of known words, the driver's view, other languages
    ("RLVW, ego at 50 km/h. Once the light goes amber, don't let the next 30 SPaT messages through, and don't let the MAP "
     "tie our lane to its proper signal group at any point in the run either.",
     [("drop", "amber_onset", None, None), ("map_misassociation", "scenario_time", None, None)]),
    ("GLOSA tset plz: SPaT gets replayd from 4 s earlier, staring at green onset, for 8 s; also add a dealy of 0.2 s on "
     "the SPaT for the hole run.", [("replay", "green_onset", 8.0, 4.0), ("delay", "scenario_time", None, 0.2)]),
    ("LTA: oncoming pickup at 35 mph, ego at 20 km/h approaching to turn left. Bump the oncoming pickup's reported speed "
     "up by 9 mph from 50 m before the stop bar, for 4 s.",
     [("bsm_speed_offset", "stop_bar_distance", 4.0, pytest.approx(4.02336))]),
    ("For the red light violation warning, I want the dashboard to believe the light is green while the real signal is "
     "red -- from red onset, for 6 seconds. Ego comes in at 60 km/h.", [("spat_phase_corrupt", "red_onset", 6.0, None)]),
    ("SOCRATES: And if a vehicle that does not exist, thirty metres ahead of us, also announced hard braking? MENO: Then "
     "our car would be warned of a phantom. SOCRATES: Then let us put the EEBL application to that test: a ghost EEBL "
     "sender 30 m ahead of the ego, appearing at t=5 s and lasting 6 s.", [("ghost_sender", "scenario_time", 6.0, 30.0)]),
    ("Notatka odbiorcza (FCW): pojazd prowadzacy hamuje przy t=10 s. Prosze wstrzyknac losowa utrate BSM z "
     "prawdopodobie\u0144stwem 0.2 przez ca\u0142y przebieg.", [("drop", "scenario_time", None, None)]),
    # never a fault
    ("FOR SALE: one pristine IMA baseline. Grey coupe crossing from the left at 30 km/h, ego approaching at 35 km/h. "
     "Never been faulted -- no ghost vehicles, no position offsets, no dropped BSMs.", []),
    ("Priya is running the IMA speed-offset case on her rig this afternoon (the +3 m/s one). On mine I only need the "
     "unfaulted IMA reference: ego at 40 km/h, white van crossing from the right at 35 km/h.", []),
    ("We already covered FCW last sprint with a BSM freeze. This one is a clean EEBL run, the lead car brakes at t=5 s.",
     []),
    ("Here the ego approaches, preparing to turn left across an oncoming bus. Last season its BSMs were frozen and it "
     "struck blindly; this season nothing interferes with the messages at all.", []),
    ("The tortoise asked the hare, 'Shall we drop the EEBL messages from the braking van and see what happens?' 'Not "
     "today,' said the hare. And so the EEBL run went ahead with the van braking hard at t=6 s.", []),
    ("Today is the GLOSA baseline, ego at 50 km/h. I know you're all itching to try the spoofed RSU and the countdown "
     "offset; that's Thursday. Today, nothing gets injected.", []),
    ("Abstract. We evaluate RLVW with the ego at 50 km/h. Prior studies injected SPaT freezes and MAP misassociation; in "
     "the present run we establish a clean baseline. Future work will revisit the spoofed-RSU case.", []),
])
def test_fresh32_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh32_scene_words() -> None:
    roles = LlmRoles()
    ima = roles.parse_intent("IMA: grey coupe crossing from the left at 30 km/h, ego approaching at 35 km/h.", 1).spec
    assert ima.ego.speed_mps == pytest.approx(9.722, abs=1e-3) and ima.agents[0].speed_mps == pytest.approx(8.333, abs=1e-3)
    # "no lead vehicle" is none: a lead ahead would stop the ego at the red for it (f32_019's campaign admitted nothing)
    rlvw = roles.parse_intent("RLVW: SPaT shows green from red onset for 6 s. Ego comes in at 60 km/h, no lead vehicle.", 1)
    assert rlvw.spec.agents == ()
    attack = roles.parse_intent("LTA: the bus's BSMs are delayed by 0.4 s. And the wicked witch cast a spell on the "
                                "little car's CAN bus so its steering commands came out garbled.", 1)
    assert [f.operator.value for f in attack.spec.faults] == ["delay"] and attack.unparsed_clauses


@pytest.mark.parametrize(("text", "want"), [
    # fresh33's first read: people at work, corrections said aloud, a fault taken back, starts after the lead's braking
    ("ok EEBL run, uh, truck slams the brakes at around twenty seconds, and I want the brake event messages coming from "
     "the truck delayed by half a second, no wait, make that 800 milliseconds, starting right when it brakes and for the "
     "next five seconds.", [("delay", "scenario_time", 5.0, 0.8)]),
    ("EEBL regression, the three-fault variant. The braking car's EEBL messages report its position 15 m further ahead "
     "than it actually is, starting at t=10 s. Also drop 5 EEBL messages in a row straight after the brake event. "
     "Actually, scrap the burst drop, Ana says it's covered in EEBL-04. Lead brakes at t=16 s.",
     [("bsm_position_offset", "scenario_time", None, -15.0)]),
    ("FCW, lead 30 m ahead, both at 90 km/h. Lead brakes hard at t=12s. Starting two seconds after the lead brakes, lose "
     "10 of the lead's BSMs in a row.", [("drop", "scenario_time", None, None)]),
    ("EEBL: the black SUV at the front brakes hard at t=18 s. For the first 1.5 s after it brakes, the SUV sends no EEBL "
     "at all.", [("suppress_sender", "scenario_time", 1.5, None)]),
    ("Replay attack case for IMA. Picture someone with a laptop recording the crossing car's BSMs and rebroadcasting them "
     "2 seconds stale in place of the live ones, with the original timestamps.", [("replay", "scenario_time", None,
                                                                                   2.0)]),
    ("RLVW, 45km/h, light goes amber when we're roughly 60m out, amber is 4s. At amber the SPaT from the RSU locks up: "
     "same phase, same countdown repeated, for 4s.", [("freeze", "amber_onset", 4.0, None)]),
    ("Please help to test GLOSA function. Ego vehicle speed is 50km/h, distance to stop line is 300m. When signal become "
     "green, make the RSU SPaT message delay 1.5s, continue 10 seconds.", [("delay", "green_onset", 10.0, 1.5)]),
    ("RLVW at 50 km/h. From amber onset, only nine out of ten SPaT messages get through, the losses random.",
     [("drop", "amber_onset", None, None)]),
    ("GLOSA approach, ego at 40 km/h starting 250 m out, green ending in about 12 s. Last week we ran it with the SPaT "
     "countdown reading 3 s too early. Same as that, but flip the sign: make the time-to-change read 3 s later than the "
     "truth, from t=5s for the rest of the approach.", [("spat_countdown_offset", "scenario_time", None, 3.0)]),
    # never a fault
    ("For the safety case I need a reference EEBL run with nothing tampered, the front car brakes at t=18 s. The previous "
     "campaign replayed brake messages from two seconds earlier and dropped bursts of them; those runs are archived.",
     []),
    ("FCW-03, clean run. No faults. Yes, I know the test matrix has 'BSM delay 200 ms' in the column next to this row; "
     "that's a copy-paste error from FCW-07. Lead brakes hard at t=9 s, ego at 50 km/h.", []),
    ("Baseline RLVW, ego at 40 mph, light turns amber 70 m before the bar. Don't inject anything on this one. If it "
     "turns out the baseline already misses the warning, the plan is to freeze the SPaT at amber in the next run, but "
     "that's a decision for after we see this result.", []),
    ("Please run IMA test without inject any fault. Last month Kumar has done same scenario with one in five BSM of "
     "crossing vehicle dropped, we want compare. Ego speed 25 km/h, crossing vehicle from left 40 km/h.", []),
    ("Shift handover, IMA rig: night shift left the crossing car's position offset (4 m) configured from their run, "
     "please take it out before you start. Today's run is the clean one, no faults at all.", []),
])
def test_fresh33_wording(text: str, want: list[tuple[str, str, float | None, float | None]]) -> None:
    got, unread = _as_read(text)
    assert got == want and not unread


def test_fresh33_scene_words() -> None:
    roles = LlmRoles()
    late = roles.parse_intent("FCW. Lead brakes hard at t=12 s. Starting two seconds after the lead brakes, lose 10 of "
                              "the lead's BSMs in a row.", 1).spec
    assert late.faults[0].anchor.offset_s == 14.0 and late.faults[0].burst_count == 10
    none = roles.parse_intent("LTA: ego approaches at 30 km/h to turn left, no real oncoming traffic at all. At the "  # (LTA's scene keeps its oncoming car)
                              "decision point, inject a phantom oncoming car on BSM about 60 yards in front of us.", 1).spec
    assert none.faults[0].magnitude == pytest.approx(54.864)
    # the application's view of the phase, said by what is left of it
    glosa = roles.parse_intent("GLOSA: ego at 45 km/h, 300 m from the signal, red with 15 s to go.", 1)
    assert glosa.spec.ego.start_distance_m == 300.0 and not glosa.unparsed_clauses
    # "at 15th second" is t = 15 s; "hard-braking event messages" are messages, no vehicle's braking (a backtracking
    # "hard-brakin" made the lead brake and took the fault's start as its time)
    kindly = roles.parse_intent("Kindly do FCW testing. Lead will do hard braking at 15th second. Please make the lead "
                                "vehicle BSM position wrong by 5 metre, behind its actual place, from 10th second.", 1).spec
    assert kindly.agents[0].behaviour.at_time_s == 15.0 and kindly.faults[0].anchor.offset_s == 10.0
    phantom = roles.parse_intent("EEBL: a vehicle that does not exist, 80 m ahead of the ego, sending hard-braking event "
                                 "messages from t=15 s for 3 s.", 1).spec
    assert phantom.faults[0].anchor.offset_s == 15.0 and all(a.behaviour.kind.value == "none" for a in phantom.agents)
    sensors = roles.parse_intent("LTA: oncoming BSMs stamped 1.2 s in the past. Also want a cyclist in the crosswalk. In "
                                 "the same run, put 300ms of lag on the brake actuator.", 1)
    assert [f.operator.value for f in sensors.spec.faults] == ["timestamp_offset"] and len(sensors.unparsed_clauses) == 2


@pytest.mark.parametrize(("text", "want"), [
    # fresh34: the ego's start said many ways, each read as its start distance
    ("RLVW with the ego at 55 km/h starting 180 m before the stop line; drop 20 % of SPaT.", 180.0),
    ("GLOSA -> ego 60kmh, 400m to sig. Delay SPaT by 1 s.", 400.0),
    ("IMA: Ego crawling toward the junction at 25 km/h, 45 metres out. Delay the crossing car's BSMs by 0.5 s.", 45.0),
    ("IMA: best approached at a leisurely 30 km/h, starting some 50 m short of the junction. Drop 30 % of BSMs.", 50.0),
    ("A GLOSA car approaches at 35 mph from 220 metres out. Its SPaT feed freezes for 6 seconds.", 220.0),
    # (a fault's window said by the ego's distance is no start: "Beginning 40 m before the stop line the RSU ...")
    ("RLVW, ego at 50 km/h. Beginning 40 m before the stop line the RSU keeps sending the same SPaT for 6 s.", None),
])
def test_fresh34_start_distances(text: str, want: float | None) -> None:
    spec = LlmRoles().parse_intent(text, 1).spec
    if want is None:
        assert spec.faults[0].anchor.event.value == "stop_bar_distance" and spec.ego.start_distance_m != 40.0
    else:
        assert spec.ego.start_distance_m == want


def test_fresh34_scene_words() -> None:
    roles = LlmRoles()
    # a lead said to keep the ego's speed, its gap after a comma, and a phantom in the sentence before it
    fcw = roles.parse_intent("FCW: a phantom car 40 m ahead from 8 s for 5 s. Real lead is a red SUV way up ahead, "
                             "120 m, cruising at the same speed as us, 70 km/h.", 1).spec
    lead = fcw.agents[0]
    assert lead.gap_m == 120.0 and lead.speed_mps == fcw.ego.speed_mps == pytest.approx(19.444)
    # a time gap said as "2 seconds ahead"; a follower keeps the ego's pace where its speed is not said
    eebl = roles.parse_intent("EEBL: ego at 100 km/h, a lead car sitting 2 seconds ahead at the same pace, a "
                              "tailgater behind us. Delay the EEBL by 0.8 s.", 1).spec
    by_role = {a.role.value: a for a in eebl.agents}
    assert by_role["lead"].gap_m == pytest.approx(55.6) and by_role["follower"].speed_mps == eebl.ego.speed_mps
    # "repeating the same speed" is what a frozen broadcast does, not a lead's pace
    frozen = roles.parse_intent("FCW: the lead's broadcast keeps repeating the same speed and position.", 1).spec
    assert frozen.agents[0].speed_mps != frozen.ego.speed_mps
    # units in words, and a correction said after a few words and a dash
    ima = roles.parse_intent("IMA test: ego at, um, 40 k's an hour, cross traffic at 45 miles an hour. Stamp the BSMs "
                             "half a second in the past -- no wait, make it 0.7 seconds -- starting from 5 seconds in.",
                             1)
    assert ima.spec.ego.speed_mps == pytest.approx(11.111) and ima.spec.agents[0].speed_mps == pytest.approx(20.117)
    assert ima.spec.faults[0].magnitude == 0.7 and ima.spec.faults[0].anchor.offset_s == 5.0 and not ima.unparsed_clauses


def test_fresh35_scene_words() -> None:
    roles = LlmRoles()
    # a speed said against the ego's is the scene's, not a speed offset
    fcw = roles.parse_intent("FCW rerun: at our 25 m/s, with the lead 40 m ahead and 10 m/s slower than us. Shift the "
                             "lead's BSM position 6 metres behind where it really is, from t=4 s for 10 s.", 1)
    assert [f.operator.value for f in fcw.spec.faults] == ["bsm_position_offset"]
    assert fcw.spec.agents[0].speed_mps == 15.0 and fcw.spec.agents[0].gap_m == 40.0
    # a start said as an instruction, quoted, or from the ego's approach; a gap after a colon
    assert roles.parse_intent("RLVW. The ego vehicle MUST start a hundred and fifty metres from the stop bar at 15 m/s. "
                              "Drop 20 % of SPaT.", 1).spec.ego.start_distance_m == 150.0
    assert roles.parse_intent("RLVW request puts the ego at 'sixty kilometres per hour', starting 'two hundred metres' "
                              "before the stop line. Drop 20 % of SPaT.", 1).spec.ego.start_distance_m == 200.0
    assert roles.parse_intent("IMA: An ego vehicle approaches an unsignalised junction at 14 m/s from 100 m. Drop 30 % "
                              "of BSMs.", 1).spec.ego.start_distance_m == 100.0
    assert roles.parse_intent("FCW. Line 3, lead vehicle gap: 60 m. Delay BSMs by 0.5 s.", 1).spec.agents[0].gap_m == 60.0
    # an oncoming car's approach is its own, never the ego's start: its distance to the conflict point (fresh39), the
    # ego placed to meet it there
    oncoming = roles.parse_intent("LTA: an oncoming red sedan approaches at 50 km/h from 60 m. Delay BSMs by 0.5 s.", 1)
    assert oncoming.spec.ego.start_distance_m != 60.0 and not oncoming.unparsed_clauses
    assert any("placed to reach the conflict point with opposing: 60 m" in n for n in oncoming.notes)
    # a fault said to go on is its window ("runs 2 seconds late and stays late"), not a second fault
    ima = roles.parse_intent("IMA: when the ego is 20 m from the stop line, the MAP feed runs 2 seconds late and stays "
                             "late.", 1)
    assert [(f.operator.value, f.magnitude) for f in ima.spec.faults] == [("delay", 2.0)]
    # the ego's own braking ("a false alert provokes hard braking by the driver") is no lead's hard brake, and a
    # phantom's lead keeps the ego's pace (a slower one would be a hazard of its own)
    eebl = roles.parse_intent("EEBL hazard (a false alert provokes unnecessary hard braking by the driver): a vehicle "
                              "that does not exist, 80 m ahead, sends hard-braking event messages from t=15 s for 3 s. "
                              "The ego travels at 100 km/h.", 1).spec
    (lead,) = eebl.agents
    assert lead.behaviour.kind.value == "none" and lead.speed_mps == eebl.ego.speed_mps


def test_a_stated_ego_start_or_speed_is_kept_as_stated_not_repaired_away() -> None:
    """fresh36: "Ego at 45 mph, 90 m from the stop bar at start" with a corruption at red onset 30 s later: the
    decision-window repair wanted the ego 685.5 m out. What the intent states stays (as a stated fault field does),
    with the verifier's errors kept and said (a campaign searches from there); a value the spec cannot hold ("waits
    at 0 km/h") is still repaired."""
    res = LlmRoles().parse_intent("Safety assessment item 4.2 - RLVW with SPaT reporting green while the light is "
                                  "actually red. Corruption begins at red onset and lasts 3 s. Ego at 45 mph, 90 m "
                                  "from the stop bar at start.", 13607)
    assert res.spec.ego.start_distance_m == 90.0
    (kept,) = [f for f in res.findings if f.check == "parser.stated_fault_kept"]
    assert "ego.start_distance_m 90.0 kept as stated" in kept.message and kept.message.startswith("what the intent")
    waits = LlmRoles().parse_intent("LTA: ego waits to turn left at 0 km/h, oncoming SUV at 55 km/h. From t=3 s for "
                                    "10 s the SUV's BSMs claim it drives 4 m/s slower than it really does.", 1)
    assert waits.spec.ego.speed_mps > 0.0


def test_fresh36_scene_words() -> None:
    roles = LlmRoles()
    # one speed said of every vehicle of the sentence; a follower named as such
    chain = roles.parse_intent("EEBL chain test: lead 80 m ahead, relay car 30 m ahead sitting between us and the lead, "
                               "all at 25 m/s. Lead brakes at 5 s. Suppress the relay's EEBL forwarding.", 1).spec
    assert chain.ego.speed_mps == 25.0 and all(a.speed_mps == 25.0 for a in chain.agents)
    fcw = roles.parse_intent("FCW regression. Ego 22 m/s, lead 35 m ahead at 22 m/s, follower 20 m behind.", 1)
    assert [(a.role.value, a.gap_m) for a in fcw.spec.agents] == [("lead", 35.0), ("follower", 20.0)]
    assert not fcw.unparsed_clauses
    # "hits the brakes 8 seconds in"; starts said as "starting 80 m back", "and 60 m from", "200 m out from the light"
    eebl = roles.parse_intent("EEBL, me following the lead at 30 m, both doing 60 mph. Lead hits the brakes 8 seconds "
                              "in. Drop 3 EEBL messages in a row.", 1).spec
    assert eebl.agents[0].behaviour.kind.value == "hard_brake" and eebl.agents[0].behaviour.at_time_s == 8.0
    for text, start in (("IMA: ego 40 km/h starting 80 m back, cross vehicle at 50 km/h. Drop 20 % of BSMs.", 80.0),
                        ("IMA: ego at 12 m/s and 60 m from the junction. Delay BSMs by 0.5 s.", 60.0),
                        ("GLOSA: Ego 50 km/h, 200 m out from the light. Delay SPaT by 1 s.", 200.0)):
        assert roles.parse_intent(text, 1).spec.ego.start_distance_m == start, text
    # a speed offset said as an addition; "take ... off" is a lower speed
    lta = roles.parse_intent("LTA, oncoming car at 17 m/s. At the decision point, shift the oncoming car's reported "
                             "position 8 m ahead of reality and add 3 m/s to its reported speed, both for 2.5 s.", 1).spec
    assert [(f.operator.value, f.magnitude) for f in lta.faults] == [("bsm_position_offset", -8.0),
                                                                       ("bsm_speed_offset", 3.0)]
    assert lta.agents[0].speed_mps == 17.0
    off = roles.parse_intent("LTA. Take 2 m/s off the oncoming car's broadcast speed.", 1).spec
    assert off.faults[0].magnitude == -2.0


def test_a_conflicting_car_said_some_metres_out_is_timed_by_that_distance() -> None:
    """fresh37: "cross veh 35 km/h, 45 m from conflict pt", "Oncoming at 45 km/h, 80 m away": the spec times a crossing
    or oncoming car by its arrival at the conflict point, so the distance becomes that arrival (the verifier's closed
    form, ``timeline.conflict_time_s``) against a stated ego start, or places the ego to meet it; never the ego's own
    start ("ego doing 30 mph cross traffic ... about 50 meters from the crossing" was the ego's 50 m)."""
    from lastv2x.core.timeline import conflict_time_s

    roles = LlmRoles()
    placed = roles.parse_intent("IMA baseline: ego 30 mph, cross traffic coming in at 25 mph about 50 meters from the "
                                "crossing.", 1)
    ego, (cross,) = placed.spec.ego, placed.spec.agents
    assert cross.arrival_offset_s == 0.0 and not placed.unparsed_clauses
    assert abs(cross.speed_mps * conflict_time_s(ego.start_distance_m, ego.speed_mps) - 50.0) < 0.5
    timed = roles.parse_intent("IMA baseline: ego 40 km/h starting 100 m from the junction, crossing vehicle at 30 km/h "
                               "and 60 m from the conflict point.", 1)
    ego, (cross,) = timed.spec.ego, timed.spec.agents
    assert ego.start_distance_m == 100.0 and cross.arrival_offset_s == -2.25 and not timed.unparsed_clauses
    assert abs(cross.speed_mps * (conflict_time_s(100.0, ego.speed_mps) + cross.arrival_offset_s) - 60.0) < 0.1
    # an oncoming car's "80 m away" is its own, not the ego's start; a reported position stays a fault's size
    lta = roles.parse_intent("LTA baseline. Ego turning at 15 km/h, oncoming car at 45 km/h 80 m away.", 1)
    assert lta.spec.ego.start_distance_m < 80.0 and not lta.unparsed_clauses
    offset = roles.parse_intent("IMA: crossing car's BSM position reported 8 m ahead of its true position from t=3 s. "
                                "Ego 40 km/h.", 1).spec
    assert offset.faults[0].magnitude == -8.0 and offset.ego.start_distance_m == 120.0


def test_fresh37_scene_and_fault_words() -> None:
    roles = LlmRoles()
    # "braking car 40 m ahead at 70 km/h": the braking car is EEBL's lead (its speed is not the ego's); "relay: none"
    eebl = roles.parse_intent("- EEBL baseline, clean\n  - ego: 80 km/h\n  - braking veh: 40 m ahead, 70 km/h, hard "
                              "brake at t+4\n  - relay: none\n- no faults", 1).spec
    assert eebl.ego.speed_mps == 22.222 and [(a.role.value, a.speed_mps, a.gap_m) for a in eebl.agents] == [
        ("lead", 19.444, 40.0)]
    # "relay truck 150 ft ahead of ego at 55 mph": the speed after "ahead of ego" is the relay's
    relay = roles.parse_intent("EEBL: ego at 65 mph, braking vehicle 300 ft ahead doing 40 mph, relay truck 150 ft ahead "
                               "of ego at 55 mph. Delay the EEBL frames by 0.8 s from t+1 for 10 s.", 1).spec
    assert {a.role.value: a.speed_mps for a in relay.agents} == {"lead": 17.882, "relay": 24.587}
    assert relay.ego.speed_mps == 29.058
    # a CSV row's "lead_gap=50m"; "kmph"; "cross veh"; typed fast ("startin 200 m out", "60m form the stop bar")
    csv = roles.parse_intent("FCW,healthy,ego_speed=100kmh,lead_gap=50m,lead_speed=80kmh,lead_brake_at=6s,faults=none", 1)
    assert csv.spec.agents[0].gap_m == 50.0
    typed = roles.parse_intent("hey cna u set up RLVW w/ the SPAT streem frozen (stuck on old msg) from when ego is 60m "
                               "form the stop bar, lasting 5 sec? ego speeed 55kmh, startin 200 m out. thx", 1)
    assert typed.spec.ego.start_distance_m == 200.0 and typed.spec.faults[0].anchor.distance_m == 60.0
    # "-5 m (behind)": the word gives the direction in the spec's sign (positive is behind)
    row = roles.parse_intent("TC-IMA-014 | IMA | ego 40 km/h, cross veh 35 km/h, 45 m from conflict pt | fault: cross "
                             "BSM position offset -5 m (behind) from t=3s for 6 s | expect: warning still timely", 1).spec
    assert row.ego.speed_mps == 11.111 and row.agents[0].speed_mps == 9.722 and row.faults[0].magnitude == 5.0
    # a correction after a dash; "3 m/s too fast over the same window" (that window's length too)
    fcw = roles.parse_intent("FCW: lead's reported position shifted 10 m \u2014 sorry, 8 m \u2014 ahead of where it "
                             "really is, from t+2 for 6 s, and also its speed reported 3 m/s too fast over the same "
                             "window. Ego 30 m/s, lead 60 m ahead at 22 m/s.", 1).spec
    assert [(f.operator.value, f.magnitude, f.anchor.offset_s, f.duration_s) for f in fcw.faults] == [
        ("bsm_position_offset", -8.0, 2.0, 6.0), ("bsm_speed_offset", 3.0, 2.0, 6.0)]
    # "from 3 to 8 s", "for a period of ten seconds from the start", "from 5 s of scenario", "from the 4 seconds"
    for text, start, length in (
            ("LTA: drop the oncoming vehicle's BSMs with probability 0.5 from 3 to 8 s.", 3.0, 5.0),
            ("FCW: lead BSM timestamps shifted 0.5 seconds into the past for a period of ten seconds from the start of "
             "the scenario.", 0.0, 10.0),
            ("EEBL: the EEBL messages from the braking vehicle are replayed, 2 seconds old, from 5 s of scenario.", 5.0,
             None),
            ("EEBL test where appear a ghost vehicle sending EEBL 50 meters in front of ego, from the 4 seconds.", 4.0,
             None)):
        f = roles.parse_intent(text, 1).spec.faults[0]
        assert (f.anchor.offset_s, f.duration_s) == (start, length), text
    # a forger showing a phase and a lane cue said apart are two faults; "the SPaT time-to-change cut by 2 s"
    two = roles.parse_intent("GLOSA run with a fake RSU pushing green from red onset, plus MAP tying the ego lane to "
                             "the wrong signal group from red onset as well. Ego 45 km/h.", 1).spec
    assert [(f.operator.value, f.stream.value, f.target_phase and f.target_phase.value) for f in two.faults] == [
        ("spoofed_rsu", "SPAT", "green"), ("map_misassociation", "MAP", None)]
    cut = roles.parse_intent("RLVW, ego 60 km/h: the SPaT time-to-change cut by 2 s from amber onset.", 1).spec
    assert (cut.faults[0].operator.value, cut.faults[0].magnitude) == ("spat_countdown_offset", -2.0)
    # a letter's "With reference to ..., the Authority requests ...: (a) ..." asks for its conditions
    letter = LlmRoles().parse_intent("With reference to the assessment of the Forward Collision Warning function, the "
                                     "Authority requests evidence under the following conditions: (a) the lead "
                                     "vehicle's BSMs delayed by 0.5 s from t=4 s.", 1).spec
    assert [(f.operator.value, f.magnitude) for f in letter.faults] == [("delay", 0.5)]


def test_a_stated_lead_brake_time_is_kept_and_a_window_said_against_it() -> None:
    """fresh36's f36_013: "lead brakes 7 s in; the fault window opens 1 s before that brake and runs for 4 s" -- the
    window's "runs for 4 s" was the scenario's length and a timing repair moved the brake to 1.33 s."""
    res = LlmRoles().parse_intent("FCW with the lead's BSM speed reading 5 m/s slower than reality. Ego 28 m/s, lead 45 m "
                                  "ahead at 18 m/s, lead brakes 7 s in; the fault window opens 1 s before that brake and "
                                  "runs for 4 s.", 13613)
    (lead,), (fault,) = res.spec.agents, res.spec.faults
    assert lead.behaviour.at_time_s == 7.0 and res.spec.duration_s == 30.0
    assert (fault.anchor.offset_s, fault.duration_s) == (6.0, 4.0) and not res.unparsed_clauses


def test_fresh38_tool_forms() -> None:
    """Platform teams' tools: a config diff (its new value only), CLI flags, a matrix's bracketed cells, a config
    block's unit suffixes, a forwarded request quoted under a new one (nothing in the quote sets anything), a
    trigger's "<=" (a bound, not a start)."""
    roles = LlmRoles()
    diff = roles.parse_intent("glosa_spat_latency.cfg - bumping latency for the retest:\n  app: GLOSA\n  ego_speed_kph: 50"
                              "\n  fault.stream: SPAT\n  fault.anchor: red_onset\n- fault.delay: 0.2s\n+ fault.delay: 0.5s"
                              "\n  fault.duration: 8s", 1).spec
    assert [(f.operator.value, f.magnitude, f.duration_s) for f in diff.faults] == [("delay", 0.5, 8.0)]
    cli = roles.parse_intent("v2xsim run --app glosa --ego-speed 60kmh --start-dist 250m --fault spat_countdown_offset "
                             "--stream spat --magnitude -3s --anchor green_onset --duration 10s", 1)
    assert (cli.spec.ego.speed_mps, cli.spec.ego.start_distance_m) == (16.667, 250.0)
    assert [(f.operator.value, f.magnitude, f.anchor.event.value, f.duration_s) for f in cli.spec.faults] == [
        ("spat_countdown_offset", -3.0, "green_onset", 10.0)]
    matrix = roles.parse_intent("matrix: IMA | fault=none | ego_v=[12 m/s] | cross_v=[15 m/s] | "
                                "cross_dist_to_junction=[40 m] | ego_dist_to_junction=[45 m] | expect=warn", 1)
    assert (matrix.spec.ego.speed_mps, matrix.spec.ego.start_distance_m, matrix.spec.agents[0].speed_mps) == (
        12.0, 45.0, 15.0)
    assert not matrix.unparsed_clauses
    block = roles.parse_intent('variable "glosa_case_12" {\n  default = {\n    app = "GLOSA"\n    ego_speed_mps  = 16\n'
                               '    start_dist_m   = 400\n  }\n}', 1).spec
    assert (block.ego.speed_mps, block.ego.start_distance_m) == (16.0, 400.0)
    forwarded = roles.parse_intent("Hi team, can we swap the RLVW run to this instead: ego at 40 mph, starting 150 m back "
                                   "from the stop bar, and drop 30% of SPaT messages for 4 s starting at amber onset.\n\n"
                                   "> ---------- Forwarded message ----------\n> Please set up RLVW with the ego at 35 "
                                   "mph and add a 0.5 s delay on MAP beginning at red onset.\n> Start distance 200 m.", 1)
    assert (forwarded.spec.ego.speed_mps, forwarded.spec.ego.start_distance_m) == (17.882, 150.0)
    assert [f.operator.value for f in forwarded.spec.faults] == ["drop"] and not forwarded.unparsed_clauses
    trigger = roles.parse_intent("INSERT INTO faults (app, stream, kind, offset_s, trigger) VALUES ('RLVW', 'SPAT', "
                                 "'countdown_bias', -2.0, 'ego_dist_to_stopbar <= 60m');", 1).spec
    assert trigger.faults[0].anchor.distance_m == 60.0 and trigger.ego.start_distance_m != 60.0
    # an incident's report and a runbook's "replay on platform" ask for nothing
    incident = roles.parse_intent("[PagerDuty] INC-4471 RESOLVED - Field unit at Oak & 5th received SPaT from an "
                                  "unauthorised RSU showing green while the real signal was red. Follow-up action: "
                                  "reproduce on the platform with RLVW, ego at 55 km/h, spoofed RSU broadcasting a green "
                                  "phase from red onset for 5 s.", 1).spec
    assert [f.operator.value for f in incident.faults] == ["spoofed_rsu"]


# fresh37: done before, merged elsewhere, not part of this change
@pytest.mark.parametrize("text", [
    "PR #812 description: re-baselines the IMA healthy run. Scenario: ego 12 m/s, crossing car 10 m/s, no injected "
    "faults. Ghost-sender case was already merged in #790 and isn't part of this PR.",
    "Handover: GLOSA rig is up, ego 50 km/h. Freeze on MAP was done yesterday, don't redo.",
])
def test_cases_done_before_are_not_requests(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert not res.spec.faults and not res.unparsed_clauses


# fresh34-36: cases called off, ruled out, remembered or someone else's are no requests (neither a fault nor a clause
# said back)
@pytest.mark.parametrize("text", [
    "FCW baseline. I wanted to try the ghost-vehicle attack -- a phantom car 30 m ahead -- but our safety lead vetoed "
    "it. Ego at 80 km/h, lead 50 m ahead. No faults.",
    "GLOSA check. The spoofed-RSU recreation is postponed until the security review signs off; ego at 30 mph.",
    "FCW lesson. Note: the 300 ms BSM delay exercise is for next week's lesson -- do NOT inject it today.",
    "IMA run. The security team will stage their replay attack this afternoon -- but not here. A healthy run.",
    "EEBL. The 'frozen EEBL payload' add-on has been withdrawn from this lot and will NOT be run. No faults.",
    "DISCLAIMER. Nothing herein shall be construed as a request to inject SPaT phase corruption, MAP misassociation or "
    "any other fault; such cases are expressly excluded. RLVW baseline, ego at 50 km/h. All messages shall be delivered "
    "unaltered.",
    "FCW suite for a clean baseline run. The brochure mentions a packet-loss spa (30% BSM drop) and a delayed-message "
    "sauna, but those belong to the guest in the next room; we want nothing broken, every message delivered.",
    "LTA. Oncoming vehicle: 75 yards off at 40 mph. Violation: none, this is a clean run. Previously cited offences "
    "(BSM drop, replay) are dismissed and shall not be applied.",
    "EEBL, lead braking hard at 7 s. Those who dropped EEBL messages before you found only sorrow; do not walk their "
    "path. Travel the EEBL road clean at 60 km/h.",
    "IMA, ego at 40 km/h. Some of you remember the night of the spoofed RSU and the ghost car. Tonight it's clean "
    "messages only.",
    "Customer says their FCW fired late on someone else's rig where the BSMs were being delayed by half a second. "
    "We're NOT reproducing the delay - just need a clean FCW run on ours.",
    "Sim operator: queueing GLOSA nominal, ego 15 m/s. The SPaT freeze thing is Priya's ticket, leave it out of this "
    "one.",
    "FCW regression, no injection. We accept the 100 ms BSM latency risk per the hazard log, so don't model it.",
    "Researcher request: LTA baseline. Our paper compares against the other group's ghost-sender results, but we "
    "don't inject anything here.",
    "Support ticket: customer thinks MAP misassociation is breaking IMA on their side. Engineering already ruled that "
    "out; just run stock IMA with the cross car at 30 mph.",
])
def test_cases_called_off_or_ruled_out_are_not_requests(text: str) -> None:
    res = LlmRoles().parse_intent(text, 1)
    assert not res.history[0].data["faults"]
    assert not [f for f in res.findings if "asks for a fault" in f.message]  # (an oncoming car's distance is said back)


def test_fresh39_forms_payloads_outlines_and_minutes() -> None:
    """Structured payloads (JSON, a JavaScript-style object, a YAML vehicle block), a Gherkin outline's Examples row, a
    spreadsheet's tab-separated header and row with units in the column names, numbers in words, and a meeting's
    corrected values: each value where the words put it."""
    roles = LlmRoles()
    body = roles.parse_intent('{"app": "EEBL", "ego": {"speed_mps": 22}, "lead": {"gap_m": 70, "brake_at_s": 6}, '
                              '"fault": {"op": "replay", "stream": "EEBL", "age_s": 2, "duration_s": 5}}', 1)
    assert (body.spec.ego.speed_mps, body.spec.agents[0].gap_m, body.spec.agents[0].behaviour.at_time_s) == (
        22.0, 70.0, 6.0)
    assert [(f.operator.value, f.magnitude, f.duration_s) for f in body.spec.faults] == [("replay", 2.0, 5.0)]
    assert not body.unparsed_clauses
    js = roles.parse_intent("Payload below:\n{ app: 'EEBL', ego: {speed: 22 m/s}, relay: {gap: 30m}, lead: {gap: 70m, "
                            "brake_at: 6s}, fault: {op: replay, stream: EEBL, age: 2s, duration: 5s} }\nanchor is just "
                            "scenario start.", 1).spec
    assert {a.role.value: a.gap_m for a in js.agents} == {"lead": 70.0, "relay": 30.0}
    assert [(f.operator.value, f.magnitude, f.duration_s) for f in js.faults] == [("replay", 2.0, 5.0)]
    yaml = roles.parse_intent("app: EEBL\nego:\n  speed: 22 m/s\nrelay:\n  gap: 30m\nlead:\n  gap: 70m", 1).spec
    assert {a.role.value: a.gap_m for a in yaml.agents} == {"lead": 70.0, "relay": 30.0}
    outline = roles.parse_intent(
        "Scenario Outline: LTA with burst loss on the oncoming vehicle\n  Given the oncoming car approaches at "
        "<opp_speed> km/h from <opp_gap> m\n  When <n> consecutive BSMs from the oncoming car are dropped starting at "
        "t=<start> s\n  Then the ego should still get a left-turn warning\n  Examples:\n    | opp_speed | opp_gap | n | "
        "start |\n    | 50 | 75 | 7 | 4 |", 1)
    assert [(f.operator.value, f.burst_count, f.anchor.offset_s) for f in outline.spec.faults] == [("drop", 7, 4.0)]
    assert outline.spec.agents[0].speed_mps == 13.889 and not outline.unparsed_clauses
    sheet = roles.parse_intent("app\tego_speed_kmh\tstart_distance_m\tfault\tstream\tanchor\tmagnitude\tduration_s\n"
                               "RLVW\t65\t200\tspoofed_rsu\tSPAT\tstop_bar_distance 60 m\t\t4\nNote: the fake RSU should "
                               "be advertising green.", 1).spec
    assert (sheet.ego.speed_mps, sheet.ego.start_distance_m) == (18.056, 200.0)
    assert [(f.operator.value, f.anchor.event.value, f.anchor.distance_m, f.duration_s, f.target_phase.value)
            for f in sheet.faults] == [("spoofed_rsu", "stop_bar_distance", 60.0, 4.0, "green")]
    words = roles.parse_intent("EEBL: no delay this time, only drops. Lose five EEBL messages in a row starting at t "
                               "equals six and a half seconds. Ego at a hundred kilometres an hour, lead a hundred and "
                               "twenty metres ahead.", 1).spec
    assert [(f.operator.value, f.burst_count, f.anchor.offset_s) for f in words.faults] == [("drop", 5, 6.5)]
    assert (words.ego.speed_mps, words.agents[0].gap_m) == (27.778, 120.0)
    minutes = roles.parse_intent(
        "Safety review, RLVW item\nPriya: At red onset, corrupt the SPaT so it still says green, for three seconds.\n"
        "Owen: And add a MAP misassociation when the ego is 40 m from the stop bar.\nPriya: Sorry, 30 m, not 40, "
        "otherwise it's outside the warning window.\nOwen: OK, 30. Ego at 50 km/h from 150 m out.", 1)
    assert [(f.operator.value, f.anchor.event.value, f.anchor.distance_m) for f in minutes.spec.faults][1] == (
        "map_misassociation", "stop_bar_distance", 30.0)
    agreed = roles.parse_intent("Mei: Let's do the clean GLOSA reference first, no faults. Ego at 40 km/h, 250 m from "
                                "the stop line.\nRaj: The reference runs last quarter were at 50 km/h, let's keep it "
                                "comparable.\nMei: Fair, 50 then. Distance stays.", 1)
    assert (agreed.spec.ego.speed_mps, agreed.spec.ego.start_distance_m, agreed.spec.faults) == (13.889, 250.0, ())
    assert not agreed.unparsed_clauses
    budget = roles.parse_intent("We're about 8% over on the Q3 lab budget, so keep it short: one clean FCW run, no "
                                "faults, ego at 25 m/s, lead 50 m ahead braking at 7 s.", 1)
    assert not budget.unparsed_clauses and budget.spec.faults == ()


def test_a_forged_vehicle_said_some_metres_out_is_the_fault() -> None:
    """"the ghost vehicle is 20 m out": where the forged vehicle is, not where a real car stands (fresh39's f39_013)."""
    res = LlmRoles().parse_intent("Same FCW setup as last week except the ghost vehicle is 20 m out instead of 35, and "
                                  "it should pop up at the decision point.", 1)
    assert [(f.operator.value, f.magnitude, f.anchor.event.value) for f in res.spec.faults] == [
        ("ghost_sender", 20.0, "decision_epoch")]
