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
    ("LTA where the oncoming van's messages are sent twice each.", []),  # not a cue the detector knows: none
])
def test_detector_finds_the_clauses_that_ask_for_a_fault(text: str, families: list[set[str]]) -> None:
    found = fault_cues.detect(text)
    assert len(found) == len(families)
    for cue, family in zip(found, families, strict=True):
        assert family <= {o.value for o in cue.operators}


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
