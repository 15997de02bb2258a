"""No silent drop (issue 19, item 1): a fault the intent asks for is in the spec or named in a finding.

Sentences here are written for the tests (not taken from the held-out set).
"""

from __future__ import annotations

import json

import grpc
import pytest

from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import llm_pb2, llm_pb2_grpc
from lastv2x_app import cli
from services.llm import fault_cues
from services.llm.fake_openai_server import FakeOpenAIServer
from services.llm.roles import LlmRoles
from tests.llm.conftest import openai_backend

UNSUPPORTED = "FCW where the lead car's reported heading is reversed."  # no operator flips a heading


@pytest.mark.parametrize(("text", "families"), [
    ("RLVW where the phase messages stop coming after 4 s.", [{"drop", "suppress_sender"}]),
    ("FCW: the truck ahead claims to drive 3 m/s slower than it really does.", [{"bsm_speed_offset"}]),
    ("IMA where the crossing car's data is 2 s out of date; also its position is 4 m off.",
     [{"timestamp_offset"}, {"bsm_position_offset"}]),
    ("GLOSA where signal updates lag by 300 ms and a fifth of them is lost.",
     [{"delay"}, {"drop"}]),
    # duplication: a fault clause no operator expresses (issue 31: reported, never silent)
    ("LTA where the oncoming van's messages are sent twice each.", [set()]),
])
def test_detector_finds_the_clauses_that_ask_for_a_fault(text: str, families: list[set[str]]) -> None:
    found = fault_cues.detect(text)
    assert len(found) == len(families)
    for cue, family in zip(found, families, strict=True):
        assert family <= cue.operators
        assert family or not cue.operators


@pytest.mark.parametrize("text", [
    "Forward collision warning where the lead drops its speed to 10 km/h and brakes late.",
    "Red light warning; the ego arrives late in the amber phase.",
    "EEBL with healthy V2X: the lead brakes hard at 4 s.",
    "IMA where the gap to the crossing car shrinks; messages are fine.",
    "GLOSA along a corridor; the ego follows a bus and stays behind a truck.",
])
def test_detector_leaves_healthy_intents_alone(text: str) -> None:
    assert fault_cues.detect(text) == []
    res = LlmRoles().parse_intent(text, 3)
    assert not res.unparsed


def test_a_corruption_word_binds_to_the_nearest_field_not_to_a_direction_of_travel() -> None:
    """'direction' as the way a car comes is not the heading field when another field stands closer
    to the corruption word (its position is the one that is wrong)."""
    text = "IMA with a car coming from the other direction whose reported position is 6 m wrong."
    (cue,) = fault_cues.detect(text)
    assert "bsm_position_offset" in cue.operators
    res = LlmRoles().parse_intent(text, 2)
    assert [f.operator.value for f in res.spec.faults] == ["bsm_position_offset"]
    assert not res.unparsed
    # the heading itself named as wrong is still a cue (no operator: reported)
    assert fault_cues.detect("IMA where the crossing car's heading is wrong.")


@pytest.mark.parametrize(("text", "family"), [
    ("IMA where half of the crossing car's messages get droped.", {"drop"}),
    ("RLVW where the signal data arives with a latensy of 2 s.", {"delay"}),
])
def test_a_misspelt_fault_is_still_a_cue(text: str, family: set[str]) -> None:
    """The guard reads the clauses with the parser's one-edit typo corrections: an LLM answer without
    the fault cannot pass for a clean spec because the user misspelt the fault."""
    (cue,) = fault_cues.detect(text)
    assert family <= cue.operators


def test_a_fault_no_operator_expresses_is_reported_not_dropped() -> None:
    res = LlmRoles().parse_intent(UNSUPPORTED, 5)
    assert res.spec.faults == ()
    (finding,) = res.unparsed
    assert finding.check == "parser.unparsed_fault" and "heading is reversed" in finding.message
    assert finding.fields == ("faults",)


def test_a_parsed_fault_is_not_reported_twice() -> None:
    res = LlmRoles().parse_intent("FCW where the lead's BSMs are delayed 400 ms and its heading is reversed.", 5)
    assert [f.operator.value for f in res.spec.faults] == ["delay"]
    (finding,) = res.unparsed
    assert "heading is reversed" in finding.message and "delayed" not in finding.message


def test_cli_parse_exits_non_zero_on_a_partial_spec_unless_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["parse", UNSUPPORTED, "--json"]) == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["partial"] is True
    assert "heading is reversed" in captured.err and "--allow-partial" in captured.err
    assert cli.main(["parse", UNSUPPORTED, "--json", "--allow-partial"]) == 0
    assert "heading is reversed" in capsys.readouterr().err
    assert cli.main(["parse", "FCW where the lead's BSMs are delayed 400 ms.", "--json"]) == 0


def test_parse_intent_rpc_carries_the_finding() -> None:
    server, port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register())
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = llm_pb2_grpc.LlmServiceStub(channel).ParseIntent(
                llm_pb2.ParseIntentRequest(text=UNSUPPORTED, seed=5), timeout=30)
    finally:
        server.stop(0)
    checks = [(f.check, f.message) for f in reply.report.findings]
    assert any(c == "parser.unparsed_fault" and "heading is reversed" in m for c, m in checks)
    assert len(reply.spec.faults) == 0


