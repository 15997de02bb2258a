"""The radio channel's link budget as kernels (issue 32, stage 2; the model, its formulas and its parameters
are described in :mod:`services.simulator.v2x.channel`, which packs the arrays and wraps the results): per
link, the slant distance, path loss (log-distance, TR 37.885 or WINNER+ B1), height-aware building blockage, RSSI,
delivery probability and latency, in one loop over links whatever their number (a step's one link, a coverage grid's ten thousand).

Buildings arrive as four arrays (:attr:`services.simulator.v2x.geometry.BuildingSet.kernel_arrays`):
``bbox`` (B, 4) min x, min y, max x, max y; ``edges`` (E, 4) every footprint's edges ax, ay, bx, by, one
footprint after another; ``edge_start`` (B + 1,) where each footprint's edges start; ``heights`` (B,) roof
heights. The channel's parameters arrive as one vector ``prm`` (:data:`N_PRM` entries, rows below,
:attr:`services.simulator.v2x.channel.ChannelParams.kernel_vector`).

**Chords.** A link's ray meets a footprint in pieces ("chords"): the crossing parameters ``t`` of the 2-D
segment with the footprint's edges, together with 0 and 1, are sorted; each interval between consecutive
parameters is inside or outside as a whole, decided by an even-odd test of its midpoint (robust to rays
through vertices, tangent rays and segments that start or end inside: degenerate intervals have zero length).
A wall is where inside-ness changes between consecutive intervals of positive length. Only footprints whose
bounding box the segment meets (a box overlap, then an exact Liang-Barsky slab test) are walked.
"""

from __future__ import annotations

import math

import numpy as np

from services.simulator.kernels import ieee80211p, kernel, tr37885

# rows of the parameter vector ``prm``
(RANGE_M, D0_M, REF_LOSS_DB, K_NEAR, HAS_BREAKPOINT, BREAKPOINT_M, AT_BREAKPOINT_DB, K_FAR, HEAD_DBM, FLOOR_DBM,
 BLOCKAGE_DB_PER_M, WALL_DB, SATURATION_M, CAP_DB, DELIVERY_SLOPE, DELIVERY_MID_DBM, LATENCY_KNEE_DBM,
 LATENCY_BASE_S, LATENCY_SLOPE, MODEL, FC_GHZ, BLOCKER_M, SENSING_DBM, EBN0_OFFSET_DB, ENVIRONMENT_H_M,
 WINNER_SIGMA_DB) = range(26)
N_PRM = 26
# channel models (``prm[MODEL]``): the log-distance model of LAST-V2X Appendix B, 3GPP TR 37.885's V2V, or
# WINNER+ B1 with the 802.11p receiver (:mod:`.ieee80211p`; its receiver replaces the logistic one)
LOG_DISTANCE, TR37885_HIGHWAY, TR37885_URBAN, WINNER_B1_80211P = range(4)
# rows of a link's draws ``draws`` (3, N) under a model that draws (keyed by link identity by the caller): the
# uniform that picks LOS or NLOSv, the standard normal of the vehicle-blockage loss, the shadowing's (the
# WINNER+ B1 model reads only the shadowing's)
U_LOS, Z_BLOCKAGE, Z_SHADOWING = range(3)
# rows of the link budget ``out`` (7, N)
DISTANCE, PATH_LOSS, BLOCKAGE, RSSI, IN_RANGE, DELIVERY, LATENCY = range(7)
N_OUT = 7
# a status: what the inputs of :func:`link_budget` broke (0: nothing)
OK, NOT_FINITE, NEGATIVE_HEIGHT = range(3)

EPS = 1e-12  # |denominator| / |extent| below which a segment is parallel to an edge / does not move along an axis


@kernel
def path_loss(distance_m: float, prm: np.ndarray) -> float:
    """Log-distance (optionally dual-slope) path loss [dB]; a distance under ``d0`` counts as ``d0``."""
    d0 = prm[D0_M]
    d = distance_m if distance_m > d0 else d0
    if prm[HAS_BREAKPOINT] != 0.0 and d > prm[BREAKPOINT_M]:
        return prm[AT_BREAKPOINT_DB] + prm[K_FAR] * math.log10(d / prm[BREAKPOINT_M])
    return prm[REF_LOSS_DB] + prm[K_NEAR] * math.log10(d / d0)


