"""gRPC servicer of the strap service.

Every RPC answers UNIMPLEMENTED (the generated base class) until its core lands;
see the open issues.
"""

from __future__ import annotations

import grpc

from lastv2x.v1 import strap_pb2, strap_pb2_grpc


class StrapServicer(strap_pb2_grpc.StrapServiceServicer):
    pass


def register(server: grpc.Server) -> list[str]:
    strap_pb2_grpc.add_StrapServiceServicer_to_server(StrapServicer(), server)
    return [strap_pb2.DESCRIPTOR.services_by_name["StrapService"].full_name]
