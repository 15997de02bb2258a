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
* ``execute_batch(programs, seeds, app=None) -> list[PairedOutcome]`` (ExecuteBatch);
* ``coverage_map(map_name, rsus, ...) -> (CoverageMap, RSU layout)`` (CoverageMap;
  ``services.simulator.coverage_service``).

Bad input raises ``InvalidArgument`` naming the field; an infeasible request
``FailedPrecondition``.
"""

from __future__ import annotations

from collections.abc import Sequence

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec
from services.simulator.apps.contract import ApplicationUnderTest
from services.simulator.coverage_service import RsuPlacement, coverage_for
from services.simulator.execute import (
    SimulatorLimits,
    app_under_test,
    program_for,
    run_batch,
    run_one,
)
from services.simulator.paired import PairedOutcome
from services.simulator.v2x.coverage import CoverageMap

CELL_RANGE_M = (0.5, 100.0)  # CoverageMap grid cell, m


class SimulatorCore:
    """Paired execution and channel coverage behind the service's settings."""

    def __init__(self, limits: SimulatorLimits | None = None):
        self.limits = limits or SimulatorLimits()

    def program_for(self, spec: ScenarioSpec) -> ScenarioProgram:
        return program_for(spec)

    def app(self, spec: str | None, field: str = "app") -> ApplicationUnderTest:
        """The application under test a request names ("" = the reference apps); see
        ``services.simulator.apps.plugin``. An app that does not answer is Unavailable, another
        contract version FailedPrecondition, a name that resolves to nothing InvalidArgument."""
        return app_under_test(spec, self.limits, field)

    def execute(self, program: ScenarioProgram, seed: int | None = None, write_trace: bool = False,
                app: ApplicationUnderTest | None = None) -> tuple[PairedOutcome, str]:
        return run_one(program, seed, self.limits, write_trace, app)

    def execute_batch(self, programs: Sequence[ScenarioProgram], seeds: Sequence[int | None],
                      app: ApplicationUnderTest | None = None) -> list[PairedOutcome]:
        return run_batch(programs, seeds, self.limits, app)

    def coverage_map(self, map_name: str, rsus: Sequence[RsuPlacement] = (), *,
                     blockage_db_per_m: float | None = None, range_m: float | None = None,
                     cell_m: float = 5.0) -> tuple[CoverageMap, list[RsuPlacement]]:
        if not map_name:
            raise InvalidArgument(FieldViolation("map_name", "empty", "name a built-in map or an .xodr path"))
        lo, hi = CELL_RANGE_M
        if not (lo <= cell_m <= hi):
            raise InvalidArgument(FieldViolation("cell_m", f"{cell_m} m is outside [{lo:g}, {hi:g}]", "use 1-10 m"))
        return coverage_for(map_name, rsus, blockage_db_per_m=blockage_db_per_m, range_m=range_m, cell_m=cell_m)


__all__ = ["CELL_RANGE_M", "SimulatorCore"]
