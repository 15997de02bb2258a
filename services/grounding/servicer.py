"""gRPC servicer of the grounding service: parse request -> call core -> build reply.

ListMaps and Retrieve read the map catalogue and FAISS indexes; Ground turns a spec
into a ScenarioProgram (FAILED_PRECONDITION names the failed constraint and the
nearest feasible alternative). The scene planner is the LLM service's PlanScene when
``LASTV2X_LLM_TARGET`` is set, else the offline planner in-process.
"""

from __future__ import annotations

import grpc

from lastv2x.rpc.convert import program_to_proto, spec_from_proto
from lastv2x.v1 import common_pb2, grounding_pb2, grounding_pb2_grpc
from services.grounding.core import GroundingConfig, GroundingCore


class GroundingServicer(grounding_pb2_grpc.GroundingServiceServicer):
    def __init__(self, core: GroundingCore):
        self._core = core

    def ListMaps(self, request: grounding_pb2.ListMapsRequest, context: grpc.ServicerContext
                 ) -> grounding_pb2.ListMapsResponse:
        reply = grounding_pb2.ListMapsResponse()
        for m in self._core.list_maps():
            reply.maps.add(name=m["name"], content_sha256=m["content_sha256"], junction_count=m["junction_count"],
                           signalized_junction_count=m["signalized_junction_count"],
                           building_count=m["building_count"], source=str(m["source"]))
        return reply

    def Retrieve(self, request: grounding_pb2.RetrieveRequest, context: grpc.ServicerContext
                 ) -> grounding_pb2.RetrieveResponse:
        hits = self._core.retrieve(request.kind, request.query, request.k, request.seed)
        return grounding_pb2.RetrieveResponse(hits=[common_pb2.RetrievalHit(kind=h.kind, id=h.id, score=h.score,
                                                                             reason=h.reason) for h in hits])

    def Ground(self, request: grounding_pb2.GroundRequest, context: grpc.ServicerContext
               ) -> grounding_pb2.GroundResponse:
        spec = spec_from_proto(request.spec, "spec")
        return grounding_pb2.GroundResponse(program=program_to_proto(self._core.ground(spec)))


def register(server: grpc.Server, config: GroundingConfig | None = None, core: GroundingCore | None = None
             ) -> list[str]:
    """Add the grounding service; ``config`` is read once in ``main`` (None: the defaults),
    ``core`` a ready one (tests)."""
    if core is None:
        config = config or GroundingConfig()
        planner = None
        if config.llm_target:
            from services.grounding.remote_planner import RemotePlanner

            planner = RemotePlanner(config.llm_target)
        core = GroundingCore(config, planner=planner)
    grounding_pb2_grpc.add_GroundingServiceServicer_to_server(GroundingServicer(core), server)
    return [grounding_pb2.DESCRIPTOR.services_by_name["GroundingService"].full_name]
