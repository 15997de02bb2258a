"""The step loop's engines: how :func:`services.simulator.paired.run_rollouts` advances the traffic
and adjudicates, behind one interface (:class:`Engine`).

* :class:`ScalarEngine`: paired-execution sizes on Python floats (:mod:`services.simulator.scalar`);
* :class:`VectorEngine`: batches on the numpy core (:func:`services.simulator.traffic.step`);
* :class:`PlantEngine`: another simulator moves the vehicles (services/simulator/backends).

The first two give the same bits (``tests/simulator/test_engine_parity.py``). Each hands the loop a
per-step frame (:class:`Frame` / :class:`ScalarFrame`): the world as snapshots, and as lists for the
ground-truth fast path (:func:`ground_truth_fast`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lastv2x.core.program import ScenarioProgram, VehicleRole
from services.simulator.adjudicate import Adjudicator
from services.simulator.info import (
    BRAKE_FLAG_THRESHOLD_MPS2,
    EgoInformation,
    WorldSnapshot,
    ground_truth_information,
    ground_truth_signals,
)
from services.simulator.scalar import ScalarAdjudicator, ScalarTraffic, SignalRows
from services.simulator.traffic import (
    AgentControl,
    EgoControl,
    Scene,
    TrafficState,
    hard_brake_event,
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
        a = st.a
        self.brake = (a <= -BRAKE_FLAG_THRESHOLD_MPS2) & st.alive
        self.hard = hard_brake_event(st)
        self.bar_d = st.bar_s - (st.s + scene.half_len)
        self.group = st.bar_group
        self.N = st.s.shape[1]
        self.s = st.s.ravel().tolist()  # flat (B * N) lists, vehicle i of row b at b * N + i
        self.v = st.v.ravel().tolist()
        self.a = a.ravel().tolist()
        self.heading = st.heading.ravel().tolist()
        self.x = st.xy[..., 0].ravel().tolist()
        self.y = st.xy[..., 1].ravel().tolist()
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


class ScalarFrame:
    """:class:`Frame` over a :class:`ScalarTraffic` (its lists as they are; snapshot arrays built per row).

    ``rows`` (the engine's, kept across steps): per ``(row, n)`` the snapshot fields that change a few
    times a run or never (see :meth:`_fixed_fields`)."""

    def __init__(self, scene: Scene, tr: ScalarTraffic, signals: SignalRows,
                 rows: dict[tuple[int, int], _FixedFields] | None = None):
        self.scene, self.tr = scene, tr
        self.t = tr.t
        self.phase_l, self.ttc_l, self.ttg_l = signals.state(tr.t)
        self.N = n = tr.N
        self.s, self.v, self.a, self.heading, self.x, self.y = tr.s, tr.v, tr.a, tr.heading, tr.x, tr.y
        bar, s, half = tr.bar, tr.s, tr.half
        self.ego_bar_d = [bar[i] - (s[i] + half[i]) for i in range(0, n * tr.B, n)]
        self.ego_group = tr.grp[::n]
        self._hard: list[bool] | None = None
        self._rows = {} if rows is None else rows

    def gt_lists(self) -> tuple[list, ...]:
        if self._hard is None:
            self._hard = self.tr.hard_brake()
        return self.phase_l, self.ttc_l, self.ttg_l, self.tr.alive, self._hard

    def snapshot(self, b: int, n: int, rollout: str, rsu: tuple[tuple[str, ...], np.ndarray, np.ndarray]
                 ) -> WorldSnapshot:
        tr = self.tr
        lo = b * tr.N
        hi = lo + n
        g = len(self.scene.group_ids[b])
        bar, s, half = tr.bar, tr.s, tr.half
        # one read-only array per dtype, built from one flat list (a nested list costs numpy a shape
        # discovery); the fields are its contiguous slices
        xy = [0.0] * (2 * n)
        xy[0::2] = tr.x[lo:hi]
        xy[1::2] = tr.y[lo:hi]
        f = _readonly([*xy, *tr.v[lo:hi], *tr.heading[lo:hi], *tr.a[lo:hi], *s[lo:hi],
                       *[bar[i] - (s[i] + half[i]) for i in range(lo, hi)], *self.ttc_l[b][:g], *self.ttg_l[b][:g]],
                      np.float64)
        n2, n3, n4, n5, n6, n7 = 2 * n, 3 * n, 4 * n, 5 * n, 6 * n, 7 * n
        # a copy of the fixed fields' dict (the snapshot's field order) with the per-step fields stored into it:
        # cheaper than a dict display of every field
        fields = self._fixed_fields(b, n, lo, g, rollout, rsu).copy()
        fields["t_s"] = tr.t
        fields["step"] = tr.k
        fields["xy_m"] = f[:n2].reshape(n, 2)
        fields["speed_mps"] = f[n2:n3]
        fields["heading_rad"] = f[n3:n4]
        fields["accel_mps2"] = f[n4:n5]
        fields["route_s_m"] = f[n5:n6]
        fields["stop_bar_distance_m"] = f[n6:n7]
        fields["time_to_change_s"] = f[n7:n7 + g]
        fields["time_to_green_s"] = f[n7 + g:]
        return new_snapshot(fields)

    def _fixed_fields(self, b: int, n: int, lo: int, g: int, rollout: str,
                      rsu: tuple[tuple[str, ...], np.ndarray, np.ndarray]) -> dict[str, Any]:
        """Row ``b``'s snapshot fields but the per-step ones (those None): the same dict as the last step's
        while the brake-flag, hard-braking and alive flags, the next groups and the true phases are (they
        change a few times a run); when one of them changes, the read-only arrays of the others are kept."""
        tr = self.tr
        hi = lo + n
        flags = tr.brake_flag(lo, hi) + self.gt_lists()[4][lo:hi] + tr.alive[lo:hi]
        group, phase = tr.grp[lo:hi], self.phase_l[b][:g]
        c = self._rows.get((b, n))
        if (c is not None and c.flags == flags and c.group == group and c.phase == phase and c.rollout is rollout
                and c.rsu is rsu):
            return c.fields
        c = self._rows[(b, n)] = _FixedFields(self.scene, b, n, flags, group, phase, rollout, rsu, c)
        return c.fields


class _FixedFields:
    """A row's snapshot fields that change a few times a run or never (:meth:`ScalarFrame._fixed_fields`), with
    the lists they were made from."""

    __slots__ = ("fields", "flags", "group", "phase", "rollout", "rsu")
    fields: dict[str, Any]  # the snapshot fields, None where per-step

    def __init__(self, scene: Scene, b: int, n: int, flags: list[bool], group: list[int], phase: list[int],
                 rollout: str, rsu: tuple[tuple[str, ...], np.ndarray, np.ndarray], old: _FixedFields | None):
        self.flags, self.group, self.phase, self.rollout, self.rsu = flags, group, phase, rollout, rsu
        if old is not None and old.flags == flags:
            brake, hard, alive = (old.fields[k] for k in ("brake_flag", "hard_brake_event", "alive"))
        else:
            arr = _readonly(flags, bool)
            brake, hard, alive = arr[:n], arr[n:2 * n], arr[2 * n:]
        if old is not None and old.group == group and old.phase == phase:
            equipped, length, group_arr, phase_arr = (old.fields[k] for k in ("equipped", "length_m",
                                                                                "next_group_index", "true_phase"))
        else:
            equipped, length = scene.equipped[b, :n], scene.length_m[b, :n]
            group_arr, phase_arr = _readonly(group, np.int64), _readonly(phase, np.int8)
        self.fields = {
            "t_s": None, "step": None, "vehicle_ids": scene.vehicle_ids[b], "xy_m": None, "speed_mps": None,
            "heading_rad": None, "accel_mps2": None, "brake_flag": brake, "hard_brake_event": hard,
            "equipped": equipped, "alive": alive, "route_s_m": None, "stop_bar_distance_m": None,
            "next_group_index": group_arr, "length_m": length, "ego_index": 0, "signal_group_ids": scene.group_ids[b],
            "true_phase": phase_arr, "time_to_change_s": None, "time_to_green_s": None, "rsu_ids": rsu[0],
            "rsu_xy_m": rsu[1], "rsu_height_m": rsu[2], "rollout": rollout}


class Engine(Protocol):
    """What the step loop of :func:`run_rollouts` needs of a traffic engine and its adjudicator: one
    loop body for both engines (:class:`VectorEngine` numpy, :class:`ScalarEngine` Python floats,
    bit-identical: ``tests/simulator/test_engine_parity.py``)."""

    def running(self, k: int) -> list[bool]:
        """Per row: the ego is alive and step ``k`` is within the row's duration."""
        ...

    def frame(self, k: int) -> Frame | ScalarFrame:
        """The world at step ``k`` (before it is advanced)."""
        ...

    def advance(self, fr: Frame | ScalarFrame, stop: list[bool], v_target: list[float], brake: list[float],
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
        _freeze(st)

    def running(self, k: int) -> list[bool]:
        return (self.st.alive[:, 0] & (k < self.limit)).tolist()

    def frame(self, k: int) -> Frame:
        return Frame(self.scene, self.st, self.clock.state(k))

    def advance(self, fr: Frame | ScalarFrame, stop: list[bool], v_target: list[float], brake: list[float],
                active: list[bool], agents: AgentControl | None = None) -> None:
        assert isinstance(fr, Frame)
        self.st = step(self.scene, self.st, EgoControl(np.array(stop, bool), np.array(v_target, np.float64),
                                                       np.array(brake, np.float64), agents), fr.phase)
        _freeze(self.st)
        self.adj.observe(self.st, np.array(active, bool))

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

    def advance(self, fr: Frame | ScalarFrame, stop: list[bool], v_target: list[float], brake: list[float],
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
        _freeze(self.st)
        self.adj.observe(self.st, np.array(active, bool))


class ScalarEngine:
    """:class:`ScalarTraffic` and :class:`ScalarAdjudicator`: the same step on flat Python lists."""

    def __init__(self, scene: Scene, st: TrafficState, programs: Sequence[ScenarioProgram], limit: list[int]):
        self.scene = scene
        self.tr = ScalarTraffic(scene, st)
        self.adj = ScalarAdjudicator(scene, programs)
        self.limit = limit
        self.n = scene.shape[1]
        self.snapshot_rows: dict[tuple[int, int], _FixedFields] = {}  # ScalarFrame's, kept across steps

    def running(self, k: int) -> list[bool]:
        alive, n = self.tr.alive, self.n
        return [alive[b * n] and k < lim for b, lim in enumerate(self.limit)]

    def frame(self, k: int) -> ScalarFrame:
        return ScalarFrame(self.scene, self.tr, self.adj.signal_rows, self.snapshot_rows)

    def advance(self, fr: Frame | ScalarFrame, stop: list[bool], v_target: list[float], brake: list[float],
                active: list[bool], agents: AgentControl | None = None) -> None:
        assert isinstance(fr, ScalarFrame) and agents is None  # agents running applications: numpy engine
        self.tr.step(stop, v_target, brake, fr.phase_l)
        self.adj.observe_scalar(self.tr, active)

    def finish(self) -> Adjudicator:
        self.adj.sync()
        return self.adj


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


def ground_truth_fast(lists: tuple[list, ...], fr: Frame | ScalarFrame, b: int, j: int, t_s: float,
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


def _freeze(st: TrafficState) -> None:
    for arr in (st.s, st.v, st.a, st.alive, st.xy, st.heading):
        arr.flags.writeable = False


__all__ = ["Engine", "Frame", "PlantEngine", "ScalarEngine", "ScalarFrame", "VectorEngine", "ground_truth_fast",
           "new_snapshot"]
