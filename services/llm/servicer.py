"""gRPC servicer of the LLM service: parse request -> call core -> build reply.

The three roles (``services.llm.core.LlmCore``: parser, scene planner, reflector)
run on the configured backend (``offline`` by default; ``openai`` for any
OpenAI-compatible endpoint); Verify is the analytic verifier of
``lastv2x.core.verifier``.
"""

from __future__ import annotations

import json

import grpc

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.verifier import verify
from lastv2x.rpc.convert import report_to_proto, spec_from_json, spec_from_proto, spec_to_proto
from lastv2x.v1 import common_pb2, llm_pb2, llm_pb2_grpc
from services.llm.config import LlmConfig
from services.llm.core import LlmCore
from services.llm.planner import ApproachCandidate, MovementOption

_MANEUVER = {"straight": common_pb2.MANEUVER_STRAIGHT, "left": common_pb2.MANEUVER_LEFT,
             "right": common_pb2.MANEUVER_RIGHT}


def candidate_from_proto(c: llm_pb2.ApproachCandidate) -> ApproachCandidate:
    return ApproachCandidate(candidate_id=c.candidate_id, map_name=c.map_name, junction_id=c.junction_id,
                             approach_id=c.approach_id, heading_rad=c.heading_rad,
                             movements=tuple(MovementOption.parse(m) for m in c.movements),
                             lanes=tuple(c.lanes), score=c.score)


class LlmServicer(llm_pb2_grpc.LlmServiceServicer):
    def __init__(self, roles: LlmCore):
        self._roles = roles

    def ParseIntent(self, request: llm_pb2.ParseIntentRequest, context: grpc.ServicerContext
                    ) -> llm_pb2.ParseIntentResponse:
        result = self._roles.parse_intent(request.text, request.seed, request.max_attempts or None)
        return llm_pb2.ParseIntentResponse(spec=spec_to_proto(result.spec), attempts_used=result.attempts_used,
                                           report=report_to_proto(result.report), backend=result.backend,
                                           notes=list(result.notes), unparsed_clauses=list(result.unparsed_clauses))

    def PlanScene(self, request: llm_pb2.PlanSceneRequest, context: grpc.ServicerContext
                  ) -> llm_pb2.PlanSceneResponse:
        spec = spec_from_proto(request.spec, "spec")
        plan = self._roles.plan_scene(spec, [candidate_from_proto(c) for c in request.candidates])
        reply = llm_pb2.PlanSceneResponse(rationale=plan.rationale, backend=plan.backend, map_name=plan.map_name,
                                          junction_id=plan.junction_id, score=plan.score)
        for a in plan.assignments:
            msg = reply.assignments.add(role=a.role, candidate_id=a.candidate_id, agent_id=a.agent_id,
                                        lane_id=a.lane_id, maneuver=_MANEUVER.get(a.turn, 0))
            if a.signal_group is not None:
                msg.signal_group = a.signal_group
        return reply

    def Reflect(self, request: llm_pb2.ReflectRequest, context: grpc.ServicerContext) -> llm_pb2.ReflectResponse:
        if not request.evidence_digest_json:
            raise InvalidArgument(FieldViolation("evidence_digest_json", "empty", "send the evidence digest as JSON"))
        spec = spec_from_json(request.spec_json, "spec_json") if request.spec_json else None
        r = self._roles.reflect(request.prompt, request.evidence_digest_json, spec=spec)
        return llm_pb2.ReflectResponse(
            diagnosis=r.diagnosis, revised_prompt=r.revised_prompt, rule_ids=list(r.rule_ids), backend=r.backend,
            edits=[common_pb2.SpecEdit(path=e.path, value_json=json.dumps(e.value), rule=e.rule) for e in r.edits])

    def Verify(self, request: llm_pb2.VerifyRequest, context: grpc.ServicerContext) -> llm_pb2.VerifyResponse:
        source = request.WhichOneof("spec_source")
        if source == "spec":
            spec = spec_from_proto(request.spec, "spec")
        elif source == "spec_json":
            spec = spec_from_json(request.spec_json, "spec_json")
        else:
            raise InvalidArgument(FieldViolation("spec", "no spec given", "set spec or spec_json"))
        return llm_pb2.VerifyResponse(report=report_to_proto(verify(spec)))


def register(server: grpc.Server, config: LlmConfig | None = None) -> list[str]:
    """Add the LLM service; ``config`` is read once in ``main`` (None: the defaults)."""
    llm_pb2_grpc.add_LlmServiceServicer_to_server(LlmServicer(LlmCore(config=config or LlmConfig())), server)
    return [llm_pb2.DESCRIPTOR.services_by_name["LlmService"].full_name]