@kernel
def delivery(rssi_dbm: float, prm: np.ndarray) -> float:
    """Logistic delivery probability, ``1 / (1 + exp(-k (rssi - rssi_50)))`` (as tanh: overflow-free), or under
    the WINNER+ B1 / 802.11p model that model's receiver (:func:`.ieee80211p.decoded_probability`, the noise
    floor as its noise); exactly 0 at or below the noise floor."""
    if rssi_dbm <= prm[FLOOR_DBM]:
        return 0.0
    if prm[MODEL] == WINNER_B1_80211P:
        return ieee80211p.decoded_probability(rssi_dbm, prm[FLOOR_DBM], prm[SENSING_DBM], prm[EBN0_OFFSET_DB])
    z = -prm[DELIVERY_SLOPE] * (rssi_dbm - prm[DELIVERY_MID_DBM])
    return 0.5 * (1.0 - math.tanh(0.5 * z))


@kernel
def latency(rssi_dbm: float, prm: np.ndarray) -> float:
    """Base latency [s], plus a linear term per dB below the RSSI knee."""
    below = prm[LATENCY_KNEE_DBM] - rssi_dbm
    return prm[LATENCY_BASE_S] + prm[LATENCY_SLOPE] * (below if below > 0.0 else 0.0)


@kernel
def excess_length(e0: float, e1: float, length: float, sat: float) -> float:
    """``integral_0^L clip(e(s), 0, sat) / sat ds`` for a height excess ``e`` linear from ``e0`` to ``e1`` along
    a chord of length ``L`` [m]: with ``F`` the antiderivative of ``clip(e, 0, sat) / sat`` (0 for e <= 0,
    e^2 / (2 sat) up to sat, e - sat / 2 beyond), ``L (F(e1) - F(e0)) / (e1 - e0)``, or ``L clip(mean) / sat``
    on a level chord."""
    de = e1 - e0
    if abs(de) <= 1e-9 * max(1.0, sat):
        c = 0.5 * (e0 + e1)
        return length * (0.0 if c <= 0.0 else (c if c < sat else sat)) / sat
    f0 = 0.0 if e0 <= 0.0 else (e0 * e0 / (2.0 * sat) if e0 < sat else e0 - sat / 2.0)
    f1 = 0.0 if e1 <= 0.0 else (e1 * e1 / (2.0 * sat) if e1 < sat else e1 - sat / 2.0)
    return length * (f1 - f0) / de


@kernel
def inside(qx: float, qy: float, edges: np.ndarray, lo: int, hi: int) -> bool:
    """Even-odd test of the point (qx, qy) against the footprint whose edges are ``edges[lo:hi]``."""
    crossings = 0
    for k in range(lo, hi):
        ay, by = edges[k, 1], edges[k, 3]
        if (ay > qy) != (by > qy):
            ax = edges[k, 0]
            if qx < ax + (qy - ay) * (edges[k, 2] - ax) / (by - ay):
                crossings += 1
    return crossings % 2 == 1


@kernel
def meets_box(x0: float, y0: float, x1: float, y1: float, bbox: np.ndarray, b: int) -> bool:
    """Whether the segment (x0, y0) -> (x1, y1) meets footprint ``b``'s bounding box: the boxes overlap, then
    the exact Liang-Barsky slab test (a segment that does not move along an axis: inside the slab or not)."""
    lox, loy, hix, hiy = bbox[b, 0], bbox[b, 1], bbox[b, 2], bbox[b, 3]
    if not (min(x0, x1) <= hix and max(x0, x1) >= lox and min(y0, y1) <= hiy and max(y0, y1) >= loy):
        return False
    t_enter, t_exit = 0.0, 1.0
    for axis in range(2):
        o, e, lo, hi = (x0, x1, lox, hix) if axis == 0 else (y0, y1, loy, hiy)
        d = e - o
        if abs(d) > EPS:
            ta, tb = (lo - o) / d, (hi - o) / d
            near, far = (ta, tb) if ta < tb else (tb, ta)
            t_enter = max(t_enter, near)
            t_exit = min(t_exit, far)
        elif not (lo <= o <= hi):
            return False
    return t_enter <= t_exit


