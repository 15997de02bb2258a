"""The service runtime: ``create_server(config, register) -> (server, port)`` and ``serve``.

Every service gets the same stock parts: the gRPC health service, server
reflection, message-size caps, an interceptor that maps domain errors to status
codes (with field violations), writes one structured JSON log line per call and
records Prometheus metrics, and graceful shutdown on SIGTERM/SIGINT.

Deadlines: a handler that calls another service passes ``propagated_timeout(context)``
as that call's timeout, so a client's deadline bounds the whole call tree.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass, fields
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from lastv2x.core.errors import LastV2XError
from lastv2x.rpc.errors import to_status

LOG = logging.getLogger("lastv2x.rpc")


@dataclass(frozen=True)
class ServerConfig:
    """Read once from the environment in ``main`` (prefix ``LASTV2X_``)."""

    service: str = "lastv2x"
    host: str = "127.0.0.1"
    port: int = 0  # 0 = any free port (tests)
    max_workers: int = 8
    max_message_bytes: int = 4 * 1024 * 1024  # request and response cap
    grace_s: float = 5.0  # in-flight RPCs get this long on shutdown
    metrics_port: int = -1  # Prometheus /metrics; -1 = off, 0 = any free port
    log_json: bool = True

    @classmethod
    def from_env(cls, service: str, env: Mapping[str, str] | None = None, default_port: int = 0) -> ServerConfig:
        """``LASTV2X_<FIELD>`` variables; a service's own settings are its settings dataclass
        (``lastv2x.rpc.services.ServiceEntry.settings``)."""
        env = os.environ if env is None else env
        prefix = "LASTV2X_"
        kwargs: dict[str, Any] = {"service": service, "port": default_port}
        for f in fields(cls):
            if f.name == "service":
                continue
            raw = env.get(prefix + f.name.upper())
            if raw is None:
                continue
            typ = {"int": int, "float": float, "str": str, "bool": lambda v: v.lower() in ("1", "true", "yes")}[
                str(f.type) if isinstance(f.type, str) else f.type.__name__]
            kwargs[f.name] = typ(raw)
        return cls(**kwargs)


class _Metrics:
    def __init__(self, service: str):
        self.registry = CollectorRegistry()
        self.calls = Counter("lastv2x_rpc_calls", "RPCs handled", ["service", "method", "code"],
                             registry=self.registry)
        self.latency = Histogram("lastv2x_rpc_latency_seconds", "RPC handler latency", ["service", "method"],
                                 registry=self.registry,
                                 buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30))
        self.service = service


def _code_name(context: grpc.ServicerContext) -> str:
    code = context.code() if hasattr(context, "code") else None
    return code.name if isinstance(code, grpc.StatusCode) else "OK"


class RuntimeInterceptor(grpc.ServerInterceptor):
    """Domain errors -> status, one JSON log line per call, Prometheus metrics."""

    def __init__(self, metrics: _Metrics, log_json: bool):
        self._metrics = metrics
        self._log_json = log_json

    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap(handler.unary_unary, method, streaming=False),
                request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap(handler.unary_stream, method, streaming=True),
                request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap(handler.stream_unary, method, streaming=False),
                request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)
        return grpc.stream_stream_rpc_method_handler(
            self._wrap(handler.stream_stream, method, streaming=True),
            request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)

    def _wrap(self, behaviour: Callable[..., Any], method: str, streaming: bool) -> Callable[..., Any]:
        def unary(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            try:
                return behaviour(request, context)
            except LastV2XError as exc:
                context.abort_with_status(to_status(exc))
            finally:
                self._record(method, context, start)

        def stream(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            try:
                yield from behaviour(request, context)
            except LastV2XError as exc:
                context.abort_with_status(to_status(exc))
            finally:
                self._record(method, context, start)

        return stream if streaming else unary

    def _record(self, method: str, context: grpc.ServicerContext, start: float) -> None:
        elapsed = time.perf_counter() - start
        code = _code_name(context)
        m = self._metrics
        m.calls.labels(m.service, method, code).inc()
        m.latency.labels(m.service, method).observe(elapsed)
        if self._log_json and LOG.isEnabledFor(logging.INFO):
            LOG.info(json.dumps({"service": m.service, "method": method, "code": code,
                                 "latency_ms": round(elapsed * 1e3, 3), "peer": context.peer()}))


Register = Callable[[grpc.Server], list[str]]  # adds servicers, returns their full service names


def create_server(config: ServerConfig, register: Register) -> tuple[grpc.Server, int]:
    """Build (not start) a server with health, reflection, caps and the runtime interceptor."""
    metrics = _Metrics(config.service)
    options = [("grpc.max_receive_message_length", config.max_message_bytes),
               ("grpc.max_send_message_length", config.max_message_bytes),
               ("grpc.so_reuseport", 0)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=config.max_workers,
                                                    thread_name_prefix=config.service),
                         interceptors=[RuntimeInterceptor(metrics, config.log_json)], options=options)
    server.metrics = metrics  # type: ignore[attr-defined]  # register() may add its own collectors
    names = register(server)
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in [*names, ""]:
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    port = server.add_insecure_port(f"{config.host}:{config.port}")
    if port == 0:
        raise OSError(f"cannot bind {config.host}:{config.port}")
    server.health_servicer = health_servicer  # type: ignore[attr-defined]
    if config.metrics_port >= 0:
        start_http_server(config.metrics_port, addr=config.host, registry=metrics.registry)
    return server, port


def serve(config: ServerConfig, register: Register, ready: Callable[[int], None] | None = None) -> None:
    """Run until SIGTERM/SIGINT; then report NOT_SERVING and drain for ``grace_s``."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    server, port = create_server(config, register)
    server.start()
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        LOG.info(json.dumps({"service": config.service, "event": "shutdown", "signal": signum}))
        server.health_servicer.enter_graceful_shutdown()  # type: ignore[attr-defined]
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info(json.dumps({"service": config.service, "event": "listening", "port": port}))
    if ready:
        ready(port)
    stop.wait()
    server.stop(config.grace_s).wait()


def propagated_timeout(context: grpc.ServicerContext, default_s: float = 30.0) -> float:
    """Time left on the incoming call, to pass as the timeout of outgoing calls."""
    remaining = context.time_remaining()
    return default_s if remaining is None else max(0.001, remaining)
