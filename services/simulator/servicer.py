"""gRPC servicer of the simulator service.

Every RPC answers UNIMPLEMENTED (the generated base class) until its core lands;
see the open issues.
"""

from __future__ import annotations

import grpc

from lastv2x.v1 import simulator_pb2, simulator_pb2_grpc


class SimulatorServicer(simulator_pb2_grpc.SimulatorServiceServicer):
    pass


def register(server: grpc.Server) -> list[str]:
    simulator_pb2_grpc.add_SimulatorServiceServicer_to_server(SimulatorServicer(), server)
    return [simulator_pb2.DESCRIPTOR.services_by_name["SimulatorService"].full_name]