@kernel
def blockage(x0: float, y0: float, h0: float, x1: float, y1: float, h1: float, bbox: np.ndarray,
             edges: np.ndarray, edge_start: np.ndarray, heights: np.ndarray, prm: np.ndarray, ts: np.ndarray
             ) -> float:
    """Building blockage [dB] of one link (antenna tips at heights ``h0``, ``h1`` [m]): over every chord of the
    ray inside a footprint, the clipped height excess of the roof over the ray, integrated (metres of fully
    obstructed path) times ``BLOCKAGE_DB_PER_M``; plus ``WALL_DB`` per wall crossing weighted by the excess
    there; capped at ``CAP_DB``. ``ts``: scratch of at least (most edges of a footprint + 2) floats."""
    per_m, wall_db, sat = prm[BLOCKAGE_DB_PER_M], prm[WALL_DB], prm[SATURATION_M]
    if per_m == 0.0 and wall_db == 0.0:
        return 0.0
    dx, dy, dh = x1 - x0, y1 - y0, h1 - h0
    ground_m = math.sqrt(dx * dx + dy * dy)
    eff = 0.0  # metres of fully obstructed path
    walls = 0.0  # wall crossings, weighted
    for b in range(bbox.shape[0]):
        if not meets_box(x0, y0, x1, y1, bbox, b):
            continue
        lo, hi = edge_start[b], edge_start[b + 1]
        m = 2
        ts[0], ts[1] = 0.0, 1.0
        for k in range(lo, hi):  # the segment's crossings with the footprint's edges
            ex, ey = edges[k, 2] - edges[k, 0], edges[k, 3] - edges[k, 1]
            wx, wy = edges[k, 0] - x0, edges[k, 1] - y0
            denom = dx * ey - dy * ex
            if abs(denom) > EPS:
                t = (wx * ey - wy * ex) / denom
                u = (wx * dy - wy * dx) / denom
                if 0.0 < t < 1.0 and 0.0 <= u <= 1.0:
                    ts[m] = t
                    m += 1
        ts[:m].sort()
        hb = heights[b]
        seen, prev_inside = False, False  # a positive interval so far, and whether the last one was inside
        for i in range(m - 1):
            t0, t1 = ts[i], ts[i + 1]
            if not t1 - t0 > EPS:
                continue
            mid = 0.5 * (t0 + t1)
            now_inside = inside(x0 + mid * dx, y0 + mid * dy, edges, lo, hi)
            if now_inside:
                eff += excess_length(hb - (h0 + dh * t0), hb - (h0 + dh * t1), (t1 - t0) * ground_m, sat)
            if seen and prev_inside != now_inside and wall_db > 0.0:
                c = hb - (h0 + dh * t0)
                walls += (0.0 if c <= 0.0 else (c if c < sat else sat)) / sat
            seen, prev_inside = True, now_inside
    total = per_m * eff + wall_db * walls
    return total if total < prm[CAP_DB] else prm[CAP_DB]


@kernel
def tr37885_loss(scenario: int, dist_m: float, ground_m: float, h0: float, h1: float, blocked: bool,
                 prm: np.ndarray, u_los: float, z_blockage: float, z_shadowing: float) -> float:
    """Path loss [dB] of one link under 3GPP TR 37.885 (:mod:`.tr37885`): NLOS where buildings block the ray
    (urban), else LOS with the LOS probability at the ground distance (``u_los`` below it), else NLOSv with
    its vehicle-blockage draw; plus the state's shadowing, ``sigma * z_shadowing``."""
    if blocked and scenario == tr37885.URBAN:
        state = tr37885.NLOS
    elif u_los < tr37885.los_probability(scenario, ground_m):
        state = tr37885.LOS
    else:
        state = tr37885.NLOSV
    return tr37885.link_loss_db(scenario, state, dist_m, prm[FC_GHZ], h0, h1, prm[BLOCKER_M],
                                tr37885.shadowing_std_db(scenario, state) * z_shadowing, z_blockage)


