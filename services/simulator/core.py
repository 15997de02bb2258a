"""The simulator service's pure core: what the servicer calls (no grpc here).

``SimulatorCore(limits)`` holds the service's settings (``SimulatorLimits``, read once in
``main``); its methods are the three RPCs:

* ``program_for(spec) -> ScenarioProgram`` — a bare spec laid on the synthetic straight
  crossing (``lastv2x.core.synthetic``), for an Execute request that sends a spec;
* ``app(spec) -> ApplicationUnderTest`` — the application under test a request names
  (``services.simulator.apps.plugin``: reference, ``grpc://host:port``, a ``lastv2x.apps`` entry point);
* ``execute(program, seed=None, write_trace=False, app=None) -> (PairedOutcome, trace_uri)``
  (Execute: caps, map references and faults validated, then the paired run against ``app``;
  ``services.simulator.execute``);
* ``execute_batch(programs, seeds, app=None, stop=None) -> Iterator[(first index, outcomes)]``
  (ExecuteBatch: every request validated first, then run ``BATCH_CHUNK`` programs at a time
  (a smaller batch: one equal share per worker, ``execute.pool_chunks``), one vectorized batch each, spread over ``limits.worker_count()`` worker processes
  (``lastv2x.core.workers``; the reference apps only: an application under test is one object
  of this process and runs here) and yielded in completion order; a chunk whose worker died
  yields a :class:`RowFailed` per program instead of outcomes; ``stop()`` is asked between
  chunks, and a true answer raises ``Cancelled``: a caller whose deadline passed stops the
  work, not only the reply);
* ``coverage_map(map_name, rsus, ...) -> (CoverageMap, RSU layout)`` (CoverageMap;
  ``services.simulator.coverage_service``).

``warm_up()`` pays what the first request would otherwise pay (imports, the road maps' and the V2X
stack's first-call caches, starting the worker processes) in this process and in every ExecuteBatch
worker: the service runs it at start, before its health check says SERVING.

Bad input raises ``InvalidArgument`` naming the field; an infeasible request
``FailedPrecondition``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from lastv2x.core.errors import Cancelled, ErrorCollector, FieldViolation, InvalidArgument
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec
from lastv2x.core.workers import TaskError, WorkerDied, shared_pool
from services.simulator.apps.contract import ApplicationUnderTest, ReferenceApp
from services.simulator.backends.base import BUILTIN
from services.simulator.coverage_service import RsuPlacement, coverage_for
from services.simulator.execute import (
    SimulatorLimits,
    app_under_test,
    pool_chunks,
    program_for,
    resolve_backend,
    road_map_for,
    run_batch,
    run_one,
    validate_program,
    validate_seed,
)
from services.simulator.paired import PairedOutcome
from services.simulator.v2x.coverage import CoverageMap

BATCH_CHUNK = 8  # ExecuteBatch programs per vectorized run; the call's deadline is checked between runs

CELL_RANGE_M = (0.5, 100.0)  # CoverageMap grid cell, m
MAX_RANGE_M = 10_000.0  # CoverageMap range override, m
MAX_BLOCKAGE_DB_PER_M = 100.0  # CoverageMap blockage slope override, dB/m
MAX_RSU_HEIGHT_M = 500.0  # RSU antenna height above ground, m
MAX_COORD_M = 1e6  # |x|, |y| of an RSU, m
MAX_NAME_BYTES = 255  # RSU id / junction id, UTF-8 bytes


@dataclass(frozen=True)
class RowFailed:
    """One program of an ExecuteBatch that did not run to an outcome (its worker process died)."""

    message: str


def _run_chunk(programs: Sequence[ScenarioProgram], seeds: Sequence[int | None], limits: SimulatorLimits
               ) -> list[PairedOutcome]:
    """One chunk of an ExecuteBatch in a worker process (the reference applications)."""
    return run_batch(programs, seeds, limits)


def _warm_chunk(limits: SimulatorLimits) -> float:
    """The six reference programs as one batch (what a first request pays: imports, caches); its CPU s."""
    from lastv2x.core.catalogue import Application
    from services.simulator.reference import reference_program

    start = time.process_time()
    run_batch([reference_program(app, seed=0) for app in Application], [None] * len(Application), limits)
    return time.process_time() - start


class _Coalescer:
    """Concurrent ``Execute`` calls run as one vectorized batch.

    The simulator is CPU-bound Python: K calls in flight on one replica (a campaign's fan-out)
    would only take turns on the GIL, each slower than alone. Instead one caller, the lead, runs
    every call that queued while the last batch ran as one ``run_batch`` (per program the same
    outcome bytes as a single run); the others wait for their result. A batch the limits refuse is
    re-run call by call, so each caller gets its own error with its own field paths.

    Deadlines (issue 41): the lead runs batches only until its own call has its result, then hands
    the queue to a waiting caller, so no call's handler serves other callers' work past its own
    end; a call whose ``stop()`` says it ended (deadline passed, client gone) leaves at once with
    ``Cancelled``, its program dropped from the queue if it has not started; a batch is formed only
    of calls still wanted.
    """

    def __init__(self, limits: SimulatorLimits, poll_s: float = 0.02):
        self._limits = limits
        self._poll_s = poll_s
        self._lock = threading.Condition()
        self._queue: list[tuple[ScenarioProgram, int | None, ApplicationUnderTest | None,
                                Future[PairedOutcome], Callable[[], bool] | None]] = []
        self._busy = False

    def run(self, program: ScenarioProgram, seed: int | None, app: ApplicationUnderTest | None,
            stop: Callable[[], bool] | None = None) -> PairedOutcome:
        future: Future[PairedOutcome] = Future()
        item = (program, seed, app, future, stop)
        with self._lock:
            self._queue.append(item)
        while True:
            with self._lock:
                while not future.done() and self._busy:
                    if stop is not None and stop():
                        self._abandon(item)
                    self._lock.wait(self._poll_s)
                if future.done():
                    break
                if stop is not None and stop():
                    self._abandon(item)
                # lead: the calls still wanted, up to the batch cap, in arrival order (this one among them)
                batch: list = []
                for queued in self._queue:
                    if queued[4] is not None and queued is not item and queued[4]():
                        queued[3].set_exception(Cancelled("the call ended before its program ran"))
                    else:
                        batch.append(queued)
                batch, self._queue = batch[: self._limits.max_batch], batch[self._limits.max_batch:]
                self._busy = True
            try:
                self._run([b[:4] for b in batch])
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()
        return future.result()

    def _abandon(self, item: tuple) -> None:
        """(under the lock) The caller's call ended: its program leaves the queue if it is still there."""
        if item in self._queue:
            self._queue.remove(item)
        raise Cancelled("the call ended while its program waited in the simulator's queue")

    def _run(self, batch: list[tuple[ScenarioProgram, int | None, ApplicationUnderTest | None,
                                     Future[PairedOutcome]]]) -> None:
        by_app: dict[int, list[tuple[ScenarioProgram, int | None, ApplicationUnderTest | None,
                                     Future[PairedOutcome]]]] = {}
        for item in batch:
            by_app.setdefault(id(item[2]), []).append(item)
        for rows in by_app.values():
            if len(rows) > 1:
                try:
                    outs = run_batch([r[0] for r in rows], [r[1] for r in rows], self._limits, rows[0][2])
                except InvalidArgument:
                    pass  # someone's request is bad: run one by one so each gets its own error
                except Exception as exc:  # noqa: BLE001 - fail these calls, keep serving
                    for r in rows:
                        r[3].set_exception(exc)
                    continue
                else:
                    for r, o in zip(rows, outs, strict=True):
                        r[3].set_result(o)
                    continue
            for program, seed, app, future in rows:
                try:
                    future.set_result(run_one(program, seed, self._limits, False, app)[0])
                except Exception as exc:  # noqa: BLE001 - the caller re-raises it
                    future.set_exception(exc)


class SimulatorCore:
    """Paired execution and channel coverage behind the service's settings."""

    def __init__(self, limits: SimulatorLimits | None = None):
        self.limits = limits or SimulatorLimits()
        self._coalescer = _Coalescer(self.limits)

    def program_for(self, spec: ScenarioSpec) -> ScenarioProgram:
        return program_for(spec)

    def warm_up(self) -> dict[str, Any]:
        """Run the reference programs once here and once in each ExecuteBatch worker (started now, not by
        the first batch); what it took: wall s, this process's CPU s, each worker's CPU s (a worker that
        failed: its error text)."""
        start = time.perf_counter()
        here = _warm_chunk(self.limits)
        workers: list[Any] = []
        if self.limits.worker_count() > 1:
            workers = [round(r, 3) if isinstance(r, float) else str(r.message() if isinstance(r, WorkerDied) else r.text)
                       for r in shared_pool(self.limits.worker_count()).run_on_each(_warm_chunk, (self.limits,))]
        return {"wall_s": round(time.perf_counter() - start, 3), "process_cpu_s": round(here, 3),
                "worker_cpu_s": workers}

    def app(self, spec: str | None, field: str = "app") -> ApplicationUnderTest:
        """The application under test a request names ("" = the reference apps); see
        ``services.simulator.apps.plugin``. An app that does not answer is Unavailable, another
        contract version FailedPrecondition, a name that resolves to nothing InvalidArgument."""
        return app_under_test(spec, self.limits, field)

    def backend(self, name: str, field: str = "backend") -> str:
        """The backend a request runs on (its name, else the service's default); unknown: refused."""
        return resolve_backend(name, self.limits.backend, field)

    def execute(self, program: ScenarioProgram, seed: int | None = None, write_trace: bool = False,
                app: ApplicationUnderTest | None = None, backend: str = "",
                stop: Callable[[], bool] | None = None) -> tuple[PairedOutcome, str]:
        """One paired execution; calls that arrive together run as one batch (a trace, or a run on
        another backend than the builtin one, runs alone). ``stop()`` true: the caller is gone, so a
        program still queued is not run and the call raises ``Cancelled``."""
        backend = self.backend(backend)
        if write_trace or backend != BUILTIN:
            return run_one(program, seed, self.limits, write_trace, app, backend)
        return self._coalescer.run(program, seed, app, stop), ""

    def execute_batch(self, programs: Sequence[ScenarioProgram], seeds: Sequence[int | None],
                      app: ApplicationUnderTest | None = None, stop: Callable[[], bool] | None = None,
                      chunk: int = BATCH_CHUNK, backend: str = "") -> Iterator[tuple[int, list[PairedOutcome | RowFailed]]]:
        if len(programs) > self.limits.max_batch:  # the whole batch is checked before any program runs
            raise InvalidArgument([], f"batch of {len(programs)} exceeds the cap of {self.limits.max_batch}")
        for i, s in enumerate(seeds):
            validate_seed(s, f"requests[{i}].seed")
        for i, p in enumerate(programs):
            validate_program(p, self.limits, f"requests[{i}].program")
        backend = self.backend(backend, "requests[0].backend")
        if backend != BUILTIN:  # another simulator runs one rollout at a time: program by program
            for i, (p, s) in enumerate(zip(programs, seeds, strict=True)):
                if stop is not None and stop():
                    raise Cancelled(f"ExecuteBatch stopped before program {i} of {len(programs)}: the call ended")
                yield i, [run_one(p, s, self.limits, False, app, backend)[0]]
            return
        pooled = app is None or type(app) is ReferenceApp
        firsts = pool_chunks(len(programs), self.limits.worker_count() if pooled else 1, max(1, chunk))
        ends = [*firsts[1:], len(programs)] if firsts else []
        workers = min(self.limits.worker_count(), len(firsts))
        if workers > 1 and pooled:
            yield from self._pooled(programs, seeds, firsts, ends, workers, stop)
            return
        for first, end in zip(firsts, ends, strict=True):
            if stop is not None and stop():
                raise Cancelled(f"ExecuteBatch stopped before program {first} of {len(programs)}: the call ended")
            yield first, run_batch(programs[first:end], seeds[first:end], self.limits, app)

    def _pooled(self, programs: Sequence[ScenarioProgram], seeds: Sequence[int | None], firsts: list[int],
                ends: list[int], workers: int, stop: Callable[[], bool] | None
                ) -> Iterator[tuple[int, list[PairedOutcome | RowFailed]]]:
        """The chunks ``programs[first:end]`` on the shared worker pool, in completion order (each chunk's
        outcomes are the bytes the in-process run gives: the same ``run_batch`` on the same programs)."""
        tasks = [(list(programs[f:e]), list(seeds[f:e]), self.limits) for f, e in zip(firsts, ends, strict=True)]
        done = 0
        for ci, result in shared_pool(workers).imap_unordered(_run_chunk, tasks, stop):
            first, n = firsts[ci], len(tasks[ci][0])
            done += 1
            if isinstance(result, WorkerDied):
                yield first, [RowFailed(f"program {i}: not run: {result.message()}") for i in range(first, first + n)]
            elif isinstance(result, TaskError):  # what run_batch raises here it raises in-process too
                raise result.error if result.error is not None else RuntimeError(result.text)
            else:
                yield first, result
        if done < len(tasks):
            raise Cancelled(f"ExecuteBatch stopped with {len(tasks) - done} of {len(tasks)} chunks not run: "
                            "the call ended")

    def coverage_map(self, map_name: str, rsus: Sequence[RsuPlacement] = (), *,
                     blockage_db_per_m: float | None = None, range_m: float | None = None,
                     cell_m: float = 5.0) -> tuple[CoverageMap, list[RsuPlacement]]:
        if not map_name:
            raise InvalidArgument(FieldViolation("map_name", "empty", "name a built-in map or one under "
                                                 "LASTV2X_MAP_PATHS"))
        errors = ErrorCollector()
        lo, hi = CELL_RANGE_M
        if not (lo <= cell_m <= hi):
            errors.add("cell_m", f"{cell_m} m is outside [{lo:g}, {hi:g}]", "use 1-10 m")
        if range_m is not None and not (0.0 < range_m <= MAX_RANGE_M):
            errors.add("range_m", f"{range_m} m is outside (0, {MAX_RANGE_M:g}]", "a V2X range is 100-1000 m")
        if blockage_db_per_m is not None and not (0.0 <= blockage_db_per_m <= MAX_BLOCKAGE_DB_PER_M):
            errors.add("blockage_db_per_m", f"{blockage_db_per_m} dB/m is outside [0, {MAX_BLOCKAGE_DB_PER_M:g}]",
                       "a blockage slope is 0-2 dB/m")
        if len(rsus) > self.limits.max_rsus:
            errors.add("rsus", f"{len(rsus)} RSUs exceed the cap of {self.limits.max_rsus}",
                       "place fewer RSUs or raise LASTV2X_SIMULATOR_MAX_RSUS")
        for i, r in enumerate(rsus[: self.limits.max_rsus]):
            if not all(math.isfinite(v) and abs(v) <= MAX_COORD_M for v in r.xy_m):
                errors.add(f"rsus[{i}].xy_m", f"needs finite coordinates within +-{MAX_COORD_M:g} m",
                           "map coordinates in m")
            if not (0.0 <= r.height_m <= MAX_RSU_HEIGHT_M):
                errors.add(f"rsus[{i}].height_m", f"{r.height_m} m is outside [0, {MAX_RSU_HEIGHT_M:g}]",
                           "an RSU mast is 3-15 m above ground")
            for name, value in (("id", r.id), ("junction_id", r.junction_id)):
                if len(value.encode("utf-8")) > MAX_NAME_BYTES:
                    errors.add(f"rsus[{i}].{name}", f"longer than {MAX_NAME_BYTES} bytes", "use a short name")
        errors.raise_if_any()
        road_map = road_map_for(map_name, self.limits)
        if road_map is None:
            raise InvalidArgument(FieldViolation("map_name", f"{map_name} has no roads to cover",
                                                 "name a built-in map or one under LASTV2X_MAP_PATHS"))
        return coverage_for(map_name, rsus, blockage_db_per_m=blockage_db_per_m, range_m=range_m, cell_m=cell_m,
                            road_map=road_map)


__all__ = ["CELL_RANGE_M", "RowFailed", "SimulatorCore"]
