"""What the simulator's tests share: the service on loopback with given settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc

from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import simulator_pb2_grpc
from services.simulator.execute import SimulatorLimits
from services.simulator.servicer import register


@contextmanager
def served_simulator(limits: SimulatorLimits) -> Iterator[simulator_pb2_grpc.SimulatorServiceStub]:
    """A real simulator server on a free loopback port with ``limits``, and a stub to it."""
    server, port = create_server(ServerConfig("simulator", log_json=False), lambda s: register(s, limits))
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield simulator_pb2_grpc.SimulatorServiceStub(channel)
    finally:
        server.stop(0)
