"""Violation adjudication, identical for both rollouts (LAST-V2X Appendix D).

Per rollout (vectorized over the batch, one call per step):

* **Red entry**: the ego's front bumper crosses a stop bar while that bar's group
  shows *true* red (the crossing instant is interpolated inside the step).
* **Collision**: centre-to-centre distance below ``COLLISION_DISTANCE_M`` (4.5 m) with a
  vehicle within ``ROUTE_LATERAL_M`` of the ego route (traffic farther from it is
  ignored), at least one of the two moving faster than ``MOVING_MPS`` (a kinematic
  simulator has no contact response, so a real contact always passes through such
  a distance). 4.5 m is bumper-to-bumper contact of two 4.5 m cars in line and a
  side impact in a crossing (centres 3.2-4.5 m apart at contact); adjacent-lane
  traffic (3.5 m apart) is excluded by the route filter. For
  FCW/EEBL only vehicles *ahead* on the ego route count and the ego must be the
  striking vehicle (moving > ``MOVING_MPS``); and a vehicle *behind* striking the ego
  within ``REAR_STRIKE_WINDOW_S`` (3 s) of the ego braking on its application's warning
  (the rear-end a phantom or false warning causes; the ground-truth twin brakes only for
  real hazards).
* **Efficiency and margins**: stops (speed below ``STOP_MPS`` after exceeding
  ``RESTART_MPS``), travel time (ego leaves its route), time at the first stop bar,
  closest approach to a qualifying vehicle, closest approach to a scenario agent
  (the conflict applications' failure margin), post-encroachment time at the ego's
  conflict point (zone radius ``CONFLICT_ZONE_M``) against vehicles whose routes cross
  the ego's there.

Failure: signal applications fail on a red entry or a collision; conflict
applications on a collision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, AppKind
from lastv2x.core.program import ScenarioProgram, VehicleRole
from services.simulator.kernels import adjudicate as K
from services.simulator.traffic import Scene, TrafficState


@dataclass(frozen=True)
class RedEntry:
    t_s: float
    group_id: str


@dataclass(frozen=True)
class Collision:
    t_s: float
    other_id: str
    distance_m: float
    ego_speed_mps: float
    other_speed_mps: float


@dataclass(frozen=True)
class RolloutOutcome:
    failed: bool
    red_entries: tuple[RedEntry, ...]
    amber_entries: int
    collision: Collision | None
    stops: int
    travel_time_s: float | None  # the ego left its route at this time (None: still on it at the end)
    stop_bar_time_s: float | None  # the ego's front crossed its first stop bar
    closest_approach_m: float | None  # to a qualifying vehicle (None: none came within NEAR_RADIUS_M)
    closest_vehicle_id: str | None
    min_agent_distance_m: float | None  # to a scenario agent (not background): the conflict margin
    pet_s: float | None
    end_t_s: float
    decisions: tuple = ()  # DecisionRecord tuple, filled by paired execution
    # (agent id, DecisionRecord tuple) per agent that runs an application (issue 17, item 4); JSON: absent when none
    agent_decisions: tuple = ()

    @property
    def violations(self) -> tuple[str, ...]:
        out = []
        if self.red_entries:
            out.append("red_entry")
        if self.collision is not None:
            out.append("collision")
        return tuple(out)


class Adjudicator:
    """Accumulates outcomes of ``B`` rollouts; call :meth:`observe` after every step."""

    def __init__(self, scene: Scene, programs: Sequence[ScenarioProgram]):
        self.scene = scene
        b, n = scene.shape
        self.apps = [p.application for p in programs]
        self.signal_app = np.array([APPLICATIONS[a].kind is AppKind.SIGNAL for a in self.apps])
        self.ahead_only = np.array([APPLICATIONS[a].ahead_only for a in self.apps])  # the catalogue says which
        self.is_agent = np.zeros((b, n), bool)
        for bi, p in enumerate(programs):
            for ni, v in enumerate(p.vehicles):
                self.is_agent[bi, ni] = v.role not in (VehicleRole.EGO, VehicleRole.BACKGROUND)
        # conflict point of the ego and the vehicles whose routes cross it there (PET partners)
        self.conflict_xy = np.full((b, 2), np.nan)
        self.partner = np.zeros((b, n), bool)
        for bi, p in enumerate(programs):
            cr = p.ego.route.primary
            if cr is None or cr.conflict_xy_m is None or cr.conflict_s_m is None:
                continue
            self.conflict_xy[bi] = cr.conflict_xy_m
            c = cr.conflict_s_m
            off, lo, hi = scene.offset[bi, 0], scene.share_lo[bi, 0], scene.share_hi[bi, 0]
            sj = c - off
            shared = np.isfinite(off) & (sj >= lo) & (sj <= hi)
            self.partner[bi] = scene.valid[bi] & ~shared
            self.partner[bi, 0] = False
        # ego route polylines, padded by repeating the last point (zero-length segments)
        polys = [np.asarray(p.ego.route.points_xy_m, dtype=np.float64) for p in programs]
        pmax = max(len(q) for q in polys)
        pts = np.stack([np.vstack([q, np.repeat(q[-1:], pmax - len(q), axis=0)]) for q in polys])
        self.seg_a = np.ascontiguousarray(pts[:, :-1])
        self.seg_ab = np.ascontiguousarray(pts[:, 1:] - pts[:, :-1])
        self.seg_ab2 = np.maximum((self.seg_ab ** 2).sum(-1), 1e-12)
        seg_len = np.hypot(self.seg_ab[..., 0], self.seg_ab[..., 1])
        self.seg_s = np.ascontiguousarray(np.concatenate([np.zeros((b, 1)), np.cumsum(seg_len, axis=1)], axis=1)[:, :-1])
        self.plans = np.ascontiguousarray(np.stack([scene.signals.cycle_s, scene.signals.green_s,
                                                    scene.signals.amber_s, scene.signals.offset_s]), np.float64)
        self.ego_length = np.ascontiguousarray(scene.length_m[:, 0], np.float64)
        self.red: list[list[RedEntry]] = [[] for _ in range(b)]
        # the kernel's accumulators (rows named in services/simulator/kernels/adjudicate.py)
        self.acc = np.full((K.N_ACC, b), np.nan)
        self.acc[K.CLOSEST] = self.acc[K.MIN_AGENT] = np.inf
        self.cnt = np.zeros((K.N_CNT, b), np.int64)
        self.cnt[K.CLOSEST_ID] = self.cnt[K.COL_J] = self.cnt[K.RED_G] = -1
        self.cnt[K.MOVING] = 1
        self.enter = np.full((b, n), np.nan)
        self.exit = np.full((b, n), np.nan)
        self.all_active = np.ones(b, bool)
        self.warned_brake_t = np.full(b, -np.inf)  # when the ego last braked on its application's warning
        self.rear_open = np.zeros(b, bool)

    def observe(self, st: TrafficState, active: np.ndarray | None = None, brake: Sequence[float] | None = None
                ) -> None:
        """Account for the step that produced ``st``; ``active`` (B,) masks rows still running; ``brake`` (B,) the
        braking the egos' applications commanded for it (a warning acted on; None: none)
        (:func:`services.simulator.kernels.adjudicate.observe`)."""
        if brake is not None and self.ahead_only.any():
            self.warned_brake_t[np.asarray(brake) > 0.0] = st.t_s
            np.less_equal(st.t_s - self.warned_brake_t, K.REAR_STRIKE_WINDOW_S + 1e-9, out=self.rear_open)
        if K.observe(st.t_s, self.scene.dt_s, st.s, st.v, st.alive, st.xy, st.crossed, st.crossed_bar_s,
                     st.crossed_group, st.front_prev, self.all_active if active is None else active, self.ego_length,
                     self.plans, self.seg_a, self.seg_ab, self.seg_ab2, self.seg_s, self.ahead_only, self.is_agent,
                     self.conflict_xy, self.rear_open, self.acc, self.cnt, self.enter, self.exit):
            for bi in np.nonzero(self.cnt[K.RED_G] >= 0)[0].tolist():
                g = int(self.cnt[K.RED_G, bi])
                self.red[bi].append(RedEntry(round(float(self.acc[K.RED_T, bi]), 6), self.scene.group_ids[bi][g]))

    def collision(self, b: int) -> Collision | None:
        """Row ``b``'s first collision (None: none)."""
        j = int(self.cnt[K.COL_J, b])
        if j < 0:
            return None
        a = self.acc[:, b].tolist()
        return Collision(round(a[K.COL_T], 6), self.scene.vehicle_ids[b][j], round(a[K.COL_D], 6),
                         round(a[K.COL_VE], 6), round(a[K.COL_VO], 6))

    def _pet(self, b: int) -> float | None:
        e0, x0 = self.enter[b, 0], self.exit[b, 0]
        if np.isnan(e0):
            return None
        best = math.inf
        for j in np.nonzero(self.partner[b] & np.isfinite(self.enter[b]))[0]:
            ej, xj = self.enter[b, j], self.exit[b, j]
            if xj <= e0:
                pet = e0 - xj
            elif ej >= x0:
                pet = ej - x0
            else:
                pet = 0.0
            best = min(best, pet)
        return None if math.isinf(best) else round(float(best), 6)

    def outcome(self, b: int) -> RolloutOutcome:
        def opt(x: float) -> float | None:
            return None if not math.isfinite(x) else round(float(x), 6)
        red = tuple(self.red[b])
        col = self.collision(b)
        failed = col is not None or (bool(self.signal_app[b]) and bool(red))
        a, c = self.acc[:, b].tolist(), self.cnt[:, b].tolist()
        cid = c[K.CLOSEST_ID]
        return RolloutOutcome(
            failed=failed, red_entries=red, amber_entries=c[K.AMBER], collision=col,
            stops=c[K.STOPS], travel_time_s=opt(a[K.TRAVEL]), stop_bar_time_s=opt(a[K.BAR_TIME]),
            closest_approach_m=opt(a[K.CLOSEST]),
            closest_vehicle_id=self.scene.vehicle_ids[b][cid] if cid >= 0 else None,
            min_agent_distance_m=opt(a[K.MIN_AGENT]), pet_s=self._pet(b), end_t_s=round(float(a[K.END_T]), 6))


__all__ = ["Adjudicator", "Collision", "RedEntry", "RolloutOutcome"]
