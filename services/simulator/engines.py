"""The step loop's engines: how :func:`services.simulator.paired.run_rollouts` advances the traffic
and adjudicates, behind one interface (:class:`Engine`).

* :class:`VectorEngine`: the compiled traffic step (:func:`services.simulator.traffic.step`, kernels in
  :mod:`services.simulator.kernels`) and the adjudicator, for every batch size;
* :class:`PlantEngine`: another simulator moves the vehicles (services/simulator/backends).

Each hands the loop a per-step :class:`Frame`: the world as snapshots, and as lists for the
ground-truth fast path (:func:`ground_truth_fast`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lastv2x.core.program import ScenarioProgram, VehicleRole
from services.simulator.adjudicate import Adjudicator
from services.simulator.info import (
    EgoInformation,
    WorldSnapshot,
    ground_truth_information,
    ground_truth_signals,
)
from services.simulator.traffic import (
    AgentControl,
    EgoControl,
    Scene,
    TrafficState,
    advance,
    packed_lists,
    settle,
    step,
)

if TYPE_CHECKING:
    from services.simulator.backends.plant import Plant


class Frame:
    """Per-step views shared by every row's snapshot (computed once per step), plus the same
    quantities as Python lists (one ``tolist`` per array and step: per-row reads are then list
    indexing instead of numpy scalar access)."""

    def __init__(self, scene: Scene, st: TrafficState, signals: tuple[np.ndarray, np.ndarray, np.ndarray]):
        self.scene, self.st = scene, st
        self.t = st.t_s
        self.phase, self.ttc, self.ttg = signals  # scene.signals.state(st.t_s)
        self.brake = st.brake_flag
        self.hard = st.hard_brake
        self.bar_d = st.stop_bar_d
        self.group = st.bar_group
        self.N = st.s.shape[1]
        # flat (B * N) lists, vehicle i of row b at b * N + i: from the step's packed floats in one call
        # (traffic.packed_lists), else field by field
        lists = packed_lists(st)
        if lists is None:
            lists = {f: getattr(st, f).ravel().tolist() for f in ("s", "v", "a", "heading")}
        self.s, self.v, self.a, self.heading = lists["s"], lists["v"], lists["a"], lists["heading"]
        self.x, self.y = st.xy.reshape(-1, 2).T.tolist()
        self.ego_bar_d = self.bar_d[:, 0].tolist()
        self.ego_group = st.bar_group[:, 0].tolist()
        self._lists: tuple[list, ...] | None = None

    def gt_lists(self) -> tuple[list, ...]:
        """(phase, ttc, ttg rows; alive, hard flat) as lists, for the ground-truth fast path (on first use)."""
        if self._lists is None:
            self._lists = (self.phase.tolist(), self.ttc.tolist(), self.ttg.tolist(), self.st.alive.ravel().tolist(),
                           self.hard.ravel().tolist())
        return self._lists

    def snapshot(self, b: int, n: int, rollout: str, rsu: tuple[tuple[str, ...], np.ndarray, np.ndarray]
                 ) -> WorldSnapshot:
        scene, st = self.scene, self.st
        g = len(scene.group_ids[b])
        cut = slice(None) if n == st.s.shape[1] else slice(0, n)  # arr[b] is the view arr[b, :n], cheaper
        return new_snapshot({
            "t_s": st.t_s, "step": st.step, "vehicle_ids": scene.vehicle_ids[b], "xy_m": st.xy[b, cut],
            "speed_mps": st.v[b, cut], "heading_rad": st.heading[b, cut], "accel_mps2": st.a[b, cut],
            "brake_flag": self.brake[b, cut], "hard_brake_event": self.hard[b, cut],
            "equipped": scene.equipped[b, cut], "alive": st.alive[b, cut], "route_s_m": st.s[b, cut],
            "stop_bar_distance_m": self.bar_d[b, cut], "next_group_index": self.group[b, cut],
            "length_m": scene.length_m[b, cut], "ego_index": 0, "signal_group_ids": scene.group_ids[b],
            "true_phase": self.phase[b, :g], "time_to_change_s": self.ttc[b, :g], "time_to_green_s": self.ttg[b, :g],
            "rsu_ids": rsu[0], "rsu_xy_m": rsu[1], "rsu_height_m": rsu[2], "rollout": rollout})


class SignalClock:
    """``scene.signals.state(k * dt)`` for step ``k``, computed ``BLOCK`` steps at a time (the same
    element-wise arithmetic over a leading time axis: the same bits, a fraction of the calls)."""

    BLOCK = 64

    def __init__(self, scene: Scene):
        self.signals, self.dt = scene.signals, scene.dt_s
        self.k0 = -self.BLOCK
        self.block: tuple[np.ndarray, ...] = ()

    def state(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        i = k - self.k0
        if not 0 <= i < self.BLOCK:
            self.k0, i = k, 0
            t = np.arange(k, k + self.BLOCK, dtype=np.float64) * self.dt
            self.block = self.signals.state(t.reshape((-1,) + (1,) * self.signals.cycle_s.ndim))
        ph, tc, tg = self.block
        return ph[i], tc[i], tg[i]


class Engine(Protocol):
    """What the step loop of :func:`run_rollouts` needs of a traffic engine and its adjudicator: one
    loop body for the built-in step (:class:`VectorEngine`) and another simulator's (:class:`PlantEngine`)."""

    def running(self, k: int) -> list[bool]:
        """Per row: the ego is alive and step ``k`` is within the row's duration."""
        ...

    def frame(self, k: int) -> Frame:
        """The world at step ``k`` (before it is advanced)."""
        ...

    def advance(self, fr: Frame, stop: list[bool], v_target: list[float], brake: list[float],
                active: list[bool], agents: AgentControl | None = None) -> None:
        """Step the traffic under the egos' (and application-running agents') commands and adjudicate the
        rows that were ``active``."""
        ...

    def finish(self) -> Adjudicator:
        """The adjudicator, with every accumulator written back (outcomes are read from it)."""
        ...


