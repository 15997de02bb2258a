"""The service runtime: ``create_server(config, register) -> (server, port)`` and ``serve``.

Every service gets the same stock parts: the gRPC health service, server
reflection, message-size caps, an interceptor that maps domain errors to status
codes (with field violations), writes one structured JSON log line per call and
records Prometheus metrics, and graceful shutdown on SIGTERM/SIGINT.

Deadlines: a handler that calls another service passes ``propagated_timeout(context)``
as that call's timeout, so a client's deadline bounds the whole call tree.

Errors: a domain error becomes its status (``lastv2x.rpc.errors``: bounded, no server
paths); any other exception becomes INTERNAL with an opaque error id, which is also in
the call's log line and in the one line per distinct cause (type and raising frame) that
carries the traceback, at most once per ``ERROR_LOG_INTERVAL_S``. Request bytes that do
not decode are INVALID_ARGUMENT (not grpcio's logged traceback per call). Metrics and the
log record the status the client got: an abort's code, DEADLINE_EXCEEDED, CANCELLED.

Backpressure: a service holds at most ``max_concurrent_rpcs`` calls at once, ``max_workers`` of
them running and the rest waiting for a worker; one more is refused at once with
RESOURCE_EXHAUSTED carrying a ``google.rpc.RetryInfo`` (retry after ``retry_after_s``), never
queued without bound. grpcio's own ``maximum_concurrent_rpcs`` answers RESOURCE_EXHAUSTED with
no retry advice and counts health checks too, so it is only a backstop (4x the threads) here;
health checks and reflection are never refused (kubelet probes keep working under load).

Security (opt-in; ``lastv2x.rpc.security``): TLS / mutual TLS from mounted files, a bearer token
checked here before a call is admitted (UNAUTHENTICATED; health checks stay open for probes),
reflection switchable off. Kubernetes' native gRPC probes speak plaintext only, so a TLS service
can also answer ``grpc.health.v1`` alone on a plaintext ``health_port``: a second server on its own
port that has the health service and nothing else (no business RPC, no reflection there).

Deadlines: a call waiting for a worker stops when its deadline passes or its client goes away;
a server-streaming handler is stopped between responses; long handlers check
``call_ended(context)`` between units of work and raise ``Cancelled``. Under load a unary call is
not admitted to work it cannot finish in time: each method's run time is learned (an exponentially
weighted mean of its admitted calls' handler times), and a call that would have to wait for a worker
is refused at once (RESOURCE_EXHAUSTED with RetryInfo) when the queue ahead of it plus its own run
time would pass its deadline; one that got a worker later than that estimate allows is refused then,
before it runs. A call that finds a worker free is always run (that is how the estimate stays true).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass, fields
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from lastv2x.core.errors import Cancelled, FieldViolation, InvalidArgument, LastV2XError
from lastv2x.rpc.errors import exhausted_status, to_status
from lastv2x.rpc.security import TokenCheck, read_token, server_credentials

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
    max_concurrent_rpcs: int = 32  # calls held at once (running + waiting); one more -> RESOURCE_EXHAUSTED; 0 = off
    retry_after_s: float = 1.0  # the retry advice (google.rpc.RetryInfo) sent with that RESOURCE_EXHAUSTED
    tls_cert_file: str = ""  # PEM certificate (chain): TLS on; also the client certificate of this process's clients
    tls_key_file: str = ""  # its PEM private key
    tls_ca_file: str = ""  # PEM CA: verifies client certificates (mutual TLS) and, for clients, the servers
    tls_client_auth: bool = False  # require a client certificate signed by tls_ca_file (mutual TLS)
    auth_token_file: str = ""  # a bearer token: required on every call but health checks; clients send it
    reflection: bool = True  # server reflection (grpcurl without protos); 0 in hardened deployments
    health_port: int = -1  # plaintext port serving only grpc.health.v1 (kubelet probes under TLS); -1 = off, 0 = any

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


ERROR_LOG_INTERVAL_S = 60.0  # one traceback line per distinct cause per this many seconds


class _Undecodable:
    """What the wrapped deserializer returns for bytes that are not the request message."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def error(self) -> InvalidArgument:
        return InvalidArgument(FieldViolation("<request>", f"the request bytes are not a valid {self.type_name}",
                                              "send a serialized message of the method's request type"))


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """``deserializer`` that returns an ``_Undecodable`` instead of raising (grpcio would log a
    traceback per call and answer INTERNAL)."""
    if deserializer is None:
        return None
    owner = getattr(deserializer, "__self__", None)
    descriptor = getattr(owner, "DESCRIPTOR", None)
    type_name = getattr(descriptor, "full_name", "request message")

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:  # noqa: BLE001 - any decode failure is the client's bytes
            return _Undecodable(type_name)

    return deserialize


