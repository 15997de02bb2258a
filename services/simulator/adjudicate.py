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
  striking vehicle (moving > ``MOVING_MPS``).
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

from lastv2x.core.catalogue import APPLICATIONS, ROUTE_LATERAL_BAND_M, AppKind
from lastv2x.core.program import ScenarioProgram, VehicleRole
from services.simulator.info import PHASE_AMBER, PHASE_RED
from services.simulator.traffic import Scene, TrafficState

COLLISION_DISTANCE_M = 4.5
MOVING_MPS = 0.5
ROUTE_LATERAL_M = ROUTE_LATERAL_BAND_M  # the catalogue's lateral band (Appendix D)
# above this many segments, an ego route's projection scans them with numpy (the same element-wise float operations
# in the same order, so the same bits; a grounded route holds hundreds of points, the reference routes a handful)
ROUTE_SEGMENTS_NUMPY = 24
# a vehicle's distance to a route changes by at most how far it moved (a distance to a set is 1-Lipschitz): one
# found off the ego route keeps off it, no projection needed, while its last distance, less what it moved since,
# stays over ROUTE_LATERAL_M by this margin (metres; the floats' rounding is ~1e-12 m at map scales)
OFF_ROUTE_MARGIN_M = 1e-6
NEAR_RADIUS_M = 30.0  # closest approach is tracked within this radius
CONFLICT_ZONE_M = 2.5
STOP_MPS = 0.5
RESTART_MPS = 2.0


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
        self.any_conflict = bool(np.isfinite(self.conflict_xy[:, 0]).any())
        # ego route polylines, padded by repeating the last point (zero-length segments)
        polys = [np.asarray(p.ego.route.points_xy_m, dtype=np.float64) for p in programs]
        pmax = max(len(q) for q in polys)
        pts = np.stack([np.vstack([q, np.repeat(q[-1:], pmax - len(q), axis=0)]) for q in polys])
        self.seg_a = pts[:, :-1]
        self.seg_ab = pts[:, 1:] - pts[:, :-1]
        self.seg_ab2 = np.maximum((self.seg_ab ** 2).sum(-1), 1e-12)
        seg_len = np.hypot(self.seg_ab[..., 0], self.seg_ab[..., 1])
        self.seg_s = np.concatenate([np.zeros((b, 1)), np.cumsum(seg_len, axis=1)], axis=1)[:, :-1]
        self.red: list[list[RedEntry]] = [[] for _ in range(b)]
        self.amber = np.zeros(b, np.int64)
        self.collision: list[Collision | None] = [None] * b
        self.collided = np.zeros(b, bool)  # collision[b] is set
        self.stops = np.zeros(b, np.int64)
        self.moving = np.ones(b, bool)
        self.travel = np.full(b, np.nan)
        self.bar_time = np.full(b, np.nan)
        self.closest = np.full(b, np.inf)
        self.closest_id = np.full(b, -1)
        self.min_agent = np.full(b, np.inf)
        self.enter = np.full((b, n), np.nan)
        self.exit = np.full((b, n), np.nan)
        self.end_t = np.zeros(b)
        self.done = np.zeros(b, bool)

    def observe(self, st: TrafficState, active: np.ndarray | None = None) -> None:
        """Account for the step that produced ``st``; ``active`` (B,) masks rows still running."""
        sc = self.scene
        t1, dt = st.t_s, sc.dt_s
        live = ~self.done if active is None else active & ~self.done
        self.end_t[live] = t1
        # red entries
        crossed = st.crossed[:, 0] & live
        if np.count_nonzero(crossed):
            for bi in np.nonzero(crossed)[0]:
                g = int(st.crossed_group[bi, 0])
                front_new = st.s[bi, 0] + sc.length_m[bi, 0] / 2
                fp = st.front_prev[bi, 0]
                frac = (st.crossed_bar_s[bi, 0] - fp) / max(front_new - fp, 1e-9)
                t_c = t1 - dt + dt * min(max(frac, 0.0), 1.0)
                if math.isnan(self.bar_time[bi]):
                    self.bar_time[bi] = t_c
                if g < 0:
                    continue
                phase = int(sc.signals.state(t_c)[0][bi, g])
                if phase == PHASE_RED:
                    self.red[bi].append(RedEntry(round(float(t_c), 6), sc.group_ids[bi][g]))
                elif phase == PHASE_AMBER:
                    self.amber[bi] += 1
        # stops (hysteresis: a stop counts once the ego had exceeded RESTART_MPS again)
        v0 = st.v[:, 0]
        ego_alive = st.alive[:, 0]
        slow = v0 < STOP_MPS
        if np.count_nonzero(slow & self.moving):
            new_stop = live & self.moving & slow & ego_alive
            self.stops += new_stop
            self.moving &= ~new_stop
        self.moving |= v0 > RESTART_MPS
        # travel time
        if np.count_nonzero(ego_alive) != ego_alive.size:
            left = live & ~ego_alive & np.isnan(self.travel)
            self.travel[left] = t1
        # proximity
        x, y = st.xy[..., 0], st.xy[..., 1]
        dist = np.hypot(x - x[:, :1], y - y[:, :1])
        dist[:, 0] = np.inf
        near = dist < NEAR_RADIUS_M
        if np.count_nonzero(near):
            near &= st.alive & (ego_alive & live)[:, None]
            if np.count_nonzero(near):
                bi, nj = np.nonzero(near)
                d = dist[bi, nj]
                # only a candidate nearer than what it could update can change anything (exact: the
                # records only ever decrease within a step)
                matters = (d < self.closest[bi]) | ((d < self.min_agent[bi]) & self.is_agent[bi, nj]) | (
                    (d < COLLISION_DISTANCE_M) & ~self.collided[bi])
                if np.count_nonzero(matters):
                    self._proximity(st, bi[matters], nj[matters], d[matters])
        # PET zone occupancy
        if self.any_conflict:
            dz = np.hypot(x - self.conflict_xy[:, :1], y - self.conflict_xy[:, 1:])
            inside = dz < CONFLICT_ZONE_M
            if np.count_nonzero(inside):
                inside &= st.alive & live[:, None]
                first = inside & np.isnan(self.enter)
                self.enter[first] = t1
                self.exit[inside] = t1
        self.done |= ~ego_alive

    def _proximity(self, st: TrafficState, bi: np.ndarray, nj: np.ndarray, dist: np.ndarray) -> None:
        """Candidates ``(bi, nj)`` near their ego at centre distance ``dist``, in row-major order."""
        sc = self.scene
        ego_s = st.s[bi, 0]
        # project each candidate on its rollout's ego route polyline (all segments at once)
        a, ab, ab2 = self.seg_a[bi], self.seg_ab[bi], self.seg_ab2[bi]  # (M, P-1, ...)
        aq = st.xy[bi, nj][:, None, :] - a
        t = np.clip((aq * ab).sum(-1) / ab2, 0.0, 1.0)
        dd = np.hypot(aq[..., 0] - t * ab[..., 0], aq[..., 1] - t * ab[..., 1])
        j = np.argmin(dd, axis=1)
        rows = np.arange(len(bi))
        lateral = dd[rows, j]
        s_on = self.seg_s[bi, j] + t[rows, j] * np.sqrt(ab2[rows, j])
        ahead = s_on > ego_s
        on_route = lateral <= ROUTE_LATERAL_M
        ahead_only = self.ahead_only[bi]
        qual = on_route & (~ahead_only | ahead)
        sel = np.nonzero(qual)[0]
        if not sel.size:
            return
        # the qualifying candidates in order, as Python scalars (same values; no numpy scalar per access)
        b_l, j_l, d_l = bi[sel].tolist(), nj[sel].tolist(), dist[sel].tolist()
        ao_l = ahead_only[sel].tolist()
        closest, closest_id, min_agent, is_agent = self.closest, self.closest_id, self.min_agent, self.is_agent
        for b_, j_, d_m, ao in zip(b_l, j_l, d_l, ao_l, strict=True):
            if d_m < closest[b_]:
                closest[b_] = d_m
                closest_id[b_] = j_
            if is_agent[b_, j_] and d_m < min_agent[b_]:
                min_agent[b_] = d_m
            if self.collision[b_] is None and d_m < COLLISION_DISTANCE_M:
                ve, vo = float(st.v[b_, 0]), float(st.v[b_, j_])
                striking = ve > MOVING_MPS if ao else max(ve, vo) > MOVING_MPS
                if striking:
                    self.collided[b_] = True
                    self.collision[b_] = Collision(round(st.t_s, 6), sc.vehicle_ids[b_][j_], round(float(d_m), 6),
                                                   round(ve, 6), round(vo, 6))

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
        col = self.collision[b]
        failed = col is not None or (bool(self.signal_app[b]) and bool(red))
        cid = int(self.closest_id[b])
        return RolloutOutcome(
            failed=failed, red_entries=red, amber_entries=int(self.amber[b]), collision=col,
            stops=int(self.stops[b]), travel_time_s=opt(self.travel[b]), stop_bar_time_s=opt(self.bar_time[b]),
            closest_approach_m=opt(self.closest[b]),
            closest_vehicle_id=self.scene.vehicle_ids[b][cid] if cid >= 0 else None,
            min_agent_distance_m=opt(self.min_agent[b]), pet_s=self._pet(b), end_t_s=round(float(self.end_t[b]), 6))


