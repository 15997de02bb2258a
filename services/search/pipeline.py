"""The search service's view of the other four services: one small port, two adapters.

A campaign needs five things from the rest of the platform: parse an intent, ground a
spec, run a paired execution, reflect on an ineffective test, and (for the gate) the
analytic verifier. The verifier is the shared pure core (``lastv2x.core.verifier``) and
is called directly; the other four go through :class:`Pipeline`:

- :class:`InProcessPipeline` calls the service cores in this process (the embedded
  default: ``make run``, ``lastv2x campaign`` without ``--target``, tests);
- ``services.search.remote.GrpcPipeline`` calls the llm, grounding and simulator
  services over gRPC and fans executions out over simulator replicas.

Executions are submitted, not called: :meth:`Pipeline.submit` returns a future, so the
campaign loop keeps K executions in flight per replica. A program the simulator
refuses (its INVALID_ARGUMENT) is a result (``Execution.refused``), not an error; an
unreachable simulator raises :class:`~lastv2x.core.errors.Unavailable`.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.parse_notes import assigned_towns, stated_note_fields
from lastv2x.core.program import ScenarioProgram, program_sha256
from lastv2x.core.spec import ScenarioSpec

if TYPE_CHECKING:
    from services.grounding.core import GroundingCore


@dataclass(frozen=True)
class Parsed:
    """An intent compiled into a verified spec by the parser role."""

    spec: ScenarioSpec
    attempts: int
    backend: str
    unparsed: tuple[str, ...] = ()  # clauses of the intent the spec does not hold (parser.unparsed_fault), as quoted
    stated: tuple[str, ...] = ()  # spec fields the intent's own words set (``stated_fields``): no repair moves them
    towns: tuple[str, ...] = ()  # the towns the parser chose map.town among, the intent naming none (assigned_towns)


_SPEC_ROOTS = frozenset({"ego", "v2x", "signal", "map", "variation", "perception", "duration_s"})


def stated_fields(notes: tuple[str, ...] | list[str], spec: ScenarioSpec) -> tuple[str, ...]:
    """The spec fields (verifier paths: ``v2x.channel.range_m``, ``agents[1].gap_m``) the parser's notes say
    the intent's words set (``lastv2x.core.parse_notes``), in note order; an agent's fields are named by its id in the notes."""
    ids = {a.id: k for k, a in enumerate(spec.agents)}
    out: list[str] = []
    for owner, name in stated_note_fields(notes):
        path = f"{owner}.{name}" if owner in _SPEC_ROOTS else f"agents[{ids[owner]}].{name}" if owner in ids else ""
        if path and path not in out:
            out.append(path)
    return tuple(out)


@dataclass(frozen=True)
class Reflected:
    """The reflector's diagnosis of an ineffective test, its field edits to the spec that ran (path, value, rule)
    and the prompt that says them in words."""

    diagnosis: str
    revised_prompt: str
    rule_ids: tuple[str, ...] = ()
    edits: tuple[tuple[str, Any, str], ...] = ()  # empty: words only (a reflector that gave no edits)


@dataclass(frozen=True)
class Execution:
    """One paired execution as search sees it: admission, margin and the canonical outcome bytes."""

    program_sha256: str
    seed: int
    admitted: bool
    failure_margin: float  # signal apps: s; conflict apps: m; 1e6 = no qualifying episode
    outcome_json: bytes = b""  # canonical bytes: identical for the same program and seed
    replica: str = ""  # which simulator ran it
    trace_uri: str = ""  # MCAP trace, when one was asked for
    refused: str = ""  # non-empty: the simulator refused the program (its INVALID_ARGUMENT text)
    refused_violations: tuple[FieldViolation, ...] = ()  # what the refusal names, field by field
    wall_time_s: float = 0.0
    app_build: dict[str, str] = field(default_factory=dict, compare=False)  # name, version, digest, target

    @cached_property
    def outcome(self) -> dict[str, Any]:
        return json.loads(self.outcome_json) if self.outcome_json else {}

    @property
    def outcome_sha256(self) -> str:
        return hashlib.sha256(self.outcome_json).hexdigest()

    @property
    def app_error(self) -> str:
        """Non-empty: the application under test failed (neither a pass nor an admitted failure)."""
        return str(self.outcome.get("app_error", ""))


@dataclass(frozen=True)
class ExecutionRequest:
    program: ScenarioProgram
    seed: int
    replica: int | None = None  # index into Pipeline.replicas; None = the pipeline's choice
    write_trace: bool = False
    trace_dir: Path | None = field(default=None, compare=False)  # in-process only: where traces go
    app: str = ""  # the application under test, as ExecuteRequest.app ("" = the reference apps)
    backend: str = ""  # the simulator, as ExecuteRequest.backend ("" = the simulator's default)


class Pipeline(Protocol):
    """What a campaign needs from the llm, grounding and simulator services.

    Both adapters also have ``submit_batch(requests) -> list[Future]``: several executions dispatched
    together (a generation, which the simulator steps as one batch), one future per request in request
    order. It is optional: :func:`submit_all` submits one by one to a pipeline without it."""

    @property
    def replicas(self) -> tuple[str, ...]: ...

    def parse(self, intent: str, seed: int, campaign: str) -> Parsed: ...

    def ground(self, spec: ScenarioSpec) -> ScenarioProgram: ...

    def submit(self, request: ExecutionRequest) -> Future[Execution]: ...

    def reflect(self, prompt: str, digest: dict[str, Any], campaign: str,
                spec: ScenarioSpec | None = None) -> Reflected: ...

    def close(self) -> None: ...


class InProcessPipeline:
    """The service cores in this process.

    Executions run on one worker thread (the simulator core is CPU-bound Python; more
    threads would only contend for the GIL), which takes every request queued while it was
    busy (a whole generation from :meth:`submit_batch`, plus whatever else is queued) as one
    vectorized batch (``run_batch``, what ExecuteBatch runs: per program the same outcome
    bytes as a single run), up to ``max_batch``, spread in chunks over the simulator's worker
    processes (``run_batch_on_workers``: as many as the container's CPU limit; the reference
    applications only). Requests that write a trace run alone; a batch the simulator refuses
    is re-run one by one, so only the refused program is marked refused.
    """

    def __init__(self, *, grounding_cache_dir: Path | None = None, trace_dir: Path = Path(".lastv2x/traces"),
                 synthetic_grounding: bool = False, max_batch: int = 64):
        """``synthetic_grounding``: lay every spec on the synthetic straight crossing
        (``lastv2x.core.synthetic``) instead of retrieving a junction from the map catalogue —
        the reference scenes of the benchmarks, and fast tests."""
        from services.grounding.core import GroundingConfig, GroundingCore
        from services.llm.config import LlmConfig
        from services.llm.roles import LlmRoles

        self._roles = LlmRoles(config=LlmConfig.from_env())
        self._grounding: GroundingCore | None = None
        if not synthetic_grounding:
            self._grounding = GroundingCore(GroundingConfig.from_env() if grounding_cache_dir is None
                                            else GroundingConfig(cache_dir=grounding_cache_dir))
        self._queue: queue.SimpleQueue[list[tuple[ExecutionRequest, Future[Execution]]] | None] = queue.SimpleQueue()
        self._max_batch = max_batch
        self._worker = threading.Thread(target=self._work, name="search-exec", daemon=True)
        self._worker.start()
        self._ground_lock = threading.Lock()
        self._trace_dir = trace_dir
        from services.simulator.execute import SimulatorLimits

        self._limits = SimulatorLimits.from_env()  # caps and user maps, as the simulator service reads them
        self._apps: dict[str, Any] = {}  # application under test by name (ExecutionRequest.app)

    @property
    def replicas(self) -> tuple[str, ...]:
        return ("in-process",)

    def parse(self, intent: str, seed: int, campaign: str) -> Parsed:
        result = self._roles.parse_intent(intent, seed, campaign=campaign)
        return Parsed(result.spec, result.attempts_used, result.backend, result.unparsed_clauses,
                      stated_fields(result.notes, result.spec), assigned_towns(result.notes))

    def ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        if self._grounding is None:
            from lastv2x.core.synthetic import program_from_spec_on_straight_roads

            return program_from_spec_on_straight_roads(spec)
        with self._ground_lock:
            return self._grounding.ground(spec)

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        return self._enqueue([request])[0]

    def submit_batch(self, requests: Sequence[ExecutionRequest]) -> list[Future[Execution]]:
        return self._enqueue(requests)

    def _enqueue(self, requests: Sequence[ExecutionRequest]) -> list[Future[Execution]]:
        item = [(r, Future[Execution]()) for r in requests]
        if item:
            self._queue.put(item)  # one item: the worker never splits a generation between two batches
        return [f for _, f in item]

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = list(item)
            while len(batch) < self._max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch += more
            for first in range(0, len(batch), self._max_batch):
                self._run(batch[first:first + self._max_batch])

    def _run(self, batch: list[tuple[ExecutionRequest, Future[Execution]]]) -> None:
        live = [(r, f) for r, f in batch if f.set_running_or_notify_cancel()]
        alone = [(r, f) for r, f in live if r.write_trace or r.backend]  # another backend runs alone
        by_app: dict[str, list[tuple[ExecutionRequest, Future[Execution]]]] = {}
        for r, f in live:
            if not (r.write_trace or r.backend):
                by_app.setdefault(r.app, []).append((r, f))
        for together in by_app.values():  # one batch runs one application build
            if len(together) > 1:
                try:
                    self._run_batch(together)
                except InvalidArgument:
                    alone += together  # find the refused program(s) one by one
                except Exception as exc:  # noqa: BLE001 - a simulator bug fails these rows, not the worker
                    for _, f in together:
                        f.set_exception(exc)
            else:
                alone += together
        for r, f in alone:
            try:
                f.set_result(self._execute(r))
            except Exception as exc:  # noqa: BLE001
                f.set_exception(exc)

    def _run_batch(self, rows: list[tuple[ExecutionRequest, Future[Execution]]]) -> None:
        from services.simulator.execute import run_batch_on_workers

        app = self._app(rows[0][0].app)
        start = time.perf_counter()
        # spread over the simulator's worker pool (all cores of the container) when it pays
        outcomes = run_batch_on_workers([r.program for r, _ in rows], [r.seed for r, _ in rows], self._limits, app)
        share = (time.perf_counter() - start) / len(rows)
        for (_, f), o in zip(rows, outcomes, strict=True):
            if isinstance(o, RuntimeError):  # its worker process died: this execution fails, not the batch
                f.set_exception(o)
                continue
            f.set_result(Execution(o.program_sha256, o.seed, o.admitted, o.failure_margin, o.to_json_bytes(),
                                   self.replicas[0], wall_time_s=share, app_build=app.build.to_dict()))

    def _app(self, name: str) -> Any:
        """The application under test (resolved once per name; an unreachable app or another contract
        version raises Unavailable / FailedPrecondition naming it, which fails the campaign)."""
        from services.simulator.execute import app_under_test

        if name not in self._apps:
            self._apps[name] = app_under_test(name, self._limits)
        return self._apps[name]

    def _execute(self, request: ExecutionRequest) -> Execution:
        from services.simulator.execute import run_one

        limits = replace(self._limits, trace_dir=request.trace_dir or self._trace_dir)
        app = self._app(request.app)
        start = time.perf_counter()
        try:
            outcome, uri = run_one(request.program, request.seed, limits, write_trace=request.write_trace, app=app,
                                   backend=request.backend)
        except InvalidArgument as exc:
            return Execution(program_sha256(request.program), request.seed, False, 1e6, refused=str(exc),
                             refused_violations=tuple(exc.violations),
                             replica=self.replicas[0])
        return Execution(outcome.program_sha256, outcome.seed, outcome.admitted, outcome.failure_margin,
                         outcome.to_json_bytes(), self.replicas[0], uri, wall_time_s=time.perf_counter() - start,
                         app_build=app.build.to_dict())

    def reflect(self, prompt: str, digest: dict[str, Any], campaign: str,
                spec: ScenarioSpec | None = None) -> Reflected:
        r = self._roles.reflect(prompt, digest, campaign=campaign, spec=spec)
        return Reflected(r.diagnosis, r.revised_prompt, tuple(r.rule_ids),
                         tuple((e.path, e.value, e.rule) for e in r.edits))

    def close(self) -> None:
        self._queue.put(None)
        self._worker.join(timeout=60)


def submit_all(pipeline: Pipeline, requests: Sequence[ExecutionRequest]) -> list[Future[Execution]]:
    """``requests`` dispatched together where the pipeline batches (:meth:`Pipeline.submit_batch`), else
    one by one; one future per request, in request order."""
    batch = getattr(pipeline, "submit_batch", None)
    return list(batch(requests)) if batch is not None else [pipeline.submit(r) for r in requests]


def execution_id(program: ScenarioProgram, seed: int, campaign_id: str) -> str:
    """hash(canonical program, seed, campaign): the ledger's idempotency key."""
    return hashlib.sha256(f"{program_sha256(program)}|{int(seed)}|{campaign_id}".encode()).hexdigest()[:32]


__all__ = ["Execution", "ExecutionRequest", "InProcessPipeline", "Parsed", "Pipeline", "Reflected", "execution_id",
           "stated_fields", "submit_all"]