class VectorEngine:
    """:func:`services.simulator.traffic.step` and :class:`Adjudicator` over ``(B, N)`` arrays."""

    def __init__(self, scene: Scene, st: TrafficState, programs: Sequence[ScenarioProgram], limit: list[int]):
        self.scene, self.st = scene, st
        self.adj = Adjudicator(scene, programs)
        self.clock = SignalClock(scene)
        self.limit = np.array(limit)

    def running(self, k: int) -> list[bool]:
        return (self.st.alive[:, 0] & (k < self.limit)).tolist()

    def frame(self, k: int) -> Frame:
        return Frame(self.scene, self.st, self.clock.state(k))

    def advance(self, fr: Frame, stop: list[bool], v_target: list[float], brake: list[float],
                active: list[bool], agents: AgentControl | None = None) -> None:
        self.st = advance(self.scene, self.st, np.array(stop, bool), np.array((v_target, brake), np.float64), agents,
                          fr.phase)
        self.adj.observe(self.st, np.array(active, bool), brake)

    def finish(self) -> Adjudicator:
        return self.adj


class PlantEngine(VectorEngine):
    """Another simulator moves the vehicles (services/simulator/backends/base.py), one rollout at a
    time: the builtin step decides the speed each driven vehicle should have at the end of the step,
    the plant applies it with its own dynamics (and drives the background traffic itself when it has
    a traffic model), and its readings re-enter the state through :func:`settle`: each vehicle's arc
    length is its reading projected onto its program route, its speed the reading's."""

    def __init__(self, scene: Scene, st: TrafficState, programs: Sequence[ScenarioProgram], limit: list[int],
                 plant: Plant, rollout: str):
        from services.simulator.maps.geometry import cumulative_s

        if len(programs) != 1:
            raise ValueError("a simulator backend runs one rollout at a time")
        super().__init__(scene, st, programs, limit)
        program = programs[0]
        self.plant, self.ids = plant, scene.vehicle_ids[0]
        background = {v.id for v in program.agents if v.role is VehicleRole.BACKGROUND}
        self.driven = [(i, vid) for i, vid in enumerate(self.ids)
                       if not (plant.drives_background and vid in background)]
        self.routes = []
        for v in program.vehicles:
            pts = np.asarray(v.route.points_xy_m, dtype=np.float64)
            self.routes.append((pts, cumulative_s(pts)))
        plant.start(program, rollout, [vid for _, vid in self.driven])

    def advance(self, fr: Frame, stop: list[bool], v_target: list[float], brake: list[float],
                active: list[bool], agents: AgentControl | None = None) -> None:
        from services.simulator.backends.plant import TickCommand
        from services.simulator.info import PHASE_NAME
        from services.simulator.maps.geometry import project

        assert isinstance(fr, Frame)
        scene, st = self.scene, self.st
        want = step(scene, st, EgoControl(np.array(stop, bool), np.array(v_target, np.float64),
                                          np.array(brake, np.float64), agents), fr.phase)
        phases = {g: PHASE_NAME[int(ph)] for g, ph in zip(scene.group_ids[0], fr.phase[0].tolist(), strict=False)}
        seen = self.plant.tick(TickCommand(want.step, want.t_s, {vid: float(want.v[0, i]) for i, vid in self.driven},
                                           phases))
        s_new, v_new = want.s.copy(), want.v.copy()
        for i, vid in enumerate(self.ids):
            r = seen[vid]
            pts, s_cum = self.routes[i]
            if r.present:
                s_new[0, i] = project(pts, s_cum, r.xy_m)[0][0]
                v_new[0, i] = r.speed_mps
            elif st.alive[0, i]:  # the plant ended it (e.g. at its route's end): so does the state
                s_new[0, i], v_new[0, i] = s_cum[-1], 0.0
        acc = (v_new - st.v) / scene.dt_s
        self.st = settle(scene, st, s_new, v_new, acc, want.sig_stop, want.sig_go, want.braked_out)
        self.adj.observe(self.st, np.array(active, bool), brake)


