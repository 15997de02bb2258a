"""A tiny kinematic world for V2X unit tests: vehicles at scripted speeds along
their program routes, fixed-time signals, ground-truth snapshots.

Not the simulator's step loop (``services.simulator.paired``); it exists so the
V2X stack can be tested on its own, with trajectories the test controls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from lastv2x.core.program import ScenarioProgram
from services.simulator.info import NO_GROUP, WorldSnapshot
from services.simulator.signals import SignalTable

SpeedFn = Callable[[str, float, float], float]  # (vehicle id, t, current speed) -> speed


class MiniWorld:
    """Vehicles follow their route polylines; ``speed_fn`` scripts speeds (default: hold)."""

    def __init__(self, program: ScenarioProgram, speed_fn: SpeedFn | None = None,
                 alive_fn: Callable[[str, float], bool] | None = None):
        self.program = program
        self.dt = program.dt_s
        self.vehicles = list(program.vehicles)
        self.ids = tuple(v.id for v in self.vehicles)
        self.routes = []
        for v in self.vehicles:
            p = np.asarray(v.route.points_xy_m, dtype=np.float64)
            s = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))))
            self.routes.append((p, s))
        self.s = np.array([v.start_s_m for v in self.vehicles], dtype=np.float64)
        self.v = np.array([v.initial_speed_mps for v in self.vehicles], dtype=np.float64)
        self.a = np.zeros(len(self.vehicles))
        self.speed_fn = speed_fn
        self.alive_fn = alive_fn
        self.table = SignalTable.from_plans(program.signal_groups)
        self.group_ids = tuple(g.id for g in program.signal_groups)
        self.step_i = 0
        self.t = 0.0

    def _pose(self, i: int) -> tuple[np.ndarray, float]:
        p, s = self.routes[i]
        si = float(np.clip(self.s[i], 0.0, s[-1]))
        k = int(np.clip(np.searchsorted(s, si, side="right") - 1, 0, len(s) - 2))
        f = (si - s[k]) / max(s[k + 1] - s[k], 1e-9)
        d = p[k + 1] - p[k]
        return p[k] + f * d, float(np.arctan2(d[1], d[0]))

    def snapshot(self) -> WorldSnapshot:
        n = len(self.vehicles)
        xy = np.zeros((n, 2))
        hd = np.zeros(n)
        for i in range(n):
            xy[i], hd[i] = self._pose(i)
        stop = np.full(n, np.inf)
        nxt = np.full(n, NO_GROUP, dtype=np.int64)
        lengths = np.array([v.length_m for v in self.vehicles])
        for i, v in enumerate(self.vehicles):
            front = self.s[i] + lengths[i] / 2
            for c in v.route.crossings:
                if front <= c.stop_bar_s_m + 0.5:
                    stop[i] = max(0.0, c.stop_bar_s_m - front)
                    nxt[i] = self.group_ids.index(c.signal_group_id) if c.signal_group_id else NO_GROUP
                    break
        alive = np.array([True if self.alive_fn is None else self.alive_fn(vid, self.t) for vid in self.ids])
        if len(self.group_ids):
            phase, ttc, ttg = self.table.state(self.t)
        else:
            phase, ttc, ttg = np.zeros(0, np.int8), np.zeros(0), np.zeros(0)
        hard = (self.a < -0.4 * 9.80665) & (self.v > 0.1)
        rsus = self.program.rsus
        return WorldSnapshot(
            t_s=self.t, step=self.step_i, vehicle_ids=self.ids, xy_m=xy, speed_mps=self.v.copy(),
            heading_rad=hd, accel_mps2=self.a.copy(), brake_flag=self.a < -0.5, hard_brake_event=hard,
            equipped=np.array([v.equipped for v in self.vehicles]), alive=alive, route_s_m=self.s.copy(),
            stop_bar_distance_m=stop, next_group_index=nxt, length_m=lengths, ego_index=0,
            signal_group_ids=self.group_ids, true_phase=np.asarray(phase, np.int64),
            time_to_change_s=np.asarray(ttc, np.float64), time_to_green_s=np.asarray(ttg, np.float64),
            rsu_ids=tuple(r.id for r in rsus), rsu_xy_m=np.array([r.xy_m for r in rsus]).reshape(-1, 2),
            rsu_height_m=np.array([r.height_m for r in rsus]), rollout="md")

    def advance(self) -> None:
        if self.speed_fn is not None:
            new_v = np.array([max(0.0, self.speed_fn(vid, self.t + self.dt, self.v[i]))
                              for i, vid in enumerate(self.ids)])
        else:
            new_v = self.v
        self.a = (new_v - self.v) / self.dt
        self.s = self.s + 0.5 * (self.v + new_v) * self.dt
        self.v = new_v
        self.step_i += 1
        self.t = self.step_i * self.dt

    def run(self, until_s: float | None = None) -> Iterator[WorldSnapshot]:
        end = self.program.duration_s if until_s is None else until_s
        while self.t <= end + 1e-9:
            yield self.snapshot()
            self.advance()


def rlvw_spec(**over: object) -> dict:
    """An RLVW spec dict whose ego reaches its decision epoch at ``t_dec`` (default 28 s)."""
    from lastv2x.core.catalogue import stopping_distance_m

    v = float(over.pop("speed_mps", 13.9))  # type: ignore[arg-type]
    t_dec = float(over.pop("t_dec", 28.0))  # type: ignore[arg-type]
    base: dict = {"application": "RLVW", "duration_s": 34.0,
                  "ego": {"speed_mps": v, "start_distance_m": stopping_distance_m(v) + t_dec * v}}
    base.update(over)
    return base


def run(program: ScenarioProgram, source, seed: int = 0, *, speed_fn: SpeedFn | None = None,
        alive_fn: Callable[[str, float], bool] | None = None, until_s: float | None = None,
        every: Callable[[WorldSnapshot, object], None] | None = None) -> list:
    """Drive ``source`` through a MiniWorld; returns [(snapshot, information)] per step."""
    source.reset(program, seed)
    out = []
    for snap in MiniWorld(program, speed_fn, alive_fn).run(until_s):
        info = source.observe(snap)
        if every is not None:
            every(snap, info)
        out.append((snap, info))
    return out