def _checked(requests: Any) -> Any:
    """A client-streaming request iterator that raises InvalidArgument at an undecodable message."""
    for request in requests:
        if isinstance(request, _Undecodable):
            raise request.error()
        yield request


# the health entry a liveness probe asks for: SERVING from the start (a warm-up holds back readiness only)
# until a graceful shutdown
LIVENESS = "liveness"
OPEN_METHODS = ("/grpc.health.v1.Health/", "/grpc.reflection.")  # never refused for backpressure
RESERVE_WORKERS = 4  # threads beyond the admitted calls: refusals and health checks never wait
WAIT_POLL_S = 0.05  # a call waiting for a worker looks at its deadline this often


def call_ended(context: grpc.ServicerContext) -> bool:
    """The client's deadline has passed or it went away: stop working for it."""
    remaining = context.time_remaining()
    return (remaining is not None and remaining <= 0) or not context.is_active()


def check_call(context: grpc.ServicerContext) -> None:
    """Raise ``Cancelled`` when the call has ended (between a long handler's units of work)."""
    if call_ended(context):
        raise Cancelled("the call's deadline passed or its client went away; stopped")


class _Admission:
    """At most ``limit`` calls held, ``running`` of them in their handlers; the rest wait for a worker.

    A unary call (``method`` given) with a deadline is also refused, under load, when it cannot finish
    in time: ``expected_s(method)`` learns each method's run time (handler time once it had a worker,
    an exponentially weighted mean); a call that must queue is refused at arrival when the calls waiting
    ahead of it (``waiting / running`` rounds of the method's run time) plus its own run time exceed
    its remaining time, and again when it gets a worker with less time left than its run time."""

    SMOOTHING = 0.3  # weight of the newest run time in the mean

    def __init__(self, limit: int, running: int, retry_after_s: float):
        self.limit = limit
        self.running = max(1, running)
        self.retry_after_s = retry_after_s
        self._lock = threading.Lock()
        self._held = 0
        self._busy = 0  # calls in their handlers
        self._work = threading.BoundedSemaphore(self.running)
        self._run_s: dict[str, float] = {}  # method -> mean run time (s) of its admitted calls

    def expected_s(self, method: str) -> float:
        with self._lock:
            return self._run_s.get(method, 0.0)

    def observe(self, method: str, run_s: float) -> None:
        """A call of ``method`` ran ``run_s`` seconds in its handler (from the worker to its end)."""
        with self._lock:
            old = self._run_s.get(method)
            self._run_s[method] = run_s if old is None else old + self.SMOOTHING * (run_s - old)

    def _refuse(self, context: grpc.ServicerContext, message: str) -> None:
        context.abort_with_status(exhausted_status(message, self.retry_after_s))

    def enter(self, context: grpc.ServicerContext, method: str | None = None) -> int:
        """0: refused (the call is aborted); 1: held but not yet running; 2: running. ``method``: a
        unary call whose run time is learned and checked against its deadline."""
        remaining = context.time_remaining() if method else None
        with self._lock:
            full = self._held >= self.limit
            late = ""
            if not full and remaining is not None and self._busy >= self.running:  # it would have to wait
                run_s = self._run_s.get(method or "", 0.0)
                wait_s = (self._held - self._busy + 1) / self.running * run_s
                if run_s and wait_s + run_s > remaining:
                    late = (f"the service is busy: {self._held - self._busy} calls wait for its {self.running} "
                            f"workers, about {wait_s:.2f} s, and {method} runs about {run_s:.2f} s, past this "
                            f"call's deadline ({remaining:.2f} s left); retry after {self.retry_after_s:g} s")
            if not full and not late:
                self._held += 1
        if full:
            self._refuse(context, f"the service holds {self.limit} calls already (LASTV2X_MAX_CONCURRENT_RPCS); "
                                  f"retry after {self.retry_after_s:g} s")
        if late:
            self._refuse(context, late)
        waited = False
        while not self._work.acquire(timeout=WAIT_POLL_S):
            waited = True
            if call_ended(context):
                self.leave(1)
                raise Cancelled("the call ended while it waited for a worker")
        with self._lock:
            self._busy += 1
            run_s = self._run_s.get(method or "", 0.0)
        if waited and method and run_s:
            remaining = context.time_remaining()
            if remaining is not None and run_s > remaining:
                self.leave(2)
                self._refuse(context, f"the service was busy: this call waited for a worker until {remaining:.2f} s "
                                      f"of its deadline were left, and {method} runs about {run_s:.2f} s; retry after "
                                      f"{self.retry_after_s:g} s")
        return 2

    def leave(self, state: int) -> None:
        if state >= 2:
            with self._lock:
                self._busy -= 1
            self._work.release()
        if state >= 1:
            with self._lock:
                self._held -= 1

    @property
    def held(self) -> int:
        with self._lock:
            return self._held


