"""What a map that ships none gets derived from its road network: building footprints and
(on request) fixed-time signal groups for unsignalized 4-way junctions.

**Buildings (an assumption, switchable off: ``LASTV2X_MAP_GENERATED_BUILDINGS=0``).** CARLA
towns and most OpenDRIVE files carry no buildings, so the channel's building blockage would
have nothing to act on. A user map loaded without a ``<stem>.buildings.json`` sidecar gets
footprints derived from its roads:

1. the map is rasterized at ``CELL_M``; every cell within ``lane width / 2 + SIDEWALK_M`` of a
   lane or junction connector centre line is street (the same kerb-to-facade clearance the
   built-in maps use), so every footprint keeps that setback from every lane edge;
2. the remaining cells split into 4-connected blocks; a block touching the raster's border is
   not enclosed by roads (open land around the town) and stays empty, as does one smaller
   than ``MIN_BLOCK_M2`` (islands inside large junctions);
3. each enclosed block is filled to its setback by axis-aligned rectangles (runs of cells
   merged where consecutive rows repeat them), all of one roof height drawn uniformly from
   ``HEIGHTS_M`` by a generator seeded with the OpenDRIVE's sha256 (same map bytes, same
   buildings, on every machine).

Footprints of a block touch each other: the channel's per-metre blockage sums chord lengths,
so a block blocks like one building (its per-wall term is 0 by default; with Veins' per-wall
loss the seams between rectangles would count as walls).

**Signals (explicit, off by default: ``LASTV2X_MAP_SIGNALIZE_4WAY``).** Older CARLA towns
(Town03, Town05) keep their traffic lights in the Unreal level, not in the OpenDRIVE, so
their junctions load unsignalized. For a map named in that setting every unsignalized
junction with exactly four approaches gets one signal group per approach (as a CARLA head
controls one approach); grounding gives those groups the scenario's two-phase fixed-time
plan as for any other junction (the ego's axis and the cross axis).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np

from services.simulator.maps.model import Building, Junction, Movement, RoadMap, SignalGroup

SIDEWALK_M = 5.0  # kerb-to-facade clearance beyond the outer lane edge (also the built-in maps')
CELL_M = 2.0  # raster cell of the block extraction
MIN_BLOCK_M2 = 400.0  # smaller enclosed areas (junction islands, slivers) stay empty
HEIGHTS_M = (9.0, 30.0)  # 3-10 storeys at 3 m: an assumption, not a survey of any town
GENERATOR_VERSION = 1  # part of the map's content hash: a new rule gives new map identities
GENERATED_SIGNAL_PREFIX = "generated:"  # signal_ids of a generated group (no OpenDRIVE head)


def _street_mask(rm: RoadMap, origin: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Cells within the clearance of any lane / connector centre line (True = street)."""
    street = np.zeros(shape, dtype=bool)
    paths = [(ln.polyline, ln.width_m) for ln in rm.lanes.values()]
    paths += [(m.polyline, m.width_m) for m in rm.movements.values()]
    by_radius: dict[int, list[np.ndarray]] = defaultdict(list)
    for pts, width in paths:
        seg = np.hypot(*np.diff(pts, axis=0).T)  # densify to half a cell
        n = np.maximum(1, np.ceil(seg / (CELL_M / 2)).astype(int))
        t = np.concatenate([np.arange(k) / k for k in n])
        i = np.repeat(np.arange(len(seg)), n)
        dense = np.vstack([pts[i] + (pts[i + 1] - pts[i]) * t[:, None], pts[-1:]])
        # a footprint cell reaches half a diagonal beyond its centre
        r = int(np.ceil((width / 2 + SIDEWALK_M + CELL_M * 0.7072) / CELL_M))
        by_radius[r].append(np.floor((dense - origin) / CELL_M).astype(np.int64))
    h, w = shape
    for r, chunks in sorted(by_radius.items()):
        cells = np.unique(np.vstack(chunks), axis=0)
        dx, dy = np.meshgrid(np.arange(-r, r + 1), np.arange(-r, r + 1))
        disk = (dx * dx + dy * dy) <= r * r
        for ox, oy in zip(dx[disk].tolist(), dy[disk].tolist(), strict=True):
            cx, cy = cells[:, 0] + ox, cells[:, 1] + oy
            ok = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
            street[cy[ok], cx[ok]] = True
    return street


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        p = self.parent
        while p[x] != x:
            p[x] = p[p[x]]
            x = p[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _runs(free: np.ndarray) -> list[tuple[int, int, int]]:
    """(row, x0, x1) of every horizontal run of free cells, row-major."""
    h, w = free.shape
    pad = np.zeros((h, w + 2), dtype=np.int8)
    pad[:, 1:-1] = free
    d = np.diff(pad, axis=1)
    rows_s, x_s = np.nonzero(d == 1)
    rows_e, x_e = np.nonzero(d == -1)
    return list(zip(rows_s.tolist(), x_s.tolist(), x_e.tolist(), strict=True))


def derive_buildings(rm: RoadMap, seed_material: bytes) -> tuple[Building, ...]:
    """Footprints of the enclosed blocks of ``rm`` (see the module docstring)."""
    pts = [ln.polyline for ln in rm.lanes.values()] + [m.polyline for m in rm.movements.values()]
    if not pts:
        return ()
    allpts = np.vstack(pts)
    margin = SIDEWALK_M + 10.0 + 3 * CELL_M
    origin = allpts.min(axis=0) - margin
    span = allpts.max(axis=0) + margin - origin
    shape = (int(np.ceil(span[1] / CELL_M)), int(np.ceil(span[0] / CELL_M)))
    free = ~_street_mask(rm, origin, shape)
    runs = _runs(free)
    uf = _UnionFind(len(runs))
    prev: list[int] = []  # run indices of the previous row
    row_start = 0
    for k, (row, x0, x1) in enumerate(runs):
        if k and row != runs[k - 1][0]:
            prev = list(range(row_start, k)) if runs[k - 1][0] == row - 1 else []
            row_start = k
        for q in prev:  # 4-connected: the x intervals overlap
            _, a0, a1 = runs[q]
            if a0 < x1 and x0 < a1:
                uf.union(q, k)
    h, w = shape
    border: set[int] = set()
    area: dict[int, int] = defaultdict(int)
    comp_runs: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for k, (row, x0, x1) in enumerate(runs):
        root = uf.find(k)
        area[root] += x1 - x0
        comp_runs[root].append((row, x0, x1))
        if row in (0, h - 1) or x0 == 0 or x1 == w:
            border.add(root)
    blocks = [c for c in sorted(comp_runs) if c not in border
              and area[c] * CELL_M * CELL_M >= MIN_BLOCK_M2]
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(seed_material).digest()[:8], "big"))
    out: list[Building] = []
    for n, c in enumerate(blocks):
        height = float(np.round(rng.uniform(*HEIGHTS_M), 1))
        by_row: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for row, x0, x1 in comp_runs[c]:
            by_row[row].append((x0, x1))
        open_rects: dict[tuple[int, int], int] = {}  # (x0, x1) -> first row of the stack still open
        rects: list[tuple[int, int, int, int]] = []
        prev_row = -2
        for row in sorted(by_row):
            here = set(by_row[row])
            for key in [k for k in open_rects if row != prev_row + 1 or k not in here]:
                rects.append((key[0], open_rects.pop(key), key[1], prev_row + 1))
            for key in by_row[row]:
                open_rects.setdefault(key, row)
            prev_row = row
        for key, r0 in open_rects.items():
            rects.append((key[0], r0, key[1], prev_row + 1))
        for k, (x0, r0, x1, r1) in enumerate(sorted(rects, key=lambda r: (r[1], r[0]))):
            lo = origin + CELL_M * np.array([x0, r0], dtype=np.float64)
            hi = origin + CELL_M * np.array([x1, r1], dtype=np.float64)
            fp = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
            out.append(Building(f"gen{n}.{k}", np.round(fp, 3), height))
    return tuple(out)


