"""Parity of paired execution's two engines and of its ground-truth fast path (one module).

* The scalar engine (services/simulator/scalar.py) is bit-identical to the vectorized one: both
  step the same scenes side by side under the same (randomly changing) ego commands; every field
  of the traffic state and every adjudicator accumulator must match bit for bit (signed zeros and
  NaN payloads included), and paired execution must give the same bytes either way (the one step
  loop of ``run_rollouts`` drives either through ``engines.Engine``).
* The ground-truth fast path (``engines.ground_truth_fast``, read off the step's lists) gives exactly
  ``GroundTruthSource().observe(snapshot)`` on every step of every row, on both engines' frames.
"""

from __future__ import annotations

import numpy as np
import pytest

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application
from lastv2x.core.spec import (
    Agent,
    Behaviour,
    BehaviourKind,
    DriverProfile,
    Ego,
    Maneuver,
    MapQuery,
    Perception,
    ScenarioSpec,
    SignalPlan,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator import paired, scalar
from services.simulator.adjudicate import Adjudicator
from services.simulator.info import GroundTruthSource
from services.simulator.reference import reference_program, reference_spec
from services.simulator.scalar import ScalarAdjudicator, ScalarTraffic, SignalRows
from services.simulator.traffic import EgoControl, Scene, initial_state, step
from services.simulator.v2x.stack import v2x_source_factory

_FIELDS = ("s", "v", "a", "alive", "next_crossing", "bar_s", "bar_group", "sig_stop", "sig_go", "braked_out", "xy",
           "heading", "crossed", "front_prev", "crossed_bar_s", "crossed_group")
_ADJ = ("amber", "stops", "moving", "travel", "bar_time", "closest", "closest_id", "min_agent", "enter", "exit",
        "end_t", "done")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.astype(b.dtype).tobytes() == b.tobytes()


def _specs() -> list[ScenarioSpec]:
    brake = Behaviour(kind=BehaviourKind.HARD_BRAKE, at_time_s=2.0, decel_mps2=8.0)
    out = [reference_spec(a, seed) for a in Application for seed in (0, 3)]
    out += [
        ScenarioSpec(application=Application.RLVW, seed=1, map=MapQuery(busy=True), signal=SignalPlan(offset_s=20.0),
                     agents=(Agent(id="lead", role="lead", gap_m=20.0, profile=DriverProfile.AGGRESSIVE,
                                   behaviour=Behaviour(kind=BehaviourKind.RED_LIGHT_RUNNER)),)),
        ScenarioSpec(application=Application.FCW, seed=2, ego=Ego(profile=DriverProfile.CAUTIOUS, speed_mps=18.0),
                     agents=(Agent(id="lead", role="lead", gap_m=12.0, profile=DriverProfile.AGGRESSIVE,
                                   behaviour=brake),
                             Agent(id="relay", role="relay", gap_m=6.0, profile=DriverProfile.CAUTIOUS))),
        ScenarioSpec(application=Application.IMA, seed=4, map=MapQuery(signalized=False, busy=True), agents=(
            Agent(id="cross", role="cross", arrival_offset_s=-0.5, behaviour=Behaviour(kind=BehaviourKind.YIELD)),)),
        ScenarioSpec(application=Application.LTA, seed=5, ego=Ego(maneuver=Maneuver.LEFT, speed_mps=9.0), agents=(
            Agent(id="opposing", role="opposing", arrival_offset_s=1.0,
                  behaviour=Behaviour(kind=BehaviourKind.NO_YIELD)),)),
        ScenarioSpec(application=Application.GLOSA, seed=6, map=MapQuery(busy=True), signal=SignalPlan(offset_s=5.0),
                     ego=Ego(speed_mps=16.0, start_distance_m=60.0)),
        # drivers without V2X: signals within a sight distance, leaders within a perception range
        ScenarioSpec(application=Application.RLVW, seed=7, map=MapQuery(busy=True), signal=SignalPlan(offset_s=25.0),
                     ego=Ego(equipped=False), perception=Perception(signal_sight_distance_m=30.0, leader_range_m=25.0),
                     agents=(Agent(id="lead", role="lead", gap_m=35.0, equipped=False,
                                   behaviour=Behaviour(kind=BehaviourKind.HARD_BRAKE, at_time_s=4.0)),)),
    ]
    return out


def _controls(rng: np.random.Generator, b: int, rate: float = 1.0) -> tuple[list[bool], list[float], list[float]]:
    """Random ego commands: stop at the bar, advisories (often below the speed: the IIDM branch), brakes."""
    stop = (rng.random(b) < 0.3 * rate).tolist()
    vt = np.where(rng.random(b) < 0.4 * rate, rng.uniform(0.0, 16.0, b), np.nan).tolist()
    brake = np.where(rng.random(b) < 0.2 * rate, rng.uniform(-1.0, 7.0, b), 0.0).tolist()
    return stop, vt, brake


@pytest.mark.parametrize("k", range(len(_specs())))
def test_scalar_step_and_adjudicator_match_numpy_bit_for_bit(k: int) -> None:
    spec = _specs()[k]
    prog = program_from_spec_on_straight_roads(spec)
    other = reference_program(list(Application)[k % 6], seed=k)
    programs = [prog, prog, other] if prog.dt_s == other.dt_s else [prog, prog]
    obey = [APPLICATIONS[p.application].kind is AppKind.CONFLICT for p in programs]
    scene = Scene.from_programs(programs, obey)
    st = initial_state(scene)
    tr = ScalarTraffic(scene, st)
    adj_np, adj_sc = Adjudicator(scene, programs), ScalarAdjudicator(scene, programs)
    sig = SignalRows(scene)
    rng = np.random.default_rng(k)
    b = len(programs)
    rate = (0.0, 0.1, 1.0)[k % 3]  # some runs nominal: the ego runs lights and leaves its route
    ctl = _controls(rng, b, rate)
    for i in range(620):
        if i % 15 == 0:
            ctl = _controls(rng, b, rate)
        phase, ttc, ttg = scene.signals.state(st.t_s)
        p_l, c_l, g_l = sig.state(tr.t)
        assert phase.tolist() == p_l and _same(ttc, np.array(c_l)) and _same(ttg, np.array(g_l))
        active = st.alive[:, 0] & (i < 600)  # as paired execution: the rows running into this step
        st = step(scene, st, EgoControl(np.array(ctl[0]), np.array(ctl[1]), np.array(ctl[2])), phase)
        tr.step(*ctl, p_l)
        adj_np.observe(st, active)
        adj_sc.observe_scalar(tr, active.tolist())
        got = tr.state()
        for f in _FIELDS:
            assert _same(getattr(got, f), getattr(st, f)), (i, f)
        assert got.step == st.step and got.t_s == st.t_s
        assert _same(np.array(tr.hist_s).reshape(st.hist_s.shape), st.hist_s)
        assert _same(np.array(tr.hist_v).reshape(st.hist_v.shape), st.hist_v)
    adj_sc.sync()
    for f in _ADJ:
        assert _same(getattr(adj_sc, f), getattr(adj_np, f)), f
    for bi in range(b):
        assert adj_sc.outcome(bi) == adj_np.outcome(bi)


def test_scalar_step_matches_numpy_with_respawn_and_many_vehicles() -> None:
    prog = program_from_spec_on_straight_roads(ScenarioSpec(
        application=Application.RLVW, seed=9, map=MapQuery(busy=True), signal=SignalPlan(offset_s=10.0),
        ego=Ego(start_distance_m=40.0)))
    scene = Scene.from_programs([prog, prog], [False, True], respawn=True)
    st = initial_state(scene)
    tr = ScalarTraffic(scene, st)
    rng = np.random.default_rng(1)
    for i in range(1500):
        ctl = _controls(rng, 2) if i % 20 == 0 else ctl  # noqa: F821
        phase = scene.signals.state(st.t_s)[0]
        st = step(scene, st, EgoControl(np.array(ctl[0]), np.array(ctl[1]), np.array(ctl[2])), phase)
        tr.step(*ctl, phase.tolist())
    got = tr.state()
    for f in _FIELDS:
        assert _same(getattr(got, f), getattr(st, f)), f


@pytest.mark.parametrize("app", list(Application))
def test_paired_bytes_do_not_depend_on_the_engine(app: Application, monkeypatch: pytest.MonkeyPatch) -> None:
    prog = reference_program(app, seed=2)
    fac = v2x_source_factory()
    fast = [paired.execute_paired(prog, s, md_source_factory=f).to_json_bytes()
            for s in (0, 1) for f in (paired.ground_truth_factory, fac)]
    monkeypatch.setattr(paired, "use_scalar", lambda scene: False)
    slow = [paired.execute_paired(prog, s, md_source_factory=f).to_json_bytes()
            for s in (0, 1) for f in (paired.ground_truth_factory, fac)]
    assert fast == slow


def test_scalar_engine_is_used_for_paired_sizes_only() -> None:
    for app in Application:  # a paired execution (two rollouts) of every reference program: scalar
        prog = reference_program(app)
        assert scalar.use_scalar(Scene.from_programs([prog, prog], [True, True])), app
    prog = reference_program(Application.EEBL)
    n = len(prog.vehicles)
    # the switch sits exactly at SCALAR_MAX_VEHICLES rows x vehicles: the largest batch at or
    # under it runs scalar, the next one numpy
    b = scalar.SCALAR_MAX_VEHICLES // n
    assert b >= 2 and scalar.use_scalar(Scene.from_programs([prog] * b, [True] * b))
    assert not scalar.use_scalar(Scene.from_programs([prog] * (b + 1), [True] * (b + 1)))


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_ground_truth_fast_path_is_ground_truth_source_observe(vector: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fast-path belief equals the source's own, built from the same frame's snapshot."""
    checked: list[int] = []
    fast = paired.ground_truth_fast

    def both(lists, fr, b, j, t_s, others, group_ids, plan, cache):  # type: ignore[no-untyped-def]
        got = fast(lists, fr, b, j, t_s, others, group_ids, plan, cache)
        src = GroundTruthSource()
        src.reset(None, 0)  # type: ignore[arg-type]
        want = src.observe(fr.snapshot(b, len(others) + 1, paired.GT, ((), np.zeros((0, 2)), np.zeros(0))))
        assert got == want and repr(got) == repr(want), (b, t_s)
        checked.append(b)
        return got

    monkeypatch.setattr(paired, "ground_truth_fast", both)  # the name run_rollouts looks up
    if vector:
        monkeypatch.setattr(paired, "use_scalar", lambda scene: False)
    programs = [program_from_spec_on_straight_roads(s) for s in _specs()[::3]]
    programs = [p for p in programs if p.dt_s == programs[0].dt_s]
    paired.execute_batch(programs)
    assert len(set(checked)) == 2 * len(programs) and len(checked) > 1000


@pytest.mark.parametrize(("n", "seed"), [(20, 0), (48, 1)])
def test_scalar_engine_matches_numpy_on_the_race_grid(n: int, seed: int) -> None:
    """The traffic race (bench/bench_traffic_race.py) runs the scalar engine up to SCALAR_MAX_VEHICLES, as
    paired execution does: on its signalized grid (routes through four junctions, 256 signal groups,
    vehicles re-entering at their routes' starts) both engines agree bit for bit, step after step,
    with the phases of the block clock the race feeds them."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import race_grid

    from services.simulator.engines import SignalClock

    prog, _ = race_grid.grid_program(n, seed)
    scene = Scene.from_programs([prog], [True], respawn=True)
    assert scalar.use_scalar(scene)
    st = initial_state(scene)
    tr = ScalarTraffic(scene, st)
    clock = SignalClock(scene)
    ctl = EgoControl.nominal(1)
    respawned = 0
    for _ in range(900):
        phase = clock.state(st.step)[0]
        assert np.array_equal(phase, scene.signals.phase_at(st.t_s))
        before = st.s.copy()
        st = step(scene, st, ctl, phase)
        tr.step([False], [float("nan")], [0.0], phase.tolist())
        respawned += int(np.count_nonzero(st.s < before))
        got = tr.state()
        for f in _FIELDS:
            assert _same(getattr(got, f), getattr(st, f)), f
    assert respawned > 0  # the run reached routes' ends and put vehicles back
