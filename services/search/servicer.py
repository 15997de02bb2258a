"""gRPC servicer of the search service.

Every RPC answers UNIMPLEMENTED (the generated base class) until its core lands;
see the open issues.
"""

from __future__ import annotations

import grpc

from lastv2x.v1 import search_pb2, search_pb2_grpc


class SearchServicer(search_pb2_grpc.SearchServiceServicer):
    pass


def register(server: grpc.Server) -> list[str]:
    search_pb2_grpc.add_SearchServiceServicer_to_server(SearchServicer(), server)
    return [search_pb2.DESCRIPTOR.services_by_name["SearchService"].full_name]
