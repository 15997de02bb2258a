"""The traffic step as kernels (the model is described in :mod:`services.simulator.traffic`, which packs a
``Scene`` for them and wraps their results in a ``TrafficState``): :func:`decide` (leaders, signals, yields,
plans, advisories, stop bars, braking, IDM/IIDM, integration) and :func:`settle` (stop bars passed, routes
ended, positions, perception history).
"""

from __future__ import annotations

import math

import numpy as np

from lastv2x.core.catalogue import COMFORT_DECEL_MPS2, CONFLICT_WINDOW_S
from services.simulator.info import (
    BRAKE_FLAG_THRESHOLD_MPS2,
    HARD_BRAKE_THRESHOLD_MPS2,
    PHASE_AMBER,
    PHASE_GREEN,
)
from services.simulator.kernels import kernel

# ── the driver model's constants (Treiber & Kesting, Traffic Flow Dynamics, 2013, Table 11.2 ranges) ──
DECEL_MAX_MPS2 = 8.0  # braking limit, ~0.8 g on dry asphalt [m/s2]
STOP_BAR_GAP_M = 0.5  # front bumper standstill distance to a stop bar [m]
STOP_HOLD_M = 1.0  # a stopping vehicle this close to its stop point and slower than HOLD_SPEED holds [m]
HOLD_SPEED_MPS = 0.1  # [m/s]
GAP_FLOOR_M = 0.1  # gaps are floored here to keep (s*/s)^2 finite [m]
YIELD_EGO_MIN_SPEED_MPS = 1.0  # a yielding agent goes once the ego is (nearly) stopped [m/s]
ADVISORY_TAU_S = 1.5  # time constant of the ego tracking a lower advised speed [s]

# rows of the packed per-vehicle parameters (``Scene.k_drv``, float64 (F, B, N))
V_DESIRED, V_PLAN, ACCEL_MAX, DECEL_COMFORT, TIME_GAP, MIN_GAP, IIDM_EXP, INV_2SQRT_AB, BRAKE_T, BRAKE_DECEL, \
    HALF_LEN, LENGTH, CONFLICT_S, SIGHT, PERCEIVE, S_START, V_INITIAL, ROUTE_LEN, DECEL_EMERGENCY = range(19)
N_DRV = 19
# rows of the packed per-vehicle integers (``Scene.k_int``, int64 (I, B, N))
DELAY, OBEYS, YIELDS = range(3)
N_INT = 3


@kernel
def _leader(k: int, dt: float, b: int, i: int, s: np.ndarray, alive: np.ndarray, hist_s: np.ndarray,
            hist_v: np.ndarray, drv: np.ndarray, drv_i: np.ndarray, offset: np.ndarray, share: np.ndarray
            ) -> tuple[float, float]:
    """Vehicle (b, i)'s perceived leader: (bumper gap, speed), +inf gap none. Every vehicle j is perceived
    as it was ``delay_i`` steps ago, extrapolated at its then speed, mapped into i's arc length by the
    shared-geometry offset, and counts while j truly is on the shared run, alive and ahead of i; the
    nearest wins (the first of equals)."""
    h = hist_s.shape[0]
    d = drv_i[DELAY, b, i]
    row = (k - d) % h
    dd = d * dt
    m = i if offset.shape[1] > 1 else 0
    si = s[b, i]
    best, lead = math.inf, 0
    for j in range(s.shape[1]):
        sj = s[b, j]
        rel = hist_s[row, b, j] + hist_v[row, b, j] * dd + offset[b, m, j] - si
        if sj >= share[0, b, m, j] and sj <= share[1, b, m, j] and alive[b, j] and rel > 0.0 and rel < best:
            best, lead = rel, j
    return best - drv[HALF_LEN, b, i] - drv[HALF_LEN, b, lead], hist_v[row, b, lead]


