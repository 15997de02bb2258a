"""The adjudicator's step as a kernel (the rules are described in :mod:`services.simulator.adjudicate`, which
holds the accumulators and builds the outcomes): red and amber entries, stops, travel time, closest
approaches on the ego route, collisions, and conflict-zone occupancy for the post-encroachment time."""

from __future__ import annotations

import math

import numpy as np

from lastv2x.core.catalogue import ROUTE_LATERAL_BAND_M
from services.simulator.info import PHASE_AMBER, PHASE_RED
from services.simulator.kernels import kernel
from services.simulator.kernels.signals import phase_code

COLLISION_DISTANCE_M = 4.5
MOVING_MPS = 0.5
ROUTE_LATERAL_M = ROUTE_LATERAL_BAND_M  # the catalogue's lateral band (Appendix D)
NEAR_RADIUS_M = 30.0  # closest approach is tracked within this radius
CONFLICT_ZONE_M = 2.5
STOP_MPS = 0.5
RESTART_MPS = 2.0
# A follower striking a FCW/EEBL ego counts within this long of the ego's braking on its application's warning
# (the follower's perception-reaction, ~1-1.5 s, and its braking to a stop from urban speed, ~2 s): the rear-end
# that an unwarranted warning (a phantom vehicle, a false hard brake) causes
REAR_STRIKE_WINDOW_S = 3.0

# rows of the per-row float accumulators (``acc`` (A, B)); NaN / inf = not yet
END_T, BAR_TIME, TRAVEL, CLOSEST, MIN_AGENT, COL_T, COL_D, COL_VE, COL_VO, RED_T = range(10)
N_ACC = 10
# rows of the per-row integer accumulators (``cnt`` (C, B))
AMBER, STOPS, CLOSEST_ID, COL_J, RED_G, MOVING, COLLIDED, DONE = range(8)
N_CNT = 8


@kernel
def distance(dx: float, dy: float) -> float:
    """``sqrt(dx^2 + dy^2)``: correctly rounded wherever it runs (``math.hypot`` is libm's compiled, CPython's own
    as Python, and the two differ in the last bit)."""
    return math.sqrt(dx * dx + dy * dy)