def _readonly(values: list, dtype: Any) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    arr.setflags(write=False)  # (cheaper than ``arr.flags.writeable = False``: no flags object)
    return arr


_set_attr = object.__setattr__


def new_snapshot(fields: dict[str, Any]) -> WorldSnapshot:
    """A WorldSnapshot without the frozen dataclass ``__init__`` (one ``object.__setattr__`` per field,
    the dominant cost of a snapshot): ``fields`` (a dict no one else holds) becomes its ``__dict__``, not
    copied; the same object, every field set, nothing else."""
    snap = object.__new__(WorldSnapshot)
    _set_attr(snap, "__dict__", fields)
    return snap


def ground_truth_fast(lists: tuple[list, ...], fr: Frame, b: int, j: int, t_s: float,
                  others: tuple[str, ...], group_ids: tuple[str, ...], plan: int,
                  cache: dict[Any, Any]) -> EgoInformation:
    """Exactly ``GroundTruthSource().observe(fr.snapshot(b, ...))``, read from the frame's lists
    (``lists`` = ``fr.gt_lists()``, ``j`` = the flat index of row ``b``'s ego, ``others`` = the ids of
    its vehicles after the ego, vehicle 0).

    ``cache`` lives for one step: rows with the same signal plans (``plan``) share the signal dict, and
    rows without other vehicles share the whole (immutable) belief when their ego group is the same."""
    g = fr.ego_group[b]
    if not others:
        info = cache.get((plan, g))
        if info is not None:
            return info
    signals = cache.get(plan)
    if signals is None:
        signals = cache[plan] = ground_truth_signals(group_ids, lists[0][b], lists[1][b], lists[2][b])
    info = ground_truth_information(t_s, signals, None if g < 0 else group_ids[g],
                                   zip(others, range(j + 1, j + 1 + len(others)), strict=True),
                                   fr.x, fr.y, fr.v, fr.heading, fr.a, lists[3], lists[4])
    if not others:
        cache[(plan, g)] = info
    return info


__all__ = ["Engine", "Frame", "PlantEngine", "VectorEngine", "ground_truth_fast", "new_snapshot"]
