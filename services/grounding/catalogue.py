"""Signal-semantic map catalogue: junctions and approaches of every map, cached on disk.

For every map (the built-in maps and any ``.xodr`` a user adds by path or
directory) the catalogue extracts what grounding needs to *retrieve* and
*validate* a scene, from the one OpenDRIVE parser (``services.simulator.maps``):

* junctions: centre, approach count, signalization, kind tags (``signalized_4way``,
  ``t_junction``, ``corridor``, ``urban_canyon``, ``merge``), speed limit,
  building exposure (count, built-up fraction and heights of the buildings around
  it: the channel's blockage exposure), candidate RSU sites (junction corners, with
  the number of approaches each sees without a building in the way);
* approaches: heading, lanes (ordered left to right), stop bars, movements
  (straight / left / right / U-turn and the signal group of each), speed limit,
  the run-up available upstream of the stop bar (through upstream junctions if
  need be), and, along the straight movement, the distance to the next junction
  and the chain of junctions ahead (corridors);
* conflict points between movements (crossing or merging).

Entries are plain data (JSON) versioned by the map's content hash
(``RoadMap.content_sha256``) and cached under a directory (default
``~/.cache/lastv2x/catalogue``), keyed by a fingerprint of the map's source bytes,
so a map is parsed and extracted again only when its bytes change. A map that
fails to load (``MapError``: hostile, broken, too large) is reported in
``MapCatalogue.errors`` and skipped; every other map keeps serving.

Geometry for programs (route polylines) never comes from this JSON: grounding asks
``MapCatalogue.road_map(name)`` for the parsed ``RoadMap`` and uses its route API.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lastv2x.core.catalogue import canonical_map_name  # noqa: F401 - re-exported
from services.simulator.maps import (
    Junction,
    Lane,
    MapError,
    Movement,
    RoadMap,
    builtin_map_names,
    builtin_sources,
    load_map,
)
from services.simulator.maps.assemble import content_hash
from services.simulator.maps.buildings import MAX_JSON_BYTES, points_in_polygon
from services.simulator.maps.xodr_facts import Limits

CATALOGUE_VERSION = 1  # bump when extraction rules or the JSON layout change
SCHEMA = "lastv2x.catalogue/1"

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
PERPENDICULAR = (math.radians(45.0), math.radians(135.0))
OPPOSITE_MIN_RAD = math.radians(135.0)
NDIGITS = 4  # float rounding in the JSON (0.1 mm)


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "lastv2x" / "catalogue"


def heading_gap_rad(a: float, b: float) -> float:
    """|a - b| wrapped into [0, pi]."""
    return abs(math.remainder(a - b, 2.0 * math.pi))


def compass_from(heading_rad: float) -> str:
    """Where traffic with this travel heading comes from: 'south' for a northbound approach."""
    ang = math.degrees(heading_rad + math.pi) % 360.0
    names = ("east", "northeast", "north", "northwest", "west", "southwest", "south", "southeast")
    return names[int(((ang + 22.5) % 360.0) // 45.0)]


def _r(x: float) -> float:
    return round(float(x), NDIGITS)


def _xy(p: Sequence[float]) -> tuple[float, float]:
    return (_r(p[0]), _r(p[1]))


# ── entries (plain data, JSON round-trippable) ─────────────────────────────────
@dataclass(frozen=True)
class ConflictInfo:
    movement_a: str
    movement_b: str
    kind: str  # "crossing" | "merging"
    xy: tuple[float, float]


@dataclass(frozen=True)
class MovementInfo:
    id: str
    approach_id: str
    from_lane_id: str
    to_lane_id: str
    turn: str
    signal_group_id: str | None
    length_m: float
    speed_limit_mps: float
    conflicts: tuple[str, ...]  # movement ids it crosses or merges with


@dataclass(frozen=True)
class StopBarInfo:
    lane_id: str
    xy: tuple[float, float]


@dataclass(frozen=True)
class ApproachInfo:
    id: str
    junction_id: str
    heading_rad: float  # travel direction towards the junction
    compass: str  # where its traffic comes from
    lane_ids: tuple[str, ...]  # left to right
    stop_bars: tuple[StopBarInfo, ...]
    movement_ids: tuple[str, ...]
    turns: tuple[str, ...]
    signal_group_ids: tuple[str, ...]
    signalized_turns: tuple[str, ...]  # turns with a signal group
    speed_limit_mps: float
    run_up_m: float  # route length available upstream of the stop bar (capped at RUN_UP_CAP_M)
    next_junction_id: str | None  # first junction ahead along the straight movement
    next_junction_m: float | None  # road length between the two junction boxes
    chain_ahead: tuple[str, ...]  # junctions ahead along straight movements (corridor)

    @property
    def lane_count(self) -> int:
        return len(self.lane_ids)


@dataclass(frozen=True)
class BuildingExposure:
    radius_m: float
    count: int  # buildings with any footprint vertex within the radius
    built_fraction: float  # share of the disc covered by footprints
    max_height_m: float
    mean_height_m: float  # footprint-weighted within the disc


@dataclass(frozen=True)
class RsuSiteInfo:
    id: str
    xy: tuple[float, float]
    height_m: float
    approach_id: str  # the approach on whose near-right corner it stands
    los_approaches: int  # approaches whose lane RSU_VIEW_M upstream it sees unobstructed (2-D)


@dataclass(frozen=True)
class JunctionInfo:
    id: str
    map_name: str
    centre: tuple[float, float]
    signalized: bool
    kinds: tuple[str, ...]
    approaches: tuple[ApproachInfo, ...]
    movements: tuple[MovementInfo, ...]
    conflicts: tuple[ConflictInfo, ...]
    signal_group_ids: tuple[str, ...]
    speed_limit_mps: float
    exposure: BuildingExposure
    rsu_sites: tuple[RsuSiteInfo, ...]

    @property
    def approach_count(self) -> int:
        return len(self.approaches)

    def approach(self, approach_id: str) -> ApproachInfo:
        for a in self.approaches:
            if a.id == approach_id:
                return a
        raise KeyError(approach_id)

    def movement(self, movement_id: str) -> MovementInfo:
        for m in self.movements:
            if m.id == movement_id:
                return m
        raise KeyError(movement_id)

    def movements_of(self, approach_id: str, turn: str | None = None) -> tuple[MovementInfo, ...]:
        return tuple(m for m in self.movements if m.approach_id == approach_id and (turn is None or m.turn == turn))

    def conflict(self, a: str, b: str) -> ConflictInfo | None:
        for c in self.conflicts:
            if {c.movement_a, c.movement_b} == {a, b}:
                return c
        return None


@dataclass(frozen=True)
class MapEntry:
    name: str
    content_sha256: str
    fingerprint: str  # sha256 of the source bytes (+ sidecar); the cache key
    source: str  # "builtin" or a file path
    summary: dict[str, int]
    junctions: tuple[JunctionInfo, ...]
    notes: tuple[str, ...] = ()
    catalogue_version: int = CATALOGUE_VERSION
    build_s: float = 0.0

    def junction(self, junction_id: str) -> JunctionInfo:
        for j in self.junctions:
            if j.id == junction_id:
                return j
        raise KeyError(f"{self.name}: no junction {junction_id!r}")

    @property
    def signalized_junction_count(self) -> int:
        return sum(j.signalized for j in self.junctions)


@dataclass(frozen=True)
class MapErrorEntry:
    name: str
    source: str
    reason: str


def entry_to_dict(entry: MapEntry) -> dict[str, Any]:
    return {"schema": SCHEMA, **asdict(entry)}


def entry_from_dict(data: dict[str, Any]) -> MapEntry:
    if data.get("schema") != SCHEMA or data.get("catalogue_version") != CATALOGUE_VERSION:
        raise ValueError("catalogue entry of another schema or version")

    def t(x: Any) -> tuple:
        return tuple(x) if x is not None else ()

    junctions = []
    for j in data["junctions"]:
        approaches = tuple(ApproachInfo(
            id=a["id"], junction_id=a["junction_id"], heading_rad=a["heading_rad"], compass=a["compass"],
            lane_ids=t(a["lane_ids"]), stop_bars=tuple(StopBarInfo(b["lane_id"], tuple(b["xy"])) for b in a["stop_bars"]),
            movement_ids=t(a["movement_ids"]), turns=t(a["turns"]), signal_group_ids=t(a["signal_group_ids"]),
            signalized_turns=t(a["signalized_turns"]), speed_limit_mps=a["speed_limit_mps"], run_up_m=a["run_up_m"],
            next_junction_id=a["next_junction_id"], next_junction_m=a["next_junction_m"],
            chain_ahead=t(a["chain_ahead"])) for a in j["approaches"])
        movements = tuple(MovementInfo(**{**m, "conflicts": t(m["conflicts"])}) for m in j["movements"])
        conflicts = tuple(ConflictInfo(c["movement_a"], c["movement_b"], c["kind"], tuple(c["xy"]))
                          for c in j["conflicts"])
        junctions.append(JunctionInfo(
            id=j["id"], map_name=j["map_name"], centre=tuple(j["centre"]), signalized=j["signalized"],
            kinds=t(j["kinds"]), approaches=approaches, movements=movements, conflicts=conflicts,
            signal_group_ids=t(j["signal_group_ids"]), speed_limit_mps=j["speed_limit_mps"],
            exposure=BuildingExposure(**j["exposure"]),
            rsu_sites=tuple(RsuSiteInfo(**{**s, "xy": tuple(s["xy"])}) for s in j["rsu_sites"])))
    return MapEntry(name=data["name"], content_sha256=data["content_sha256"], fingerprint=data["fingerprint"],
                    source=data["source"], summary=dict(data["summary"]), junctions=tuple(junctions),
                    notes=t(data.get("notes")), catalogue_version=data["catalogue_version"],
                    build_s=data.get("build_s", 0.0))


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


# ── sources and the on-disk cache ──────────────────────────────────────────────
@dataclass(frozen=True)
class MapSource:
    name: str
    origin: str  # "builtin" or "file"
    path: Path | None = None

    @property
    def label(self) -> str:
        return "builtin" if self.origin == "builtin" else str(self.path)


@dataclass(frozen=True)
class CatalogueConfig:
    """Where maps come from and where the catalogue caches its entries."""

    cache_dir: Path | None = None  # None = default_cache_dir()
    include_builtins: bool = True
    map_paths: tuple[Path, ...] = ()  # .xodr files or directories of them (not recursive)
    map_cache_dir: Path | None = None  # where built-in maps' generated files go (maps layer default)
    use_cache: bool = True
    road_map_cache_size: int = 16  # parsed RoadMaps kept in memory (the 8 CARLA towns + built-ins fit)
    limits: Limits = field(default_factory=Limits)


@dataclass
class CatalogueStats:
    builds: int = 0  # maps parsed and extracted
    cache_hits: int = 0  # entries read from the disk cache
    errors: int = 0
    road_map_loads: int = 0
    refreshes: int = 0
    build_s: float = 0.0


class MapCatalogue:
    """Every map's entry, loaded from the disk cache or built; the maps' RoadMaps on demand."""

    def __init__(self, config: CatalogueConfig | None = None, *, autoload: bool = True):
        self.config = config or CatalogueConfig()
        self.cache_dir = Path(self.config.cache_dir) if self.config.cache_dir is not None else default_cache_dir()
        self.stats = CatalogueStats()
        self._lock = threading.RLock()
        self._maps: dict[str, MapEntry] = {}
        self._sources: dict[str, MapSource] = {}
        self._errors: dict[str, MapErrorEntry] = {}
        self._road_maps: OrderedDict[str, RoadMap] = OrderedDict()
        if autoload:
            self.refresh()

    # ---------------------------------------------------------------- sources
    def sources(self) -> list[MapSource]:
        out: list[MapSource] = []
        if self.config.include_builtins:
            out += [MapSource(n, "builtin") for n in builtin_map_names()]
        for p in self.config.map_paths:
            p = Path(p)
            if p.is_dir():
                out += [MapSource(f.stem, "file", f) for f in sorted(p.glob("*.xodr")) if f.is_file()]
            else:
                out.append(MapSource(p.stem, "file", p))
        return out

    def _fingerprint(self, src: MapSource) -> str:
        if src.origin == "builtin":
            xodr, generated = builtin_sources(src.name)
            return content_hash(xodr.encode("utf-8"), generated)
        assert src.path is not None
        try:
            size = src.path.stat().st_size
        except OSError as exc:
            raise MapError(src.name, f"cannot read {src.path}: {exc.strerror or exc}") from None
        if size > self.config.limits.max_bytes:
            raise MapError(src.name, f"file is {size} bytes, over the cap of {self.config.limits.max_bytes}")
        data = src.path.read_bytes()
        side = src.path.with_name(src.path.stem + ".buildings.json")
        bjson: bytes | None = None
        if side.is_file():
            if side.stat().st_size > MAX_JSON_BYTES:
                raise MapError(str(side), f"buildings JSON over the cap of {MAX_JSON_BYTES} bytes")
            bjson = side.read_bytes()
        return content_hash(data, bjson)

    def _cache_path(self, name: str, fingerprint: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]
        return self.cache_dir / f"{safe}.{fingerprint[:24]}.c{CATALOGUE_VERSION}.json"

    def _read_cache(self, path: Path, fingerprint: str) -> MapEntry | None:
        if not self.config.use_cache or not path.is_file():
            return None
        try:
            entry = entry_from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # corrupt or foreign: rebuild
        return entry if entry.fingerprint == fingerprint else None

    def _write_cache(self, path: Path, entry: MapEntry) -> None:
        if not self.config.use_cache:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = json.dumps(entry_to_dict(entry), sort_keys=True, separators=(",", ":")).encode("utf-8")
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            stem = path.name.split(".")[0]
            for old in path.parent.glob(f"{stem}.*.c{CATALOGUE_VERSION}.json"):
                if old != path and old.name.split(".")[0] == stem:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only cache only costs rebuilds

    def _load(self, src: MapSource) -> RoadMap:
        self.stats.road_map_loads += 1
        if src.origin == "builtin":
            return load_map(src.name, cache_dir=self.config.map_cache_dir)
        assert src.path is not None
        rm = load_map(src.path)
        return rm

    # ---------------------------------------------------------------- refresh
    def refresh(self) -> None:
        """Rescan the sources; rebuild only entries whose source bytes changed."""
        with self._lock:
            self.stats.refreshes += 1
            maps: dict[str, MapEntry] = {}
            sources: dict[str, MapSource] = {}
            errors: dict[str, MapErrorEntry] = {}
            for src in self.sources():
                if src.name in sources:
                    errors[f"{src.name}@{src.label}"] = MapErrorEntry(
                        src.name, src.label, f"duplicate map name (already served from {sources[src.name].label})")
                    continue
                try:
                    fp = self._fingerprint(src)
                    path = self._cache_path(src.name, fp)
                    old = self._maps.get(src.name)
                    entry: MapEntry | None
                    if old is not None and old.fingerprint == fp:
                        entry = old
                    else:
                        entry = self._read_cache(path, fp)
                        if entry is not None:
                            self.stats.cache_hits += 1
                        else:
                            t0 = time.perf_counter()
                            rm = self._load(src)
                            built = extract(rm, fingerprint=fp, source=src.label)
                            # round-trip so a fresh build and a cache hit are the same data
                            entry = entry_from_dict(json.loads(json.dumps(entry_to_dict(built))))
                            self.stats.builds += 1
                            self.stats.build_s += time.perf_counter() - t0
                            self._write_cache(path, entry)
                            self._remember(src.name, rm)
                        if old is not None and old.fingerprint != fp:
                            self._road_maps.pop(src.name, None)
                    maps[src.name] = entry
                    sources[src.name] = src
                except MapError as exc:
                    self.stats.errors += 1
                    errors[src.name] = MapErrorEntry(src.name, src.label, exc.reason)
                    self._road_maps.pop(src.name, None)
                except OSError as exc:
                    self.stats.errors += 1
                    errors[src.name] = MapErrorEntry(src.name, src.label, f"cannot read: {exc}")
            for name in list(self._road_maps):
                if name not in maps:
                    self._road_maps.pop(name)
            self._maps, self._sources, self._errors = maps, sources, errors

    def add_path(self, path: str | os.PathLike[str]) -> None:
        """Serve another .xodr file or directory (then refresh)."""
        self.config = CatalogueConfig(**{**self.config.__dict__,
                                         "map_paths": (*self.config.map_paths, Path(path))})
        self.refresh()

    # ---------------------------------------------------------------- access
    @property
    def maps(self) -> dict[str, MapEntry]:
        return dict(self._maps)

    @property
    def errors(self) -> dict[str, MapErrorEntry]:
        return dict(self._errors)

    def names(self) -> tuple[str, ...]:
        return tuple(self._maps)

    def entry(self, name: str) -> MapEntry:
        try:
            return self._maps[name]
        except KeyError:
            raise KeyError(f"unknown map {name!r}; known: {sorted(self._maps)}") from None

    def resolve_name(self, name: str) -> str | None:
        """Catalogue name for a user-given one ('town 3' -> 'Town03', case-insensitive)."""
        key = canonical_map_name(name).lower()
        for n in self._maps:
            if n.lower() == key:
                return n
        return None

    @property
    def version(self) -> str:
        """Changes whenever any served map changes (index keys, program provenance)."""
        h = hashlib.sha256(f"c{CATALOGUE_VERSION}".encode())
        for name in sorted(self._maps):
            h.update(f"{name}\0{self._maps[name].content_sha256}\0".encode())
        return h.hexdigest()[:16]

    def junctions(self) -> list[JunctionInfo]:
        return [j for name in sorted(self._maps) for j in self._maps[name].junctions]

    def _remember(self, name: str, rm: RoadMap) -> None:
        self._road_maps[name] = rm
        self._road_maps.move_to_end(name)
        while len(self._road_maps) > max(1, self.config.road_map_cache_size):
            self._road_maps.popitem(last=False)

    def road_map(self, name: str) -> RoadMap:
        """The parsed RoadMap of a served map (kept in a small LRU)."""
        with self._lock:
            rm = self._road_maps.get(name)
            if rm is not None:
                self._road_maps.move_to_end(name)
                return rm
            entry = self.entry(name)
            rm = self._load(self._sources[name])
            if rm.content_sha256 != entry.content_sha256:
                raise MapError(name, "map changed since it was catalogued; refresh the catalogue")
            self._remember(name, rm)
            return rm

    def list_maps(self) -> list[dict[str, Any]]:
        """ListMaps: one summary per served map (fields of the MapSummary message)."""
        return [{"name": e.name, "content_sha256": e.content_sha256, "junction_count": len(e.junctions),
                 "signalized_junction_count": e.signalized_junction_count,
                 "building_count": int(e.summary.get("buildings", 0)), "source": e.source}
                for e in (self._maps[n] for n in sorted(self._maps))]



__all__ = [
    "CATALOGUE_VERSION", "ApproachInfo", "BuildingExposure", "CatalogueConfig", "CatalogueStats", "ConflictInfo",
    "JunctionInfo", "MapCatalogue", "MapEntry", "MapErrorEntry", "MapSource", "MovementInfo", "RsuSiteInfo",
    "StopBarInfo", "canonical_map_name", "compass_from", "default_cache_dir", "entry_from_dict", "entry_to_dict",
    "extract", "heading_gap_rad", "walk_back", "walk_forward",
]
