"""A program that crosses the wire has one text: protobuf maps (Struct) carry no key order."""

from __future__ import annotations

from lastv2x.core.catalogue import Application
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.rpc.convert import program_from_proto, program_to_proto
from lastv2x.v1 import common_pb2
from services.simulator.reference import reference_spec


def test_program_text_is_stable_through_protobuf() -> None:
    program = program_from_spec_on_straight_roads(reference_spec(Application.RLVW))
    details = {"zeta": 1, "alpha": {"b": 2, "a": [1, {"y": 0, "x": 1}]}}
    program = program.model_copy(update={"grounding": program.grounding.model_copy(update={"details": details})})
    once = program_from_proto(program_to_proto(program))
    wire = program_to_proto(once).SerializeToString()
    again = program_from_proto(common_pb2.ScenarioProgram.FromString(wire))
    assert once.model_dump_json() == again.model_dump_json()
    assert list(once.grounding.details) == ["alpha", "zeta"]
    assert list(once.grounding.details["alpha"]) == ["a", "b"]