def test_an_llm_answer_missing_a_fault_is_asked_again() -> None:
    text = "FCW where the lead's BSMs are delayed by 0.6 s."
    healthy = {"application": "FCW", "agents": [{"id": "lead", "role": "lead"}]}
    fixed = {**healthy, "faults": [{"name": "d", "operator": "delay", "stream": "BSM", "magnitude": 0.6}]}
    with FakeOpenAIServer() as server:
        server.enqueue(healthy, fixed)
        res = LlmRoles(openai_backend(server)).parse_intent(text, 1)
        second = server.requests[1]["messages"][-1]["content"]
    assert res.attempts_used == 2 and [f.operator.value for f in res.spec.faults] == ["delay"] and not res.unparsed
    assert "parser.unparsed_fault" not in second and "delayed by 0.6 s" in second  # the clause is quoted


def test_an_llm_that_never_adds_the_fault_gives_a_partial_spec_with_the_finding() -> None:
    text = "FCW where the lead's BSMs are delayed by 0.6 s."
    healthy = {"application": "FCW", "agents": [{"id": "lead", "role": "lead"}]}
    with FakeOpenAIServer() as server:
        server.enqueue(healthy, healthy, healthy)
        res = LlmRoles(openai_backend(server)).parse_intent(text, 1)
    assert res.spec.faults == () and len(res.unparsed) == 1 and "delayed by 0.6 s" in res.unparsed[0].message


# Per-clause coverage: every clause that asks for a fault needs its own fault in the answer, on the stream
# the clause (or the clause its "they" / "its" refers back to) names. Wording written for these tests.
TWO_FAULTS = [
    "Intersection movement assist with a crossing van. The van's BSMs are lost from 5 s on. "
    "Until then, they get to the ego 400 ms late.",
    "Intersection movement assist with a crossing van: the van's BSMs are lost from 5 s on; "
    "until then they get to the ego 400 ms late.",
]


@pytest.mark.parametrize("text", TWO_FAULTS)
def test_a_clause_referring_back_to_its_stream_is_a_cue_of_its_own(text: str) -> None:
    found = fault_cues.detect(text)
    assert [c.stream for c in found] == ["BSM", "BSM"]
    assert {"drop"} <= found[0].operators and "delay" in found[1].operators
    assert "400 ms late" in found[1].text


@pytest.mark.parametrize("text", TWO_FAULTS)
def test_one_parsed_fault_does_not_cover_a_second_fault_clause(text: str) -> None:
    (finding,) = fault_cues.findings(text, ["drop"], ["BSM"])
    assert finding.check == fault_cues.CHECK and "400 ms late" in finding.message and "lost" not in finding.message
    assert fault_cues.findings(text, ["drop", "delay"], ["BSM", "BSM"]) == []


@pytest.mark.parametrize("text", TWO_FAULTS)
def test_the_parser_never_answers_such_an_intent_with_a_clean_partial_spec(text: str) -> None:
    res = LlmRoles().parse_intent(text, 4)
    operators = sorted(f.operator.value for f in res.spec.faults)
    assert operators == ["delay", "drop"] or any("400 ms late" in f.message for f in res.unparsed)
    assert len(res.spec.faults) + len(res.unparsed) == 2


def test_a_fully_parsed_multi_fault_intent_gets_no_finding() -> None:
    text = ("Intersection movement assist with a crossing van: its BSMs are dropped after 5 s, and before that "
            "they are delayed by 400 ms. The MAP data also comes 1 s late.")
    res = LlmRoles().parse_intent(text, 2)
    assert sorted((f.operator.value, f.stream.value) for f in res.spec.faults) == [
        ("delay", "BSM"), ("delay", "MAP"), ("drop", "BSM")]
    assert not res.unparsed


def test_a_fault_on_another_stream_does_not_cover_a_clause_naming_its_stream() -> None:
    text = "GLOSA where the SPaT is delayed by 500 ms and the MAP data is delayed by 2 s."
    (finding,) = fault_cues.findings(text, ["delay", "delay"], ["SPAT", "SPAT"])
    assert "MAP data is delayed by 2 s" in finding.message and "MAP" in finding.message
    assert fault_cues.findings(text, ["delay", "delay"], ["SPAT", "MAP"]) == []
    assert fault_cues.findings(text, ["delay", "delay"]) == []  # no streams given: operators alone


@pytest.mark.parametrize("text", [
    "Left turn assist with an oncoming bus. Its messages are fine; before that it waits behind a truck.",
    "FCW behind a van. It brakes late; after that the ego arrives late at the queue.",
    "RLVW at 40 km/h. The light turns amber at 6 s; then the ego stops and it stays red.",
])
def test_back_references_in_healthy_intents_raise_no_alarm(text: str) -> None:
    assert fault_cues.detect(text) == []
    assert not LlmRoles().parse_intent(text, 3).unparsed


def test_the_same_per_clause_guard_applies_to_llm_answers() -> None:
    text = TWO_FAULTS[0]
    one = {"application": "IMA", "agents": [{"id": "van", "role": "cross"}],
           "faults": [{"name": "lost", "operator": "drop", "stream": "BSM", "sender": "van",
                       "anchor": {"kind": "scenario_time", "offset_s": 5.0}}]}
    with FakeOpenAIServer() as server:
        server.enqueue(one, one, one)
        res = LlmRoles(openai_backend(server)).parse_intent(text, 1)
        asked_again = server.requests[1]["messages"][-1]["content"] if len(server.requests) > 1 else ""
    assert [f.operator.value for f in res.spec.faults] == ["drop"]
    (finding,) = res.unparsed
    assert "400 ms late" in finding.message
    assert "400 ms late" in asked_again  # the repair request quotes the unparsed clause
