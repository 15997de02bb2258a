"""gRPC servicer of the LLM service: parse request -> call core -> build reply.

Verify is the analytic verifier of ``lastv2x.core.verifier``. ParseIntent,
PlanScene and Reflect belong to the LLM roles (issue 5) and answer UNIMPLEMENTED
until their cores land.
"""

from __future__ import annotations

import grpc

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.verifier import verify
from lastv2x.rpc.convert import report_to_proto, spec_from_json, spec_from_proto
from lastv2x.v1 import llm_pb2, llm_pb2_grpc


class LlmServicer(llm_pb2_grpc.LlmServiceServicer):
    def Verify(self, request: llm_pb2.VerifyRequest, context: grpc.ServicerContext) -> llm_pb2.VerifyResponse:
        source = request.WhichOneof("spec_source")
        if source == "spec":
            spec = spec_from_proto(request.spec, "spec")
        elif source == "spec_json":
            spec = spec_from_json(request.spec_json, "spec_json")
        else:
            raise InvalidArgument(FieldViolation("spec", "no spec given", "set spec or spec_json"))
        return llm_pb2.VerifyResponse(report=report_to_proto(verify(spec)))


def register(server: grpc.Server) -> list[str]:
    llm_pb2_grpc.add_LlmServiceServicer_to_server(LlmServicer(), server)
    return [llm_pb2.DESCRIPTOR.services_by_name["LlmService"].full_name]
