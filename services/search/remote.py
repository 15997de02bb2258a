"""The search service's pipeline over gRPC: llm, grounding and simulator services as peers.

Executions fan out over the simulator replicas named in ``simulator_targets``: either
a list of ``host:port`` (one channel each, chosen round robin by the caller's replica
index) or one ``dns:///name:port`` / ``ipv4:a:p1,a:p2`` target, which gRPC's own resolver
expands (the pods of a headless Service) and balances with ``round_robin``. Each
execution is one ``Execute`` call made with ``.future()``, so K of them are in flight per
replica without threads of our own; both rollouts of a pair run in that one call, on one
replica. A replica that is unavailable or past the deadline has its execution retried on
the next one with a doubling backoff.

Status mapping: the simulator's INVALID_ARGUMENT is a *refused* program (a result);
UNAVAILABLE and DEADLINE_EXCEEDED become :class:`Unavailable` naming the target, which
fails the campaign with that reason.
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future
from typing import Any

import grpc

from lastv2x.core.errors import FailedPrecondition, InvalidArgument, LastV2XError, Unavailable
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec
from lastv2x.rpc.convert import program_from_proto, program_to_proto, spec_from_proto, spec_to_proto
from lastv2x.v1 import (
    grounding_pb2,
    grounding_pb2_grpc,
    llm_pb2,
    llm_pb2_grpc,
    simulator_pb2,
    simulator_pb2_grpc,
)
from services.search.pipeline import Execution, ExecutionRequest, Parsed, Reflected

_CHANNEL_OPTIONS = [("grpc.lb_policy_name", "round_robin"), ("grpc.max_receive_message_length", 64 * 1024 * 1024)]


def _error(exc: grpc.RpcError, target: str, what: str) -> LastV2XError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidArgument([], f"{what} at {target}: {details}")
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


class GrpcPipeline:
    def __init__(self, llm_target: str, grounding_target: str, simulator_targets: str, timeout_s: float = 120.0,
                 attempts: int = 3, backoff_s: float = 0.25):
        targets = split_targets(simulator_targets)
        if not (llm_target and grounding_target and targets):
            raise ValueError("GrpcPipeline needs an llm, a grounding and at least one simulator target")
        self._timeout_s = timeout_s
        self._attempts = attempts
        self._backoff_s = backoff_s
        self.retries = 0  # executions re-sent to another replica
        self._llm_target, self._grounding_target = llm_target, grounding_target
        self._channels = [grpc.insecure_channel(t, options=_CHANNEL_OPTIONS)
                          for t in (llm_target, grounding_target, *targets)]
        self._llm = llm_pb2_grpc.LlmServiceStub(self._channels[0])
        self._grounding = grounding_pb2_grpc.GroundingServiceStub(self._channels[1])
        self._simulators = [simulator_pb2_grpc.SimulatorServiceStub(c) for c in self._channels[2:]]
        self._targets = tuple(targets)
        self._next = itertools.count()
        self._lock = threading.Lock()

    @property
    def replicas(self) -> tuple[str, ...]:
        return self._targets

    def parse(self, intent: str, seed: int, campaign: str) -> Parsed:
        try:
            reply = self._llm.ParseIntent(llm_pb2.ParseIntentRequest(text=intent, seed=seed), timeout=self._timeout_s)
        except grpc.RpcError as exc:
            raise _error(exc, self._llm_target, "ParseIntent") from None
        return Parsed(spec_from_proto(reply.spec), reply.attempts_used, reply.backend)

    def ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        try:
            reply = self._grounding.Ground(grounding_pb2.GroundRequest(spec=spec_to_proto(spec)), timeout=self._timeout_s)
        except grpc.RpcError as exc:
            raise _error(exc, self._grounding_target, "Ground") from None
        return program_from_proto(reply.program)  # type: ignore[no-any-return]

    def reflect(self, prompt: str, digest: dict[str, Any], campaign: str) -> Reflected:
        import json

        try:
            reply = self._llm.Reflect(llm_pb2.ReflectRequest(prompt=prompt, evidence_digest_json=json.dumps(digest)),
                                      timeout=self._timeout_s)
        except grpc.RpcError as exc:
            raise _error(exc, self._llm_target, "Reflect") from None
        return Reflected(reply.diagnosis, reply.revised_prompt, tuple(reply.rule_ids))

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        """One paired execution on a replica; a replica that is unavailable or past the deadline has the
        execution retried on the next replica, after a doubling backoff, up to ``attempts`` times. The
        caller records the result once (the ledger's execution id), so a retry never counts twice."""
        with self._lock:
            first = request.replica if request.replica is not None else next(self._next) % len(self._targets)
        out: Future[Execution] = Future()
        message = simulator_pb2.ExecuteRequest(program=program_to_proto(request.program), seed=request.seed,
                                               write_trace=request.write_trace, app=request.app)
        start = time.perf_counter()

        def launch(index: int, attempt: int) -> None:
            call = self._simulators[index].Execute.future(message, timeout=self._timeout_s)
            call.add_done_callback(lambda f: done(f, index, attempt))

        def done(f: grpc.Future, index: int, attempt: int) -> None:
            target = self._targets[index]
            try:
                reply = f.result()
            except grpc.RpcError as exc:
                err = _error(exc, target, "Execute")
                if isinstance(err, InvalidArgument):
                    out.set_result(Execution(_sha(request.program), request.seed, False, 1e6, refused=str(err),
                                             replica=target))
                elif isinstance(err, Unavailable) and attempt + 1 < self._attempts:
                    with self._lock:
                        self.retries += 1
                    delay = self._backoff_s * 2 ** attempt
                    threading.Timer(delay, launch, ((index + 1) % len(self._targets), attempt + 1)).start()
                else:
                    out.set_exception(err)
                return
            o = reply.outcome
            out.set_result(Execution(_sha(request.program), int(o.seed), o.admitted, o.failure_margin,
                                     o.outcome_json.encode(), target, o.trace_uri,
                                     wall_time_s=time.perf_counter() - start,
                                     app_build={"name": reply.app_build.name, "version": reply.app_build.version,
                                                "digest": reply.app_build.digest, "target": request.app or "reference"}))

        launch(first % len(self._targets), 0)
        return out

    def close(self) -> None:
        for c in self._channels:
            c.close()


def _sha(program: ScenarioProgram) -> str:
    import hashlib

    return hashlib.sha256(program.model_dump_json().encode()).hexdigest()


__all__ = ["GrpcPipeline", "split_targets"]
