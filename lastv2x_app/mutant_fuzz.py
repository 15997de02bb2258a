"""The search's own mutants through the verifier, grounding and the simulator's request validation.

    make mutant-fuzz     (python -m lastv2x_app.mutant_fuzz --mutants 10000 --seed 0)

A campaign feeds every child the search draws (``services.search.mutate.mutate``) to the verifier
gate, to grounding and to the simulator; any exception that is not one of the platform's typed
errors (``lastv2x.core.errors.LastV2XError``: InvalidArgument, FailedPrecondition, ...) would be
a crash of that candidate. This sweep draws mutants, seeded, from every application's reference
scene (with its reference fault) on every built-in map and with every extra role in the roster
(a cross vehicle beside an LTA's opposing one, ...), grounds them on the built-in catalogue, and
counts typed refusals against untyped exceptions (the bar: 0).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import LastV2XError
from lastv2x.core.spec import ScenarioSpec, parse_spec

EXTRA_ROLES: dict[str, dict[str, Any]] = {  # one agent per role, as a parsed intent may add it
    "cross": {"id": "cross_x", "role": "cross", "arrival_offset_s": 0.5},
    "opposing": {"id": "opposing_x", "role": "opposing", "arrival_offset_s": 0.5},
    "lead": {"id": "lead_x", "role": "lead", "gap_m": 30.0},
    "background": {"id": "bg_x", "role": "background"},
}


def base_specs() -> list[ScenarioSpec]:
    """Every application's reference scene with its fault: on any map, on each built-in map by name, and
    with each extra role added to its roster (the agent ids of the roster stay the mutator's to keep)."""
    from services.simulator.maps.builtin import builtin_map_names
    from services.simulator.reference import faulted_reference_spec

    out: list[ScenarioSpec] = []
    for app in Application:
        base = faulted_reference_spec(app).model_dump(mode="json")
        for town in (None, *builtin_map_names()):
            out.append(parse_spec({**base, "map": {**base["map"], "town": town}}))
        for agent in EXTRA_ROLES.values():
            out.append(parse_spec({**base, "agents": [*base["agents"], agent]}))
    return out


@dataclass
class Crash:
    stage: str
    error: str
    spec_json: str
    trace: str


@dataclass
class SweepReport:
    mutants: int = 0
    no_mutant: int = 0  # draws where no operator applied
    typed: Counter[str] = field(default_factory=Counter)  # "stage: ErrorType" -> count
    passed: Counter[str] = field(default_factory=Counter)  # stage -> mutants it accepted
    crashes: list[Crash] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> Iterator[str]:
        yield (f"{self.mutants} mutants ({self.no_mutant} draws with no applicable operator) in {self.seconds:.1f} s: "
               f"{len(self.crashes)} untyped exception(s)")
        for stage, n in sorted(self.passed.items()):
            yield f"  {stage}: {n} accepted"
        for key, n in sorted(self.typed.items()):
            yield f"  {key}: {n} typed refusal(s)"
        for c in self.crashes[:10]:
            yield f"  CRASH at {c.stage}: {c.error}\n    spec: {c.spec_json[:400]}\n{c.trace}"


def sweep(n_mutants: int, seed: int, grounders: dict[str, Callable[[ScenarioSpec], Any]], *,
          simulate: Callable[[Any], Any] | None = None, max_operators: int = 2) -> SweepReport:
    """Draw ``n_mutants`` mutants (round-robin over ``base_specs``, one RNG seeded by ``seed``) and put each
    through verify, then each of ``grounders`` (name -> ground), then ``simulate`` (the simulator's request
    validation) of every program grounded."""
    from lastv2x.core.verifier import verify
    from services.search.mutate import mutate

    rng = np.random.default_rng(seed)
    bases = base_specs()
    report = SweepReport()
    start = time.perf_counter()
    i = 0
    while report.mutants < n_mutants:
        base = bases[i % len(bases)]
        i += 1
        out = mutate(base, rng, max_operators)
        if out is None:
            report.no_mutant += 1
            if report.no_mutant > 10 * n_mutants:
                break
            continue
        spec = out[0]
        report.mutants += 1
        if not _stage(report, "verify", verify, spec, spec):
            continue
        for name, ground in grounders.items():
            program = _stage(report, f"ground ({name} planner)", ground, spec, spec)
            if program is not None and simulate is not None:
                _stage(report, "simulator", simulate, program, spec)
    report.seconds = time.perf_counter() - start
    return report


def _stage(report: SweepReport, stage: str, fn: Callable[[Any], Any], value: Any, spec: ScenarioSpec) -> Any:
    """``fn(value)``, counted: its result, or None after a typed refusal or a crash."""
    try:
        result = fn(value)
    except LastV2XError as exc:
        report.typed[f"{stage}: {type(exc).__name__}"] += 1
        return None
    except Exception as exc:  # noqa: BLE001 - what this sweep exists to find
        report.crashes.append(Crash(stage, f"{type(exc).__name__}: {exc}", spec.model_dump_json(),
                                    traceback.format_exc(limit=8)))
        return None
    report.passed[stage] += 1
    return result if result is not None else True


def _planner_rejects(spec: ScenarioSpec, candidates: Any) -> Any:
    """A scene planner whose every answer fails validation: grounding falls back to the built-in planner."""
    from services.grounding.selection import PlanRejected

    raise PlanRejected(["mutant sweep: the built-in planner decides"])


def builtin_grounders(cache_dir: Any) -> tuple[dict[str, Callable[[ScenarioSpec], Any]], Callable[[Any], Any]]:
    """Grounding on the built-in catalogue (as ``make run``) with the default scene planner and with the
    built-in fallback alone, and the simulator's request validation."""
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.simulator.execute import SimulatorLimits, validate_program

    default = GroundingCore(GroundingConfig(cache_dir=cache_dir))
    fallback = GroundingCore(GroundingConfig(cache_dir=cache_dir), planner=_planner_rejects)
    limits = SimulatorLimits.from_env()
    return {"default": default.ground, "built-in": fallback.ground}, lambda program: validate_program(program, limits)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="lastv2x-mutant-fuzz-") as tmp:
        grounders, simulate = builtin_grounders(Path(tmp))
        report = sweep(args.mutants, args.seed, grounders, simulate=simulate)
    for line in report.lines():
        print(line)
    return 1 if report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
