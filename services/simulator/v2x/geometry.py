"""2-D geometry for the V2X channel: building footprints, prepared for the channel's kernels.

Everything here works on plain arrays (metres, a flat ground plane, heights above
ground) so that the channel never depends on the map package: whoever owns the map
turns its building footprints into ``(polygon (M, 2), height_m)`` pairs and hands
them to :class:`BuildingSet`, which packs them as the kernels read them
(:attr:`BuildingSet.kernel_arrays`). How a ray meets a footprint (its chords, walls and
the even-odd rule) is :mod:`services.simulator.kernels.channel`'s, one body for one
link or ten thousand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.simulator.kernels import channel as k_channel

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]


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
        self.bbox_min: FloatArray = np.array([p.min(axis=0) for p in polys]).reshape(n, 2)
        self.bbox_max: FloatArray = np.array([p.max(axis=0) for p in polys]).reshape(n, 2)
        bbox = np.ascontiguousarray(np.hstack([self.bbox_min, self.bbox_max]))
        edges = np.ascontiguousarray(
            np.vstack([np.hstack([p, np.roll(p, -1, axis=0)]) for p in polys]) if polys else np.zeros((0, 4)))
        edge_start = np.zeros(n + 1, dtype=np.int64)
        edge_start[1:] = np.cumsum([p.shape[0] for p in polys])
        #: the most edges of one footprint (the kernels' scratch per ray)
        self.max_edges = max((p.shape[0] for p in polys), default=0)
        for arr in (self.heights_m, self.bbox_min, self.bbox_max, bbox, edges, edge_start):
            arr.setflags(write=False)
        self._kernel_arrays = (bbox, edges, edge_start, self.heights_m)

    @property
    def kernel_arrays(self) -> tuple[FloatArray, FloatArray, NDArray[np.int64], FloatArray]:
        """``(bbox (B, 4), edges (E, 4), edge_start (B + 1,), heights (B,))`` as the channel's kernels read them
        (:mod:`services.simulator.kernels.channel`), read-only."""
        return self._kernel_arrays

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
        if len(self) and pts.shape[0]:
            bbox, edges, edge_start, _heights = self._kernel_arrays
            k_channel.points_inside(np.ascontiguousarray(pts[:, 0]), np.ascontiguousarray(pts[:, 1]), bbox, edges,
                                    edge_start, out)
        return out


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
