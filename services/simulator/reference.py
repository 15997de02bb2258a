"""Reference scenarios: one 30 s spec per application on the synthetic crossing.

Used by the tests (each must run and its ground-truth rollout must be safe) and by
``bench/bench_simulator.py``. Each is a *healthy* scene (no faults); the tests add
faults or test doubles on top.
"""

from __future__ import annotations

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


def reference_program(app: Application, seed: int = 0) -> ScenarioProgram:
    return program_from_spec_on_straight_roads(reference_spec(app, seed))


__all__ = ["AMBER_BEFORE_EPOCH", "reference_program", "reference_spec"]
