"""Reference scenarios: one 30 s spec per application on the synthetic crossing.

Used by the tests (each must run and its ground-truth rollout must be safe) and by
``bench/bench_simulator.py``. Each is a *healthy* scene (no faults); the tests add
faults or test doubles on top.
"""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import Application
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import (
    V2X,
    Agent,
    Behaviour,
    BehaviourKind,
    Ego,
    Maneuver,
    MapQuery,
    ScenarioSpec,
    SignalPlan,
    parse_spec,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads

AMBER_BEFORE_EPOCH = SignalPlan(offset_s=22.0)  # amber onset at t = 5 s, the ego's epoch at ~5.6 s


def reference_spec(app: Application, seed: int = 0) -> ScenarioSpec:
    brake = Behaviour(kind=BehaviourKind.HARD_BRAKE, at_time_s=3.0, decel_mps2=6.0)
    specs = {
        Application.RLVW: ScenarioSpec(application=app, seed=seed, signal=AMBER_BEFORE_EPOCH),
        Application.GLOSA: ScenarioSpec(application=app, seed=seed, signal=SignalPlan(offset_s=48.0)),
        Application.FCW: ScenarioSpec(application=app, seed=seed, agents=(
            Agent(id="lead", role="lead", gap_m=15.0, behaviour=brake),)),
        Application.EEBL: ScenarioSpec(application=app, seed=seed, v2x=V2X(eebl_rebroadcast=True), agents=(
            Agent(id="lead", role="lead", gap_m=45.0, behaviour=brake),
            Agent(id="relay", role="relay", gap_m=22.0))),
        Application.IMA: ScenarioSpec(application=app, seed=seed, map=MapQuery(signalized=False), agents=(
            Agent(id="cross", role="cross", arrival_offset_s=0.0),)),
        Application.LTA: ScenarioSpec(application=app, seed=seed, ego=Ego(maneuver=Maneuver.LEFT), agents=(
            Agent(id="opposing", role="opposing", arrival_offset_s=0.0),)),
    }
    return specs[app]


# One fault per application that its reference scene can feel: the search benchmarks' seeds and the
# mutant robustness sweep's (lastv2x_app.mutant_fuzz) starting points.
REFERENCE_FAULTS: dict[Application, tuple[dict[str, Any], ...]] = {
    Application.IMA: ({"name": "drop_cross_bsm", "operator": "drop", "stream": "BSM", "sender": "cross",
                       "anchor": {"kind": "ego_event", "event": "decision_epoch", "offset_s": -2.0},
                       "duration_s": 3.0},),
    Application.RLVW: ({"name": "countdown", "operator": "spat_countdown_offset", "stream": "SPAT",
                        "magnitude": 2.0, "duration_s": 4.0},),
    Application.FCW: ({"name": "delay_lead", "operator": "delay", "stream": "BSM", "magnitude": 0.3},),
    Application.LTA: ({"name": "delay_opp", "operator": "delay", "stream": "BSM", "magnitude": 0.2},),
    Application.GLOSA: ({"name": "countdown", "operator": "spat_countdown_offset", "stream": "SPAT",
                         "magnitude": 2.0},),
    Application.EEBL: ({"name": "drop_eebl", "operator": "drop", "stream": "EEBL", "probability": 0.3},),
}


def faulted_reference_spec(app: Application, seed: int = 0) -> ScenarioSpec:
    """The reference scene with its application's fault of ``REFERENCE_FAULTS``."""
    d = reference_spec(app, seed=seed).model_dump(mode="json")
    d["faults"] = [dict(f) for f in REFERENCE_FAULTS[app]]
    return parse_spec(d)


def reference_program(app: Application, seed: int = 0) -> ScenarioProgram:
    return program_from_spec_on_straight_roads(reference_spec(app, seed))


__all__ = ["AMBER_BEFORE_EPOCH", "REFERENCE_FAULTS", "faulted_reference_spec", "reference_program", "reference_spec"]