@kernel
def leaders(k: int, dt: float, s: np.ndarray, alive: np.ndarray, hist_s: np.ndarray, hist_v: np.ndarray,
            drv: np.ndarray, drv_i: np.ndarray, offset: np.ndarray, share: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_leader` of every vehicle: (gap, speed) arrays (B, N)."""
    nb, nn = s.shape
    gap, v_lead = np.empty((nb, nn)), np.empty((nb, nn))
    for b in range(nb):
        for i in range(nn):
            gap[b, i], v_lead[b, i] = _leader(k, dt, b, i, s, alive, hist_s, hist_v, drv, drv_i, offset, share)
    return gap, v_lead


@kernel
def decide(k: int, t: float, dt: float, s: np.ndarray, v: np.ndarray, alive: np.ndarray, bar_s: np.ndarray,
           bar_group: np.ndarray, sig_stop: np.ndarray, sig_go: np.ndarray, braked_out: np.ndarray,
           hist_s: np.ndarray, hist_v: np.ndarray, drv: np.ndarray, drv_i: np.ndarray, offset: np.ndarray,
           share: np.ndarray, phase: np.ndarray, ego: np.ndarray, ego_stop: np.ndarray, agents: np.ndarray,
           agent_stop: np.ndarray, has_agents: bool, given: np.ndarray, has_given: bool
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every vehicle decides its acceleration from the state at ``t`` (step ``k``), then all integrate.

    ``s, v`` (B, N) [m, m/s], ``alive``, ``sig_stop``, ``sig_go``, ``braked_out`` (B, N) bool; ``bar_s``,
    ``bar_group`` the next stop bar (+inf / -1 none); ``hist_s, hist_v`` (H, B, N) the perception ring
    (step ``k`` at ``k % H``); ``drv`` / ``drv_i`` the packed parameters (rows above); ``offset`` (B, M, N)
    j's arc length in i's (NaN: no shared geometry), ``share`` (2, B, M, N) the shared run of j's arc length;
    ``phase`` (B, G) int8 true phases at ``t``; ``ego`` (2, B) the ego's speed target (NaN none) and braking
    demand (0 none) [m/s, m/s2], ``ego_stop`` (B,) stop at the next bar; ``agents`` (2, B, N) and
    ``agent_stop`` (B, N) the same for application-running agents (read only when ``has_agents``);
    ``given`` (2, B, N) the leaders' bumper gap and speed found elsewhere (the per-lane search; read only
    when ``has_given``), else all pairs are searched here.

    Returns ``(s_new, v_new, accel, sig_stop, sig_go, braked_out)`` before :func:`settle`.
    """
    nb, nn = s.shape
    s_new = np.empty((nb, nn))
    v_new = np.empty((nb, nn))
    acc_out = np.empty((nb, nn))
    ss_out = np.empty((nb, nn), np.bool_)
    sg_out = np.empty((nb, nn), np.bool_)
    bo_out = np.empty((nb, nn), np.bool_)
    inf = math.inf
    for b in range(nb):
        # the ego's approach to its conflict point, for the agents that yield to it
        ego_s, ego_v, ego_c = s[b, 0], v[b, 0], drv[CONFLICT_S, b, 0]
        ego_tc = (ego_c - ego_s) / (ego_v if ego_v > 0.1 else 0.1)
        coming = (ego_s < ego_c + drv[LENGTH, b, 0]) and ego_tc <= CONFLICT_WINDOW_S and ego_v > YIELD_EGO_MIN_SPEED_MPS
        for i in range(nn):
            vi, si, half = v[b, i], s[b, i], drv[HALF_LEN, b, i]
            # ── the leader, perceived delay_i steps ago and extrapolated at its then speed ──
            if has_given:
                gap, v_lead = given[0, b, i], given[1, b, i]
            else:
                gap, v_lead = _leader(k, dt, b, i, s, alive, hist_s, hist_v, drv, drv_i, offset, share)
            if gap > drv[PERCEIVE, b, i]:  # beyond the driver's perception range: not seen
                gap = inf
            # ── signals: stop if it can at amber (comfortably) / red (hard), else go; latched ──
            d_bar = bar_s[b, i] - (si + half)
            g = bar_group[b, i]
            ph = phase[b, g] if g >= 0 else PHASE_GREEN
            green = ph == PHASE_GREEN
            need = vi * vi / (2.0 * (d_bar if d_bar > 0.01 else 0.01))
            can = need <= (COMFORT_DECEL_MPS2 if ph == PHASE_AMBER else DECEL_MAX_MPS2)
            open_ = not (sig_stop[b, i] or sig_go[b, i] or green) and d_bar <= drv[SIGHT, b, i]
            ss = (sig_stop[b, i] or (open_ and can)) and not green
            sg = (sig_go[b, i] or (open_ and not can)) and not green
            stopping = (ss and drv_i[OBEYS, b, i] != 0) or (drv_i[YIELDS, b, i] != 0 and coming and d_bar > 0.0)
            stop_cmd = False  # an application's stop: activation 0
            if i == 0 and ego_stop[b]:
                stop_cmd = True
            if has_agents and agent_stop[b, i]:
                stop_cmd = True
            stopping = stopping or stop_cmd
            # ── desired speed: planned arrival, an agent's application, the ego's advisory ──
            v0 = drv[V_DESIRED, b, i]
            if math.isfinite(drv[V_PLAN, b, i]) and si < drv[CONFLICT_S, b, i]:
                v0 = drv[V_PLAN, b, i]
            if has_agents and not math.isnan(agents[0, b, i]):
                v0 = agents[0, b, i]
            advised = i == 0 and not math.isnan(ego[0, b])
            if advised:
                v0 = ego[0, b]
            # ── IDM with the IIDM free-road term above the desired speed ──
            a_max, b_comf = drv[ACCEL_MAX, b, i], drv[DECEL_COMFORT, b, i]
            ratio = vi / (v0 if v0 > 0.1 else 0.1)
            r2 = ratio * ratio
            free = a_max * (1.0 - r2 * r2)
            if ratio > 1.0:
                free = -b_comf * (1.0 - (ratio if ratio > 1e-9 else 1e-9) ** (-drv[IIDM_EXP, b, i]))
            dyn = vi * drv[TIME_GAP, b, i] + vi * (vi - v_lead) * drv[INV_2SQRT_AB, b, i]
            s_star = drv[MIN_GAP, b, i] + (0.0 if 0.0 > dyn else dyn)
            ratio_s = s_star / (gap if gap > GAP_FLOOR_M else GAP_FLOOR_M)
            acc = free - a_max * ratio_s * ratio_s
            # a person brakes for what it perceives no harder than its emergency deceleration (the IDM term alone;
            # stop bars, scripted brakes and applications' braking demands keep theirs)
            acc = acc if acc > -drv[DECEL_EMERGENCY, b, i] else -drv[DECEL_EMERGENCY, b, i]
            if advised and vi > ego[0, b]:  # an advisory is followed firmly: first-order, comfortable braking
                track = (ego[0, b] - vi) / ADVISORY_TAU_S
                track = track if track > -b_comf else -b_comf
                acc = acc if acc < track else track
            # ── stop bar: the constant deceleration that ends at it, once it reaches the activation level ──
            if stopping and math.isfinite(d_bar):
                activation = 0.0 if stop_cmd else b_comf
                d_eff = d_bar - STOP_BAR_GAP_M
                a_req = vi * vi / (2.0 * (d_eff if d_eff > 1e-3 else 1e-3))
                a_bar = -a_req if a_req >= activation else inf
                if d_eff <= 0.0 or (d_eff <= STOP_HOLD_M and vi <= HOLD_SPEED_MPS):  # overran / holding
                    a_bar = -vi / dt
                acc = acc if acc < a_bar else a_bar
            # ── scripted hard brake (then stays stopped), the ego's and agents' braking demands ──
            bo = braked_out[b, i]
            if t >= drv[BRAKE_T, b, i]:
                a_brk = -drv[BRAKE_DECEL, b, i]
                acc = acc if acc < a_brk else a_brk
                bo = bo or vi <= 0.0
            if i == 0 and ego[1, b] > 0:
                acc = acc if acc < -ego[1, b] else -ego[1, b]
            if has_agents and agents[1, b, i] > 0:
                acc = acc if acc < -agents[1, b, i] else -agents[1, b, i]
            acc = acc if acc > -DECEL_MAX_MPS2 else -DECEL_MAX_MPS2
            acc = acc if acc < a_max else a_max
            if bo or not alive[b, i]:
                acc = 0.0
            # ── integrate (a vehicle that would reverse stops where its speed reaches 0) ──
            vn = vi + acc * dt
            ds = vi * dt + 0.5 * acc * (dt * dt)
            if vn < 0.0:
                neg = -acc
                ds = vi * vi / (2.0 * (neg if neg > 1e-9 else 1e-9))
                vn = 0.0
            s_new[b, i], v_new[b, i], acc_out[b, i] = si + ds, vn, acc
            ss_out[b, i], sg_out[b, i], bo_out[b, i] = ss, sg, bo
    return s_new, v_new, acc_out, ss_out, sg_out, bo_out


@kernel
def _position(b: int, i: int, s_m: float, length_m: float, route_xy: np.ndarray, route_heading: np.ndarray,
              route_base: np.ndarray, k_max: float, inv_step: float, xy: np.ndarray) -> float:
    """Vehicle (b, i) at arc length ``s_m`` on its resampled route (clamped to it): its position into ``xy[b, i]``
    (a lerp between samples), its heading returned (the sample's)."""
    sc = s_m if s_m > 0.0 else 0.0
    u = (sc if sc < length_m else length_m) * inv_step
    i0 = int(u if u < k_max else k_max)
    f = u - i0
    idx = route_base[b, i] + i0
    for c in range(2):
        p0 = route_xy[idx, c]
        xy[b, i, c] = p0 + f * (route_xy[idx + 1, c] - p0)
    return route_heading[idx]


@kernel
def positions(s_m: np.ndarray, length_m: np.ndarray, route_xy: np.ndarray, route_heading: np.ndarray,
              route_base: np.ndarray, k_max: float, inv_step: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_position` of every vehicle: (xy (B, N, 2), heading (B, N))."""
    nb, nn = s_m.shape
    xy, heading = np.empty((nb, nn, 2)), np.empty((nb, nn))
    for b in range(nb):
        for i in range(nn):
            heading[b, i] = _position(b, i, s_m[b, i], length_m[b, i], route_xy, route_heading, route_base, k_max,
                                      inv_step, xy)
    return xy, heading


# rows of the state that :func:`settle` returns: floats (F, B, N), flags (L, B, N), integers (I, B, N)
OUT_S, OUT_V, OUT_A, OUT_HEADING, OUT_BAR_S, OUT_FRONT_PREV, OUT_CROSSED_BAR_S, OUT_STOP_BAR_D = range(8)  # the
# first four are what a frame reads as lists each step (traffic.packed_lists)
N_OUT_F = 8
OUT_ALIVE, OUT_SIG_STOP, OUT_SIG_GO, OUT_BRAKED_OUT, OUT_CROSSED, OUT_BRAKE_FLAG, OUT_HARD_BRAKE = range(7)
N_OUT_L = 7
OUT_NEXT_CROSSING, OUT_BAR_GROUP, OUT_CROSSED_GROUP = range(3)
N_OUT_I = 3


@kernel
def settle(k: int, s_old: np.ndarray, s_new: np.ndarray, v_new: np.ndarray, acc: np.ndarray, alive: np.ndarray,
           next_crossing: np.ndarray, bar_s: np.ndarray, bar_group: np.ndarray, sig_stop: np.ndarray,
           sig_go: np.ndarray, braked_out: np.ndarray, drv: np.ndarray, bars_s: np.ndarray, bars_group: np.ndarray,
           respawn: bool, route_xy: np.ndarray, route_heading: np.ndarray, route_base: np.ndarray, k_max: float,
           inv_step: float, hist_s: np.ndarray, hist_v: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The state at step ``k + 1`` once every vehicle is at ``s_new`` with ``v_new`` after accelerating at
    ``acc``: stop bars passed (their latches cleared), routes ended (the vehicle stops existing, or
    re-enters at its start when ``respawn``), positions and headings on the resampled routes (``route_xy``
    (samples, 2), sample ``k`` of vehicle (b, i) at ``route_base[b, i] + k``, every ``1 / inv_step`` m),
    the brake-light and hard-braking flags, and the perception ring (written in place).

    Returns fresh ``(floats (N_OUT_F, B, N), xy (B, N, 2), flags (N_OUT_L, B, N), integers (N_OUT_I, B, N))``,
    rows ``OUT_*``: one array per kind, so a step hands back four objects, not sixteen."""
    nb, nn = s_new.shape
    h = hist_s.shape[0]
    fl = np.empty((N_OUT_F, nb, nn))
    xy = np.empty((nb, nn, 2))
    lg = np.zeros((N_OUT_L, nb, nn), np.bool_)
    it = np.empty((N_OUT_I, nb, nn), np.int64)
    for b in range(nb):
        for i in range(nn):
            half = drv[HALF_LEN, b, i]
            s2, v2, live = s_new[b, i], v_new[b, i], alive[b, i]
            nc, bar, grp = next_crossing[b, i], bar_s[b, i], bar_group[b, i]
            ss, sg = sig_stop[b, i], sig_go[b, i]
            front = s2 + half
            fl[OUT_FRONT_PREV, b, i] = s_old[b, i] + half
            fl[OUT_CROSSED_BAR_S, b, i], it[OUT_CROSSED_GROUP, b, i] = math.inf, -1
            if front >= bar:
                lg[OUT_CROSSED, b, i] = True
                fl[OUT_CROSSED_BAR_S, b, i], it[OUT_CROSSED_GROUP, b, i] = bar, grp
                nc += 1
                bar, grp = bars_s[b, i, nc], bars_group[b, i, nc]
                ss, sg = False, False
            if live and front >= drv[ROUTE_LEN, b, i]:
                if respawn:
                    s2, v2, nc = drv[S_START, b, i], drv[V_INITIAL, b, i], 0
                    bar, grp = bars_s[b, i, 0], bars_group[b, i, 0]
                else:
                    live, v2 = False, 0.0
            fl[OUT_HEADING, b, i] = _position(b, i, s2, drv[ROUTE_LEN, b, i], route_xy, route_heading, route_base,
                                              k_max, inv_step, xy)
            a = acc[b, i]
            fl[OUT_S, b, i], fl[OUT_V, b, i], fl[OUT_A, b, i] = s2, v2, a
            fl[OUT_BAR_S, b, i] = bar
            fl[OUT_STOP_BAR_D, b, i] = bar - (s2 + half)
            it[OUT_NEXT_CROSSING, b, i], it[OUT_BAR_GROUP, b, i] = nc, grp
            lg[OUT_ALIVE, b, i], lg[OUT_SIG_STOP, b, i], lg[OUT_SIG_GO, b, i] = live, ss, sg
            lg[OUT_BRAKED_OUT, b, i] = braked_out[b, i]
            lg[OUT_BRAKE_FLAG, b, i] = a <= -BRAKE_FLAG_THRESHOLD_MPS2 and live
            lg[OUT_HARD_BRAKE, b, i] = a <= -HARD_BRAKE_THRESHOLD_MPS2 and v2 > 0.0 and live
            hist_s[(k + 1) % h, b, i] = s2
            hist_v[(k + 1) % h, b, i] = v2
    return fl, xy, lg, it


@kernel
def advance(k: int, t: float, dt: float, s: np.ndarray, v: np.ndarray, alive: np.ndarray, next_crossing: np.ndarray,
            bar_s: np.ndarray, bar_group: np.ndarray, sig_stop: np.ndarray, sig_go: np.ndarray,
            braked_out: np.ndarray, hist_s: np.ndarray, hist_v: np.ndarray, drv: np.ndarray, drv_i: np.ndarray,
            offset: np.ndarray, share: np.ndarray, phase: np.ndarray, ego: np.ndarray, ego_stop: np.ndarray,
            agents: np.ndarray, agent_stop: np.ndarray, has_agents: bool, given: np.ndarray, has_given: bool,
            bars_s: np.ndarray, bars_group: np.ndarray, respawn: bool, route_xy: np.ndarray,
            route_heading: np.ndarray, route_base: np.ndarray, k_max: float, inv_step: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One whole step: :func:`decide`, then :func:`settle` (arguments as theirs)."""
    s_new, v_new, acc, ss, sg, bo = decide(k, t, dt, s, v, alive, bar_s, bar_group, sig_stop, sig_go, braked_out,
                                           hist_s, hist_v, drv, drv_i, offset, share, phase, ego, ego_stop, agents,
                                           agent_stop, has_agents, given, has_given)
    return settle(k, s, s_new, v_new, acc, alive, next_crossing, bar_s, bar_group, ss, sg, bo, drv, bars_s,
                  bars_group, respawn, route_xy, route_heading, route_base, k_max, inv_step, hist_s, hist_v)


__all__ = ["advance", "decide", "leaders", "positions", "settle"]