def _code_name(context: grpc.ServicerContext) -> str:
    """The status the client gets: an abort's code; else DEADLINE_EXCEEDED or CANCELLED when the
    call ended under the handler; else OK."""
    code = context.code() if hasattr(context, "code") else None
    if isinstance(code, grpc.StatusCode):
        return code.name
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        return grpc.StatusCode.DEADLINE_EXCEEDED.name
    if not context.is_active():
        return grpc.StatusCode.CANCELLED.name
    return grpc.StatusCode.OK.name


class _ErrorLog:
    """One log line with the traceback per distinct cause per ``interval_s``; the rest are counted
    and the count rides on the next line of that cause."""

    def __init__(self, service: str, interval_s: float = ERROR_LOG_INTERVAL_S, max_causes: int = 1024):
        self._service = service
        self._interval_s = interval_s
        self._max_causes = max_causes
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, int]] = {}  # cause -> (last logged, suppressed since)

    @staticmethod
    def cause(exc: BaseException) -> str:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        return hashlib.sha256(f"{type(exc).__qualname__}|{where}".encode()).hexdigest()[:12]

    def record(self, method: str, error_id: str, exc: BaseException) -> str:
        cause = self.cause(exc)
        now = time.monotonic()
        with self._lock:
            last, suppressed = self._last.get(cause, (-1e18, 0))
            if now - last < self._interval_s:
                self._last[cause] = (last, suppressed + 1)
                return cause
            if len(self._last) >= self._max_causes and cause not in self._last:
                self._last.pop(next(iter(self._last)))
            self._last[cause] = (now, 0)
        LOG.error(json.dumps({"service": self._service, "event": "internal_error", "method": method,
                              "error_id": error_id, "cause": cause, "suppressed_since_last": suppressed,
                              "exception": type(exc).__qualname__,
                              "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}))
        return cause


class RuntimeInterceptor(grpc.ServerInterceptor):
    """Domain errors -> status, unexpected errors -> INTERNAL with an error id, one JSON log
    line per call, Prometheus metrics."""

    def __init__(self, metrics: _Metrics, log_json: bool, admission: _Admission | None = None,
                 token: TokenCheck | None = None):
        self._token = token
        self._metrics = metrics
        self._log_json = log_json
        self._errors = _ErrorLog(metrics.service)
        self.admission = admission

    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        deserializer = _tolerant(handler.request_deserializer)
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap(handler.unary_unary, method, streaming=False, client_streaming=False),
                request_deserializer=deserializer, response_serializer=handler.response_serializer)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap(handler.unary_stream, method, streaming=True, client_streaming=False),
                request_deserializer=deserializer, response_serializer=handler.response_serializer)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap(handler.stream_unary, method, streaming=False, client_streaming=True),
                request_deserializer=deserializer, response_serializer=handler.response_serializer)
        return grpc.stream_stream_rpc_method_handler(
            self._wrap(handler.stream_stream, method, streaming=True, client_streaming=True),
            request_deserializer=deserializer, response_serializer=handler.response_serializer)

    def _fail(self, method: str, context: grpc.ServicerContext, exc: Exception, extra: dict[str, str]) -> None:
        """Abort with the status ``exc`` maps to; re-raise a handler's own abort unchanged."""
        if isinstance(exc, Cancelled):  # the call is over: what the client saw is what ended it
            remaining = context.time_remaining()
            code = grpc.StatusCode.DEADLINE_EXCEEDED if remaining is not None and remaining <= 0 \
                else grpc.StatusCode.CANCELLED
            context.abort(code, str(exc))
        if isinstance(exc, LastV2XError):
            context.abort_with_status(to_status(exc))
        code = context.code() if hasattr(context, "code") else None
        if isinstance(code, grpc.StatusCode):  # the handler aborted: grpcio sends its status
            raise exc
        error_id = secrets.token_hex(8)
        extra["error_id"] = error_id
        extra["cause"] = self._errors.record(method, error_id, exc)
        context.abort(grpc.StatusCode.INTERNAL, f"internal error {error_id} (the server log has the details)")

    def _wrap(self, behaviour: Callable[..., Any], method: str, streaming: bool,
              client_streaming: bool) -> Callable[..., Any]:
        def prepare(request: Any) -> Any:
            if client_streaming:
                return _checked(request)
            if isinstance(request, _Undecodable):
                raise request.error()
            return request

        admission = None if method.startswith(OPEN_METHODS) else self.admission
        token = self._token

        # unary calls: their run time is learned and weighed against their deadline at admission (a
        # stream's length is the client's to choose: a watch runs until its deadline by design)
        estimated = method if not (streaming or client_streaming) else None

        def enter(context: grpc.ServicerContext) -> int:
            if token is not None and not token.allows(method, context.invocation_metadata()):
                context.abort(grpc.StatusCode.UNAUTHENTICATED,
                              "missing or wrong bearer token (metadata 'authorization: Bearer <token>')")
            return admission.enter(context, estimated) if admission else 0

        def unary(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            extra: dict[str, str] = {}
            held = 0
            running_since = None
            try:
                held = enter(context)
                running_since = time.perf_counter()
                return behaviour(prepare(request), context)
            except Exception as exc:  # noqa: BLE001 - every failure leaves with a status
                self._fail(method, context, exc, extra)
            finally:
                if admission:
                    if running_since is not None and estimated:
                        admission.observe(method, time.perf_counter() - running_since)
                    admission.leave(held)
                self._record(method, context, start, extra)

        def stream(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            extra: dict[str, str] = {}
            held = 0
            responses = None
            try:
                held = enter(context)
                responses = behaviour(prepare(request), context)
                for response in responses:
                    yield response
                    if call_ended(context):  # nobody reads the rest: stop the handler between responses
                        break
            except Exception as exc:  # noqa: BLE001
                self._fail(method, context, exc, extra)
            finally:
                if responses is not None and hasattr(responses, "close"):
                    responses.close()
                if admission:
                    admission.leave(held)
                self._record(method, context, start, extra)

        return stream if streaming else unary

    def _record(self, method: str, context: grpc.ServicerContext, start: float,
                extra: dict[str, str] | None = None) -> None:
        elapsed = time.perf_counter() - start
        code = _code_name(context)
        m = self._metrics
        m.calls.labels(m.service, method, code).inc()
        m.latency.labels(m.service, method).observe(elapsed)
        if self._log_json and LOG.isEnabledFor(logging.INFO):
            LOG.info(json.dumps({"service": m.service, "method": method, "code": code,
                                 "latency_ms": round(elapsed * 1e3, 3), "peer": context.peer(), **(extra or {})}))


@dataclass(frozen=True)
class Registered:
    """What a service's ``register`` may return instead of its names: the names, and a warm-up to run once
    as the server starts (its health check says NOT_SERVING until the warm-up returns, so a Kubernetes
    readiness probe sends no traffic to a pod still paying its first request's costs)."""

    names: list[str]
    warm_up: Callable[[], Any] | None = None  # its return value is logged (the "warm" event)


# adds servicers, returns their full service names (or Registered: the names and a warm-up)
Register = Callable[[grpc.Server], "list[str] | Registered"]


class _WithHealthPort(grpc.Server):
    """The service's server and its plaintext health-only server, started and stopped together; every
    other attribute is the service's server's (``runtime``, ``metrics``, ``health_servicer``)."""

    def __init__(self, server: grpc.Server, health_server: grpc.Server, health_port: int):
        self._server = server
        self.health_server = health_server
        self.health_port = health_port

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Any) -> None:
        self._server.add_generic_rpc_handlers(generic_rpc_handlers)

    def add_registered_method_handlers(self, service_name: str, method_handlers: Any) -> None:
        self._server.add_registered_method_handlers(service_name, method_handlers)

    def add_insecure_port(self, address: str) -> int:
        return self._server.add_insecure_port(address)

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        return self._server.add_secure_port(address, server_credentials)

    def start(self) -> None:
        self._server.start()
        self.health_server.start()

    def stop(self, grace: float | None) -> threading.Event:
        done = self._server.stop(grace)
        health_done = self.health_server.stop(grace)  # probes see NOT_SERVING while the service drains
        both = threading.Event()

        def wait() -> None:
            done.wait()
            health_done.wait()
            both.set()

        threading.Thread(target=wait, daemon=True).start()
        return both

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        return bool(self._server.wait_for_termination(timeout))


def _health_server(config: ServerConfig, servicer: health.HealthServicer) -> tuple[grpc.Server, int]:
    """A plaintext server with the health service alone (the same servicer: the same statuses)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"{config.service}-health"),
                         options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", 4096)])
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"{config.host}:{config.health_port}")
    if port == 0:
        raise OSError(f"cannot bind the health port {config.host}:{config.health_port}")
    return server, port


def create_server(config: ServerConfig, register: Register) -> tuple[grpc.Server, int]:
    """Build (not start) a server with health, reflection, caps and the runtime interceptor."""
    metrics = _Metrics(config.service)
    options = [("grpc.max_receive_message_length", config.max_message_bytes),
               ("grpc.max_send_message_length", config.max_message_bytes),
               ("grpc.so_reuseport", 0)]
    admission = None
    threads, backstop = config.max_workers, None
    if config.max_concurrent_rpcs > 0:  # every held call has a thread; the reserve refuses and answers probes
        admission = _Admission(config.max_concurrent_rpcs, config.max_workers, config.retry_after_s)
        threads = max(config.max_concurrent_rpcs, config.max_workers) + RESERVE_WORKERS
        backstop = 4 * threads
    credentials = server_credentials(config)  # read (and checked) before anything listens
    token = TokenCheck(read_token(config.auth_token_file)) if config.auth_token_file else None
    runtime = RuntimeInterceptor(metrics, config.log_json, admission, token)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix=config.service),
                         interceptors=[runtime], options=options, maximum_concurrent_rpcs=backstop)
    server.runtime = runtime  # type: ignore[attr-defined]
    server.metrics = metrics  # type: ignore[attr-defined]  # register() may add its own collectors
    registered = register(server)
    names, warm_up = (registered.names, registered.warm_up) if isinstance(registered, Registered) \
        else (registered, None)
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    ready = health_pb2.HealthCheckResponse.NOT_SERVING if warm_up else health_pb2.HealthCheckResponse.SERVING
    for name in [*names, ""]:
        health_servicer.set(name, ready)
    health_servicer.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)  # the process answers, warm or not
    if warm_up is not None:
        threading.Thread(target=_warm, args=(config.service, warm_up, health_servicer, [*names, ""]),
                         name=f"{config.service}-warm-up", daemon=True).start()
    if config.reflection:
        reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    address = f"{config.host}:{config.port}"
    port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind {config.host}:{config.port}")
    server.health_servicer = health_servicer  # type: ignore[attr-defined]
    if config.health_port >= 0:
        health_server, health_port = _health_server(config, health_servicer)
        server = _WithHealthPort(server, health_server, health_port)
    if config.metrics_port >= 0:
        start_http_server(config.metrics_port, addr=config.host, registry=metrics.registry)
    return server, port


def _warm(service: str, warm_up: Callable[[], Any], health_servicer: health.HealthServicer,
          names: list[str]) -> None:
    """Run the service's warm-up, log what it took, then say SERVING (also when it failed: the error is
    logged, and a request then meets the real error with its own status; a pod never stays unready)."""
    start = time.perf_counter()
    try:
        result = warm_up()
        LOG.info(json.dumps({"service": service, "event": "warm", "seconds": round(time.perf_counter() - start, 3),
                             "detail": result}, default=str))
    except Exception as exc:  # noqa: BLE001 - logged; serving goes on
        LOG.error(json.dumps({"service": service, "event": "warm_up_failed", "error": f"{type(exc).__name__}: {exc}",
                              "traceback": traceback.format_exc()}))
    for name in names:  # ignored once a graceful shutdown began (the servicer keeps NOT_SERVING)
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)


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
    LOG.info(json.dumps({"service": config.service, "event": "listening", "port": port,
                         **({"health_port": server.health_port} if isinstance(server, _WithHealthPort) else {})}))
    if ready:
        ready(port)
    stop.wait()
    server.stop(config.grace_s).wait()


def propagated_timeout(context: grpc.ServicerContext, default_s: float = 30.0) -> float:
    """Time left on the incoming call, to pass as the timeout of outgoing calls."""
    remaining = context.time_remaining()
    return default_s if remaining is None else max(0.001, remaining)
