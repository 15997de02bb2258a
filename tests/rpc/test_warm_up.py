"""A service that warms up at start says NOT_SERVING until it is warm (issue 32: warm-up paid once, at service
start, not by the first request); the simulator's warm-up runs in this process and in every worker."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lastv2x.rpc.server import Registered, ServerConfig, create_server
from services.simulator.core import SimulatorCore
from services.simulator.execute import SimulatorLimits


def _status(port: int, service: str = "") -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                         timeout=5).status


def test_health_says_not_serving_until_the_warm_up_returns() -> None:
    release, warmed = threading.Event(), threading.Event()

    def warm_up() -> str:
        release.wait(30)
        warmed.set()
        return "warm"

    server, port = create_server(ServerConfig("simulator", log_json=False),
                                 lambda s: Registered(["lastv2x.v1.SimulatorService"], warm_up))
    server.start()
    try:
        for name in ("", "lastv2x.v1.SimulatorService"):
            assert _status(port, name) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert _status(port, "liveness") == health_pb2.HealthCheckResponse.SERVING  # alive: no restart meanwhile
        release.set()
        assert warmed.wait(30)
        for _ in range(100):  # the warm-up thread sets SERVING right after warm_up returns
            if _status(port) == health_pb2.HealthCheckResponse.SERVING:
                break
            threading.Event().wait(0.05)
        assert _status(port) == _status(port, "lastv2x.v1.SimulatorService") == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop(0)


def test_a_failed_warm_up_is_logged_and_the_service_serves(caplog) -> None:  # type: ignore[no-untyped-def]
    def warm_up() -> None:
        raise RuntimeError("no maps here")

    server, port = create_server(ServerConfig("simulator", log_json=False), lambda s: Registered(["x.Y"], warm_up))
    server.start()
    try:
        for _ in range(100):
            if _status(port) == health_pb2.HealthCheckResponse.SERVING:
                break
            threading.Event().wait(0.05)
        assert _status(port) == health_pb2.HealthCheckResponse.SERVING
        assert any("warm_up_failed" in r.getMessage() and "no maps here" in r.getMessage() for r in caplog.records)
    finally:
        server.stop(0)


def test_the_simulator_warms_up_when_its_setting_says_so_as_the_image_sets_it() -> None:
    assert not SimulatorLimits.from_env({}).warm_up and not SimulatorLimits().warm_up
    assert SimulatorLimits.from_env({"LASTV2X_SIMULATOR_WARM_UP": "1"}).warm_up
    dockerfile = (Path(__file__).resolve().parents[2] / "deploy" / "Dockerfile").read_text()
    assert "LASTV2X_SIMULATOR_WARM_UP=1" in dockerfile


def test_the_simulator_warm_up_runs_here_and_in_each_worker() -> None:
    out = SimulatorCore(SimulatorLimits(workers=2)).warm_up()
    assert out["process_cpu_s"] > 0 and len(out["worker_cpu_s"]) == 2
    assert all(isinstance(c, float) and c > 0 for c in out["worker_cpu_s"]), out
