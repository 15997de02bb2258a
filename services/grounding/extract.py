"""Catalogue extraction: a parsed RoadMap -> its :class:`~services.grounding.entries.MapEntry`.

Pure (no I/O). For every junction: centre, approach count, signalization, kind tags
(``signalized_4way``, ``t_junction``, ``corridor``, ``urban_canyon``, ``merge``),
speed limit, building exposure, candidate RSU sites (junction corners, with the
number of approaches each sees without a building in the way); for every approach:
heading, lanes (ordered left to right), stop bars, movements and their signal
groups, the run-up upstream of the stop bar and the chain of junctions ahead; the
conflict points between movements. The graph walks (:func:`walk_back`,
:func:`walk_forward`) are shared with grounding's route builder. The parameters
below are part of ``CATALOGUE_VERSION``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from services.grounding.entries import (
    ApproachInfo,
    BuildingExposure,
    ConflictInfo,
    JunctionInfo,
    MapEntry,
    MovementInfo,
    RsuSiteInfo,
    StopBarInfo,
    compass_from,
)
from services.simulator.maps import Junction, Lane, Movement, RoadMap
from services.simulator.maps.buildings import points_in_polygon

# Extraction parameters (part of CATALOGUE_VERSION).
RUN_UP_CAP_M = 600.0  # upstream run-up is measured up to this
CHAIN_MAX_JUNCTIONS = 8  # junctions ahead followed along a corridor
CHAIN_MAX_GAP_M = 400.0  # a junction farther than this ahead does not extend a corridor
CORRIDOR_MIN_JUNCTIONS = 3  # a corridor is a straight chain of at least this many junctions
EXPOSURE_RADIUS_M = 60.0  # building exposure is measured within this radius of the centre
EXPOSURE_GRID_M = 2.0
CANYON_MIN_BUILT_FRACTION = 0.2  # urban canyon: built-up share and mean height around the junction
CANYON_MIN_MEAN_HEIGHT_M = 25.0
RSU_HEIGHT_M = 5.5  # RSU antenna mast (DESIGN: ~5-6 m)
RSU_KERB_OFFSET_M = 2.5  # mast beyond the outer lane edge
RSU_VIEW_M = 50.0  # LOS is checked to the approach lane this far upstream of its stop bar
NDIGITS = 4  # float rounding in the JSON (0.1 mm)


def _r(x: float) -> float:
    return round(float(x), NDIGITS)


def _xy(p: Sequence[float]) -> tuple[float, float]:
    return (_r(p[0]), _r(p[1]))


# ── graph walks over the road map (shared with grounding's route builder) ──────
def _element_length(rm: RoadMap, eid: str) -> float:
    return rm.element(eid).length_m


def _turn_rank(el: Lane | Movement) -> tuple[int, int]:
    if isinstance(el, Lane):
        return (0, 0)
    return (1, {"straight": 0, "right": 1, "left": 2, "uturn": 3}.get(str(el.turn), 4))


def _predecessors(rm: RoadMap, eid: str) -> list[str]:
    el = rm.element(eid)
    if isinstance(el, Lane):
        return list(el.predecessor_ids)
    return [el.from_lane_id]


WALK_BUDGET = 4000  # element expansions of one walk


def walk_back(rm: RoadMap, start_id: str, need_m: float, *, avoid: Iterable[str] = ()) -> tuple[list[str], float]:
    """Elements upstream of ``start_id`` (ids upstream-first) adding up to ``need_m`` metres.

    Depth-first in preference order (plain lanes, then straight movements, then by id), never
    entering ``avoid`` or revisiting an element; returns the first path that collects ``need_m``,
    else the longest found within WALK_BUDGET expansions. Returns (ids, collected length)."""
    blocked = {start_id, *avoid}
    best: tuple[float, list[str]] = (0.0, [])
    stack: list[tuple[str, float, list[str]]] = [(start_id, 0.0, [])]
    budget = WALK_BUDGET
    while stack and budget > 0:
        cur, got, path = stack.pop()
        budget -= 1
        if got > best[0]:
            best = (got, path)
        if got >= need_m:
            return list(reversed(path)), got
        on_path = set(path)
        preds = [p for p in _predecessors(rm, cur) if p not in blocked and p not in on_path]
        preds.sort(key=lambda p: (_turn_rank(rm.element(p)), p), reverse=True)  # best popped first
        for p in preds:
            stack.append((p, got + _element_length(rm, p), path + [p]))
    return list(reversed(best[1])), best[0]


def walk_forward(rm: RoadMap, start_id: str, need_m: float, *, avoid: Iterable[str] = ()) -> tuple[list[str], float]:
    """Elements downstream of ``start_id`` (nearest first): plain lanes first, then straight
    movements, then by id, until ``need_m`` metres. Returns (ids, collected length)."""
    seen = {start_id, *avoid}
    chain: list[str] = []
    got = 0.0
    cur = start_id
    while got < need_m:
        nxt = [n for n in rm.next_ids(cur) if n not in seen]
        if not nxt:
            break
        nxt.sort(key=lambda n: (_turn_rank(rm.element(n)), n))
        cur = nxt[0]
        seen.add(cur)
        chain.append(cur)
        got += _element_length(rm, cur)
    return chain, got


def _next_junction(rm: RoadMap, lane_id: str, limit_m: float) -> tuple[str, str, float] | None:
    """(junction id, incoming lane id, road metres) of the first junction reached from ``lane_id``
    over plain lanes only."""
    dist = 0.0
    cur = lane_id
    seen = set()
    while dist <= limit_m and cur not in seen:
        seen.add(cur)
        lane = rm.lanes[cur]
        moves = rm.movements_from(cur)
        if moves:
            return moves[0].junction_id, cur, dist + lane.length_m
        dist += lane.length_m
        nxt = [n for n in lane.successor_ids if n in rm.lanes]
        if len(nxt) != 1:
            return None
        cur = nxt[0]
    return None


def _straight_from(rm: RoadMap, lane_id: str) -> Movement | None:
    moves = [m for m in rm.movements_from(lane_id) if m.turn == "straight"]
    return min(moves, key=lambda m: m.id) if moves else None


# ── extraction ────────────────────────────────────────────────────────────────
def _ordered_lanes(rm: RoadMap, lane_ids: Sequence[str], heading: float) -> list[str]:
    right = np.array([math.sin(heading), -math.cos(heading)])
    def offset(lid: str) -> float:
        return float(np.dot(rm.lanes[lid].polyline[-1], right))
    return sorted(lane_ids, key=lambda lid: (offset(lid), lid))


def _exposure(rm: RoadMap, centre: tuple[float, float]) -> BuildingExposure:
    r = EXPOSURE_RADIUS_M
    c = np.asarray(centre)
    near = [b for b in rm.buildings if np.hypot(*(b.footprint - c).T).min() <= r
            or points_in_polygon(c[None], b.footprint)[0]]
    if not near:
        return BuildingExposure(r, 0, 0.0, 0.0, 0.0)
    g = np.arange(-r, r + 1e-9, EXPOSURE_GRID_M)
    gx, gy = np.meshgrid(g, g)
    inside = gx ** 2 + gy ** 2 <= r * r
    pts = np.column_stack([gx[inside], gy[inside]]) + c
    heights = np.zeros(len(pts))
    for b in near:
        lo, hi = b.footprint.min(axis=0), b.footprint.max(axis=0)
        box = np.all((pts >= lo) & (pts <= hi), axis=1)
        if box.any():
            idx = np.nonzero(box)[0]
            hit = points_in_polygon(pts[idx], b.footprint)
            heights[idx[hit]] = np.maximum(heights[idx[hit]], b.height_m)
    built = heights > 0
    frac = float(built.mean())
    mean_h = float(heights[built].mean()) if built.any() else 0.0
    return BuildingExposure(r, len(near), _r(frac), _r(max(b.height_m for b in near)), _r(mean_h))


def _segment_blocked(a: np.ndarray, b: np.ndarray, footprints: Sequence[np.ndarray]) -> bool:
    """Does the 2-D segment a-b cross or enter any footprint?"""
    for fp in footprints:
        lo, hi = fp.min(axis=0), fp.max(axis=0)
        if (max(a[0], b[0]) < lo[0] or min(a[0], b[0]) > hi[0]
                or max(a[1], b[1]) < lo[1] or min(a[1], b[1]) > hi[1]):
            continue
        samples = a + np.linspace(0.0, 1.0, 64)[:, None] * (b - a)
        if points_in_polygon(samples, fp).any():
            return True
    return False


def _rsu_sites(rm: RoadMap, j: Junction, ordered: dict[str, list[str]]) -> tuple[RsuSiteInfo, ...]:
    footprints = [b.footprint for b in rm.buildings
                  if np.hypot(*(b.footprint - np.asarray(j.centre)).T).min() <= 2 * EXPOSURE_RADIUS_M + 50]
    views = []
    for a in j.approaches:
        lane = rm.lanes[ordered[a.id][-1]]
        views.append(lane.position_at(max(lane.length_m - RSU_VIEW_M, 0.0)))
    out = []
    for k, a in enumerate(j.approaches):
        lane = rm.lanes[ordered[a.id][-1]]  # right-most incoming lane
        bar = lane.polyline[-1]
        h = float(lane.heading_at(lane.length_m))
        right = np.array([math.sin(h), -math.cos(h)])
        site = bar + right * (lane.width_m / 2 + RSU_KERB_OFFSET_M)
        for _ in range(8):  # never inside a building: step towards the stop bar
            if not any(points_in_polygon(site[None], fp)[0] for fp in footprints):
                break
            site = site + (bar - site) * 0.35
        los = sum(not _segment_blocked(site, v, footprints) for v in views)
        out.append(RsuSiteInfo(f"{j.id}.c{k}", _xy(site), RSU_HEIGHT_M, a.id, int(los)))
    return tuple(out)


def _approach_info(rm: RoadMap, j: Junction, a: Any, ordered: list[str]) -> ApproachInfo:
    moves = sorted((m for m in j.movements if m.approach_id == a.id), key=lambda m: m.id)
    turns = tuple(sorted({str(m.turn) for m in moves}))
    sig_turns = tuple(sorted({str(m.turn) for m in moves if m.signal_group_id}))
    groups = tuple(sorted({m.signal_group_id for m in moves if m.signal_group_id}))
    speed = max(rm.lanes[lid].speed_limit_mps for lid in a.incoming_lane_ids)
    run_up = max(rm.lanes[lid].length_m + walk_back(rm, lid, RUN_UP_CAP_M)[1] for lid in a.incoming_lane_ids)
    nxt_id, nxt_m, chain = None, None, []
    straight = [m for m in moves if m.turn == "straight"]
    if straight:
        cur_lane = straight[-1].to_lane_id
        visited = {j.id}
        for _ in range(CHAIN_MAX_JUNCTIONS):
            hit = _next_junction(rm, cur_lane, CHAIN_MAX_GAP_M)
            if hit is None or hit[0] in visited:
                break
            jid, in_lane, dist = hit
            if nxt_id is None:
                nxt_id, nxt_m = jid, _r(dist)
            if dist > CHAIN_MAX_GAP_M:
                break
            chain.append(jid)
            visited.add(jid)
            sm = _straight_from(rm, in_lane)
            if sm is None:
                break
            cur_lane = sm.to_lane_id
    return ApproachInfo(
        id=a.id, junction_id=j.id, heading_rad=_r(a.heading_rad), compass=compass_from(a.heading_rad),
        lane_ids=tuple(ordered), stop_bars=tuple(StopBarInfo(b.lane_id, _xy(b.xy)) for b in a.stop_bars),
        movement_ids=tuple(m.id for m in moves), turns=turns, signal_group_ids=groups, signalized_turns=sig_turns,
        speed_limit_mps=_r(speed), run_up_m=_r(min(run_up, RUN_UP_CAP_M)), next_junction_id=nxt_id,
        next_junction_m=nxt_m, chain_ahead=tuple(chain))


def _kinds(j: Junction, approaches: Sequence[ApproachInfo], exposure: BuildingExposure,
           signalized_by_id: dict[str, bool]) -> tuple[str, ...]:
    n = len(approaches)
    kinds = []
    if j.signalized and n >= 4:
        kinds.append("signalized_4way")
    if not j.signalized and n >= 4:
        kinds.append("unsignalized_4way")
    if n == 3:
        kinds.append("t_junction")
    if n <= 2:
        kinds.append("merge")
    if j.signalized and any(len(a.chain_ahead) >= CORRIDOR_MIN_JUNCTIONS - 1
                            and all(signalized_by_id.get(x, False) for x in a.chain_ahead[:CORRIDOR_MIN_JUNCTIONS - 1])
                            for a in approaches):
        kinds.append("corridor")
    if exposure.built_fraction >= CANYON_MIN_BUILT_FRACTION and exposure.mean_height_m >= CANYON_MIN_MEAN_HEIGHT_M:
        kinds.append("urban_canyon")
    return tuple(kinds)


def extract(rm: RoadMap, *, fingerprint: str = "", source: str = "") -> MapEntry:
    """The catalogue entry of a parsed map (pure: no I/O)."""
    t0 = time.perf_counter()
    signalized_by_id = {jid: j.signalized for jid, j in rm.junctions.items()}
    partial = []
    for jid in sorted(rm.junctions, key=_natural):
        j = rm.junctions[jid]
        ordered = {a.id: _ordered_lanes(rm, a.incoming_lane_ids, a.heading_rad) for a in j.approaches}
        approaches = tuple(_approach_info(rm, j, a, ordered[a.id]) for a in j.approaches)
        conflicts_of: dict[str, set[str]] = {m.id: set() for m in j.movements}
        for c in j.conflicts:
            conflicts_of[c.movement_a].add(c.movement_b)
            conflicts_of[c.movement_b].add(c.movement_a)
        movements = tuple(MovementInfo(
            id=m.id, approach_id=m.approach_id, from_lane_id=m.from_lane_id, to_lane_id=m.to_lane_id,
            turn=str(m.turn), signal_group_id=m.signal_group_id, length_m=_r(m.length_m),
            speed_limit_mps=_r(m.speed_limit_mps), conflicts=tuple(sorted(conflicts_of[m.id], key=_natural)))
            for m in sorted(j.movements, key=lambda m: _natural(m.id)))
        conflicts = tuple(ConflictInfo(c.movement_a, c.movement_b, c.kind, _xy(c.xy)) for c in j.conflicts)
        exposure = _exposure(rm, j.centre)
        partial.append((j, approaches, movements, conflicts, exposure, _rsu_sites(rm, j, ordered)))
    junctions = []
    for j, approaches, movements, conflicts, exposure, sites in partial:
        junctions.append(JunctionInfo(
            id=j.id, map_name=rm.name, centre=_xy(j.centre), signalized=bool(j.signalized),
            kinds=_kinds(j, approaches, exposure, signalized_by_id), approaches=approaches, movements=movements,
            conflicts=conflicts, signal_group_ids=tuple(j.signal_group_ids),
            speed_limit_mps=max((a.speed_limit_mps for a in approaches), default=0.0), exposure=exposure,
            rsu_sites=sites))
    return MapEntry(name=rm.name, content_sha256=rm.content_sha256, fingerprint=fingerprint or rm.content_sha256,
                    source=source or rm.source, summary=dict(rm.summary()), junctions=tuple(junctions),
                    notes=tuple(rm.notes), build_s=round(time.perf_counter() - t0, 4))


def _natural(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


__all__ = ["extract", "walk_back", "walk_forward"]
