"""The traffic step and the adjudicator on Python floats, for small batches (paired execution).

:func:`services.simulator.traffic.step` and :class:`~services.simulator.adjudicate.Adjudicator`
are vectorized over ``(B, N)``; paired execution steps ``B = 2`` rollouts of 1-3 vehicles,
where every numpy call (~1 us each, ~150 of them per step) costs far more than the
arithmetic. :class:`ScalarTraffic` and :class:`ScalarAdjudicator` do the same computation
element by element on flat Python lists, in the same order, so they give **bit-identical**
results (``tests/simulator/test_engine_parity.py`` steps both side by side under random ego commands
and compares every field of every step; the golden outcome hashes cover both engines):

* ``+ - * /``, ``sqrt`` and ``%`` are IEEE-identical in Python and numpy, and every expression
  keeps numpy's evaluation order (``a - b - c`` is ``(a - b) - c`` in both);
* ``np.minimum(a, b)`` / ``np.maximum(a, b)`` return ``b`` on ties (signed zeros): :func:`_min`
  / :func:`_max` do the same (no NaN reaches them); global conditions of the vectorized step
  (``if stops.any(): v_new = np.maximum(v_new, 0.0)``) stay global;
* ``np.power`` (SIMD on AVX-512 machines) and ``np.hypot`` (libm) are *not* what Python's
  ``**`` / ``math.hypot`` compute: the IIDM term calls ``np.power`` on scalars (same loop, same
  bits), and distances are decided on squared lengths with a 1e-9 relative guard band, calling
  ``np.hypot`` only where a value is kept or a comparison falls inside the band.

**Maintenance**: a change to the traffic model or the adjudication rules goes into both
``traffic.py`` / ``adjudicate.py`` and here; ``test_engine_parity.py`` fails until they agree again.
:func:`use_scalar` picks the engine by batch size (numpy wins from a few dozen vehicles on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from lastv2x.core.catalogue import COMFORT_DECEL_MPS2, CONFLICT_WINDOW_S
from lastv2x.core.program import ScenarioProgram
from services.simulator.adjudicate import (
    COLLISION_DISTANCE_M,
    CONFLICT_ZONE_M,
    MOVING_MPS,
    NEAR_RADIUS_M,
    RESTART_MPS,
    ROUTE_LATERAL_M,
    STOP_MPS,
    Adjudicator,
    Collision,
    RedEntry,
    off_route_mark,
    route_segments,
    still_off_route,
)
from services.simulator.info import (
    BRAKE_FLAG_THRESHOLD_MPS2,
    HARD_BRAKE_THRESHOLD_MPS2,
    PHASE_AMBER,
    PHASE_GREEN,
    PHASE_RED,
)
from services.simulator.traffic import (
    ADVISORY_TAU_S,
    IDM,
    YIELD_EGO_MIN_SPEED_MPS,
    Scene,
    TrafficState,
)

SCALAR_MAX_VEHICLES = 64  # B x N up to which the scalar engine beats numpy (measured: ~8 paired executions)
_BAND = 1e-9  # relative guard band of squared-distance decisions
_INF = math.inf
_SIG_EPS = 1e-9  # services.simulator.signals._EPS
_np_power = np.power
_np_hypot = np.hypot


def use_scalar(scene: Scene) -> bool:
    b, n = scene.shape
    return b * n <= SCALAR_MAX_VEHICLES


def _min(a: float, b: float) -> float:
    return a if a < b else b  # np.minimum: b on ties


def _max(a: float, b: float) -> float:
    return a if a > b else b  # np.maximum: b on ties


def _hypot(x: float, y: float) -> float:
    return float(_np_hypot(x, y))


def _below(dx: float, dy: float, limit: float, limit2: float) -> tuple[bool, float | None]:
    """``np.hypot(dx, dy) < limit`` without the hypot where the squared length decides it.
    Returns (below, the exact hypot when it was computed)."""
    q = dx * dx + dy * dy
    if q < limit2 * (1.0 - _BAND):
        return True, None
    if q > limit2 * (1.0 + _BAND):
        return False, None
    h = _hypot(dx, dy)
    return h < limit, h


class SignalRows:
    """Per-row fixed-time plans as lists: ``state(t)`` is :meth:`SignalTable.state` on floats."""

    def __init__(self, scene: Scene):
        sig = scene.signals
        self.cycle = sig.cycle_s.tolist()
        self.green = sig.green_s.tolist()
        self.amber = sig.amber_s.tolist()
        self.offset = sig.offset_s.tolist()
        # (offset, cycle, green, green + amber, green - eps, green + amber - eps) per group, per row
        self.plans = [[(o, c, g, g + a, g - _SIG_EPS, (g + a) - _SIG_EPS)
                       for c, g, a, o in zip(cy, gr, am, of, strict=True)]
                      for cy, gr, am, of in zip(self.cycle, self.green, self.amber, self.offset, strict=True)]

    def state(self, t_s: float) -> tuple[list[list[int]], list[list[float]], list[list[float]]]:
        phase, ttc, ttg = [], [], []
        for plans in self.plans:
            p_row, c_row, g_row = [], [], []
            for o, c, g, ga, g_eps, ga_eps in plans:
                u = (t_s + o) % c
                if u < g_eps:
                    p_row.append(PHASE_GREEN)
                    c_row.append(g - u)
                    g_row.append(0.0)
                else:
                    cu = c - u
                    g_row.append(cu)
                    if u < ga_eps:
                        p_row.append(PHASE_AMBER)
                        c_row.append(ga - u)
                    else:
                        p_row.append(PHASE_RED)
                        c_row.append(cu)
            phase.append(p_row)
            ttc.append(c_row)
            ttg.append(g_row)
        return phase, ttc, ttg

    def phase(self, b: int, g: int, t_s: float) -> int:
        o, c, _g, _ga, g_eps, ga_eps = self.plans[b][g]
        u = (t_s + o) % c
        if u < g_eps:
            return PHASE_GREEN
        return PHASE_AMBER if u < ga_eps else PHASE_RED


class ScalarTraffic:
    """:func:`services.simulator.traffic.step` on flat lists (index ``b * N + i``).

    State attributes mirror :class:`TrafficState` (flat lists of length ``B * N``; ``x``/``y``
    instead of ``xy``); :meth:`state` materializes a :class:`TrafficState`."""

    def __init__(self, scene: Scene, st: TrafficState):
        b, n = scene.shape
        self.scene = scene
        self.B, self.N = b, n
        self.dt = scene.dt_s
        fl = self._flat
        self.half = fl(scene.half_len)
        self.length = fl(scene.length_m)
        self.offset = scene.offset.reshape(b * n, n).tolist()
        self.share_lo = scene.share_lo.reshape(b * n, n).tolist()
        self.share_hi = scene.share_hi.reshape(b * n, n).tolist()
        c1 = scene.bar_s.shape[2]
        self.bar_tab = scene.bar_s.reshape(b * n, c1).tolist()
        self.grp_tab = scene.bar_group.reshape(b * n, c1).tolist()
        self.conflict = fl(scene.conflict_s)
        self.v_desired = fl(scene.v_desired)
        self.v_plan = fl(scene.v_plan)
        self.has_plan = fl(scene.has_plan)
        self.s_start = fl(scene.s_start)
        self.v_initial = fl(scene.v_initial)
        self.time_gap = fl(scene.time_gap_s)
        self.min_gap = fl(scene.min_gap_m)
        self.accel_max = fl(scene.accel_max)
        self.decel_comfort = fl(scene.decel_comfort)
        self.neg_decel_comfort = fl(-scene.decel_comfort)
        self.inv_2sqrt_ab = fl(scene.inv_2sqrt_ab)
        self.neg_iidm_exp = fl(-scene.iidm_exp)
        self.brake_t = fl(scene.brake_t_s)
        self.neg_brake_decel = fl(-scene.brake_decel)
        self.obeys = fl(scene.obeys_signals)
        self.yields = fl(scene.yields_to_ego)
        self.delay = fl(scene.delay_steps)
        self.delay_s = [d * self.dt for d in self.delay]
        b_n = b * n
        self.sight = [_INF] * b_n if scene.sight_m is None else fl(scene.sight_m)
        self.perceive = [_INF] * b_n if scene.perceive_m is None else fl(scene.perceive_m)
        self.any_signal, self.any_yield = scene.any_signal, scene.any_yield
        self.any_plan, self.any_brake = scene.any_plan, scene.any_brake
        self.respawn = scene.respawn
        rt = scene.routes
        self.route_len = fl(rt.length_m)
        self.rx = rt._xy2[:, 0].tolist()  # type: ignore[attr-defined]
        self.ry = rt._xy2[:, 1].tolist()  # type: ignore[attr-defined]
        self.rh = rt._h.tolist()  # type: ignore[attr-defined]
        self.rbase = fl(rt._base)  # type: ignore[attr-defined]
        self.inv_step = rt._inv_step  # type: ignore[attr-defined]
        self.kmax = rt._kmax  # type: ignore[attr-defined]
        # dynamic state
        self.k = st.step
        self.t = st.t_s
        self.s = fl(st.s)
        self.v = fl(st.v)
        self.a = fl(st.a)
        self.alive = fl(st.alive)
        self.nc = fl(st.next_crossing)
        self.bar = fl(st.bar_s)
        self.grp = fl(st.bar_group)
        self.sig_stop = fl(st.sig_stop)
        self.sig_go = fl(st.sig_go)
        self.braked_out = fl(st.braked_out)
        self.x = fl(st.xy[..., 0])
        self.y = fl(st.xy[..., 1])
        self.heading = fl(st.heading)
        self.hist_s = [fl(h) for h in st.hist_s]
        self.hist_v = [fl(h) for h in st.hist_v]
        self.crossed = fl(st.crossed)
        self.front_prev = fl(st.front_prev)
        self.crossed_bar = fl(st.crossed_bar_s)
        self.crossed_grp = fl(st.crossed_group)
        self._prepare()

    @staticmethod
    def _flat(a: np.ndarray) -> list:
        return np.asarray(a).ravel().tolist()

    # ------------------------------------------------------------------ step
    def _prepare(self) -> None:
        """Static per-vehicle tuples (one unpack per vehicle and step instead of ~20 list reads)."""
        n = self.N
        self.lead_cands = []  # per observer: (flat j, offset, lo, hi) of the vehicles sharing geometry
        for i in range(self.B * n):
            base = (i // n) * n
            self.lead_cands.append(tuple(
                (base + jj, o, lo, hi) for jj, (o, lo, hi) in enumerate(zip(
                    self.offset[i], self.share_lo[i], self.share_hi[i], strict=True)) if not math.isnan(o)))
        self.veh = [
            (self.delay[i], self.delay_s[i], self.v_desired[i], bool(self.has_plan[i]) and self.any_plan,
             self.v_plan[i], self.conflict[i], self.accel_max[i], self.min_gap[i], self.time_gap[i],
             self.inv_2sqrt_ab[i], self.neg_iidm_exp[i], self.neg_decel_comfort[i], self.decel_comfort[i],
             bool(self.obeys[i]), bool(self.yields[i]), self.lead_cands[i], self.sight[i], self.perceive[i])
            for i in range(self.B * n)]

    def step(self, stop_at_bar: Sequence[bool], v_target: Sequence[float], brake_cmd: Sequence[float],
             phase: Sequence[Sequence[int]]) -> None:
        """One :func:`traffic.step` with ``EgoControl(stop_at_bar, v_target, brake_cmd)`` and the
        true phases ``phase`` (B rows of G codes) at the current time.

        Global conditions of the vectorized step are kept global: ``v_new`` is floored at 0 for
        every vehicle once any vehicle would reverse (that turns a -0.0 into 0.0)."""
        B, N, dt, t, k = self.B, self.N, self.dt, self.t, self.k
        S, V, alive, half, bar, grp = self.s, self.v, self.alive, self.half, self.bar, self.grp
        hist_s, hist_v = self.hist_s, self.hist_v
        hlen = len(hist_s)
        any_signal, any_yield, any_brake = self.any_signal, self.any_yield, self.any_brake
        sig_stop, sig_go, braked_out = list(self.sig_stop), list(self.sig_go), list(self.braked_out)
        brake_t, neg_bd, veh = self.brake_t, self.neg_brake_decel, self.veh
        n_tot = B * N
        acc = [0.0] * n_tot
        v_new = [0.0] * n_tot
        ds = [0.0] * n_tot
        dt2 = dt * dt
        reverse = False
        isfinite, isnan = math.isfinite, math.isnan
        neg_dmax, dmax = -IDM.DECEL_MAX_MPS2, IDM.DECEL_MAX_MPS2
        GAP_FLOOR = IDM.GAP_FLOOR_M  # noqa: N806
        i = -1
        for bi in range(B):
            base = bi * N
            stop_cmd = bool(stop_at_bar[bi])
            vt = v_target[bi]
            advised = not isnan(vt)
            bc = brake_cmd[bi]
            ph_row = phase[bi] if any_signal else ()
            coming = False
            if any_yield:
                ego_s, ego_v = S[base], V[base]
                ego_c = self.conflict[base]
                ego_tc = (ego_c - ego_s) / _max(ego_v, 0.1)
                coming = (ego_s < ego_c + self.length[base]) and (ego_tc <= CONFLICT_WINDOW_S) and (
                    ego_v > YIELD_EGO_MIN_SPEED_MPS)
            for ii in range(N):
                i += 1
                (delay, delay_s, v0, plan, v_plan, conflict, am, min_gap, time_gap, inv2, neg_exp, neg_dc, dc,
                 obeys, yields, cands, sight, perceive) = veh[i]
                v = V[i]
                s_i = S[i]
                ego = ii == 0
                # ── leader (traffic.leaders): first minimum of the perceived gaps ──
                r = (k - delay) % hlen
                hs, hv = hist_s[r], hist_v[r]
                best, jb = _INF, base
                for j, off, lo, hi in cands:
                    sj = S[j]
                    if sj >= lo and sj <= hi and alive[j]:
                        rel = hs[j] + hv[j] * delay_s + off - s_i
                        if rel > 0.0 and rel < best:
                            best, jb = rel, j
                gap = best - half[i] - half[jb]
                if gap > perceive:  # beyond the driver's perception range
                    gap = _INF
                v_lead = hv[jb]
                d_bar = bar[i] - (s_i + half[i])
                stopping = stop_cmd and ego
                # ── signals ──
                if any_signal:
                    g = grp[i]
                    ph = ph_row[g] if g >= 0 else PHASE_GREEN
                    green = ph == PHASE_GREEN
                    ss, sg = sig_stop[i], sig_go[i]
                    if green:
                        ss = sg = False
                    elif not (ss or sg) and d_bar <= sight:
                        need = v * v / (2.0 * _max(d_bar, 0.01))
                        if need <= (COMFORT_DECEL_MPS2 if ph == PHASE_AMBER else dmax):
                            ss = True
                        else:
                            sg = True
                    sig_stop[i], sig_go[i] = ss, sg
                    stopping = stopping or (ss and obeys)
                if coming and yields and d_bar > 0.0:
                    stopping = True
                # ── desired speed ──
                if plan and s_i < conflict:
                    v0 = v_plan
                if advised and ego:
                    v0 = vt
                # ── IDM / IIDM (traffic._free_and_follow) ──
                ratio = v / (v0 if v0 > 0.1 else 0.1)
                if ratio > 1.0:
                    free = neg_dc * (1.0 - float(_np_power(_max(ratio, 1e-9), neg_exp)))
                else:
                    r2 = ratio * ratio
                    free = am * (1.0 - r2 * r2)
                x = v * time_gap + v * (v - v_lead) * inv2
                s_star = min_gap + (0.0 if 0.0 > x else x)
                ratio_s = s_star / (gap if gap > GAP_FLOOR else GAP_FLOOR)
                a_i = free - am * ratio_s * ratio_s
                if advised and ego and v > vt:
                    a_i = _min(a_i, _max((vt - v) / ADVISORY_TAU_S, neg_dc))
                if stopping and isfinite(d_bar):
                    activation = 0.0 if (ego and stop_cmd) else dc
                    d_eff = d_bar - IDM.STOP_BAR_GAP_M
                    a_req = v * v / (2.0 * _max(d_eff, 1e-3))
                    a_bar = -a_req if a_req >= activation else _INF
                    if d_eff <= 0.0 or (d_eff <= IDM.STOP_HOLD_M and v <= IDM.HOLD_SPEED_MPS):
                        a_bar = -v / dt
                    a_i = _min(a_i, a_bar)
                bo = braked_out[i]
                if any_brake:
                    braking = t >= brake_t[i]
                    if braking:
                        a_i = _min(a_i, neg_bd[i])
                        if v <= 0.0:
                            bo = braked_out[i] = True
                if ego and bc > 0:
                    a_i = _min(a_i, -bc)
                a_i = a_i if a_i > neg_dmax else neg_dmax
                a_i = a_i if a_i < am else am
                if bo or not alive[i]:
                    a_i = 0.0
                acc[i] = a_i
                # ── integrate ──
                vn = v + a_i * dt
                if vn < 0.0:
                    reverse = True
                    ds[i] = v * v / (2.0 * _max(-a_i, 1e-9))
                else:
                    ds[i] = v * dt + 0.5 * a_i * dt2
                v_new[i] = vn
        if reverse:
            v_new = [_max(x, 0.0) for x in v_new]
        s_new = [0.0] * n_tot
        crossed = [False] * n_tot
        crossed_bar = [_INF] * n_tot
        crossed_grp = [-1] * n_tot
        front_prev = [0.0] * n_tot
        nc, bar_n, grp_n, alive_n = list(self.nc), list(bar), list(grp), list(alive)
        xs, ys, hs_ = [0.0] * n_tot, [0.0] * n_tot, [0.0] * n_tot
        rx, ry, rh, rbase, inv, kmax = self.rx, self.ry, self.rh, self.rbase, self.inv_step, self.kmax
        route_len, respawn = self.route_len, self.respawn
        for i in range(n_tot):
            s_old = S[i]
            h = half[i]
            sn = s_old + ds[i]
            front = sn + h
            front_prev[i] = s_old + h
            if front >= bar[i]:  # a bar behind is re-gathered at the same index: unchanged
                crossed[i] = True
                crossed_bar[i], crossed_grp[i] = bar[i], grp[i]
                c = nc[i] = nc[i] + 1
                bar_n[i], grp_n[i] = self.bar_tab[i][c], self.grp_tab[i][c]
                sig_stop[i] = sig_go[i] = False
            ln = route_len[i]
            if alive[i] and front >= ln:
                if respawn:
                    sn = self.s_start[i]
                    v_new[i] = self.v_initial[i]
                    nc[i] = 0
                    bar_n[i], grp_n[i] = self.bar_tab[i][0], self.grp_tab[i][0]
                else:
                    alive_n[i] = False
                    v_new[i] = 0.0
            s_new[i] = sn
            # route lookup (RouteTable.lookup)
            u = sn if sn > 0.0 else 0.0
            u = (u if u < ln else ln) * inv
            i0 = int(u if u < kmax else kmax)
            f = u - i0
            idx = rbase[i] + i0
            x0, y0 = rx[idx], ry[idx]
            xs[i] = x0 + f * (rx[idx + 1] - x0)
            ys[i] = y0 + f * (ry[idx + 1] - y0)
            hs_[i] = rh[idx]
        k1 = k + 1
        hist_s[k1 % hlen] = s_new
        hist_v[k1 % hlen] = v_new
        self.front_prev = front_prev
        self.k, self.t = k1, k1 * dt
        self.s, self.v, self.a, self.alive = s_new, v_new, acc, alive_n
        self.nc, self.bar, self.grp = nc, bar_n, grp_n
        self.sig_stop, self.sig_go, self.braked_out = sig_stop, sig_go, braked_out
        self.x, self.y, self.heading = xs, ys, hs_
        self.crossed, self.crossed_bar, self.crossed_grp = crossed, crossed_bar, crossed_grp

    # ------------------------------------------------------------------ views
    def brake_flag(self, lo: int = 0, hi: int | None = None) -> list[bool]:
        """The brake flags of the flat vehicles ``lo:hi`` (all by default)."""
        thr = -BRAKE_FLAG_THRESHOLD_MPS2
        return [a <= thr and al for a, al in zip(self.a[lo:hi], self.alive[lo:hi], strict=True)]

    def hard_brake(self) -> list[bool]:
        """:func:`traffic.hard_brake_event` on the lists."""
        thr = -HARD_BRAKE_THRESHOLD_MPS2
        return [a <= thr and v > 0.0 and al for a, v, al in zip(self.a, self.v, self.alive, strict=True)]

    def state(self) -> TrafficState:
        """The state as a :class:`TrafficState` (numpy arrays; history rows copied)."""
        b, n = self.B, self.N
        f = lambda x, dt=np.float64: np.array(x, dtype=dt).reshape(b, n)  # noqa: E731
        xy = np.stack([f(self.x), f(self.y)], axis=-1)
        return TrafficState(
            self.k, self.t, f(self.s), f(self.v), f(self.a), f(self.alive, bool), f(self.nc, np.int64),
            f(self.bar), f(self.grp, np.int64), f(self.sig_stop, bool), f(self.sig_go, bool),
            f(self.braked_out, bool), xy, f(self.heading), np.array(self.hist_s).reshape(-1, b, n),
            np.array(self.hist_v).reshape(-1, b, n), f(self.crossed, bool), f(self.front_prev), f(self.crossed_bar),
            f(self.crossed_grp, np.int64))


class ScalarAdjudicator(Adjudicator):
    """:meth:`Adjudicator.observe` on a :class:`ScalarTraffic` (lists); :meth:`outcome` is inherited
    (the accumulators are written back to the arrays by :meth:`sync` first)."""

    def __init__(self, scene: Scene, programs: Sequence[ScenarioProgram]):
        super().__init__(scene, programs)
        b, n = scene.shape
        self.B, self.N = b, n
        self.signal_rows = SignalRows(scene)
        self.l_amber = [0] * b
        self.l_stops = [0] * b
        self.l_moving = [True] * b
        self.l_travel = [math.nan] * b
        self.l_bar_time = [math.nan] * b
        self.l_closest = [_INF] * b
        self.l_closest_id = [-1] * b
        self.l_min_agent = [_INF] * b
        self.l_enter = [[math.nan] * n for _ in range(b)]
        self.l_exit = [[math.nan] * n for _ in range(b)]
        self.l_end_t = [0.0] * b
        self.l_done = [False] * b
        self.l_is_agent = self.is_agent.tolist()
        self.l_ahead_only = self.ahead_only.tolist()
        self.l_conflict = self.conflict_xy.tolist()
        self.l_length0 = scene.length_m[:, 0].tolist()
        # per row, the ego route's segments (see route_segments)
        self.segs: list[list[tuple[float, ...]]] = []
        self.seg_cols: list[tuple[np.ndarray, ...] | None] = []
        for bi in range(b):
            segs, cols = route_segments(self.seg_a[bi], self.seg_ab[bi], self.seg_ab2[bi], self.seg_s[bi])
            self.segs.append(segs)
            self.seg_cols.append(cols)
        # (row, vehicle) -> where a projection last found the vehicle off the route (adjudicate.off_route_mark;
        # None: every candidate is projected)
        self.off_route: dict[tuple[int, int], tuple[float, float, float]] | None = {}

    def observe_scalar(self, tr: ScalarTraffic, active: Sequence[bool]) -> None:
        """:meth:`Adjudicator.observe` of the step that produced ``tr``'s state."""
        t1, dt = tr.t, self.scene.dt_s
        n = self.N
        x, y, alive, v = tr.x, tr.y, tr.alive, tr.v
        near_lo, near_hi = NEAR_RADIUS_M ** 2 * (1.0 - _BAND), NEAR_RADIUS_M ** 2 * (1.0 + _BAND)
        zone2 = CONFLICT_ZONE_M * CONFLICT_ZONE_M
        any_conflict = self.any_conflict
        for bi in range(self.B):
            live = active[bi] and not self.l_done[bi]
            base = bi * n
            if live:
                self.l_end_t[bi] = t1
                if tr.crossed[base]:
                    self._red_entry(tr, bi, base, t1, dt)
            v0 = v[base]
            ego_alive = alive[base]
            if v0 < STOP_MPS and self.l_moving[bi] and live and ego_alive:
                self.l_stops[bi] += 1
                self.l_moving[bi] = False
            if v0 > RESTART_MPS:
                self.l_moving[bi] = True
            if live and not ego_alive and math.isnan(self.l_travel[bi]):
                self.l_travel[bi] = t1
            if ego_alive and live:  # proximity: np.hypot(dx, dy) < NEAR_RADIUS_M, decided on squares
                ex, ey = x[base], y[base]
                for j in range(base + 1, base + n):
                    if not alive[j]:
                        continue
                    dx, dy = x[j] - ex, y[j] - ey
                    q = dx * dx + dy * dy
                    if q < near_lo or (q <= near_hi and _hypot(dx, dy) < NEAR_RADIUS_M):
                        self._proximity_one(tr, bi, j - base, dx, dy, q)
            if any_conflict and live:  # PET zone occupancy
                cx, cy = self.l_conflict[bi]
                if not math.isnan(cx):
                    ent, ext = self.l_enter[bi], self.l_exit[bi]
                    for jj in range(n):
                        j = base + jj
                        if alive[j] and _below(x[j] - cx, y[j] - cy, CONFLICT_ZONE_M, zone2)[0]:
                            if math.isnan(ent[jj]):
                                ent[jj] = t1
                            ext[jj] = t1
            if not ego_alive:
                self.l_done[bi] = True

    def _red_entry(self, tr: ScalarTraffic, bi: int, base: int, t1: float, dt: float) -> None:
        g = tr.crossed_grp[base]
        front_new = tr.s[base] + self.l_length0[bi] / 2
        fp = tr.front_prev[base]
        frac = (tr.crossed_bar[base] - fp) / max(front_new - fp, 1e-9)
        t_c = t1 - dt + dt * min(max(frac, 0.0), 1.0)
        if math.isnan(self.l_bar_time[bi]):
            self.l_bar_time[bi] = t_c
        if g < 0:
            return
        phase = self.signal_rows.phase(bi, g, t_c)
        if phase == PHASE_RED:
            self.red[bi].append(RedEntry(round(float(t_c), 6), self.scene.group_ids[bi][g]))
        elif phase == PHASE_AMBER:
            self.l_amber[bi] += 1

    def _proximity_one(self, tr: ScalarTraffic, bi: int, jj: int, ddx: float, ddy: float, q_d: float) -> None:
        """One candidate of :meth:`Adjudicator._proximity` (``ddx, ddy``: its offset from the ego)."""
        # the distance itself (np.hypot) only where it can change a minimum or make a collision; the
        # projection below only decides whether it does, so a candidate that cannot is done here already
        agent = self.l_is_agent[bi][jj]
        hi = q_d * (1.0 - _BAND)
        c, m_a = self.l_closest[bi], self.l_min_agent[bi]
        need = (hi < c * c) or (agent and hi < m_a * m_a) or (
            self.collision[bi] is None and hi < COLLISION_DISTANCE_M * COLLISION_DISTANCE_M)
        if not need:
            return
        base = bi * self.N
        px, py = tr.x[base + jj], tr.y[base + jj]
        off = self.off_route
        if off is not None and still_off_route(off.get((bi, jj)), px, py):
            return  # the projection would find it off the route
        j, t_j, on_route, q_min = self._route_projection(bi, px, py)
        if not on_route:
            if off is not None:
                off[(bi, jj)] = off_route_mark(px, py, q_min)
            return
        seg = self.segs[bi][j]
        ahead_only = self.l_ahead_only[bi]
        if ahead_only and not (seg[5] + t_j * seg[6] > tr.s[base]):
            return
        d = _hypot(ddx, ddy)
        if d < c:
            self.l_closest[bi] = d
            self.l_closest_id[bi] = jj
        if agent and d < m_a:
            self.l_min_agent[bi] = d
        if self.collision[bi] is None and d < COLLISION_DISTANCE_M:
            ve, vo = tr.v[base], tr.v[base + jj]
            striking = ve > MOVING_MPS if ahead_only else max(ve, vo) > MOVING_MPS
            if striking:
                self.collision[bi] = Collision(round(tr.t, 6), self.scene.vehicle_ids[bi][jj], round(float(d), 6),
                                               round(ve, 6), round(vo, 6))

    def _route_projection(self, bi: int, px: float, py: float) -> tuple[int, float, bool, float]:
        """(segment, parameter t on it, within ROUTE_LATERAL_M, the least squared distance) of the point's projection
        on row ``bi``'s ego route polyline, as :meth:`Adjudicator._proximity` has it (argmin over segments of
        np.hypot, the first of equal ones), decided on squared lengths with exact hypots only for near ties; a
        long route's squares are computed by numpy (``seg_cols``, adjudicate.route_segments), a short one's on
        floats."""
        segs = self.segs[bi]
        cols = self.seg_cols[bi]
        q_arr = None
        if cols is not None:
            # the float path's operations in its order, in place where they can be (numpy's per-call cost is most
            # of the work: no reductions, no temporaries beyond three)
            ax, ay, abx, aby, ab2 = cols
            dx, dy = px - ax, py - ay
            t_arr = dx * abx
            tmp = dy * aby
            t_arr += tmp
            t_arr /= ab2
            np.maximum(t_arr, 0.0, out=t_arr)  # (finite: the float path's clip; a -0.0 decides as 0.0 does)
            np.minimum(t_arr, 1.0, out=t_arr)
            np.multiply(t_arr, abx, out=tmp)
            dx -= tmp
            np.multiply(t_arr, aby, out=tmp)
            dy -= tmp
            dx *= dx
            dy *= dy
            dx += dy
            q_arr = dx
            j = int(q_arr.argmin())
            qmin = float(q_arr[j])
            if qmin != qmin:  # a NaN square (argmin picks it, the float path skips it): the float path decides
                q_arr = None
        if q_arr is not None:
            lim = qmin * (1.0 + _BAND)
            near = q_arr <= lim
            close = np.flatnonzero(near).tolist() if np.count_nonzero(near) > 1 else None
            ts = t_arr.tolist() if close is not None else None
            t_j = float(t_arr[j])
        else:
            qs = []
            ts = []
            qmin = _INF
            for ax_, ay_, abx_, aby_, ab2_, _ss, _sl in segs:
                aqx_, aqy_ = px - ax_, py - ay_
                t = (aqx_ * abx_ + aqy_ * aby_) / ab2_
                t = t if t > 0.0 else 0.0  # np.clip
                t = t if t < 1.0 else 1.0
                dx_, dy_ = aqx_ - t * abx_, aqy_ - t * aby_
                q = dx_ * dx_ + dy_ * dy_
                qs.append(q)
                ts.append(t)
                if q < qmin:
                    qmin = q
            lim = qmin * (1.0 + _BAND)
            j = qs.index(qmin)
            t_j = ts[j]
            close = [m for m, q in enumerate(qs) if q <= lim] if any(
                q <= lim for m, q in enumerate(qs) if m != j) else None
        lat2 = ROUTE_LATERAL_M * ROUTE_LATERAL_M
        if close is not None:  # near-tie: exact hypot decides
            assert ts is not None
            hs = [self._seg_hypot(segs[m], px, py, ts[m]) for m in close]
            hmin = min(hs)
            j = close[hs.index(hmin)]
            return j, ts[j], hmin <= ROUTE_LATERAL_M, qmin
        if abs(qmin - lat2) > _BAND * lat2:
            return j, t_j, qmin <= lat2, qmin
        return j, t_j, self._seg_hypot(segs[j], px, py, t_j) <= ROUTE_LATERAL_M, qmin

    @staticmethod
    def _seg_hypot(seg: tuple, px: float, py: float, t: float) -> float:
        ax, ay, abx, aby = seg[0], seg[1], seg[2], seg[3]
        return _hypot(px - ax - t * abx, py - ay - t * aby)

    def sync(self) -> None:
        """Write the list accumulators to the arrays :meth:`Adjudicator.outcome` reads."""
        self.amber[:] = self.l_amber
        self.stops[:] = self.l_stops
        self.moving[:] = self.l_moving
        self.travel[:] = self.l_travel
        self.bar_time[:] = self.l_bar_time
        self.closest[:] = self.l_closest
        self.closest_id[:] = self.l_closest_id
        self.min_agent[:] = self.l_min_agent
        self.enter[:] = self.l_enter
        self.exit[:] = self.l_exit
        self.end_t[:] = self.l_end_t
        self.done[:] = self.l_done


__all__ = ["SCALAR_MAX_VEHICLES", "ScalarAdjudicator", "ScalarTraffic", "SignalRows", "use_scalar"]