def signalize_four_way(rm: RoadMap) -> RoadMap:
    """``rm`` with a signal group per approach at every unsignalized 4-approach junction."""
    groups = dict(rm.signal_groups)
    junctions = {}
    changed = False
    for jid, j in rm.junctions.items():
        if j.signalized or len(j.approaches) != 4:
            junctions[jid] = j
            continue
        changed = True
        group_of: dict[str, str] = {}
        new_ids = []
        for n, a in enumerate(j.approaches):
            gid = f"{jid}.sg{n}"
            mids = tuple(m.id for m in j.movements if m.approach_id == a.id)
            if not mids:
                continue
            froms = {rm.movements[m].from_lane_id for m in mids}
            groups[gid] = SignalGroup(gid, jid, mids, tuple(b for b in a.stop_bars if b.lane_id in froms),
                                      (f"{GENERATED_SIGNAL_PREFIX}{a.id}",))
            group_of.update(dict.fromkeys(mids, gid))
            new_ids.append(gid)
        moves = tuple(Movement(id=m.id, junction_id=m.junction_id, from_lane_id=m.from_lane_id,
                               to_lane_id=m.to_lane_id, turn=m.turn, polyline=m.polyline,
                               heading_change_rad=m.heading_change_rad, width_m=m.width_m,
                               speed_limit_mps=m.speed_limit_mps, signal_group_id=group_of.get(m.id),
                               approach_id=m.approach_id, via=m.via) for m in j.movements)
        junctions[jid] = Junction(j.id, j.centre, j.approaches, moves, j.conflicts, bool(new_ids),
                                  tuple(new_ids))
    if not changed:
        return rm
    return RoadMap(name=rm.name, content_sha256=rm.content_sha256, lanes=rm.lanes,
                   junctions=type(rm.junctions)(junctions), signal_groups=type(rm.signal_groups)(groups),
                   buildings=rm.buildings, bounds=rm.bounds, source=rm.source, notes=rm.notes,
                   traffic_lights=rm.traffic_lights)


__all__ = ["CELL_M", "GENERATED_SIGNAL_PREFIX", "GENERATOR_VERSION", "HEIGHTS_M", "MIN_BLOCK_M2",
           "SIDEWALK_M", "derive_buildings", "signalize_four_way"]
