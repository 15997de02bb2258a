"""gRPC servicer of the grounding service.

Every RPC answers UNIMPLEMENTED (the generated base class) until its core lands;
see the open issues.
"""

from __future__ import annotations

import grpc

from lastv2x.v1 import grounding_pb2, grounding_pb2_grpc


class GroundingServicer(grounding_pb2_grpc.GroundingServiceServicer):
    pass


def register(server: grpc.Server) -> list[str]:
    grounding_pb2_grpc.add_GroundingServiceServicer_to_server(GroundingServicer(), server)
    return [grounding_pb2.DESCRIPTOR.services_by_name["GroundingService"].full_name]
