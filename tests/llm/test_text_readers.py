"""The pure readers that say an intent's form as text before the grammar reads it: structured payloads
(``payload.py``), a Gherkin outline's Examples (``text_forms.outline``), a spreadsheet's rows (``table_rows``) and a
meeting's corrections (``dialogue.value_corrections``)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from services.llm.dialogue import corrected, value_corrections, withdrawn
from services.llm.payload import object_lines, payload_lines
from services.llm.table_rows import rows_as_sentences
from services.llm.text_forms import as_changed, outline


def test_a_json_body_and_a_javascript_object_say_the_same_key_lines() -> None:
    strict = '{"app": "EEBL", "relay": {"gap": "30m"}, "fault": {"op": "replay", "age": "2s"}}'
    loose = "{ app: 'EEBL', relay: {gap: 30m}, fault: {op: replay, age: 2s} }"
    assert object_lines(strict) == object_lines(loose) == ["app: EEBL", "relay gap: 30m", "fault: replay",
                                                            "magnitude: 2s"]


def test_a_fault_object_is_said_in_the_words_of_its_attributes() -> None:
    body = json.dumps({"scenario": {"app": "FCW", "faults": [
        {"type": "latency", "stream": "bsm", "added_ms": 350, "start": {"ref": "decision_point"}, "duration_ms": 2000},
        {"kind": "packet_loss", "burst": 4, "window": {"anchor": "amberStart", "len_s": None}},
        {"op": "phase_flip", "shows": "red", "trigger": "dist_to_stopline", "trigger_value_m": 60}]}})
    assert object_lines(body) == [
        "app: FCW", "- fault: latency", "stream: bsm", "magnitude: 350 ms", "start: at the decision point",
        "duration: 2000 ms", "- fault: packet loss", "4 in a row", "start: at amber onset", "- fault: phase flip",
        "start: once the ego is 60 m from the stop bar", "phase: showing red"]
    assert object_lines(json.dumps({"faults": []})) == ["faults: none"]


def test_a_vehicle_is_named_in_its_settings_and_a_run_name_asks_nothing() -> None:
    body = json.dumps({"name": "rlvw-spat-countdown-short", "vehicles": {
        "ego": {"speedMps": 15.5, "distanceToStopLineM": 120}, "lead": {"gap_m": 38, "decel_start_s": 5},
        "crossing": {"speed_kmh": 45, "distance_to_conflict_m": 60}, "relay": {"enabled": False}}})
    assert object_lines(body) == ["ego speed: 15.5 m/s", "ego start distance: 120 m", "lead gap: 38 m",
                                  "lead brakes hard at t = 5 s", "crossing vehicle speed: 45 km/h",
                                  "crossing vehicle gap: 60 m", "relay: none"]


def test_what_is_no_object_stands() -> None:
    for text in ("let run = TestRun { app: App::Eebl, faults: vec![] };", "{ this is prose in braces }",
                 "FCW with the lead {about 40 m} ahead"):
        assert payload_lines(text) == text


def test_protobuf_text_ini_sections_assignments_and_a_call_are_payloads_too() -> None:
    proto = "impairment {\n  kind: CONTENT_FREEZE\n  channel: EEBL\n  trigger { anchor: CRITICAL_EPOCH }\n  hold_s: 2.5\n}"
    assert payload_lines(proto).splitlines() == ["fault: content freeze", "stream: EEBL",
                                                 "start: at the decision point", "duration: 2.5 s;"]
    ini = ("; glosa.ini\n[glosa_case]\napp = GLOSA\nfault.1.type = lane_mismatch\nfault.1.msg = MAP\n"
           "fault.1.duration_s = 8\n[ego]\nspeed_kmh = 40")
    assert payload_lines(ini).splitlines() == ["; glosa.ini", "app: GLOSA", "- fault: lane mismatch", "stream: MAP",
                                               "duration: 8 s", "ego speed: 40 km/h;"]
    env = "APP=EEBL EGO_SPEED_MPS=27 FAULT_KIND=stale_stamp FAULT_AGE_MS=800 FAULT_LEN_S=4 ./run.sh --wait"
    assert payload_lines(env).splitlines() == ["APP: EEBL", "ego speed: 27 m/s", "fault: stale stamp",
                                               "magnitude: 800 ms", "duration: 4 s;"]
    log = "INFO enqueue app=IMA ego.v=12.5mps fault=phantom_vehicle stream=BSM fault.at=decision fault.dur=2s"
    assert payload_lines(log).splitlines() == ["app: IMA", "ego speed: 12.5mps", "fault: phantom vehicle",
                                               "stream: BSM", "start: at the decision point", "duration: 2s;"]
    call = 'run = client.submit(app="IMA", ego_speed_mps=13.9, faults=[{"op": "position_bias", "for_s": 3}])'
    assert payload_lines(call).splitlines() == ["app: IMA", "ego speed: 13.9 m/s", "- fault: position bias",
                                                "duration: 3 s;"]
    curl = "curl -X POST http://api/runs -d '{\"app\":\"EEBL\",\"faults\":[]}'"
    assert payload_lines(curl).splitlines() == ["curl -X POST http://api/runs -d '", "app: EEBL", "faults: none;"]


def test_a_yaml_block_is_read_as_a_tree() -> None:
    text = "app: EEBL\nrelay:\n  gap: 30m\n  speed: 22 m/s\nexpect:\n  warning: true\nfaults:\n  - op: drop"
    assert payload_lines(text) == "app: EEBL\nrelay gap: 30m\nrelay speed: 22 m/s\nwarning: true\n- fault: drop;"


@given(st.dictionaries(st.sampled_from(["app", "note", "stream", "speed_mps", "gap_m"]),
                       st.one_of(st.integers(-1000, 1000), st.text("abc xyz", min_size=1, max_size=8)), min_size=1))
def test_a_flat_json_object_says_every_key_once(body: dict) -> None:
    lines = object_lines(json.dumps(body))
    assert lines is not None and [x.split(":", 1)[0] for x in lines] == list(body)


def test_an_outline_with_one_examples_row_is_its_steps_with_the_values() -> None:
    text = ("Scenario Outline: x\n  Given the ego at <speed> km/h\n  When <n> BSMs are dropped\n  Examples:\n"
            "    | speed | n |\n    | 60 | 5 |")
    assert outline(text) == "Scenario Outline: x\n  Given the ego at 60 km/h\n  When 5 BSMs are dropped"
    two_rows = text + "\n    | 50 | 3 |"
    assert outline(two_rows) == two_rows  # several scenarios: not one run's values


def test_a_tab_separated_sheet_names_cells_by_their_columns_and_units() -> None:
    lines = ["app\tego_speed_kmh\tfault\tstream\tstart_s\tduration_s", "FCW\t72\tfreeze\tBSM\t9\t2"]
    assert rows_as_sentences(lines) == ["FCW; ego speed 72 km/h.", "fault: freeze", "stream: BSM", "start: t = 9 s",
                                        "duration: 2 s"]
    assert rows_as_sentences(["RLVW\t60 km/h\t180 m"]) == ["RLVW | 60 km/h | 180 m"]  # a row without its header


def test_a_corrected_value_is_put_where_it_was_said() -> None:
    lines = ["Owen: add a MAP misassociation when the ego is 40 m from the stop bar.",
             "Priya: Sorry, 30 m, not 40, otherwise it's outside the window.", "Owen: OK, 30. Ego at 50 km/h."]
    assert value_corrections(lines) == ["Owen: add a MAP misassociation when the ego is 30 m from the stop bar.",
                                        "Priya: ", "Owen: Ego at 50 km/h."]
    back = ["Dana: replay the lead's event from two seconds earlier, starting at t=8 s.",
            "Luis: Make that three seconds back, two won't be stale enough. Same start time.", "Dana: Agreed, three."]
    assert value_corrections(back) == ["Dana: replay the lead's event from 3 seconds earlier, starting at t=8 s.",
                                       "Luis: Same start time.", "Dana: "]


def test_a_value_agreed_to_replaces_the_one_it_was_proposed_against() -> None:
    lines = ["Mei: Ego at 40 km/h, 250 m from the stop line.", "Raj: last quarter's runs were at 50 km/h.",
             "Mei: Fair, 50 then. Distance stays."]
    assert value_corrections(lines)[0] == "Mei: Ego at 50 km/h, 250 m from the stop line."
    assert value_corrections(lines)[2] == "Mei: Distance stays."


def test_one_speaker_is_no_chat() -> None:
    lines = ["Owen: drop 5 BSMs at 40 m.", "Owen: Sorry, 30 m, not 40."]
    assert value_corrections(lines) == lines == withdrawn(lines)


def test_a_lower_case_chat_has_speakers_too() -> None:
    lines = ["dana: delay the oncoming car's BSMs by 300 ms from t=3 s.", "sam: sure. make it 400 ms not 300",
             "dana: ok 400 it is"]
    assert withdrawn(lines) == ["Dana: delay the oncoming car's BSMs by 400 ms from t=3 s.", "Sam: sure.", "Dana: "]


def test_a_writers_own_correction_is_put_where_the_corrected_words_were() -> None:
    assert corrected(["FYI, but use 40 % not 25 %, the 25 was a typo.", "Drop 25 % of EEBL packets from t=4 s."]) == [
        "", "Drop 40 % of EEBL packets from t=4 s."]
    assert corrected(["Freeze the lead's BSMs at the decision point for 1.5 s. Oh wait, sorry, I meant replay, not "
                      "freeze: replay them 2 s old, same window."]) == [
        "replay the lead's BSMs at the decision point for 1.5 s. replay them 2 s old, same window."]
    assert corrected(["Replay SPaT from 3 s earlier. Also a timestamp offset on the SPaT, +2 s stale. Sorry, I meant "
                      "the MAP, not the SPaT, for the timestamp one."]) == [
        "Replay SPaT from 3 s earlier. Also a timestamp offset on the MAP, +2 s stale."]
    same = ["delay 300 ms, no wait, make that 400 ms not 300"]  # within one sentence: the grammar's
    assert corrected(same) == same


def test_xml_graphql_hcl_and_keyword_calls_are_payloads_too() -> None:
    xml = ('<?xml version="1.0"?>\n<testRequest application="RLVW" requestedBy="hil-team">\n'
           '  <scene><ego speed="50" speedUnit="km/h"/></scene>\n'
           '  <faultSet><fault operator="spat_phase_corrupt" displayedPhase="PHASE_GREEN" anchor="red_onset" '
           'durationSeconds="3"/></faultSet>\n</testRequest>')
    assert payload_lines(xml).splitlines() == ["application: RLVW", "ego speed: 50 km/h", "fault: spat phase corrupt",
                                               "start: at red onset", "duration: 3 s", "phase: showing green;"]
    graphql = ("mutation {\n  createRun(input: {\n    app: FCW\n    scene: { egoSpeedKph: 72, leadGapM: 35 }\n"
               "    faults: [{ op: BSM_POSITION_OFFSET, offsetM: 6, offsetDirection: AHEAD_OF_TRUE }]\n"
               "  }) { runId status }\n}")
    assert payload_lines(graphql).splitlines() == ["app: FCW", "ego speed: 72 km/h", "lead gap: 35 m",
                                                   "- fault: bsm position offset", "magnitude: 6 m ahead;"]
    hcl = 'resource "v2x_run" "ima" {\n  application = "IMA"\n  ego {\n    speed_mps = 13.9\n  }\n}'
    assert payload_lines(hcl).splitlines() == ["application: IMA", "ego speed: 13.9 m/s;"]
    robot = "    Set Opposing Vehicle    speed_kmh=54    gap_m=70\n    Set Ego Speed    kmh=30"
    assert payload_lines(robot).splitlines() == ["oncoming vehicle speed: 54 km/h;", "oncoming vehicle gap: 70 m;",
                                                 "ego speed: 30 km/h;"]
    sql = "    fault_1 = 'spat_countdown_offset stream=SPAT offset_s=-4 anchor=stop_bar_distance at_m=150',"
    assert payload_lines(sql).splitlines() == ["fault: spat countdown offset", "stream: SPAT", "magnitude: -4 s",
                                               "start: once the ego is 150 m from the stop bar;"]
    docker = "ENV FAULT_OP=timestamp_offset \\\n    FAULT_STREAM=EEBL \\\n    FAULT_TS_SKEW_MS=800 \\\n    FAULT_TS_DIRECTION=past"
    assert payload_lines(docker).splitlines() == ["fault: timestamp offset", "stream: EEBL",
                                                  "magnitude: 800 ms in the past;"]
    actors = "scenario:\n  actors:\n    - name: lead\n      gapM: 60\n    - name: relay\n      gapM: 30\n  seed: 3"
    assert payload_lines(actors).splitlines() == ["lead gap: 60 m", "relay gap: 30 m", "seed: 3;"]


def test_a_timestamped_chat_has_speakers_and_no_scenario_clock() -> None:
    lines = ["[09:12] anna.k: can someone kick off an EEBL run?", "[09:13] tom.b: sure, faults?"]
    assert withdrawn(lines) == ["Anna: can someone kick off an EEBL run?", "Tom: sure, faults?"]


def test_a_change_request_keeps_its_new_values_and_a_chosen_variant_its_own_words() -> None:
    change = "Parameter: lead gap\nOld value: 30 m\nNew value: 40 m\nParameter: ego speed\nOld value: 50 km/h\n" \
             "New value: 50 km/h (unchanged)"
    assert as_changed(change).splitlines() == ["lead gap: 40 m", "ego speed: 50 km/h"]
    variants = "Variant A: shift it 4 m ahead.\nVariant B: shift it 4 m behind, for 2 s.\nVariant C: same as B but 8 m." \
               "\nRun only variant B."
    assert as_changed(variants).splitlines() == ["shift it 4 m behind, for 2 s.", "Run only variant B."]
    unchosen = "Variant A: shift it 4 m ahead.\nVariant B: shift it 4 m behind."
    assert as_changed(unchosen) == unchosen


def test_a_notebook_call_over_several_lines_is_read_with_ast_and_its_comment_units() -> None:
    """fresh42's notebook cell: keyword arguments one a line, each bare number's unit in its comment, a list of faults
    written as sentences; parsed with ``ast`` (literals only), never evaluated."""
    cell = ('res = run_case(\n    app="EEBL",\n    ego_speed=24.0,        # m/s\n    relay_gap=20.0,        # m ahead\n'
            '    lead_brake_at=5.5,     # s\n    faults=[\n        "freeze lead EEBL payload from t=5.5 s for 3 s",\n'
            '    ],\n)')
    said = payload_lines(cell).splitlines()
    assert said[:4] == ["app: EEBL", "ego speed: 24.0 m/s", "relay gap: 20.0 m", "lead brakes hard at t = 5.5 s"]
    assert said[4].startswith("- fault: freeze lead EEBL payload from t=5.5 s for 3 s")
    # a call whose argument is no literal (a variable, another call) stands as written
    odd = 'res = run_case(\n    app=APP,\n    ego_speed=speed(),\n)'
    assert payload_lines(odd) == odd
