"""Plain-numpy 2-D geometry for the V2X channel: building footprints and ray chords.

Everything here works on plain arrays (metres, a flat ground plane, heights above
ground) so that the channel never depends on the map package: whoever owns the map
turns its building footprints into ``(polygon (M, 2), height_m)`` pairs and hands
them to :class:`BuildingSet`.

The central operation is :meth:`BuildingSet.chords`: for many straight 2-D segments
(tx -> rx) at once, find every piece of every segment that lies inside a building
footprint. It is vectorized as *segment pairs x polygon edges*:

1. a bounding-box prefilter (segment bbox vs building bbox, then an exact
   Liang-Barsky slab test of the segment against the building bbox) keeps only
   (segment, building) pairs that can intersect;
2. every kept pair intersects its segment with all edges of its polygon
   (parameters ``t`` along the segment, ``u`` along the edge);
3. the crossing parameters, together with 0 and 1, are sorted; each interval
   between consecutive parameters is inside or outside the footprint as a whole,
   decided by an even-odd point-in-polygon test of its midpoint.

Deciding inside-ness by interval midpoints (instead of counting crossings) makes
the result robust to rays through vertices, tangent rays and segments that start
or end inside a footprint: degenerate intervals have zero length and contribute
nothing. Polygons may be non-convex; self-intersecting ones follow the even-odd rule.

Buildings are grouped by their (power-of-two padded) edge count so one detailed
footprint does not inflate the work for all the simple rectangles. Padding edges are
degenerate (a == b) and never intersect anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

# Work-size limits for the vectorized kernels (elements per temporary array).
_PREFILTER_BLOCK = 2_000_000  # links x buildings per bbox-overlap block
_PAIR_BLOCK = 2_000_000  # pairs x intervals x edges per chord block
_EPS = 1e-12


def as_xy(value: ArrayLike, name: str) -> FloatArray:
    """Return ``value`` as a float64 ``(N, 2)`` array, or raise ``ValueError``."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 1 and arr.shape[0] == 2:
        arr = arr.reshape(1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (N, 2), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def as_heights(value: ArrayLike, n: int, name: str) -> FloatArray:
    """Return ``value`` as a float64 ``(n,)`` array (a scalar broadcasts)."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
        raise ValueError(f"{name} must be finite and >= 0 (metres above ground)")
    return arr


def all_pairs(n_tx: int, n_rx: int | None = None, *, exclude_self: bool = True
              ) -> tuple[IntArray, IntArray]:
    """Index arrays ``(i, j)`` of every ordered (tx i, rx j) pair.

    With ``n_rx`` omitted the pairs are within one population of ``n_tx`` nodes and
    ``exclude_self`` drops i == j. Ordered pairs: (i, j) and (j, i) are both present
    (messages travel in both directions; the channel is symmetric but the Bernoulli
    draws are independent per message).
    """
    same = n_rx is None
    m = n_tx if n_rx is None else n_rx
    gi, gj = np.meshgrid(np.arange(n_tx), np.arange(m), indexing="ij")
    i, j = gi.ravel(), gj.ravel()
    if same and exclude_self:
        keep = i != j
        i, j = i[keep], j[keep]
    return i.astype(np.intp), j.astype(np.intp)


def _cross(ax: FloatArray, ay: FloatArray, bx: FloatArray, by: FloatArray) -> FloatArray:
    return ax * by - ay * bx


def _points_in_polygons(px: FloatArray, py: FloatArray, ea: FloatArray, eb: FloatArray
                        ) -> BoolArray:
    """Even-odd test. ``px, py``: (P, K); ``ea, eb``: (P, E, 2) edges -> (P, K) bool."""
    ax = ea[:, None, :, 0]
    ay = ea[:, None, :, 1]
    bx = eb[:, None, :, 0]
    by = eb[:, None, :, 1]
    qx = px[:, :, None]
    qy = py[:, :, None]
    straddles = (ay > qy) != (by > qy)
    dy = np.where(straddles, by - ay, 1.0)
    x_at = ax + (qy - ay) * (bx - ax) / dy
    crossings = straddles & (qx < x_at)
    return (np.count_nonzero(crossings, axis=2) % 2) == 1


@dataclass(frozen=True)
class Chords:
    """Pieces of segments inside building footprints, one row per (pair, interval).

    ``link``: index of the segment; ``building``: index into the :class:`BuildingSet`;
    ``t0 < t1``: the piece as fractions of the segment, ``0 <= t0 < t1 <= 1``. A
    footprint crossed twice (non-convex) gives two rows; zero-length pieces are
    dropped. ``wall_t``/``wall_link``/``wall_building``: where a segment passes
    through a footprint boundary (entering or leaving, segment end points excluded).
    """

    link: IntArray
    building: IntArray
    t0: FloatArray
    t1: FloatArray
    wall_link: IntArray
    wall_building: IntArray
    wall_t: FloatArray


class BuildingSet:
    """Building footprints (2-D polygons) with roof heights, prepared for ray tests.

    ``BuildingSet([(polygon_Mx2, height_m), ...])``. Polygons are in metres in the
    simulator's ground frame; a closing vertex equal to the first is accepted and
    dropped; at least 3 distinct vertices; height is the roof height above ground
    (a flat roof over the whole footprint). The set is immutable: arrays are
    read-only and built once.
    """

    def __init__(self, buildings: Iterable[tuple[ArrayLike, float]] = ()) -> None:
        polys: list[FloatArray] = []
        heights: list[float] = []
        for k, item in enumerate(buildings):
            try:
                poly_like, height = item
            except (TypeError, ValueError) as exc:
                raise ValueError(f"building {k}: expected (polygon, height_m)") from exc
            poly = np.asarray(poly_like, dtype=np.float64)
            if poly.ndim != 2 or poly.shape[1] != 2:
                raise ValueError(f"building {k}: polygon must have shape (M, 2)")
            if poly.shape[0] >= 2 and np.allclose(poly[0], poly[-1]):
                poly = poly[:-1]
            if poly.shape[0] < 3 or not np.all(np.isfinite(poly)):
                raise ValueError(f"building {k}: polygon needs >= 3 finite vertices")
            h = float(height)
            if not np.isfinite(h) or h < 0.0:
                raise ValueError(f"building {k}: height_m must be finite and >= 0")
            polys.append(poly.copy())
            heights.append(h)

        self._polygons: tuple[FloatArray, ...] = tuple(polys)
        self.heights_m: FloatArray = np.asarray(heights, dtype=np.float64).reshape(-1)
        n = len(polys)
        bmin = np.array([p.min(axis=0) for p in polys]).reshape(n, 2)
        bmax = np.array([p.max(axis=0) for p in polys]).reshape(n, 2)
        self.bbox_min: FloatArray = bmin
        self.bbox_max: FloatArray = bmax
        # the boxes as float rows (min x, min y, max x, max y), for candidate_pairs_rows
        self._bbox_rows = list(zip(bmin[:, 0].tolist(), bmin[:, 1].tolist(), bmax[:, 0].tolist(),
                                   bmax[:, 1].tolist(), strict=True))

        # Group by padded edge count: {E: (building ids, edge starts, edge ends)}.
        groups: dict[int, list[int]] = {}
        for idx, p in enumerate(polys):
            e = 4
            while e < p.shape[0]:
                e *= 2
            groups.setdefault(e, []).append(idx)
        self._group_of = np.zeros(n, dtype=np.intp)
        self._row_in_group = np.zeros(n, dtype=np.intp)
        self._groups: list[tuple[IntArray, FloatArray, FloatArray]] = []
        for g, (e, ids) in enumerate(sorted(groups.items())):
            ea = np.empty((len(ids), e, 2))
            eb = np.empty((len(ids), e, 2))
            for r, idx in enumerate(ids):
                p = polys[idx]
                m = p.shape[0]
                ea[r, :m] = p
                eb[r, :m] = np.roll(p, -1, axis=0)
                ea[r, m:] = p[0]  # degenerate padding edges (a == b)
                eb[r, m:] = p[0]
                self._group_of[idx] = g
                self._row_in_group[idx] = r
            ea.setflags(write=False)
            eb.setflags(write=False)
            self._groups.append((np.asarray(ids, dtype=np.intp), ea, eb))
        for arr in (self.heights_m, self.bbox_min, self.bbox_max):
            arr.setflags(write=False)
        self.heights_rows: list[float] = self.heights_m.tolist()  # (the channel's float path reads them)
        # per building, its padded edges as float rows (ax, ay, bx, by), made on first use (chords_rows)
        self._edge_rows: dict[int, list[tuple[float, float, float, float]]] = {}

    # ------------------------------------------------------------------ basics
    @classmethod
    def empty(cls) -> BuildingSet:
        return cls(())

    def __len__(self) -> int:
        return len(self._polygons)

    def __repr__(self) -> str:
        return f"BuildingSet(n={len(self)})"

    @property
    def polygons(self) -> tuple[FloatArray, ...]:
        return self._polygons

    def with_heights(self, heights_m: Sequence[float] | FloatArray) -> BuildingSet:
        """Same footprints, new roof heights (e.g. for height sweeps in tests)."""
        hs = np.asarray(heights_m, dtype=np.float64).reshape(-1)
        if hs.shape[0] != len(self):
            raise ValueError("one height per building")
        return BuildingSet(zip(self._polygons, hs.tolist(), strict=True))

    def contains(self, points_xy: ArrayLike) -> BoolArray:
        """True where a point lies inside any footprint (even-odd rule per building)."""
        pts = as_xy(points_xy, "points_xy")
        out = np.zeros(pts.shape[0], dtype=bool)
        if len(self) == 0 or pts.shape[0] == 0:
            return out
        for ids, ea, eb in self._groups:
            lo = self.bbox_min[ids]
            hi = self.bbox_max[ids]
            block = max(1, _PREFILTER_BLOCK // max(1, len(ids)))
            for s in range(0, pts.shape[0], block):
                p = pts[s:s + block]
                cand = ((p[:, None, 0] >= lo[None, :, 0]) & (p[:, None, 0] <= hi[None, :, 0])
                        & (p[:, None, 1] >= lo[None, :, 1]) & (p[:, None, 1] <= hi[None, :, 1]))
                pi, gi = np.nonzero(cand)
                if pi.size == 0:
                    continue
                inside = _points_in_polygons(
                    p[pi, 0][:, None], p[pi, 1][:, None], ea[gi], eb[gi])[:, 0]
                np.logical_or.at(out, s + pi[inside], True)
        return out

    # ----------------------------------------------------------------- chords
    def candidate_pairs(self, p0: FloatArray, p1: FloatArray) -> tuple[IntArray, IntArray]:
        """(link, building) pairs whose segment meets the building's bounding box.

        Two stages: segment-bbox vs building-bbox overlap (cheap, blocked so the
        (links x buildings) mask stays bounded), then an exact slab test of the
        segment against the building bbox.
        """
        n = p0.shape[0]
        nb = len(self)
        if n == 0 or nb == 0:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty
        smin = np.minimum(p0, p1)
        smax = np.maximum(p0, p1)
        links: list[IntArray] = []
        blds: list[IntArray] = []
        block = max(1, _PREFILTER_BLOCK // nb)
        for s in range(0, n, block):
            a, b = smin[s:s + block], smax[s:s + block]
            ov = ((a[:, None, 0] <= self.bbox_max[None, :, 0])
                  & (b[:, None, 0] >= self.bbox_min[None, :, 0])
                  & (a[:, None, 1] <= self.bbox_max[None, :, 1])
                  & (b[:, None, 1] >= self.bbox_min[None, :, 1]))
            li, bi = np.nonzero(ov)
            links.append(li.astype(np.intp) + s)
            blds.append(bi.astype(np.intp))
        li = np.concatenate(links)
        bi = np.concatenate(blds)
        if li.size == 0:
            return li, bi
        # Liang-Barsky: the parameter range of the segment inside the bbox.
        o = p0[li]
        d = p1[li] - o
        lo = self.bbox_min[bi]
        hi = self.bbox_max[bi]
        moving = np.abs(d) > _EPS
        inv = 1.0 / np.where(moving, d, 1.0)
        ta = (lo - o) * inv
        tb = (hi - o) * inv
        t_near = np.where(moving, np.minimum(ta, tb), -np.inf)
        t_far = np.where(moving, np.maximum(ta, tb), np.inf)
        # Axis-parallel segment: inside the slab iff its coordinate is.
        flat_ok = np.where(moving, True, (o >= lo) & (o <= hi))
        t_enter = np.maximum(t_near.max(axis=1), 0.0)
        t_exit = np.minimum(t_far.min(axis=1), 1.0)
        keep = flat_ok.all(axis=1) & (t_enter <= t_exit)
        return li[keep], bi[keep]

    def candidate_pairs_rows(self, x0: list[float], y0: list[float], x1: list[float], y1: list[float]
                             ) -> tuple[list[int], list[int]]:
        """:meth:`candidate_pairs` of a few segments given as float columns (finite): the same pairs in the
        same order (link, then building), by the same comparisons and arithmetic on floats, without numpy's
        per-call cost (a step's one to three radio links against a map's buildings, most of them far)."""
        links: list[int] = []
        blds: list[int] = []
        for k in range(len(x0)):
            ox, oy, ex, ey = x0[k], y0[k], x1[k], y1[k]
            sx0, sx1 = (ox, ex) if ox < ex else (ex, ox)  # np.minimum / np.maximum (finite: the same values)
            sy0, sy1 = (oy, ey) if oy < ey else (ey, oy)
            dx, dy = ex - ox, ey - oy
            mx, my = abs(dx) > _EPS, abs(dy) > _EPS
            ix, iy = 1.0 / (dx if mx else 1.0), 1.0 / (dy if my else 1.0)
            for b, (lox, loy, hix, hiy) in enumerate(self._bbox_rows):
                if not (sx0 <= hix and sx1 >= lox and sy0 <= hiy and sy1 >= loy):
                    continue
                # Liang-Barsky, as candidate_pairs
                near_x, far_x = _slab(ox, mx, ix, lox, hix)
                near_y, far_y = _slab(oy, my, iy, loy, hiy)
                if max(near_x, near_y, 0.0) <= min(far_x, far_y, 1.0):  # (an empty slab: (inf, -inf))
                    links.append(k)
                    blds.append(b)
        return links, blds

    def max_edges(self, blds: list[int]) -> int:
        """The most (padded) edges among the footprints ``blds``."""
        return max(self._groups[int(self._group_of[b])][1].shape[1] for b in blds)

    def chords_rows(self, x0: list[float], y0: list[float], x1: list[float], y1: list[float], links: list[int],
                    blds: list[int]) -> tuple[list[tuple[int, int, float, float]], list[tuple[int, int, float]]]:
        """:meth:`chords` of float columns and their candidate pairs as lists (``links``, ``blds``: from
        :meth:`candidate_pairs_rows`, or :meth:`candidate_pairs` on a big map), on
        floats: the same pieces ``(link, building, t0, t1)`` and wall crossings ``(link, building, t)`` in the
        same order (edge-count group, then pair, then interval) by the same arithmetic as ``_chords_block``.
        For a step's few pairs with footprints of a few edges; numpy's per-call cost is most of ``chords``
        there."""
        order = range(len(links))
        if len(self._groups) > 1:  # chords walks the groups in turn, each group's pairs in their order
            order = sorted(order, key=lambda m: int(self._group_of[blds[m]]))
        pieces: list[tuple[int, int, float, float]] = []
        walls: list[tuple[int, int, float]] = []
        for m in order:
            k, b = links[m], blds[m]
            edges = self._edge_rows.get(b)
            if edges is None:
                g, r = int(self._group_of[b]), int(self._row_in_group[b])
                ea, eb = self._groups[g][1][r], self._groups[g][2][r]
                edges = self._edge_rows[b] = list(zip(ea[:, 0].tolist(), ea[:, 1].tolist(), eb[:, 0].tolist(),
                                                      eb[:, 1].tolist(), strict=True))
            px, py = x0[k], y0[k]
            dx, dy = x1[k] - px, y1[k] - py
            ts = [0.0, 1.0]
            for ax, ay, bx, by in edges:
                ex, ey = bx - ax, by - ay
                wx, wy = ax - px, ay - py
                denom = dx * ey - dy * ex
                if abs(denom) > _EPS:
                    t = (wx * ey - wy * ex) / denom
                    u = (wx * dy - wy * dx) / denom
                    ts.append(t if (0.0 < t < 1.0 and 0.0 <= u <= 1.0) else 1.0)
                else:
                    ts.append(1.0)
            ts.sort()
            last_pos, prev_inside = -1, False  # the last positive interval so far, and whether it was inside
            for i in range(len(ts) - 1):
                lo, hi = ts[i], ts[i + 1]
                if not hi - lo > _EPS:
                    continue
                mid = 0.5 * (lo + hi)
                qx, qy = px + mid * dx, py + mid * dy
                crossings = 0
                for ax, ay, bx, by in edges:  # even-odd, as _points_in_polygons
                    if (ay > qy) != (by > qy) and qx < ax + (qy - ay) * (bx - ax) / (by - ay):
                        crossings += 1
                inside = crossings % 2 == 1
                if inside:
                    pieces.append((k, b, lo, hi))
                if last_pos >= 0 and prev_inside != inside:
                    walls.append((k, b, lo))
                last_pos, prev_inside = i, inside
        return pieces, walls

    def chords(self, p0_xy: ArrayLike, p1_xy: ArrayLike,
               pairs: tuple[IntArray, IntArray] | None = None) -> Chords:
        """All pieces of the segments ``p0 -> p1`` that lie inside a footprint (``pairs``: the segments'
        :meth:`candidate_pairs`, when the caller has them)."""
        p0 = as_xy(p0_xy, "p0_xy")
        p1 = as_xy(p1_xy, "p1_xy")
        if p0.shape != p1.shape:
            raise ValueError("p0_xy and p1_xy must have the same shape")
        li, bi = self.candidate_pairs(p0, p1) if pairs is None else pairs
        out_l: list[IntArray] = []
        out_b: list[IntArray] = []
        out_t0: list[FloatArray] = []
        out_t1: list[FloatArray] = []
        w_l: list[IntArray] = []
        w_b: list[IntArray] = []
        w_t: list[FloatArray] = []
        if li.size:
            grp = self._group_of[bi]
            for g, (_ids, ea_all, eb_all) in enumerate(self._groups):
                sel = np.nonzero(grp == g)[0]
                if sel.size == 0:
                    continue
                e = ea_all.shape[1]
                block = max(1, _PAIR_BLOCK // ((e + 1) * e))
                for s in range(0, sel.size, block):
                    part = sel[s:s + block]
                    res = _chords_block(p0[li[part]], p1[li[part]],
                                        ea_all[self._row_in_group[bi[part]]],
                                        eb_all[self._row_in_group[bi[part]]])
                    rows, t0, t1, wrows, wt = res
                    out_l.append(li[part][rows])
                    out_b.append(bi[part][rows])
                    out_t0.append(t0)
                    out_t1.append(t1)
                    w_l.append(li[part][wrows])
                    w_b.append(bi[part][wrows])
                    w_t.append(wt)

        def cat_i(xs: list[IntArray]) -> IntArray:
            return np.concatenate(xs).astype(np.intp) if xs else np.zeros(0, dtype=np.intp)

        def cat_f(xs: list[FloatArray]) -> FloatArray:
            return np.concatenate(xs) if xs else np.zeros(0)

        return Chords(cat_i(out_l), cat_i(out_b), cat_f(out_t0), cat_f(out_t1),
                      cat_i(w_l), cat_i(w_b), cat_f(w_t))


def _slab(o: float, moving: bool, inv: float, lo: float, hi: float) -> tuple[float, float]:
    """One axis of :meth:`BuildingSet.candidate_pairs`' Liang-Barsky test on floats: the (near, far) parameters
    of a segment from ``o`` (``inv``: 1 / its extent, ``moving``: the extent is over _EPS) inside ``[lo, hi]``;
    a segment that does not move along the axis: all of it inside, or none, (inf, -inf)."""
    if moving:
        ta, tb = (lo - o) * inv, (hi - o) * inv
        return (ta, tb) if ta < tb else (tb, ta)
    return (-math.inf, math.inf) if lo <= o <= hi else (math.inf, -math.inf)


def _chords_block(p0: FloatArray, p1: FloatArray, ea: FloatArray, eb: FloatArray
                  ) -> tuple[IntArray, FloatArray, FloatArray, IntArray, FloatArray]:
    """Chords for P (segment, polygon) pairs. ``ea, eb``: (P, E, 2) polygon edges.

    Returns (pair row, t0, t1) for every inside interval of positive length, and
    (pair row, t) for every wall crossing (an inside/outside change strictly
    between the segment's end points).
    """
    dx = (p1[:, 0] - p0[:, 0])[:, None]
    dy = (p1[:, 1] - p0[:, 1])[:, None]
    ex = eb[:, :, 0] - ea[:, :, 0]
    ey = eb[:, :, 1] - ea[:, :, 1]
    wx = ea[:, :, 0] - p0[:, None, 0]
    wy = ea[:, :, 1] - p0[:, None, 1]
    denom = _cross(dx, dy, ex, ey)
    ok = np.abs(denom) > _EPS
    safe = np.where(ok, denom, 1.0)
    t = _cross(wx, wy, ex, ey) / safe
    u = _cross(wx, wy, dx, dy) / safe
    hit = ok & (t > 0.0) & (t < 1.0) & (u >= 0.0) & (u <= 1.0)
    n_pairs = p0.shape[0]
    ts = np.concatenate([np.zeros((n_pairs, 1)), np.where(hit, t, 1.0),
                         np.ones((n_pairs, 1))], axis=1)
    ts.sort(axis=1)
    lo = ts[:, :-1]
    hi = ts[:, 1:]
    mid = 0.5 * (lo + hi)
    mx = p0[:, 0, None] + mid * dx
    my = p0[:, 1, None] + mid * dy
    inside = _points_in_polygons(mx, my, ea, eb)
    positive = hi - lo > _EPS
    rows, cols = np.nonzero(inside & positive)

    # Wall crossings: inside-ness changes between consecutive positive intervals.
    k = inside.shape[1]
    idx = np.where(positive, np.arange(k)[None, :], -1)
    last_pos = np.maximum.accumulate(idx, axis=1)  # last positive interval at or before
    prev = np.concatenate([np.full((n_pairs, 1), -1), last_pos[:, :-1]], axis=1)
    prev_inside = np.take_along_axis(inside, np.maximum(prev, 0), axis=1)
    change = positive & (prev >= 0) & (prev_inside != inside)
    wrows, wcols = np.nonzero(change)
    return (rows.astype(np.intp), lo[rows, cols], hi[rows, cols],
            wrows.astype(np.intp), lo[wrows, wcols])


def rectangle(x0: float, y0: float, x1: float, y1: float) -> FloatArray:
    """Axis-aligned rectangular footprint (counter-clockwise), metres."""
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


@dataclass(frozen=True)
class SyntheticCanyon:
    """A synthetic urban-canyon grid for tests and benchmarks (not a product map).

    ``buildings``: the footprints; ``road_points``: road sample points (lattice
    points outside every footprint within the grid extent -- with gaps between
    buildings these include the open ground between them); ``intersections``: centres of
    all road intersections, row-major; ``extent_min``/``extent_max``: the grid bbox.
    """

    buildings: BuildingSet
    road_points: FloatArray
    intersections: FloatArray
    extent_min: FloatArray
    extent_max: FloatArray
    pitch_m: float
    road_width_m: float


def synthetic_urban_canyon(blocks_x: int = 4, blocks_y: int = 4, *, pitch_m: float = 80.0,
                           road_width_m: float = 20.0, split: int = 3, split_y: int = 1,
                           gap_m: float = 0.0,
                           height_range_m: tuple[float, float] = (20.0, 40.0),
                           sample_m: float = 2.0, seed: int = 0) -> SyntheticCanyon:
    """Manhattan grid: ``blocks_x x blocks_y`` city blocks on a ``pitch_m`` lattice.

    Road centre lines run at x = i * pitch_m (i = 0..blocks_x) and y = j * pitch_m;
    each block is the square between roads (side ``pitch_m - road_width_m``), cut
    into ``split`` x ``split_y`` buildings (along x, y) separated by ``gap_m`` (0 =
    adjoining, a closed street wall), each with a uniform random roof height in
    ``height_range_m`` (seeded). ``split_y > 1`` with a gap gives detached houses. The extent reaches half a road width past
    the outer centre lines. Road points are a ``sample_m`` lattice of the extent
    minus the footprints. Use the simulator's map package for real maps; this exists
    so the channel can be tested and benchmarked on its own.
    """
    if blocks_x < 1 or blocks_y < 1 or split < 1 or split_y < 1:
        raise ValueError("blocks_x, blocks_y, split and split_y must be >= 1")
    if not 0.0 < road_width_m < pitch_m:
        raise ValueError("need 0 < road_width_m < pitch_m")
    half = road_width_m / 2.0
    side = pitch_m - road_width_m
    wx = (side - gap_m * (split - 1)) / split
    wy = (side - gap_m * (split_y - 1)) / split_y
    if gap_m < 0.0 or wx <= 0.0 or wy <= 0.0:
        raise ValueError("gap_m must be >= 0 and leave room for the buildings")
    rng = np.random.default_rng(seed)
    items: list[tuple[FloatArray, float]] = []
    for by in range(blocks_y):
        for bx in range(blocks_x):
            x0 = bx * pitch_m + half
            y0 = by * pitch_m + half
            for sy in range(split_y):
                ya = y0 + sy * (wy + gap_m)
                for sx in range(split):
                    xa = x0 + sx * (wx + gap_m)
                    h = float(rng.uniform(*height_range_m))
                    items.append((rectangle(xa, ya, xa + wx, ya + wy), h))
    buildings = BuildingSet(items)
    lo = np.array([-half, -half])
    hi = np.array([blocks_x * pitch_m + half, blocks_y * pitch_m + half])
    xs = np.arange(lo[0] + sample_m / 2, hi[0], sample_m)
    ys = np.arange(lo[1] + sample_m / 2, hi[1], sample_m)
    gx, gy = np.meshgrid(xs, ys)
    pts = np.column_stack([gx.ravel(), gy.ravel()])
    road = pts[~buildings.contains(pts)]
    ix, iy = np.meshgrid(np.arange(blocks_x + 1) * pitch_m, np.arange(blocks_y + 1) * pitch_m)
    inter = np.column_stack([ix.ravel(), iy.ravel()]).astype(np.float64)
    return SyntheticCanyon(buildings, road, inter, lo, hi, float(pitch_m), float(road_width_m))