# The scalar engine's adjudicator (scalar.ScalarAdjudicator) projects nearby vehicles on the ego route on floats:
# the route's segments as it reads them, and the bound that spares it projections of vehicles off the route.

def off_route_mark(x: float, y: float, q_min: float) -> tuple[float, float, float]:
    """What :func:`still_off_route` keeps of a projection that found the point ``(x, y)`` off the route at the
    least squared distance ``q_min``."""
    return x, y, math.sqrt(q_min) - OFF_ROUTE_MARGIN_M


def still_off_route(mark: tuple[float, float, float] | None, x: float, y: float) -> bool:
    """Whether a vehicle marked off the route (:func:`off_route_mark`) is, now at ``(x, y)``, still farther from it
    than ROUTE_LATERAL_M: its distance then, less how far it is from where it was (see OFF_ROUTE_MARGIN_M)."""
    return mark is not None and mark[2] - math.hypot(x - mark[0], y - mark[1]) > ROUTE_LATERAL_M + OFF_ROUTE_MARGIN_M


def route_segments(a: np.ndarray, ab: np.ndarray, ab2: np.ndarray, seg_s: np.ndarray
                   ) -> tuple[list[tuple[float, ...]], tuple[np.ndarray, ...] | None]:
    """An ego route polyline's segments (starts ``a`` and vectors ``ab``, (P, 2); squared lengths ``ab2`` and
    start arc lengths ``seg_s``, (P,)) for :meth:`ScalarAdjudicator._route_projection`: as float rows
    ``(ax, ay, abx, aby, ab2, seg_s, sqrt(ab2))``, and, above ``ROUTE_SEGMENTS_NUMPY`` segments, as contiguous
    columns ``(ax, ay, abx, aby, ab2)`` (else None)."""
    rows = list(zip(a[:, 0].tolist(), a[:, 1].tolist(), ab[:, 0].tolist(), ab[:, 1].tolist(), ab2.tolist(),
                    seg_s.tolist(), np.sqrt(ab2).tolist(), strict=True))
    cols = None
    if ab2.shape[0] > ROUTE_SEGMENTS_NUMPY:
        cols = tuple(np.ascontiguousarray(c, dtype=np.float64) for c in (a[:, 0], a[:, 1], ab[:, 0], ab[:, 1], ab2))
    return rows, cols


__all__ = ["COLLISION_DISTANCE_M", "CONFLICT_ZONE_M", "MOVING_MPS", "OFF_ROUTE_MARGIN_M", "ROUTE_LATERAL_M",
           "ROUTE_SEGMENTS_NUMPY", "Adjudicator", "Collision", "RedEntry", "RolloutOutcome", "off_route_mark",
           "route_segments", "still_off_route"]
