"""gRPC servicer of the simulator service: parse request -> call core -> build reply.

Every RPC is a method of ``services.simulator.core.SimulatorCore``: Execute /
ExecuteBatch run paired executions (on the builtin backend, or the one a request names:
services/simulator/backends), CoverageMap evaluates the channel over a map.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.program import ScenarioProgram
from lastv2x.rpc.convert import (
    dict_to_message,
    outcome_json_to_proto,
    program_from_proto,
    spec_from_proto,
)
from lastv2x.rpc.server import Registered, call_ended
from lastv2x.v1 import application_pb2, common_pb2, simulator_pb2, simulator_pb2_grpc
from services.simulator.apps.contract import ApplicationUnderTest
from services.simulator.core import RowFailed, SimulatorCore
from services.simulator.coverage_service import RsuPlacement, grid_values
from services.simulator.execute import SimulatorLimits
from services.simulator.paired import PairedOutcome
from services.simulator.trace import trace_id


def outcome_to_proto(outcome: PairedOutcome, trace_uri: str = "") -> common_pb2.PairedOutcome:
    return outcome_json_to_proto(outcome.to_json_bytes(), trace_uri)


def _build(app: ApplicationUnderTest) -> application_pb2.AppBuild:
    b = app.build
    return application_pb2.AppBuild(name=b.name, version=b.version, digest=b.digest)


def _release(app: ApplicationUnderTest) -> None:
    """Close what resolving the request's app opened (a gRPC app's channel is per request)."""
    shutdown = getattr(app, "shutdown", None)
    if callable(shutdown):
        shutdown()


class SimulatorServicer(simulator_pb2_grpc.SimulatorServiceServicer):
    def __init__(self, core: SimulatorCore):
        self._core = core

    def _program(self, request: simulator_pb2.ExecuteRequest, prefix: str = "") -> ScenarioProgram:
        which = request.WhichOneof("scenario")
        if which == "program":
            return program_from_proto(request.program, f"{prefix}program")
        if which == "spec":
            return self._core.program_for(spec_from_proto(request.spec, f"{prefix}spec"))
        raise InvalidArgument(FieldViolation(f"{prefix}scenario", "no program or spec given", "set program or spec"))

    def Execute(self, request: simulator_pb2.ExecuteRequest, context: grpc.ServicerContext
                ) -> simulator_pb2.ExecuteResponse:
        program = self._program(request)
        seed = request.seed if request.HasField("seed") else None
        backend = self._core.backend(request.backend)
        app = self._core.app(request.app)
        start = time.perf_counter()
        try:
            outcome, uri = self._core.execute(program, seed, request.write_trace, app, backend,
                                              stop=lambda: call_ended(context))
        finally:
            _release(app)
        # the trace by its id in the simulator's trace folder: a reply names no server path (issue 41)
        uri = trace_id(uri, self._core.limits.trace_dir)
        return simulator_pb2.ExecuteResponse(outcome=outcome_to_proto(outcome, uri),
                                             wall_time_s=time.perf_counter() - start, app_build=_build(app))

    def ExecuteBatch(self, request: simulator_pb2.ExecuteBatchRequest, context: grpc.ServicerContext
                     ) -> Iterator[simulator_pb2.ExecuteBatchResponse]:
        for i, r in enumerate(request.requests):
            if r.write_trace:  # the batched fast path writes no trace; refused, never silently ignored
                raise InvalidArgument(FieldViolation(f"requests[{i}].write_trace", "ExecuteBatch writes no traces",
                                                     "send the executions whose trace you want to Execute"))
        programs = [self._program(r, f"requests[{i}].") for i, r in enumerate(request.requests)]
        seeds = [r.seed if r.HasField("seed") else None for r in request.requests]
        names = [r.app.strip() for r in request.requests]
        for i, name in enumerate(names):
            if name != names[0]:
                raise InvalidArgument(FieldViolation(f"requests[{i}].app", f"{name!r} differs from requests[0].app "
                                                     f"{names[0]!r}", "one batch runs one application build"))
        backends = [r.backend.strip() for r in request.requests]
        for i, name in enumerate(backends):
            if name != backends[0]:
                raise InvalidArgument(FieldViolation(f"requests[{i}].backend", f"{name!r} differs from "
                                                     f"requests[0].backend {backends[0]!r}",
                                                     "one batch runs on one simulator backend"))
        backend = self._core.backend(backends[0] if backends else "", "requests[0].backend")
        app = self._core.app(names[0] if names else "", "requests[0].app")
        try:  # streamed per chunk of programs; a call whose deadline passed stops between chunks
            start = time.perf_counter()
            for first, outcomes in self._core.execute_batch(programs, seeds, app, stop=lambda: call_ended(context),
                                                            backend=backend):
                share = (time.perf_counter() - start) / max(1, len(outcomes))
                build = _build(app)
                for i, outcome in enumerate(outcomes, first):
                    if isinstance(outcome, RowFailed):  # its worker died: this program fails, not the call
                        yield simulator_pb2.ExecuteBatchResponse(index=i, error=outcome.message, app_build=build)
                        continue
                    yield simulator_pb2.ExecuteBatchResponse(index=i, outcome=outcome_to_proto(outcome),
                                                             wall_time_s=share, app_build=build)
                start = time.perf_counter()
        finally:
            _release(app)

    def CoverageMap(self, request: simulator_pb2.CoverageMapRequest, context: grpc.ServicerContext
                    ) -> simulator_pb2.CoverageMapResponse:
        rsus = []
        for i, r in enumerate(request.rsus):
            if len(r.xy_m) != 2:
                raise InvalidArgument(FieldViolation(f"rsus[{i}].xy_m", "needs [x, y]", "two coordinates in m"))
            rsus.append(RsuPlacement(r.id or f"rsu{i}", (r.xy_m[0], r.xy_m[1]),
                                     r.height_m if r.HasField("height_m") else 5.0, r.junction_id))
        cov, layout = self._core.coverage_map(
            request.map_name, rsus,
            blockage_db_per_m=request.blockage_db_per_m if request.HasField("blockage_db_per_m") else None,
            range_m=request.range_m if request.HasField("range_m") else None,
            cell_m=request.cell_m if request.HasField("cell_m") else 5.0)
        ny, nx = cov.best_rssi_dbm.shape
        reply = simulator_pb2.CoverageMapResponse(
            coverage_fraction=cov.fraction, in_range_fraction=cov.in_range_fraction, width=nx, height=ny,
            origin_x_m=float(cov.origin_xy[0]), origin_y_m=float(cov.origin_xy[1]), cell_m=cov.cell_m,
            road_points=int(cov.points.shape[0]))
        reply.best_rssi_dbm.extend(grid_values(cov).tolist())
        for r in layout:
            dict_to_message({"id": r.id, "xy_m": list(r.xy_m), "height_m": r.height_m,
                             "junction_id": r.junction_id}, reply.rsus.add())
        return reply


def register(server: grpc.Server, limits: SimulatorLimits | None = None) -> Registered:
    """The simulator servicer on ``server``; with ``limits.warm_up`` (``LASTV2X_SIMULATOR_WARM_UP=1``: the
    image and ``lastv2x up`` set it) the core warms up as the server starts, NOT_SERVING until then."""
    core = SimulatorCore(limits)
    simulator_pb2_grpc.add_SimulatorServiceServicer_to_server(SimulatorServicer(core), server)
    return Registered([simulator_pb2.DESCRIPTOR.services_by_name["SimulatorService"].full_name],
                      core.warm_up if core.limits.warm_up else None)


__all__ = ["SimulatorServicer", "outcome_to_proto", "register", "Path"]