@kernel
def link_budget(x0: np.ndarray, y0: np.ndarray, h0: np.ndarray, x1: np.ndarray, y1: np.ndarray, h1: np.ndarray,
                bbox: np.ndarray, edges: np.ndarray, edge_start: np.ndarray, heights: np.ndarray, prm: np.ndarray,
                max_edges: int, draws: np.ndarray, out: np.ndarray) -> int:
    """The channel state of N links (transmitter x, y, antenna height; receiver x, y, height: (N,) each, metres)
    into ``out`` (:data:`N_OUT`, N) (rows above; ``IN_RANGE`` 1.0 / 0.0). Blockage only for links within range;
    links beyond it, or too weak, sit at the noise floor and are never delivered. ``draws`` (3, N): each
    link's draws under a model that draws (rows ``U_LOS`` ..; (3, 0) under the log-distance model, which draws
    nothing). Under TR 37.885 urban, buildings make a link NLOS (its path-loss formula is their loss, so the
    blockage term is 0); under highway and WINNER+ B1, the map's buildings add the blockage term as they do to
    the log-distance model. Returns :data:`OK`, or what the inputs broke (then ``out`` is undefined)."""
    n = x0.shape[0]
    for i in range(n):
        if not (math.isfinite(x0[i]) and math.isfinite(y0[i]) and math.isfinite(x1[i]) and math.isfinite(y1[i])
                and math.isfinite(h0[i]) and math.isfinite(h1[i])):
            return NOT_FINITE
        if h0[i] < 0.0 or h1[i] < 0.0:
            return NEGATIVE_HEIGHT
    ts = np.empty(max_edges + 2)
    floor = prm[FLOOR_DBM]
    model = int(prm[MODEL])
    for i in range(n):
        dx, dy, dh = x1[i] - x0[i], y1[i] - y0[i], h1[i] - h0[i]
        ground = math.sqrt(dx * dx + dy * dy)  # (not hypot: CPython's math.hypot is not libm's, numba's is)
        dist = math.sqrt(dx * dx + dy * dy + dh * dh)
        in_range = dist <= prm[RANGE_M]
        blk = 0.0
        if in_range and bbox.shape[0] > 0:
            blk = blockage(x0[i], y0[i], h0[i], x1[i], y1[i], h1[i], bbox, edges, edge_start, heights, prm, ts)
        if model == LOG_DISTANCE:
            pl = path_loss(dist, prm)
        elif model == WINNER_B1_80211P:
            pl = (ieee80211p.winner_b1_path_loss_db(dist, prm[FC_GHZ], h0[i], h1[i], prm[ENVIRONMENT_H_M])
                  + prm[WINNER_SIGMA_DB] * draws[Z_SHADOWING, i])
        else:
            scenario = tr37885.HIGHWAY if model == TR37885_HIGHWAY else tr37885.URBAN
            pl = tr37885_loss(scenario, dist, ground, h0[i], h1[i], blk > 0.0, prm, draws[U_LOS, i],
                              draws[Z_BLOCKAGE, i], draws[Z_SHADOWING, i])
            if scenario == tr37885.URBAN:
                blk = 0.0
        rx_power = prm[HEAD_DBM] - pl - blk
        rssi = (rx_power if rx_power > floor else floor) if in_range else floor
        out[DISTANCE, i] = dist
        out[PATH_LOSS, i] = pl
        out[BLOCKAGE, i] = blk
        out[RSSI, i] = rssi
        out[IN_RANGE, i] = 1.0 if in_range else 0.0
        out[DELIVERY, i] = delivery(rssi, prm)
        out[LATENCY, i] = latency(rssi, prm)
    return OK


@kernel
def blockages(x0: np.ndarray, y0: np.ndarray, h0: np.ndarray, x1: np.ndarray, y1: np.ndarray, h1: np.ndarray,
              bbox: np.ndarray, edges: np.ndarray, edge_start: np.ndarray, heights: np.ndarray, prm: np.ndarray,
              max_edges: int, out: np.ndarray) -> None:
    """:func:`blockage` of N links into ``out`` (N,), whatever their range."""
    ts = np.empty(max_edges + 2)
    for i in range(x0.shape[0]):
        out[i] = blockage(x0[i], y0[i], h0[i], x1[i], y1[i], h1[i], bbox, edges, edge_start, heights, prm, ts)


@kernel
def terms(kind: int, values: np.ndarray, prm: np.ndarray, out: np.ndarray) -> None:
    """One elementary term over an array: ``kind`` 0 path loss of distances, 1 delivery probability of RSSIs,
    2 latency of RSSIs."""
    for i in range(values.shape[0]):
        v = values[i]
        out[i] = path_loss(v, prm) if kind == 0 else (delivery(v, prm) if kind == 1 else latency(v, prm))


@kernel
def points_inside(px: np.ndarray, py: np.ndarray, bbox: np.ndarray, edges: np.ndarray, edge_start: np.ndarray,
                  out: np.ndarray) -> None:
    """Whether each point lies inside any footprint (even-odd per footprint) into ``out`` (N,) bool."""
    for i in range(px.shape[0]):
        hit = False
        for b in range(bbox.shape[0]):
            if bbox[b, 0] <= px[i] <= bbox[b, 2] and bbox[b, 1] <= py[i] <= bbox[b, 3]:
                if inside(px[i], py[i], edges, edge_start[b], edge_start[b + 1]):
                    hit = True
                    break
        out[i] = hit
