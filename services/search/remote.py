"""The search service's pipeline over gRPC: llm, grounding and simulator services as peers.

Executions fan out over the simulator replicas named in ``simulator_targets``: either
a list of ``host:port`` (one channel each, chosen round robin by the caller's replica
index) or one ``dns:///name:port`` / ``ipv4:a:p1,a:p2`` target, which gRPC's own resolver
expands (the pods of a headless Service) and balances with ``round_robin``. Each
execution is one ``Execute`` call made with ``.future()``, so K of them are in flight per
replica without threads of our own; both rollouts of a pair run in that one call, on one
replica. A replica that is unavailable or past the deadline has its execution retried on
the next one with a doubling backoff (capped at ``max_backoff_s``); a replica that refuses it as full
(RESOURCE_EXHAUSTED with a ``google.rpc.RetryInfo``: its ``LASTV2X_MAX_CONCURRENT_RPCS`` are taken) has
it retried after the advised delay on the next replica (the same one when there is one). Retries are
bounded by **time**, not by a count: an execution is re-sent while less than ``retry_window_s`` has
passed since it was submitted, so a campaign waits for a killed replica (the only one, say) to be
restarted instead of spending its attempts in a second. ``attempts`` (optional) still caps the calls.
Both kinds of retry are counted in ``retries``.

Replicas may change at runtime (``set_replicas``: what EndpointSlice discovery, in
``services.search.discovery``, reports as pods come and go): an added target gets a channel
and takes executions at once; a removed one takes no new execution (retries included) and
its channel closes once its in-flight calls have finished. Under TLS a discovered replica is a pod
address, which no certificate names: ``replica_server_name`` (the watched Service) is then the name
its certificate is verified against.

Status mapping: the simulator's INVALID_ARGUMENT is a *refused* program (a result);
UNAVAILABLE and DEADLINE_EXCEEDED become :class:`Unavailable` naming the target, which
fails the campaign with that reason.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import grpc

from lastv2x.core.errors import (
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    LastV2XError,
    Unavailable,
)
from lastv2x.core.parse_notes import assigned_towns
from lastv2x.core.program import ScenarioProgram, program_sha256
from lastv2x.core.spec import ScenarioSpec
from lastv2x.rpc.convert import program_from_proto, program_to_proto, spec_from_proto, spec_to_proto
from lastv2x.rpc.errors import field_violations, retry_delay_s
from lastv2x.rpc.security import open_channel
from lastv2x.v1 import (
    grounding_pb2,
    grounding_pb2_grpc,
    llm_pb2,
    llm_pb2_grpc,
    simulator_pb2,
    simulator_pb2_grpc,
)
from services.search.pipeline import Execution, ExecutionRequest, Parsed, Reflected, stated_fields

# a restarted replica is reconnected within ~2 s (gRPC's default backoff grows to 120 s between tries)
_CHANNEL_OPTIONS = [("grpc.lb_policy_name", "round_robin"), ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                    ("grpc.initial_reconnect_backoff_ms", 250), ("grpc.min_reconnect_backoff_ms", 250),
                    ("grpc.max_reconnect_backoff_ms", 2000)]


def _error(exc: grpc.RpcError, target: str, what: str) -> LastV2XError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code is grpc.StatusCode.INVALID_ARGUMENT:  # the server's field paths travel on
        return InvalidArgument([FieldViolation(f, d) for f, d in field_violations(exc)], f"{what} at {target}: {details}")
    if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return FailedPrecondition(f"{what} at {target}: {details}")
    return Unavailable(f"{what} at {target} answered {code.name if code else 'nothing'}: {details}")


def split_targets(text: str) -> list[str]:
    """``a:1,b:2`` -> one channel per replica; a resolver URI (``dns:///svc:50051``,
    ``ipv4:a:1,b:2``) stays one target that gRPC expands and balances itself."""
    text = text.strip()
    if text.startswith(("dns:", "ipv4:", "ipv6:", "unix:")):
        return [text]
    return [t.strip() for t in text.split(",") if t.strip()]


@dataclass(eq=False)
class _Replica:
    target: str
    channel: grpc.Channel
    stub: simulator_pb2_grpc.SimulatorServiceStub
    in_flight: int = 0
    draining: bool = False


class GrpcPipeline:
    def __init__(self, llm_target: str, grounding_target: str, simulator_targets: str, timeout_s: float = 120.0,
                 attempts: int | None = None, backoff_s: float = 0.25, retry_window_s: float = 60.0,
                 max_backoff_s: float = 2.0):
        targets = split_targets(simulator_targets)
        if not (llm_target and grounding_target and targets):
            raise ValueError("GrpcPipeline needs an llm, a grounding and at least one simulator target")
        self._timeout_s = timeout_s
        self._attempts = attempts  # None = no count: the time window alone bounds retries
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._retry_window_s = retry_window_s
        self.retries = 0  # executions re-sent (to another replica, or one by one after a failed batch)
        self.replica_server_name: str | None = None  # TLS name of replicas added as bare IP addresses
        self._llm_target, self._grounding_target = llm_target, grounding_target
        self._channels = [open_channel(t, _CHANNEL_OPTIONS) for t in (llm_target, grounding_target)]
        self._llm = llm_pb2_grpc.LlmServiceStub(self._channels[0])
        self._grounding = grounding_pb2_grpc.GroundingServiceStub(self._channels[1])
        self._replicas = [self._open(t) for t in dict.fromkeys(targets)]  # active, in round-robin order
        self._draining: list[_Replica] = []  # removed, closed when their last call finishes
        self._on_close: list[Callable[[], None]] = []
        self._next = itertools.count()
        self._lock = threading.Lock()

    @staticmethod
    def _open(target: str, server_name: str | None = None) -> _Replica:
        """A channel to one replica, TLS and token as this process's settings say; a bare IP address is
        verified as ``server_name`` (the Service whose pod it is) when one is given."""
        options = list(_CHANNEL_OPTIONS)
        if server_name and _is_ip_address(target):
            options.append(("grpc.ssl_target_name_override", server_name))
        channel = open_channel(target, options)
        return _Replica(target, channel, simulator_pb2_grpc.SimulatorServiceStub(channel))

    @property
    def replicas(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(r.target for r in self._replicas)

    @property
    def draining(self) -> tuple[str, ...]:
        """Removed replicas whose in-flight calls have not finished yet (their channels still open)."""
        with self._lock:
            return tuple(r.target for r in self._draining)

    def set_replicas(self, targets: Iterable[str]) -> tuple[list[str], list[str]]:
        """Make ``targets`` the simulator replicas (thread-safe, any time): a new target gets a channel
        and takes executions at once; a target no longer named takes no new execution and its channel
        closes when its in-flight calls finish (one named again before that is taken back as is).
        Returns (added, removed)."""
        wanted = list(dict.fromkeys(t.strip() for t in targets if t.strip()))
        if not wanted:
            raise ValueError("set_replicas needs at least one simulator target")
        to_close = []
        with self._lock:
            current = {r.target: r for r in self._replicas}
            parked = {r.target: r for r in self._draining}
            added = [t for t in wanted if t not in current]
            removed = [r for r in self._replicas if r.target not in wanted]
            for r in removed:
                r.draining = True
            self._draining = [r for r in self._draining if r.target not in wanted] + removed
            for t in added:
                if t in parked:
                    parked[t].draining = False
            self._replicas = [r for r in self._replicas if r.target in wanted] + \
                [parked[t] if t in parked else self._open(t, self.replica_server_name) for t in added]
            for r in removed:
                if r.in_flight == 0:
                    self._draining.remove(r)
                    to_close.append(r)
        for r in to_close:
            r.channel.close()
        return added, [r.target for r in removed]

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` first in ``close`` (e.g. stop the replica discovery feeding this pipeline)."""
        self._on_close.append(callback)

    def _unary(self, method: Any, request: Any, target: str, what: str) -> Any:
        """One call to the llm or grounding service, re-sent while it is UNAVAILABLE (a restart) within the
        retry window, as executions are."""
        start, attempt = time.perf_counter(), 0
        while True:
            try:
                return method(request, timeout=self._timeout_s)
            except grpc.RpcError as exc:
                delay = min(self._max_backoff_s, self._backoff_s * 2 ** min(attempt, 30))
                if exc.code() is not grpc.StatusCode.UNAVAILABLE or \
                        time.perf_counter() + delay - start >= self._retry_window_s:
                    raise _error(exc, target, what) from None
            with self._lock:
                self.retries += 1
            attempt += 1
            time.sleep(delay)

    def parse(self, intent: str, seed: int, campaign: str) -> Parsed:
        reply = self._unary(self._llm.ParseIntent, llm_pb2.ParseIntentRequest(text=intent, seed=seed),
                            self._llm_target, "ParseIntent")
        spec = spec_from_proto(reply.spec)
        return Parsed(spec, reply.attempts_used, reply.backend, tuple(reply.unparsed_clauses),
                      stated_fields(tuple(reply.notes), spec), assigned_towns(tuple(reply.notes)))

    def ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        reply = self._unary(self._grounding.Ground, grounding_pb2.GroundRequest(spec=spec_to_proto(spec)),
                            self._grounding_target, "Ground")
        return program_from_proto(reply.program)  # type: ignore[no-any-return]

    def reflect(self, prompt: str, digest: dict[str, Any], campaign: str,
                spec: ScenarioSpec | None = None) -> Reflected:
        import json

        reply = self._unary(self._llm.Reflect,
                            llm_pb2.ReflectRequest(prompt=prompt, evidence_digest_json=json.dumps(digest),
                                                   spec_json=spec.model_dump_json() if spec is not None else ""),
                            self._llm_target, "Reflect")
        return Reflected(reply.diagnosis, reply.revised_prompt, tuple(reply.rule_ids),
                         tuple((e.path, json.loads(e.value_json), e.rule) for e in reply.edits))

    def check_app(self, app: str, field: str = "app") -> None:
        """Ask a simulator replica to resolve ``app`` (its entry points, its allow-list, the server's Describe)
        without running anything: an Execute of a tiny spec with an out-of-range seed, which the simulator
        refuses at ``seed`` only after it resolved the application (INVALID_ARGUMENT at ``app`` when it cannot,
        UNAVAILABLE / FAILED_PRECONDITION naming the application when it does not answer). Those become
        INVALID_ARGUMENT at ``field``; a simulator that cannot be reached is not the application's fault (the
        campaign waits for it as any execution does)."""
        from lastv2x.core.spec import parse_spec

        probe = simulator_pb2.ExecuteRequest(
            spec=spec_to_proto(parse_spec({"application": "RLVW", "seed": 1, "signal": {"offset_s": 22.0}})),
            seed=-1, write_trace=True, app=app)
        replica = self._pick(0)
        hint = "reference, grpc://host:port on the simulator's LASTV2X_SIMULATOR_APP_ALLOW, or an installed " \
               "lastv2x.apps entry point"
        try:
            replica.stub.Execute(probe, timeout=min(self._timeout_s, 30.0))
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
            named = [(f, d) for f, d in field_violations(exc)]
            if code is grpc.StatusCode.INVALID_ARGUMENT and any(f == "app" for f, _ in named):
                raise InvalidArgument([FieldViolation(field, d, hint) for f, d in named if f == "app"]) from None
            if code is grpc.StatusCode.INVALID_ARGUMENT:
                return  # refused at the seed: the application resolved
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.FAILED_PRECONDITION,
                        grpc.StatusCode.DEADLINE_EXCEEDED) and "application" in details.lower():
                raise InvalidArgument(FieldViolation(field, f"application {app!r} cannot be used: {details}",
                                                     "start the application server first, or check its address")
                                      ) from None
            return  # the simulator itself is away: executions wait for it within the retry window
        finally:
            self._finished(replica)

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        """One paired execution on a replica; a replica that is unavailable or past the deadline has the
        execution retried on the next replica, after a doubling backoff (at most ``max_backoff_s``), and one
        that refuses it with retry advice (RESOURCE_EXHAUSTED + ``google.rpc.RetryInfo``) after the advised
        delay, while less than ``retry_window_s`` has passed since submission (and, if given, up to
        ``attempts`` calls). The caller records the result once (the ledger's execution id), so a retry never
        counts twice."""
        with self._lock:
            first = request.replica if request.replica is not None else next(self._next)
        out: Future[Execution] = Future()
        message = _execute_message(request)
        start = time.perf_counter()

        def may_retry(attempt: int, delay: float) -> bool:
            if self._attempts is not None and attempt + 1 >= self._attempts:
                return False
            return time.perf_counter() + delay - start < self._retry_window_s

        def launch(replica: _Replica, attempt: int) -> None:
            try:
                call = replica.stub.Execute.future(message, timeout=self._timeout_s)
            except ValueError as exc:  # its channel closed under us (the pipeline is closing)
                self._finished(replica)
                out.set_exception(Unavailable(f"Execute at {replica.target}: {exc}"))
                return
            call.add_done_callback(lambda f: done(f, replica, attempt))

        def done(f: grpc.Future, replica: _Replica, attempt: int) -> None:
            target = replica.target
            self._finished(replica)
            try:
                reply = f.result()
            except grpc.RpcError as exc:
                err = _error(exc, target, "Execute")
                advised = retry_delay_s(exc) if exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED else None
                if advised is not None and may_retry(attempt, advised):  # the replica is full: as it advises
                    with self._lock:
                        self.retries += 1
                    threading.Timer(max(0.0, advised), lambda: launch(self._pick_after(replica), attempt + 1)).start()
                elif isinstance(err, InvalidArgument):
                    out.set_result(Execution(program_sha256(request.program), request.seed, False, 1e6, refused=str(err),
                                             refused_violations=tuple(err.violations), replica=target))
                elif isinstance(err, Unavailable) and may_retry(
                        attempt, delay := min(self._max_backoff_s, self._backoff_s * 2 ** min(attempt, 30))):
                    with self._lock:
                        self.retries += 1
                    threading.Timer(delay, lambda: launch(self._pick_after(replica), attempt + 1)).start()
                else:
                    if isinstance(err, Unavailable):
                        err = Unavailable(f"{err} (after {attempt + 1} call(s) in "
                                          f"{time.perf_counter() - start:.1f} s; no replica came back within the "
                                          f"{self._retry_window_s:g} s retry window)")
                    out.set_exception(err)
                return
            out.set_result(_execution(request, reply, target, time.perf_counter() - start))

        launch(self._pick(first), 0)
        return out

    def submit_batch(self, requests: Sequence[ExecutionRequest]) -> list[Future[Execution]]:
        """A generation over the replicas: the requests in contiguous slices, one ``ExecuteBatch`` per
        active replica in round-robin order (one batch runs one application: slices never mix two), each
        request's future set as the stream answers it. A request that writes a trace, names a backend or a
        replica goes alone (:meth:`submit`). When a slice's call fails (the replica is away or full, or it
        refuses the batch as INVALID_ARGUMENT), its unanswered requests are resubmitted one by one
        (:meth:`submit`): its retry window and backoff, and only a refused program is marked refused."""
        outs = [Future[Execution]() for _ in requests]
        by_app: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            if r.write_trace or r.backend or r.replica is not None:
                _chain(self.submit(r), outs[i])
            else:
                by_app.setdefault(r.app, []).append(i)
        for rows in by_app.values():
            n = max(1, min(len(rows), len(self.replicas)))
            size = -(-len(rows) // n)
            for first in range(0, len(rows), size):
                with self._lock:
                    at = next(self._next)
                replica = self._pick(at)
                part = rows[first:first + size]
                threading.Thread(target=self._stream_batch, args=(replica, [requests[i] for i in part],
                                                                  [outs[i] for i in part]),
                                 name=f"execute-batch-{replica.target}", daemon=True).start()
        return outs

    def _stream_batch(self, replica: _Replica, requests: list[ExecutionRequest], outs: list[Future[Execution]]
                      ) -> None:
        answered = [False] * len(requests)
        try:
            message = simulator_pb2.ExecuteBatchRequest(requests=[_execute_message(r) for r in requests])
            for reply in replica.stub.ExecuteBatch(message, timeout=self._timeout_s):
                i = reply.index
                if not 0 <= i < len(requests) or answered[i]:
                    continue
                answered[i] = True
                if reply.error:  # its worker process died: this execution fails, not the batch
                    outs[i].set_exception(RuntimeError(f"ExecuteBatch at {replica.target}: {reply.error}"))
                else:
                    outs[i].set_result(_execution(requests[i], reply, replica.target, reply.wall_time_s))
        except (grpc.RpcError, ValueError):  # the call failed, or its channel closed under us: one by one
            pass
        finally:
            self._finished(replica)
        again = [i for i, done in enumerate(answered) if not done]
        with self._lock:
            self.retries += len(again)
        for i in again:
            try:
                _chain(self.submit(requests[i]), outs[i])
            except Exception as exc:  # noqa: BLE001 - e.g. the pipeline closed: this execution fails, no hang
                outs[i].set_exception(exc)

    def _pick(self, index: int) -> _Replica:
        with self._lock:
            replica = self._replicas[index % len(self._replicas)]
            replica.in_flight += 1
            return replica

    def _pick_after(self, previous: _Replica) -> _Replica:
        """The active replica after ``previous`` in round-robin order (the first one if it was removed)."""
        with self._lock:
            at = next((i for i, r in enumerate(self._replicas) if r is previous), -1)
            replica = self._replicas[(at + 1) % len(self._replicas)]
            replica.in_flight += 1
            return replica

    def _finished(self, replica: _Replica) -> None:
        with self._lock:
            replica.in_flight -= 1
            close = replica.draining and replica.in_flight == 0 and replica in self._draining
            if close:
                self._draining.remove(replica)
        if close:
            replica.channel.close()

    def close(self) -> None:
        for callback in self._on_close:
            callback()
        with self._lock:
            channels = [*self._channels, *(r.channel for r in (*self._replicas, *self._draining))]
        for c in channels:
            c.close()


def _execute_message(request: ExecutionRequest) -> simulator_pb2.ExecuteRequest:
    return simulator_pb2.ExecuteRequest(program=program_to_proto(request.program), seed=request.seed,
                                        write_trace=request.write_trace, app=request.app, backend=request.backend)


def _execution(request: ExecutionRequest, reply: Any, target: str, wall_time_s: float) -> Execution:
    """An ``ExecuteResponse`` or ``ExecuteBatchResponse`` as search sees it."""
    o = reply.outcome
    return Execution(program_sha256(request.program), int(o.seed), o.admitted, o.failure_margin,
                     o.outcome_json.encode(), target, o.trace_uri, wall_time_s=wall_time_s,
                     app_build={"name": reply.app_build.name, "version": reply.app_build.version,
                                "digest": reply.app_build.digest, "target": request.app or "reference"})


def _chain(inner: Future[Execution], out: Future[Execution]) -> None:
    """``out`` settles as ``inner`` does."""
    def relay(f: Future[Execution]) -> None:
        exc = f.exception()
        if exc is not None:
            out.set_exception(exc)
        else:
            out.set_result(f.result())

    inner.add_done_callback(relay)


def _is_ip_address(target: str) -> bool:
    """``10.0.0.7:50051`` or ``[fd00::7]:50051`` (not a name, not a resolver URI)."""
    import ipaddress

    host = target.rsplit(":", 1)[0].strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True



__all__ = ["GrpcPipeline", "split_targets"]
