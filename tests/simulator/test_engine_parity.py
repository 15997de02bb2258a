"""The compiled engine (services/simulator/kernels): one body of the traffic, signal and adjudication rules.

* **Compiled = interpreted, bit for bit.** Every kernel's numba machine code and its Python function (what
  ``LASTV2X_SIMULATOR_JIT=0`` runs) step the same scenes under the same randomly changing ego commands; every
  field of the traffic state, every adjudicator accumulator and every outcome must match bit for bit
  (signed zeros and NaN payloads included).
* **An outcome does not depend on its batch**: a program's paired outcome alone and inside a batch of others
  (any row) is the same bytes.
* **The ground-truth fast path** (``engines.ground_truth_fast``, read off the step's lists) gives exactly
  ``GroundTruthSource().observe(snapshot)`` on every step of every row.
"""

from __future__ import annotations

import numpy as np
import pytest

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application
from lastv2x.core.spec import (
    Agent,
    Behaviour,
    BehaviourKind,
    ChannelModel,
    DriverProfile,
    Ego,
    Maneuver,
    MapQuery,
    Perception,
    ScenarioSpec,
    SignalPlan,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator import kernels, paired
from services.simulator.adjudicate import Adjudicator
from services.simulator.info import GroundTruthSource
from services.simulator.kernels import adjudicate as k_adjudicate
from services.simulator.kernels import signals as k_signals
from services.simulator.kernels import traffic as k_traffic
from services.simulator.reference import reference_program, reference_spec
from services.simulator.traffic import EgoControl, Scene, initial_state, step

_FIELDS = ("s", "v", "a", "alive", "next_crossing", "bar_s", "bar_group", "sig_stop", "sig_go", "braked_out", "xy",
           "heading", "crossed", "front_prev", "crossed_bar_s", "crossed_group", "hist_s", "hist_v", "stop_bar_d",
           "brake_flag", "hard_brake")


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


def _controls(rng: np.random.Generator, b: int, rate: float = 1.0) -> tuple[list[bool], list[float], list[float]]:
    """Random ego commands: stop at the bar, advisories (often below the speed: the IIDM branch), brakes."""
    stop = (rng.random(b) < 0.3 * rate).tolist()
    vt = np.where(rng.random(b) < 0.4 * rate, rng.uniform(0.0, 16.0, b), np.nan).tolist()
    brake = np.where(rng.random(b) < 0.2 * rate, rng.uniform(-1.0, 7.0, b), 0.0).tolist()
    return stop, vt, brake


def _run(k: int) -> tuple[list[bytes], list]:
    """Spec ``k`` (with its own program twice and a reference program beside it) stepped 620 times under
    random commands: every step's traffic state and adjudicator accumulators as bytes, and the outcomes."""
    spec = _specs()[k]
    prog = program_from_spec_on_straight_roads(spec)
    other = reference_program(list(Application)[k % 6], seed=k)
    programs = [prog, prog, other] if prog.dt_s == other.dt_s else [prog, prog]
    obey = [APPLICATIONS[p.application].kind is AppKind.CONFLICT for p in programs]
    scene = Scene.from_programs(programs, obey)
    st = initial_state(scene)
    adj = Adjudicator(scene, programs)
    rng = np.random.default_rng(k)
    b = len(programs)
    rate = (0.0, 0.1, 1.0)[k % 3]  # some runs nominal: the ego runs lights and leaves its route
    ctl = _controls(rng, b, rate)
    steps = []
    for i in range(620):
        if i % 15 == 0:
            ctl = _controls(rng, b, rate)
        active = st.alive[:, 0] & (i < 600)  # as paired execution: the rows running into this step
        st = step(scene, st, EgoControl(np.array(ctl[0]), np.array(ctl[1]), np.array(ctl[2])))
        adj.observe(st, active)
        steps.append(b"".join(np.ascontiguousarray(getattr(st, f)).tobytes() for f in _FIELDS)
                     + adj.acc.tobytes() + adj.cnt.tobytes() + adj.enter.tobytes() + adj.exit.tobytes())
    return steps, [adj.outcome(bi) for bi in range(b)]


@pytest.mark.skipif(not kernels.JIT, reason="LASTV2X_SIMULATOR_JIT=0: nothing compiled to compare with")
@pytest.mark.parametrize("k", range(len(_specs())))
def test_compiled_kernels_match_their_python_bit_for_bit(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _run(k)
    for mod in (k_traffic, k_signals, k_adjudicate):  # every kernel, and the kernels they call, as Python
        for name in dir(mod):
            fn = getattr(mod, name)
            if hasattr(fn, "py_func"):
                monkeypatch.setattr(mod, name, fn.py_func)
    interpreted = _run(k)
    assert len(compiled[0]) == len(interpreted[0])
    for i, (c, p) in enumerate(zip(compiled[0], interpreted[0], strict=True)):
        assert c == p, f"step {i}"
    assert compiled[1] == interpreted[1]


@pytest.mark.parametrize("model", ["log_distance", "tr37885_urban", "winner_b1_80211p"])
def test_an_outcome_does_not_depend_on_its_batch(model: str) -> None:
    """Nor on its row: also under a channel that draws per link (TR 37.885: LOS states, blockage, shadowing)."""
    programs = [reference_program(a, seed=3) for a in Application]
    if model != "log_distance":
        programs = [p.model_copy(update={"v2x": p.v2x.model_copy(update={"channel": p.v2x.channel.model_copy(
            update={"model": ChannelModel(model)})})}) for p in programs]
    alone = [paired.execute_paired(p).to_json_bytes() for p in programs]
    batch = paired.execute_batch(programs)
    assert [o.to_json_bytes() for o in batch] == alone
    flipped = paired.execute_batch(programs[::-1])
    assert [o.to_json_bytes() for o in flipped] == alone[::-1]


def test_ground_truth_fast_path_is_ground_truth_source_observe(monkeypatch: pytest.MonkeyPatch) -> None:
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
    programs = [program_from_spec_on_straight_roads(s) for s in _specs()[::3]]
    programs = [p for p in programs if p.dt_s == programs[0].dt_s]
    paired.execute_batch(programs)
    assert len(set(checked)) == 2 * len(programs) and len(checked) > 1000


def test_the_kernel_cache_is_keyed_by_every_source_the_kernels_import():
    """numba revalidates a cached kernel against its own file only: the cache folder's digest must cover every
    module the kernels import names from (a changed constant or a called kernel in another file recompiles)."""
    import ast
    from pathlib import Path

    root = Path(kernels.__file__).resolve().parent.parent.parent.parent
    covered = {p.resolve() for p in kernels.SOURCES}
    for path in Path(kernels.__file__).resolve().parent.glob("*.py"):
        if path.name in ("__init__.py", "__main__.py"):  # the decorator and the precompile script: no kernel body
            continue
        assert path.resolve() in covered
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("lastv2x", "services"):
                module = root.joinpath(*node.module.split("."))
                source = module / "__init__.py" if module.is_dir() else module.with_suffix(".py")
                assert source.resolve() in covered, f"{path.name} imports {node.module}: add it to kernels.SOURCES"
    assert kernels.cache_dir().name.startswith("jit-")
