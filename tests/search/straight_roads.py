"""The shrinker's predicate on real paired runs, for tests: a spec laid on the synthetic straight roads
(``program_from_spec_on_straight_roads``) and executed with the V2X source; the verdict is its admission, cached
by (program, seed) as a campaign caches it."""

from __future__ import annotations

from collections.abc import Hashable

from lastv2x.core.spec import ScenarioSpec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.search.shrink import CachedPredicate, Verdict
from services.simulator.execute import SimulatorLimits, run_one


def admission_on_straight_roads() -> CachedPredicate:
    """A fresh cached predicate: ADMITTED when the spec's paired run on straight roads is admitted."""

    def key(s: ScenarioSpec) -> Hashable:
        p = program_from_spec_on_straight_roads(s)
        return p.model_dump_json(), p.seed

    def run(s: ScenarioSpec, _k: Hashable) -> Verdict:
        o, _ = run_one(program_from_spec_on_straight_roads(s), None, SimulatorLimits())
        return Verdict.ADMITTED if o.admitted else Verdict.NOT_ADMITTED

    return CachedPredicate(key, run)
