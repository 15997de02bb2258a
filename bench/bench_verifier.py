"""Verifier throughput in-process and the gRPC Verify round trip on loopback, side by side.

Targets (issue 2): >= 20,000 specs/s in-process; gRPC overhead <= 1 ms per call.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc  # noqa: E402

from lastv2x.core.spec import parse_spec  # noqa: E402
from lastv2x.core.verifier import verify  # noqa: E402
from lastv2x.rpc.convert import spec_to_proto  # noqa: E402
from lastv2x.rpc.server import ServerConfig, create_server  # noqa: E402
from lastv2x.rpc.services import SERVICES  # noqa: E402
from lastv2x.v1 import llm_pb2, llm_pb2_grpc  # noqa: E402

SPECS = [
    {"application": "RLVW", "signal": {"offset_s": 22.353},
     "faults": [{"name": "f", "operator": "freeze", "stream": "SPAT",
                 "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}]},
    {"application": "IMA", "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 1.0}],
     "faults": [{"name": "d", "operator": "drop", "stream": "BSM", "sender": "cross", "probability": 0.6}]},
    {"application": "FCW", "agents": [{"id": "lead", "role": "lead",
                                       "behaviour": {"kind": "hard_brake", "at_time_s": 4.0}}],
     "faults": [{"name": "d", "operator": "delay", "stream": "BSM", "magnitude": 0.2}]},
]


def rate(fn, seconds: float = 1.0) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def _bare_echo_ms() -> float:
    """Median round trip of an empty unary call with no interceptor: the grpcio floor."""
    from concurrent import futures

    class Echo(llm_pb2_grpc.LlmServiceServicer):
        def Verify(self, request, context):  # noqa: N802
            return llm_pb2.VerifyResponse()

    srv = grpc.server(futures.ThreadPoolExecutor(4))
    llm_pb2_grpc.add_LlmServiceServicer_to_server(Echo(), srv)
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = llm_pb2_grpc.LlmServiceStub(channel)
        stub.Verify(llm_pb2.VerifyRequest())
        lat = []
        for _ in range(600):
            t = time.perf_counter()
            stub.Verify(llm_pb2.VerifyRequest())
            lat.append(time.perf_counter() - t)
    srv.stop(0)
    return statistics.median(lat) * 1e3


def main() -> None:
    specs = [parse_spec(s) for s in SPECS]
    i = iter(range(10**12))

    def in_process() -> None:
        verify(specs[next(i) % len(specs)])

    per_s = rate(in_process, 2.0)
    server, port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register())
    server.start()
    protos = [spec_to_proto(s) for s in specs]
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = llm_pb2_grpc.LlmServiceStub(channel)
        for p in protos:
            stub.Verify(llm_pb2.VerifyRequest(spec=p))
        lat = []
        for k in range(600):
            t = time.perf_counter()
            stub.Verify(llm_pb2.VerifyRequest(spec=protos[k % 3]))
            lat.append(time.perf_counter() - t)
    server.stop(0)
    floor_ms = _bare_echo_ms()
    inproc_ms = 1e3 / per_s
    rpc_ms = statistics.median(lat) * 1e3
    print(f"verifier in-process       {per_s:12,.0f} specs/s   ({inproc_ms * 1e3:.1f} us/spec)   target >= 20,000")
    print(f"Verify over gRPC loopback {1e3 / rpc_ms:12,.0f} calls/s   median {rpc_ms:.3f} ms, "
          f"p99 {sorted(lat)[int(0.99 * len(lat))] * 1e3:.3f} ms")
    print(f"bare gRPC echo (floor)    median {floor_ms:.3f} ms: what grpcio costs per unary call on this machine")
    print(f"gRPC overhead per call    {rpc_ms - inproc_ms:.3f} ms (target <= 1 ms);  ratio rpc/in-process "
          f"{rpc_ms / inproc_ms:.1f}x")


if __name__ == "__main__":
    main()
