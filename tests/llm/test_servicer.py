"""The LLM service over real gRPC on loopback: all four RPCs and their bad input."""

from __future__ import annotations

import json

import grpc
import pytest

from lastv2x.rpc.convert import spec_from_proto
from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import common_pb2, llm_pb2, llm_pb2_grpc

INTENT = ("Check that red-light violation warning stays safe when the SPaT feed freezes "
          "just before amber at a busy signalized intersection.")


@pytest.fixture(scope="module")
def llm():
    server, port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register())
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield llm_pb2_grpc.LlmServiceStub(channel)
    server.stop(0)


def test_parse_intent_compiles_the_design_example(llm) -> None:
    reply = llm.ParseIntent(llm_pb2.ParseIntentRequest(text=INTENT, seed=7), timeout=30)
    assert reply.backend == "offline"
    assert reply.spec.application == common_pb2.APPLICATION_RLVW
    (fault,) = reply.spec.faults
    assert fault.operator == common_pb2.FAULT_OPERATOR_FREEZE and fault.stream == common_pb2.STREAM_SPAT
    assert reply.report.ok and 1 <= reply.attempts_used <= 2


def test_parse_intent_is_deterministic_in_the_seed(llm) -> None:
    text = "Test left turn assist with an oncoming car."
    a = llm.ParseIntent(llm_pb2.ParseIntentRequest(text=text, seed=3), timeout=30)
    b = llm.ParseIntent(llm_pb2.ParseIntentRequest(text=text, seed=3), timeout=30)
    assert a.spec == b.spec and a.spec.application == common_pb2.APPLICATION_LTA


@pytest.mark.parametrize("text", ["", "x" * 5000])
def test_empty_or_huge_text_is_invalid_argument(llm, text: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.ParseIntent(llm_pb2.ParseIntentRequest(text=text, seed=1), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(info.value)[0][0] == "text"


def test_reflect_diagnoses_a_late_fault_window(llm) -> None:
    digest = {"application": "RLVW", "admitted": False, "md_decision": "stop", "gt_decision": "stop",
              "decision_epoch_s": 5.65, "failure_margin": 1e6,
              "faults": [{"name": "f", "operator": "freeze", "stream": "SPAT", "window_start_s": 26.5,
                          "captured_phase": "green"}]}
    prompt = "Check red-light violation warning when the SPaT feed freezes 26 s into the run."
    reply = llm.Reflect(llm_pb2.ReflectRequest(prompt=prompt, evidence_digest_json=json.dumps(digest)), timeout=30)
    assert reply.backend == "offline" and "window_after_decision" in reply.rule_ids
    assert "decision" in reply.diagnosis.lower() and reply.revised_prompt != prompt
    assert not reply.edits  # no spec_json: words only
    spec = llm.ParseIntent(llm_pb2.ParseIntentRequest(text=prompt, seed=1), timeout=30).spec
    with_spec = llm.Reflect(llm_pb2.ReflectRequest(prompt=prompt, evidence_digest_json=json.dumps(digest),
                                                   spec_json=spec_from_proto(spec).model_dump_json()), timeout=30)
    edits = {e.path: (json.loads(e.value_json), e.rule) for e in with_spec.edits}
    assert edits["faults[0].anchor"][1] == "window_after_decision"
    assert edits["faults[0].anchor"][0]["event"] == "amber_onset" and edits["faults[0].duration_s"][0] is None


def test_reflect_rejects_a_bad_spec_naming_the_field(llm) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.Reflect(llm_pb2.ReflectRequest(prompt=INTENT, evidence_digest_json='{"application": "RLVW", '
                                           '"admitted": false}', spec_json='{"application": "RLVW", "seed": -1}'),
                    timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert any(f.startswith("spec_json") for f, _ in field_violations(info.value))


def test_reflect_rejects_a_bad_digest_naming_the_field(llm) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.Reflect(llm_pb2.ReflectRequest(prompt=INTENT, evidence_digest_json='{"application": "XYZ"}'), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert any(f.startswith("evidence_digest.") for f, _ in field_violations(info.value))


def test_plan_scene_only_chooses_given_candidates(llm) -> None:
    spec = llm.ParseIntent(llm_pb2.ParseIntentRequest(text=INTENT, seed=7), timeout=30).spec
    cands = [llm_pb2.ApproachCandidate(candidate_id=f"c{i}", map_name="signalized_4way", junction_id="j1",
                                       approach_id=f"a{i}", heading_rad=h, movements=["straight:sg" + str(i),
                                                                                      "left:sg" + str(i)],
                                       lanes=[f"l{i}"], score=0.9 - 0.1 * i)
             for i, h in enumerate((0.0, 1.5708, 3.1416, -1.5708))]
    reply = llm.PlanScene(llm_pb2.PlanSceneRequest(spec=spec, candidates=cands), timeout=30)
    ego = [a for a in reply.assignments if a.agent_id == "ego"]
    assert ego and {a.candidate_id for a in reply.assignments} <= {c.candidate_id for c in cands}