@kernel
def observe(t1: float, dt: float, s: np.ndarray, v: np.ndarray, alive: np.ndarray, xy: np.ndarray,
            crossed: np.ndarray, crossed_bar_s: np.ndarray, crossed_group: np.ndarray, front_prev: np.ndarray,
            active: np.ndarray, ego_length: np.ndarray, plans: np.ndarray, seg_a: np.ndarray, seg_ab: np.ndarray,
            seg_ab2: np.ndarray, seg_s: np.ndarray, ahead_only: np.ndarray, is_agent: np.ndarray,
            conflict_xy: np.ndarray, rear_open: np.ndarray, acc: np.ndarray, cnt: np.ndarray, enter: np.ndarray,
            exit_: np.ndarray) -> int:
    """Account for the step that ended at ``t1`` (the traffic state's arrays, (B, N)); ``active`` (B,)
    masks the rows still running. Updates ``acc``, ``cnt`` (rows above), ``enter`` / ``exit_`` (B, N) in
    place; a red entry of this step is left in ``acc[RED_T]`` / ``cnt[RED_G]`` (group -1: none) for the
    caller to collect. Returns how many rows entered on red.

    ``plans`` (4, B, G): cycle, green, amber, offset [s]; ``seg_*`` the ego route polyline's segments
    (starts and vectors (B, P, 2), squared lengths and start arc lengths (B, P)); ``conflict_xy`` (B, 2)
    the ego's conflict point (NaN none); ``rear_open`` (B,): the ego braked on its application's warning within
    ``REAR_STRIKE_WINDOW_S`` (an ahead-only row then also counts a vehicle behind striking it)."""
    nb, nn = s.shape
    n_red = 0
    for b in range(nb):
        cnt[RED_G, b] = -1
        live = active[b] and cnt[DONE, b] == 0
        if live:
            acc[END_T, b] = t1
        ego_alive = alive[b, 0]
        # red entries: the crossing instant interpolated inside the step, the true phase then
        if crossed[b, 0] and live:
            g = crossed_group[b, 0]
            front_new = s[b, 0] + ego_length[b] / 2
            fp = front_prev[b, 0]
            span = front_new - fp
            frac = (crossed_bar_s[b, 0] - fp) / (span if span >= 1e-9 else 1e-9)
            frac = frac if frac >= 0.0 else 0.0
            t_c = t1 - dt + dt * (frac if frac <= 1.0 else 1.0)
            if math.isnan(acc[BAR_TIME, b]):
                acc[BAR_TIME, b] = t_c
            if g >= 0:
                phase = phase_code(t_c, plans[0, b, g], plans[1, b, g], plans[2, b, g], plans[3, b, g])
                if phase == PHASE_RED:
                    acc[RED_T, b], cnt[RED_G, b] = t_c, g
                    n_red += 1
                elif phase == PHASE_AMBER:
                    cnt[AMBER, b] += 1
        # stops (hysteresis: a stop counts once the ego had exceeded RESTART_MPS again)
        v0 = v[b, 0]
        if live and cnt[MOVING, b] != 0 and v0 < STOP_MPS and ego_alive:
            cnt[STOPS, b] += 1
            cnt[MOVING, b] = 0
        if v0 > RESTART_MPS:
            cnt[MOVING, b] = 1
        # travel time: the ego left its route
        if live and not ego_alive and math.isnan(acc[TRAVEL, b]):
            acc[TRAVEL, b] = t1
        # proximity: vehicles near the ego, on its route (ahead of it, for the ahead-only applications)
        x0, y0 = xy[b, 0, 0], xy[b, 0, 1]
        if ego_alive and live:
            for j in range(1, nn):
                if not alive[b, j]:
                    continue
                d = distance(xy[b, j, 0] - x0, xy[b, j, 1] - y0)
                if not d < NEAR_RADIUS_M:
                    continue
                agent = is_agent[b, j]
                if not (d < acc[CLOSEST, b] or (d < acc[MIN_AGENT, b] and agent)
                        or (d < COLLISION_DISTANCE_M and cnt[COLLIDED, b] == 0)):
                    continue  # nothing it could update
                # its projection on the ego route polyline: the nearest segment (the first of equals)
                px, py = xy[b, j, 0], xy[b, j, 1]
                best, best_t, best_p = math.inf, 0.0, 0
                for p in range(seg_ab2.shape[1]):
                    aqx, aqy = px - seg_a[b, p, 0], py - seg_a[b, p, 1]
                    abx, aby = seg_ab[b, p, 0], seg_ab[b, p, 1]
                    tt = (aqx * abx + aqy * aby) / seg_ab2[b, p]
                    tt = tt if tt > 0.0 else 0.0
                    tt = tt if tt < 1.0 else 1.0
                    dd = distance(aqx - tt * abx, aqy - tt * aby)
                    if dd < best:
                        best, best_t, best_p = dd, tt, p
                s_on = seg_s[b, best_p] + best_t * math.sqrt(seg_ab2[b, best_p])
                if not best <= ROUTE_LATERAL_M:
                    continue
                if ahead_only[b] and not s_on > s[b, 0]:  # behind: it counts only striking a warned, braking ego
                    if rear_open[b] and cnt[COLLIDED, b] == 0 and d < COLLISION_DISTANCE_M and v[b, j] > MOVING_MPS:
                        cnt[COLLIDED, b], cnt[COL_J, b] = 1, j
                        acc[COL_T, b], acc[COL_D, b], acc[COL_VE, b], acc[COL_VO, b] = t1, d, v[b, 0], v[b, j]
                    continue
                if d < acc[CLOSEST, b]:
                    acc[CLOSEST, b], cnt[CLOSEST_ID, b] = d, j
                if agent and d < acc[MIN_AGENT, b]:
                    acc[MIN_AGENT, b] = d
                if cnt[COLLIDED, b] == 0 and d < COLLISION_DISTANCE_M:
                    ve, vo = v[b, 0], v[b, j]
                    striking = ve > MOVING_MPS if ahead_only[b] else (ve if ve > vo else vo) > MOVING_MPS
                    if striking:
                        cnt[COLLIDED, b], cnt[COL_J, b] = 1, j
                        acc[COL_T, b], acc[COL_D, b], acc[COL_VE, b], acc[COL_VO, b] = t1, d, ve, vo
        # conflict-zone occupancy (post-encroachment time)
        if live:
            cx, cy = conflict_xy[b, 0], conflict_xy[b, 1]
            for j in range(nn):
                if alive[b, j] and distance(xy[b, j, 0] - cx, xy[b, j, 1] - cy) < CONFLICT_ZONE_M:
                    if math.isnan(enter[b, j]):
                        enter[b, j] = t1
                    exit_[b, j] = t1
        if not ego_alive:
            cnt[DONE, b] = 1
    return n_red


__all__ = ["COLLISION_DISTANCE_M", "CONFLICT_ZONE_M", "MOVING_MPS", "NEAR_RADIUS_M", "REAR_STRIKE_WINDOW_S", "RESTART_MPS",
           "ROUTE_LATERAL_M", "STOP_MPS", "observe"]
